"""The SQS message body that carries one occurrence (or one attempt) to the worker."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from shared.models.run import RunTrigger


class RunMessage(BaseModel):
    """Body of a work-queue message. Small on purpose: the worker re-reads the job."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    v: int = 1
    job_id: str = Field(min_length=1)
    tenant_id: str = Field(min_length=1)
    run_id: str = Field(min_length=1)
    scheduled_for: int = Field(description="epoch ms of the occurrence")
    schedule_version: int = Field(ge=0)
    trigger: RunTrigger = RunTrigger.SCHEDULE
    attempt: int = Field(default=1, ge=1)
    not_before: int = Field(description="epoch ms before which the run must not start")
    retry_gen: int = Field(default=0, ge=0)
    timeout_seconds: int = Field(default=300, ge=1, description="sets the claim's lease")
    after_version: int = Field(
        default=0,
        ge=0,
        description="the job's version once the write that sent this message has landed "
        "(writers send before they commit; a worker that reads an older version waits for it)",
    )
    dispatched_at: int = Field(description="epoch ms when the dispatcher sent it")
