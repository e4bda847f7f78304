"""Key builders for every item Punctual stores."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime
from typing import Protocol

from shared import constants as c


def job_pk(job_id: str) -> str:
    """Partition key of a job's items (definition, state, overlap slot)."""
    return f"{c.JOB_PREFIX}{job_id}"


def name_guard_pk(tenant_id: str, name: str) -> str:
    """Guard item that keeps a job name unique within a tenant."""
    return f"{c.NAME_GUARD_PREFIX}{tenant_id}#{name}"


def idempotency_guard_pk(tenant_id: str, key: str) -> str:
    """Guard item that remembers an Idempotency-Key of a create."""
    return f"{c.IDEMPOTENCY_GUARD_PREFIX}{tenant_id}#{key}"


def quota_pk(tenant_id: str) -> str:
    """Counter item holding a tenant's live job count."""
    return f"{c.TENANT_PREFIX}{tenant_id}"


def dependents_pk(upstream_job_id: str) -> str:
    """Partition of the edges from an upstream job to the jobs that depend on it."""
    return f"{c.SK_DEPENDENT_PREFIX}{upstream_job_id}"


def shard_of(job_id: str, shards: int) -> int:
    """Stable shard of a job (crc32, not Python's salted hash)."""
    return zlib.crc32(job_id.encode()) % shards


def minute_of(ms: int) -> int:
    """Start of the UTC minute containing ms, in epoch ms."""
    return ms - ms % 60_000


def bucket_name(minute_ms: int) -> str:
    """UTC minute as YYYYMMDDHHMM."""
    return datetime.fromtimestamp(minute_ms // 1000, tz=UTC).strftime("%Y%m%d%H%M")


def due_bucket(next_fire_at_ms: int, shard: int) -> str:
    """Due-index partition key: <UTC minute of next_fire_at>#<shard>, e.g. 202611220914#07."""
    return f"{bucket_name(minute_of(next_fire_at_ms))}#{shard:02d}"


def list_key(created_at_ms: int, job_id: str) -> str:
    """Tenant-index sort key: creation order, ties broken by id."""
    return f"{created_at_ms:013d}#{job_id}"


class _RunKey(Protocol):
    tenant_id: str
    job_id: str


def activity_key(tenant_id: str, shard: int) -> str:
    """Activity-index partition: the tenant split over ACTIVITY_SHARDS keys, so one busy tenant
    is not one hot partition (1,000 writes/s each)."""
    return f"{tenant_id}#{shard:02d}"


def activity_key_of(run: _RunKey) -> str:
    """The activity-index partition a run's finishes go to (stable per job)."""
    return activity_key(run.tenant_id, shard_of(run.job_id, c.ACTIVITY_SHARDS))
