"""Domain model of a job: its target, policies and definition."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, PlainSerializer, field_validator

Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")]
Arn = Annotated[str, Field(min_length=20, max_length=2048, pattern=r"^arn:aws[a-zA-Z-]*:")]
HeaderMap = Annotated[dict[str, str], Field(max_length=50)]


class Priority(StrEnum):
    """Which work queue carries the job's runs."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class OverlapPolicy(StrEnum):
    """What happens when a run is due while the previous one still runs."""

    ALLOW = "allow"
    SKIP = "skip"
    BUFFER_ONE = "buffer_one"


class MisfirePolicy(StrEnum):
    """What happens to occurrences missed by more than the grace period."""

    FIRE_ONCE = "fire_once"
    FIRE_ALL = "fire_all"
    SKIP = "skip"


class JobStatus(StrEnum):
    """Lifecycle of a job."""

    ACTIVE = "active"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    COMPLETED = "completed"
    FAILED = "failed"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HttpTarget(_Strict):
    """Call an HTTP endpoint; 2xx succeeds, 408/429/5xx/timeouts retry, other 4xx fail."""

    type: Literal["http"] = "http"
    url: AnyHttpUrl
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: HeaderMap = Field(default_factory=dict)

    @field_validator("headers")
    @classmethod
    def _no_reserved_headers(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if key.lower() in {"idempotency-key", "content-length", "host"}:
                raise ValueError(f"header {key!r} is set by Punctual")
        return value


class SqsTarget(_Strict):
    """Send the payload to an SQS queue."""

    type: Literal["sqs"] = "sqs"
    queue_url: AnyHttpUrl


class SnsTarget(_Strict):
    """Publish the payload to an SNS topic."""

    type: Literal["sns"] = "sns"
    topic_arn: Arn


class EventBridgeTarget(_Strict):
    """Put the payload as an event on an EventBridge bus."""

    type: Literal["eventbridge"] = "eventbridge"
    event_bus_name: Annotated[str, Field(min_length=1, max_length=1600)] = "default"
    detail_type: Annotated[str, Field(min_length=1, max_length=128)] = "Punctual Job"
    source: Annotated[str, Field(min_length=1, max_length=256)] = "punctual"


class LambdaTarget(_Strict):
    """Invoke a Lambda function (synchronously) with the payload."""

    type: Literal["lambda"] = "lambda"
    function_arn: Arn


class HandlerTarget(_Strict):
    """Run a Python handler registered in the worker."""

    type: Literal["handler"] = "handler"
    name: Annotated[str, Field(min_length=1, max_length=128)]


Target = Annotated[
    HttpTarget | SqsTarget | SnsTarget | EventBridgeTarget | LambdaTarget | HandlerTarget,
    Field(discriminator="type"),
]


def _whole_as_int(value: float) -> float | int:
    # 1 rather than 1.0 in responses, as the API document shows them.
    return int(value) if float(value).is_integer() else value


Seconds = Annotated[float, PlainSerializer(_whole_as_int, return_type=float | int)]


class RetryPolicy(_Strict):
    """Exponential backoff with optional full jitter."""

    max_attempts: Annotated[int, Field(ge=1, le=100)] = 5
    base_delay_seconds: Annotated[Seconds, Field(ge=0, le=86_400)] = 1
    max_delay_seconds: Annotated[Seconds, Field(ge=0, le=86_400 * 7)] = 3600
    jitter: bool = True


NotifyStatus = Literal["succeeded", "failed", "dead", "skipped", "cancelled"]


def _default_notify_on() -> list[NotifyStatus]:
    return ["failed", "dead"]


class NotifyPolicy(_Strict):
    """Where to announce runs that end in the listed statuses."""

    on: list[NotifyStatus] = Field(default_factory=_default_notify_on)
    webhook_url: AnyHttpUrl | None = None
    sns_topic_arn: Arn | None = None


class JobDefinition(_Strict):
    """Every writable field of a job, validated; the schedule is checked by the service."""

    name: Name
    schedule: Annotated[str, Field(min_length=1, max_length=256)]
    timezone: Annotated[str, Field(min_length=1, max_length=64)] = "UTC"
    start_at: str | None = None
    end_at: str | None = None
    target: Target
    payload: Any = None
    priority: Priority = Priority.MEDIUM
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    timeout_seconds: Annotated[int, Field(ge=1, le=840)] = 300
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    misfire: MisfirePolicy = MisfirePolicy.FIRE_ONCE
    misfire_grace_seconds: Annotated[int, Field(ge=0, le=86_400 * 7)] = 60
    depends_on: Annotated[list[str], Field(max_length=20)] = Field(default_factory=list)
    notify: NotifyPolicy = Field(default_factory=NotifyPolicy)
    tags: Annotated[dict[str, Annotated[str, Field(max_length=256)]], Field(max_length=50)] = Field(
        default_factory=dict
    )


class JobState(BaseModel):
    """The small schedule-state item: all the dispatcher needs, so it never reads the definition."""

    job_id: str
    tenant_id: str
    name: str
    status: JobStatus
    version: int = 1
    schedule_version: int = 1
    next_fire_at_ms: int | None = None
    schedule: str
    timezone: str = "UTC"
    start_at_ms: int | None = None
    end_at_ms: int | None = None
    anchor_ms: int
    priority: Priority = Priority.MEDIUM
    misfire: MisfirePolicy = MisfirePolicy.FIRE_ONCE
    misfire_grace_seconds: int = 60
    timeout_seconds: int = 300
    created_at_ms: int
    updated_at_ms: int
    last_scheduled_ms: int | None = None
    dependents: int = 0


class StoredJob(BaseModel):
    """A job as read back: its definition and its schedule state."""

    definition: JobDefinition
    state: JobState
