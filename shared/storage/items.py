"""Domain models to storage items and back."""

from __future__ import annotations

import json
from typing import Any

from shared import constants as c
from shared.models.job import JobDefinition, JobState, JobStatus
from shared.models.run import AttemptRecord, RunRecord
from shared.storage import keys
from shared.storage.codec import from_item, to_item


def state_to_item(state: JobState, shards: int) -> dict[str, Any]:
    """The schedule-state item; due_bucket only while the job is active with a next occurrence."""
    data: dict[str, Any] = {
        c.PK: keys.job_pk(state.job_id),
        c.SK: c.SK_STATE,
        c.ATTR_TENANT_ID: state.tenant_id,
        c.ATTR_LIST_KEY: keys.list_key(state.created_at_ms, state.job_id),
        "job_id": state.job_id,
        "name": state.name,
        c.ATTR_STATUS: state.status.value,
        c.ATTR_VERSION: state.version,
        c.ATTR_SCHEDULE_VERSION: state.schedule_version,
        c.ATTR_NEXT_FIRE_AT: state.next_fire_at_ms,
        "schedule": state.schedule,
        "timezone": state.timezone,
        "start_at": state.start_at_ms,
        "end_at": state.end_at_ms,
        "anchor_at": state.anchor_ms,
        "priority": state.priority.value,
        "misfire": state.misfire.value,
        "misfire_grace": state.misfire_grace_seconds,
        "timeout": state.timeout_seconds,
        "created_at": state.created_at_ms,
        "updated_at": state.updated_at_ms,
        "last_scheduled": state.last_scheduled_ms,
        "dependents": state.dependents,
    }
    if state.status is JobStatus.ACTIVE and state.next_fire_at_ms is not None:
        shard = keys.shard_of(state.job_id, shards)
        data[c.ATTR_DUE_BUCKET] = keys.due_bucket(state.next_fire_at_ms, shard)
    return to_item(data)


def state_from_item(item: dict[str, Any]) -> JobState:
    """Read a schedule-state item."""
    data = from_item(item)
    return JobState(
        job_id=data["job_id"],
        tenant_id=data[c.ATTR_TENANT_ID],
        name=data["name"],
        status=JobStatus(data[c.ATTR_STATUS]),
        version=data[c.ATTR_VERSION],
        schedule_version=data[c.ATTR_SCHEDULE_VERSION],
        next_fire_at_ms=data.get(c.ATTR_NEXT_FIRE_AT),
        schedule=data["schedule"],
        timezone=data["timezone"],
        start_at_ms=data.get("start_at"),
        end_at_ms=data.get("end_at"),
        anchor_ms=data["anchor_at"],
        priority=data["priority"],
        misfire=data["misfire"],
        misfire_grace_seconds=data["misfire_grace"],
        timeout_seconds=data.get("timeout", 300),
        created_at_ms=data["created_at"],
        updated_at_ms=data["updated_at"],
        last_scheduled_ms=data.get("last_scheduled"),
        dependents=data.get("dependents", 0),
    )


def definition_to_item(job_id: str, tenant_id: str, definition: JobDefinition) -> dict[str, Any]:
    """The definition item: the full job as JSON text (exact, whatever the payload holds)."""
    return to_item(
        {
            c.PK: keys.job_pk(job_id),
            c.SK: c.SK_DEFINITION,
            c.ATTR_TENANT_ID: tenant_id,
            "job_id": job_id,
            "definition": definition.model_dump_json(),
        }
    )


def definition_from_item(item: dict[str, Any]) -> JobDefinition:
    """Read a definition item."""
    data = from_item(item)
    return JobDefinition.model_validate_json(data["definition"])


def run_from_item(item: dict[str, Any]) -> RunRecord:
    """Read a run item."""
    data = from_item(item)
    output = data.get("output")
    return RunRecord(
        job_id=data[c.RUNS_PK],
        run_id=data[c.RUNS_SK],
        tenant_id=data[c.ATTR_TENANT_ID],
        scheduled_for_ms=data[c.ATTR_SCHEDULED_FOR],
        trigger=data["trigger"],
        status=data[c.ATTR_STATUS],
        # An attempt's number is its position (claims append before they know the count).
        attempts=[
            AttemptRecord.model_validate({**a, "attempt": i + 1})
            for i, a in enumerate(data.get("attempts", []))
        ],
        attempt_count=data.get("attempt_count", 0),
        budget_used=data.get("budget_used", 0),
        schedule_version=data.get(c.ATTR_SCHEDULE_VERSION, 0),
        retry_gen=data.get("retry_gen", 0),
        lease_owner=data.get("lease_owner"),
        lease_expires_at_ms=data.get("lease_expires_at"),
        created_at_ms=data["created_at"],
        updated_at_ms=data["updated_at"],
        finished_at_ms=data.get("finished_at"),
        next_attempt_at_ms=data.get("next_attempt_at"),
        start_lag_ms=data.get("start_lag_ms"),
        reason=data.get("reason"),
        output=json.loads(output) if isinstance(output, str) else None,
        priority=data.get("priority", "medium"),
    )


def attempt_to_value(attempt: AttemptRecord) -> dict[str, Any]:
    """An attempt as a DynamoDB map (None fields dropped)."""
    return {k: v for k, v in attempt.model_dump().items() if v is not None}
