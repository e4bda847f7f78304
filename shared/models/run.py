"""Domain model of a run: one occurrence of a job with its attempts."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel


class RunStatus(StrEnum):
    """Lifecycle of a run."""

    QUEUED = "queued"
    RUNNING = "running"
    RETRYING = "retrying"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DEAD = "dead"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


TERMINAL_RUN_STATUSES = frozenset(
    {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.DEAD, RunStatus.SKIPPED, RunStatus.CANCELLED}
)


class RunTrigger(StrEnum):
    """Why a run exists."""

    SCHEDULE = "schedule"
    MANUAL = "manual"
    DEPENDENCY = "dependency"
    RETRY = "retry"


class AttemptRecord(BaseModel):
    """One execution attempt of a run."""

    attempt: int
    started_at_ms: int
    finished_at_ms: int | None = None
    duration_ms: int | None = None
    status: str = RunStatus.RUNNING.value
    error_code: str | None = None
    error_message: str | None = None


class RunRecord(BaseModel):
    """A run as stored."""

    job_id: str
    run_id: str
    tenant_id: str
    scheduled_for_ms: int
    trigger: RunTrigger
    status: RunStatus
    attempts: list[AttemptRecord] = []
    attempt_count: int = 0
    budget_used: int = 0
    schedule_version: int = 0
    retry_gen: int = 0
    lease_owner: str | None = None
    lease_expires_at_ms: int | None = None
    created_at_ms: int
    updated_at_ms: int
    finished_at_ms: int | None = None
    next_attempt_at_ms: int | None = None
    start_lag_ms: int | None = None
    reason: str | None = None
    output: Any = None
    priority: str = "medium"
