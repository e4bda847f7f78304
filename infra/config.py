"""Per-environment settings of the AWS deployment, validated before anything is synthesized.

One `EnvironmentConfig` per environment (`dev`, `staging`, `prod` below). `cdk deploy -c env=NAME`
picks one; values can be overridden without editing code through the context key
`punctual:NAME` (a JSON object, in cdk.json, cdk.context.json or on the command line), e.g.
`-c 'punctual:prod={"alarms": {"email": "ops@example.com"}}'`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from shared.constants import PRIORITIES
from shared.services.ticker import FAN_OUT_PARALLEL
from shared.settings import Settings
from shared.storage.schema import MAX_RECEIVE_COUNT

# The Lambda runtime and the interpreter the dependency asset is built for: one number, so the
# compiled wheels (pydantic-core) always match the runtime that loads them.
LAMBDA_PYTHON_VERSION = "3.13"

# SQS limits (visibility timeout at most 12 h) and the event source rule (visibility at least
# 6x the function timeout, so a message is not redelivered while a worker still runs it).
SQS_MAX_VISIBILITY_SECONDS = 12 * 3600
VISIBILITY_FACTOR = 6

# The values CloudWatch Logs accepts for a retention period.
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
    2922, 3288, 3653,
)  # fmt: skip

Priority = Literal["high", "medium", "low"]

_ARN_PATTERN = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-*]*:(\d{12}|\*)?:.+$")
_EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_TENANT_KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class QueueConfig(_Frozen):
    """How the worker consumes one priority's queue (its SQS event source mapping)."""

    batch_size: int = Field(default=1, ge=1, le=10_000)
    max_batching_window_seconds: int = Field(default=0, ge=0, le=300)
    # Standard mode: upper bound of concurrent worker invocations for this queue (Lambda allows
    # 2-1000). Lambda starts a backlog at 5 and adds up to 300 a minute.
    max_concurrency: int | None = Field(default=10, ge=2, le=1000)
    # Provisioned mode (instead of max_concurrency, which must then be null): event pollers
    # kept ready, each running up to 10 concurrent invocations, scaling by up to 1,000 a minute.
    # Billed per poller-hour: a floor for queues that must absorb a burst at once.
    min_pollers: int | None = Field(default=None, ge=2, le=200)
    max_pollers: int | None = Field(default=None, ge=2, le=2000)
    # Alarm when the oldest message has waited this long. Keep it above 900 s: a message may
    # legitimately wait out an SQS DelaySeconds of up to 900 s before it becomes visible.
    oldest_message_alarm_seconds: int = Field(default=1200, ge=60, le=14 * 86_400)

    @model_validator(mode="after")
    def _window_for_large_batches(self) -> QueueConfig:
        # Lambda rejects a batch size above 10 on a standard queue without a batching window.
        if self.batch_size > 10 and self.max_batching_window_seconds == 0:
            raise ValueError("batch_size above 10 needs max_batching_window_seconds >= 1")
        return self

    @model_validator(mode="after")
    def _one_scaling_mode(self) -> QueueConfig:
        pollers = (self.min_pollers, self.max_pollers)
        if (pollers[0] is None) != (pollers[1] is None):
            raise ValueError("min_pollers and max_pollers go together (provisioned mode)")
        if self.min_pollers is not None:
            if self.max_concurrency is not None:
                # Lambda: ScalingConfig and ProvisionedPollerConfig are mutually exclusive.
                raise ValueError("provisioned pollers replace max_concurrency: set it to null")
            if self.max_pollers is not None and self.max_pollers < self.min_pollers:
                raise ValueError("max_pollers must be at least min_pollers")
        elif self.max_concurrency is None:
            raise ValueError("set max_concurrency, or min_pollers and max_pollers")
        return self


def _default_queues() -> dict[Priority, QueueConfig]:
    # Up to ten messages an invocation, taken as soon as they are there (no batching window):
    # the worker runs a batch's records side by side, so a long job does not hold up the rest,
    # and one receive and one delete serve ten runs.
    return {
        # Concurrency: the medium queue (the default priority) may take 300 at once, the ceiling a
        # standard-mode mapping reaches in its first minute of a burst; the three together stay well
        # inside the default account quota of 1,000, leaving room for the API (docs/scale.md).
        "high": QueueConfig(batch_size=10, max_concurrency=200, oldest_message_alarm_seconds=960),
        "medium": QueueConfig(batch_size=10, max_concurrency=300),
        "low": QueueConfig(batch_size=10, max_concurrency=20, oldest_message_alarm_seconds=3600),
    }


class AlarmConfig(_Frozen):
    """Alarm thresholds and where alarms go."""

    # Subscribed to the alarm topic when set (the address must confirm the subscription).
    email: str | None = None
    start_lag_p99_ms: int = Field(default=2000, ge=100)
    # StartLag p99 must breach in `start_lag_datapoints` of `start_lag_periods` minutes.
    start_lag_periods: int = Field(default=5, ge=1, le=60)
    start_lag_datapoints: int = Field(default=3, ge=1, le=60)
    dead_letter_messages: int = Field(default=1, ge=1)
    tick_errors: int = Field(default=1, ge=1)
    # Failed or throttled dispatch invocations (per 5 minutes): each holds the tick's watermark.
    dispatch_errors: int = Field(default=1, ge=1)
    api_5xx_per_5_minutes: int = Field(default=5, ge=1)

    @field_validator("email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        if value is not None and not _EMAIL_PATTERN.match(value):
            raise ValueError("not an e-mail address")
        return value

    @model_validator(mode="after")
    def _datapoints(self) -> AlarmConfig:
        if self.start_lag_datapoints > self.start_lag_periods:
            raise ValueError("start_lag_datapoints cannot exceed start_lag_periods")
        return self


class ApiConfig(_Frozen):
    """The REST API in front of the api function."""

    # "iam": every request signed with SigV4 (tenant = the caller's IAM identity).
    # "api_key": every request carries an API key (tenant = the key's id), one usage plan each.
    auth: Literal["iam", "api_key"] = "iam"
    # One API key and one usage plan per name (api_key mode only).
    api_key_tenants: tuple[str, ...] = ()
    throttle_rate_limit: float = Field(default=100.0, gt=0, le=10_000)
    throttle_burst_limit: int = Field(default=200, ge=1, le=5_000)
    # Per-tenant usage plan (api_key mode): steady rate, burst and requests per day.
    tenant_rate_limit: float = Field(default=20.0, gt=0, le=10_000)
    tenant_burst_limit: int = Field(default=40, ge=1, le=5_000)
    tenant_requests_per_day: int | None = Field(default=None, ge=1)
    # API Gateway needs an account-wide role to write logs (access logs included). It is one
    # setting per account and region: let only one stack there create it.
    create_cloudwatch_role: bool = True

    @field_validator("api_key_tenants")
    @classmethod
    def _tenant_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _TENANT_KEY_PATTERN.match(name):
                raise ValueError(f"invalid tenant key name {name!r}")
        if len(set(value)) != len(value):
            raise ValueError("duplicate tenant key names")
        return value

    @model_validator(mode="after")
    def _keys_need_tenants(self) -> ApiConfig:
        if self.auth == "api_key" and not self.api_key_tenants:
            raise ValueError("auth 'api_key' needs at least one name in api_key_tenants")
        if self.auth == "iam" and self.api_key_tenants:
            raise ValueError("api_key_tenants is only used with auth 'api_key'")
        return self


class TargetAllowList(_Frozen):
    """What the worker may deliver to (job targets and SNS notifications). Empty lists grant
    nothing, so such a target fails with a permission error: the operator opts in, by ARN or
    ARN pattern (`*` wildcards), e.g. `arn:aws:sqs:eu-west-1:123456789012:team-a-*`."""

    sqs_queue_arns: tuple[str, ...] = ()
    sns_topic_arns: tuple[str, ...] = ()
    event_bus_arns: tuple[str, ...] = ()
    lambda_function_arns: tuple[str, ...] = ()
    # Customer-managed KMS keys of encrypted target queues or topics (kms:GenerateDataKey,
    # kms:Decrypt), when a target uses one.
    kms_key_arns: tuple[str, ...] = ()

    @field_validator("*")
    @classmethod
    def _arns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for arn in value:
            if not _ARN_PATTERN.match(arn) or arn.strip("*:") == "arn":
                raise ValueError(f"not an ARN or ARN pattern: {arn!r}")
        return value


class EnvironmentConfig(_Frozen):
    """Everything that differs between environments."""

    name: str = Field(pattern=r"^[a-z][a-z0-9]{0,11}$")
    # Unset: an environment-agnostic stack, deployed wherever the CLI's credentials point.
    account: str | None = Field(default=None, pattern=r"^\d{12}$")
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")

    # Scheduler settings handed to the functions (PUNCTUAL_*). 32 due-index shards: one
    # dispatch invocation per shard, together over 10,000 dispatches/s (docs/scale.md). Raise
    # it freely; never lower it on a live stack (jobs in the dropped shards would not be seen).
    shards: int = 32
    horizon_seconds: int = 120
    run_retention_days: int = 90
    # The worker's read of the job before each run: strongly consistent (one read unit instead
    # of half) so that a cancel or pause answered less than a second before a run is honoured.
    consistent_job_reads: bool = False

    # "destroy" deletes tables and queues with the stack; "retain" keeps them.
    removal_policy: Literal["destroy", "retain"] = "retain"
    deletion_protection: bool = True
    log_retention_days: int = 90

    max_receive_count: int = Field(default=MAX_RECEIVE_COUNT, ge=1, le=1000)
    worker_timeout_seconds: int = Field(default=900, ge=30, le=900)
    tick_timeout_seconds: int = Field(default=60, ge=10, le=300)
    api_timeout_seconds: int = Field(default=29, ge=3, le=29)
    api_memory_mb: int = Field(default=512, ge=128, le=10_240)
    tick_memory_mb: int = Field(default=512, ge=128, le=10_240)
    # The dispatch function, which the tick invokes (synchronously) once per range of shards of
    # each minute. 1769 MB is one full vCPU: a range is drained by 8 threads of SQS sends and
    # conditional writes. Its timeout must leave the waiting tick time to take the answer.
    dispatch_memory_mb: int = Field(default=1769, ge=128, le=10_240)
    dispatch_timeout_seconds: int = Field(default=30, ge=10, le=300)
    dispatch_shards_per_range: int = Field(default=1, ge=1, le=256)
    # Reserved concurrency of the dispatch function, so busy workers can never starve a tick's
    # fan-out. None: as many as the invocations one tick runs at once (its ranges, at most 32;
    # with the defaults one per shard, 16). 0: unreserved, for an account whose concurrency
    # quota is too small to reserve from (Lambda keeps 100 unreserved; the tick already reserves
    # 1, so an account that cannot afford this also had to lower its quota-bound workers).
    dispatch_reserved_concurrency: int | None = Field(default=None, ge=0, le=1000)
    # One full vCPU: a batch's ten records share it, so a batch takes as long at 1,769 MB as one
    # record's round trips where at 1,024 MB it waits on the CPU; billed GB-s are about equal.
    worker_memory_mb: int = Field(default=1769, ge=128, le=10_240)
    tracing: bool = True
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    queues: dict[Priority, QueueConfig] = Field(default_factory=_default_queues)
    alarms: AlarmConfig = AlarmConfig()
    api: ApiConfig = ApiConfig()
    targets: TargetAllowList = TargetAllowList()

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            raise ValueError(f"CloudWatch Logs accepts only {LOG_RETENTION_DAYS}")
        return value

    @field_validator("queues")
    @classmethod
    def _every_priority(cls, value: dict[Priority, QueueConfig]) -> dict[Priority, QueueConfig]:
        missing = set(PRIORITIES) - set(value)
        if missing:
            raise ValueError(f"missing queue settings for {sorted(missing)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> EnvironmentConfig:
        if self.queue_visibility_seconds > SQS_MAX_VISIBILITY_SECONDS:
            raise ValueError("worker_timeout_seconds x 6 exceeds the 12 h SQS visibility limit")
        if self.dispatch_timeout_seconds > self.tick_budget_seconds:
            # The tick waits for each invocation: it must get the answer before its own timeout.
            raise ValueError("dispatch_timeout_seconds must be within the tick's budget")
        reserved = self.dispatch_reserved_concurrency
        if reserved and reserved < self.dispatch_parallel_invocations:
            # Throttled invokes count as errors and hold the watermark on every tick.
            raise ValueError(
                "dispatch_reserved_concurrency is below the invocations one tick runs at once "
                f"({self.dispatch_parallel_invocations})"
            )
        # The functions must accept what we hand them: validate with the runtime's own model.
        Settings(
            shards=self.shards,
            horizon_seconds=self.horizon_seconds,
            run_retention_days=self.run_retention_days,
            tick_budget_seconds=self.tick_budget_seconds,
            dispatch_shards_per_range=self.dispatch_shards_per_range,
            tenant_source="context",
        )
        return self

    def queue(self, priority: str) -> QueueConfig:
        """The consumption settings of one priority's queue."""
        return self.queues[priority]  # type: ignore[index]

    @property
    def queue_visibility_seconds(self) -> int:
        """Visibility timeout of the work queues: 6x the worker's timeout (the AWS guidance for
        an SQS event source)."""
        return VISIBILITY_FACTOR * self.worker_timeout_seconds

    @property
    def tick_budget_seconds(self) -> float:
        """How long one tick may work: its timeout less a margin to finish cleanly."""
        return float(max(5, self.tick_timeout_seconds - 10))

    @property
    def dispatch_parallel_invocations(self) -> int:
        """Dispatch invocations one tick runs at once: one per range of shards (at most 32)."""
        ranges = -(-self.shards // self.dispatch_shards_per_range)
        return min(ranges, FAN_OUT_PARALLEL)

    @property
    def dispatch_concurrency(self) -> int | None:
        """The dispatch function's reserved concurrency (None: unreserved)."""
        reserved = self.dispatch_reserved_concurrency
        if reserved is None:
            return self.dispatch_parallel_invocations
        return reserved or None

    @property
    def destroy_on_delete(self) -> bool:
        """Whether deleting the stack deletes stateful resources too."""
        return self.removal_policy == "destroy"

    @property
    def stack_name(self) -> str:
        """CloudFormation stack name of this environment."""
        return f"Punctual-{self.name}"

    def resource_name(self, base: str) -> str:
        """Physical name of a table or queue in this environment (`punctual-jobs-dev`)."""
        return f"{base}-{self.name}"


ENVIRONMENTS: dict[str, EnvironmentConfig] = {
    "dev": EnvironmentConfig(
        name="dev",
        # Little traffic: 4 dispatch invocations a minute instead of 32.
        dispatch_shards_per_range=8,
        removal_policy="destroy",
        deletion_protection=False,
        log_retention_days=14,
        run_retention_days=30,
        tracing=True,
        log_level="DEBUG",
    ),
    "staging": EnvironmentConfig(name="staging", log_retention_days=30),
    # prod: the medium queue (the default priority) keeps two event pollers ready and scales
    # them by up to 1,000 concurrent invocations a minute, instead of standard mode's 300, so
    # that a midnight burst drains within a minute (docs/scale.md). Pollers are billed by the
    # hour, like provisioned concurrency: check the Lambda pricing page.
    "prod": EnvironmentConfig(
        name="prod",
        log_retention_days=365,
        queues={
            **_default_queues(),
            "medium": QueueConfig(
                batch_size=10, max_concurrency=None, min_pollers=2, max_pollers=30
            ),
        },
    ),
}


def _merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(env: str, overrides: dict[str, Any] | str | None = None) -> EnvironmentConfig:
    """The configuration of environment `env`, with `overrides` (a dict, or JSON text as given
    with `-c`) merged over its defaults and validated."""
    if env not in ENVIRONMENTS:
        raise ValueError(f"unknown environment {env!r}; expected one of {sorted(ENVIRONMENTS)}")
    if isinstance(overrides, str):
        overrides = json.loads(overrides)
    if overrides is not None and not isinstance(overrides, dict):
        raise ValueError("environment overrides must be a JSON object")
    base = ENVIRONMENTS[env].model_dump(mode="json")
    merged = _merge(base, overrides or {})
    if merged.get("name") != env:
        raise ValueError("the environment name cannot be overridden")
    return EnvironmentConfig.model_validate(merged)
