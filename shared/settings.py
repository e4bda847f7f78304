"""One settings model, read from the environment lazily (never at import time)."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared import constants


class Settings(BaseSettings):
    """Punctual's configuration. Every field can be set as PUNCTUAL_<FIELD> in the environment."""

    model_config = SettingsConfigDict(env_prefix="PUNCTUAL_", extra="ignore", frozen=True)

    jobs_table: str = constants.JOBS_TABLE
    runs_table: str = constants.RUNS_TABLE
    queue_url_high: str = ""
    queue_url_medium: str = ""
    queue_url_low: str = ""
    dlq_url_high: str = ""
    dlq_url_medium: str = ""
    dlq_url_low: str = ""

    # Optional endpoint override (the local runtime points this at moto's server).
    aws_endpoint_url: str | None = None
    aws_region: str = Field(default="us-east-1")

    shards: int = Field(default=16, ge=1, le=256)
    horizon_seconds: int = Field(default=120, ge=10, le=840)
    dispatch_margin_seconds: int = Field(default=60, ge=0, le=600)
    run_retention_days: int = Field(default=90, ge=1, le=3650)
    idempotency_retention_days: int = Field(default=7, ge=1, le=365)
    lease_margin_seconds: int = Field(default=30, ge=1, le=900)
    max_payload_bytes: int = Field(default=64 * 1024, ge=1)
    max_body_bytes: int = Field(default=256 * 1024, ge=1)
    max_jobs_per_tenant: int = Field(default=10_000, ge=1)
    fire_all_cap: int = Field(default=100, ge=1, le=10_000)
    tick_budget_seconds: float = Field(default=50.0, gt=0)
    # The longest one fanned-out dispatch invocation may take: the tick starts no minute that
    # could run past its budget.
    dispatch_timeout_seconds: float = Field(default=30.0, gt=0)
    # Name or ARN of the dispatch function the tick fans out to (one synchronous invoke per
    # range of shards); empty: the tick drains every shard in-process (local runtime, tests).
    dispatch_function: str = ""
    # Shards per dispatch invocation when fanned out (16 shards, 4 per range: 4 invokes a minute).
    dispatch_shards_per_range: int = Field(default=1, ge=1, le=256)
    # How the tenant is found: "header" (local runtime: X-Tenant-Id) or "context" (API Gateway).
    tenant_source: str = Field(default="context", pattern="^(header|context)$")
    # How early a worker may hold a message for its due time instead of re-queuing it.
    early_hold_seconds: float = Field(default=2.0, ge=0, le=10)
    # SQS delays are whole seconds. A message may become visible up to this long after it is
    # due (a start lag) rather than up to a second before it (a worker holding it, billed).
    # The tick also waits (at most a second) before sending a partial chunk so that its
    # messages land in this window, which keeps both the lag and the hold small. 0: never
    # late, no waiting; messages arrive up to a second early and are held (the local runtime).
    send_late_tolerance_ms: int = Field(default=250, ge=0, le=999)
    # The worker's read of the job before a run. Eventually consistent (the default) costs half
    # a read unit: a cancel, pause or schedule change answered by the API less than about a
    # second before an occurrence starts may then be missed by that one run. True: strongly
    # consistent (one read unit per 4 KB), and such a change is seen by every run that claims
    # after it. Messages sent in the last 10 s (by the API: creates, changes, triggers) and
    # re-reads while a dispatching write settles are always read strongly consistent.
    consistent_job_reads: bool = False

    def queue_url(self, priority: str) -> str:
        """URL of the work queue for a priority."""
        return str(getattr(self, f"queue_url_{priority}"))

    def dlq_url(self, priority: str) -> str:
        """URL of the dead-letter queue for a priority."""
        return str(getattr(self, f"dlq_url_{priority}"))


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read on first use."""
    return Settings()
