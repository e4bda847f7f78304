"""Names of every table, index, queue and attribute: one source for the code, CDK and tests."""

from __future__ import annotations

from typing import Final

# Tables (logical names; the deployed names come from settings, defaulting to these).
JOBS_TABLE: Final = "punctual-jobs"
RUNS_TABLE: Final = "punctual-runs"

# Key attributes shared by both tables.
PK: Final = "pk"
SK: Final = "sk"

# Jobs table: item kinds (sort keys) and key prefixes.
JOB_PREFIX: Final = "JOB#"
SK_DEFINITION: Final = "DEF"
SK_STATE: Final = "STATE"
SK_SLOT: Final = "SLOT"
SK_GUARD: Final = "GUARD"
SK_DEPENDENT_PREFIX: Final = "DEP#"
NAME_GUARD_PREFIX: Final = "NAME#"
IDEMPOTENCY_GUARD_PREFIX: Final = "IDEM#"
TENANT_PREFIX: Final = "TENANT#"
SK_QUOTA: Final = "QUOTA"
TICK_PK: Final = "TICK"
SK_WATERMARK: Final = "WATERMARK"

# Due index (sparse GSI on schedule-state items).
DUE_INDEX: Final = "due-index"
ATTR_DUE_BUCKET: Final = "due_bucket"
ATTR_NEXT_FIRE_AT: Final = "next_fire_at"

# Tenant listing index (GSI on schedule-state items).
TENANT_INDEX: Final = "tenant-index"
ATTR_TENANT_ID: Final = "tenant_id"
ATTR_LIST_KEY: Final = "list_key"

# Runs table indexes.
DEAD_INDEX: Final = "dead-index"
ATTR_DEAD_TENANT: Final = "dead_tenant"
ATTR_SCHEDULED_FOR: Final = "scheduled_for"
ACTIVITY_INDEX: Final = "activity-index"
# A tenant's activity is spread over this many index partitions.
ACTIVITY_SHARDS: Final = 32
ATTR_ACTIVITY_TENANT: Final = "activity_tenant"
ATTR_ACTIVITY_AT: Final = "activity_at"

# Time to live attribute (epoch seconds) on both tables.
ATTR_EXPIRES_AT: Final = "expires_at"

# Other attribute names used in expressions.
ATTR_STATUS: Final = "status"
ATTR_VERSION: Final = "version"
ATTR_SCHEDULE_VERSION: Final = "schedule_version"

# Queues: one work queue and one dead-letter queue per priority.
PRIORITIES: Final = ("high", "medium", "low")
QUEUE_NAME_PREFIX: Final = "punctual-"
DLQ_SUFFIX: Final = "-dlq"

# Message attribute carrying the run's idempotency key on every non-HTTP delivery.
IDEMPOTENCY_KEY_ATTRIBUTE: Final = "Idempotency-Key"

METRICS_NAMESPACE: Final = "Punctual"


def queue_name(priority: str) -> str:
    """Name of the work queue for a priority."""
    return f"{QUEUE_NAME_PREFIX}{priority}"


def dead_letter_queue_name(priority: str) -> str:
    """Name of the dead-letter queue for a priority."""
    return f"{QUEUE_NAME_PREFIX}{priority}{DLQ_SUFFIX}"


# Runs table key attributes.
RUNS_PK: Final = "job_id"
RUNS_SK: Final = "run_id"
