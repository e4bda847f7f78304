"""Request and response models of the HTTP API (the OpenAPI document is generated from these)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from shared.clock import format_ms
from shared.models.job import (
    JobDefinition,
    JobStatus,
    MisfirePolicy,
    Name,
    NotifyPolicy,
    OverlapPolicy,
    Priority,
    RetryPolicy,
    StoredJob,
    Target,
)
from shared.models.run import RunRecord, RunStatus, RunTrigger


class JobCreate(JobDefinition):
    """POST /v1/jobs body: only name, schedule and target are required."""


class JobPatch(BaseModel):
    """PATCH /v1/jobs/{job_id} body: any writable field; null clears start_at/end_at."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    schedule: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    timezone: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    start_at: str | None = None
    end_at: str | None = None
    target: Target | None = None
    payload: Any = None
    priority: Priority | None = None
    retry: RetryPolicy | None = None
    timeout_seconds: Annotated[int, Field(ge=1, le=840)] | None = None
    overlap: OverlapPolicy | None = None
    misfire: MisfirePolicy | None = None
    misfire_grace_seconds: Annotated[int, Field(ge=0, le=86_400 * 7)] | None = None
    depends_on: Annotated[list[str], Field(max_length=20)] | None = None
    notify: NotifyPolicy | None = None
    tags: dict[str, str] | None = None


class AttemptOut(BaseModel):
    """One attempt of a run."""

    attempt: int
    started_at: str
    finished_at: str | None = None
    duration_ms: int | None = None
    status: str
    error_code: str | None = None
    error_message: str | None = None


class RunOut(BaseModel):
    """A run: one occurrence of a job, with its attempts."""

    run_id: str
    job_id: str
    scheduled_for: str
    status: RunStatus
    attempts: list[AttemptOut]
    trigger: RunTrigger
    created_at: str
    updated_at: str
    finished_at: str | None = None
    next_attempt_at: str | None = None
    start_lag_ms: int | None = None
    reason: str | None = None
    output: Any = None

    @classmethod
    def of(cls, run: RunRecord) -> RunOut:
        """Render a stored run."""
        return cls(
            run_id=run.run_id,
            job_id=run.job_id,
            scheduled_for=format_ms(run.scheduled_for_ms),
            status=run.status,
            attempts=[
                AttemptOut(
                    attempt=a.attempt,
                    started_at=format_ms(a.started_at_ms),
                    finished_at=format_ms(a.finished_at_ms) if a.finished_at_ms else None,
                    duration_ms=a.duration_ms,
                    status=a.status,
                    error_code=a.error_code,
                    error_message=a.error_message,
                )
                for a in run.attempts
            ],
            trigger=run.trigger,
            created_at=format_ms(run.created_at_ms),
            updated_at=format_ms(run.updated_at_ms),
            finished_at=format_ms(run.finished_at_ms) if run.finished_at_ms else None,
            next_attempt_at=format_ms(run.next_attempt_at_ms) if run.next_attempt_at_ms else None,
            start_lag_ms=run.start_lag_ms,
            reason=run.reason,
            output=run.output,
        )


class RunSummary(BaseModel):
    """The newest run of a job, in short."""

    run_id: str
    status: RunStatus
    scheduled_for: str
    trigger: RunTrigger
    attempts: int
    finished_at: str | None = None


class JobOut(JobDefinition):
    """The Job resource: the definition plus its state."""

    job_id: str
    status: JobStatus
    next_fire_at: str | None
    created_at: str
    updated_at: str
    version: int
    last_run: RunSummary | None = None

    @classmethod
    def of(cls, job: StoredJob, last_run: RunRecord | None) -> JobOut:
        """Render a stored job."""
        state = job.state
        summary = None
        if last_run is not None:
            summary = RunSummary(
                run_id=last_run.run_id,
                status=last_run.status,
                scheduled_for=format_ms(last_run.scheduled_for_ms),
                trigger=last_run.trigger,
                attempts=last_run.attempt_count,
                finished_at=format_ms(last_run.finished_at_ms) if last_run.finished_at_ms else None,
            )
        return cls(
            **job.definition.model_dump(),
            job_id=state.job_id,
            status=state.status,
            next_fire_at=format_ms(state.next_fire_at_ms) if state.next_fire_at_ms else None,
            created_at=format_ms(state.created_at_ms),
            updated_at=format_ms(state.updated_at_ms),
            version=state.version,
            last_run=summary,
        )


class JobList(BaseModel):
    """A page of jobs."""

    jobs: list[JobOut]
    next_token: str | None = None


class RunList(BaseModel):
    """A page of runs."""

    runs: list[RunOut]
    next_token: str | None = None


class RedriveRequest(BaseModel):
    """POST /v1/dead-letters/redrive body: all dead runs, or only these run ids
    (a run id alone, or <job_id>:<run_id> to name one job's run)."""

    model_config = ConfigDict(extra="forbid")

    run_ids: Annotated[list[str], Field(max_length=1000)] | None = None


class RedrivenRun(BaseModel):
    """One run put back on its queue."""

    job_id: str
    run_id: str


class RedriveResult(BaseModel):
    """What a redrive re-queued."""

    redriven: list[RedrivenRun]
    count: int


class QueueDepth(BaseModel):
    """Approximate messages on one priority's queues."""

    visible: int
    in_flight: int
    delayed: int
    dead_letter: int


class MetricsOut(BaseModel):
    """GET /v1/metrics: the tenant's recent runs and the queues."""

    window_minutes: int
    runs_by_status: dict[str, int]
    start_lag_ms_p50: float | None
    start_lag_ms_p99: float | None
    queues: dict[str, QueueDepth]
    dead_letter_depth: int


class Health(BaseModel):
    """GET /v1/health."""

    status: str = "ok"


class ErrorDetail(BaseModel):
    """One field and what is wrong with it."""

    field: str
    message: str


class ErrorInfo(BaseModel):
    """The error itself."""

    code: str
    message: str
    details: list[ErrorDetail] = []


class ErrorBody(BaseModel):
    """Every 4xx/5xx answers with this body."""

    error: ErrorInfo
