"""The per-environment configuration (infra/config.py): defaults, overrides and validation."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from infra.config import (
    ENVIRONMENTS,
    LOG_RETENTION_DAYS,
    SQS_MAX_VISIBILITY_SECONDS,
    EnvironmentConfig,
    QueueConfig,
    load_config,
)
from shared.constants import PRIORITIES
from shared.settings import Settings
from shared.storage.schema import MAX_RECEIVE_COUNT


def test_config_environments_dev_destroys_and_others_retain() -> None:
    # GIVEN the built-in environments
    # WHEN / THEN only dev deletes its data with the stack
    assert set(ENVIRONMENTS) == {"dev", "staging", "prod"}
    assert ENVIRONMENTS["dev"].removal_policy == "destroy"
    assert not ENVIRONMENTS["dev"].deletion_protection
    for name in ("staging", "prod"):
        assert ENVIRONMENTS[name].removal_policy == "retain"
        assert ENVIRONMENTS[name].deletion_protection


def test_config_defaults_match_the_local_runtime() -> None:
    # GIVEN the defaults
    config = load_config("prod")
    # THEN redrive and scheduler settings are the ones the code assumes
    assert config.max_receive_count == MAX_RECEIVE_COUNT
    # (the deployed stack uses 32 due-index shards, the local runtime its default of 16: a
    # stack scans more shards than any job was written to, never fewer)
    assert config.shards == 32 >= Settings().shards
    assert config.horizon_seconds == 120
    assert set(config.queues) == set(PRIORITIES)
    assert config.api.auth == "iam"
    assert config.targets.sqs_queue_arns == ()


def test_config_visibility_is_six_times_the_worker_timeout() -> None:
    # GIVEN a worker timeout
    config = load_config("dev", {"worker_timeout_seconds": 300})
    # THEN the queues' visibility follows it
    assert config.queue_visibility_seconds == 1800
    assert load_config("prod").queue_visibility_seconds == 5400 <= SQS_MAX_VISIBILITY_SECONDS


def test_config_overrides_merge_deeply_from_json() -> None:
    # GIVEN overrides as `-c punctual:prod='{...}'` passes them (JSON text)
    overrides = json.dumps(
        {"alarms": {"email": "ops@example.com"}, "queues": {"low": {"batch_size": 2}}}
    )
    # WHEN loaded
    config = load_config("prod", overrides)
    # THEN only the named fields change
    assert config.alarms.email == "ops@example.com"
    assert config.alarms.start_lag_p99_ms == 2000
    assert config.queues["low"].batch_size == 2
    assert config.queues["high"] == ENVIRONMENTS["prod"].queues["high"]


@pytest.mark.parametrize(
    "overrides",
    [
        {"shards": 0},
        {"horizon_seconds": 5},
        {"worker_timeout_seconds": 901},
        {"log_retention_days": 10},
        {"alarms": {"email": "not-an-address"}},
        {"alarms": {"start_lag_datapoints": 9, "start_lag_periods": 5}},
        {"api": {"auth": "api_key"}},
        {"api": {"api_key_tenants": ["acme"]}},
        {"targets": {"sqs_queue_arns": ["*"]}},
        {"queues": {"high": {"max_concurrency": 1}}},
        {"dispatch_shards_per_range": 0},
        # the waiting tick would time out before the answer (its budget is 60 - 10 s)
        {"dispatch_timeout_seconds": 55},
        # fewer than the 4 invocations a dev tick runs at once: some would always be throttled
        {"dispatch_reserved_concurrency": 2},
        # provisioned mode: both bounds, in order, and instead of max_concurrency
        {"queues": {"medium": {"max_concurrency": None, "min_pollers": 5}}},
        {"queues": {"medium": {"min_pollers": 5, "max_pollers": 50}}},
        {"queues": {"medium": {"max_concurrency": None, "min_pollers": 50, "max_pollers": 5}}},
        {"queues": {"medium": {"max_concurrency": None}}},
        {"unknown_field": 1},
    ],
)
def test_config_rejects_invalid_values(overrides: dict[str, object]) -> None:
    # GIVEN an invalid override / WHEN loaded / THEN it fails before anything is synthesized
    with pytest.raises(ValidationError):
        load_config("dev", overrides)


def test_config_rejects_unknown_environment_and_renames() -> None:
    with pytest.raises(ValueError, match="unknown environment"):
        load_config("qa")
    with pytest.raises(ValueError, match="cannot be overridden"):
        load_config("dev", {"name": "prod"})


def test_config_queue_batches_above_ten_need_a_window() -> None:
    with pytest.raises(ValidationError):
        QueueConfig(batch_size=20)
    assert QueueConfig(batch_size=20, max_batching_window_seconds=1).batch_size == 20


def test_config_is_immutable() -> None:
    config = load_config("dev")
    with pytest.raises(ValidationError):
        config.shards = 4  # type: ignore[misc]
    assert isinstance(config, EnvironmentConfig)


def test_config_log_retention_values_are_the_ones_cdk_knows() -> None:
    from infra.constructs.function import retention_days

    for days in LOG_RETENTION_DAYS:
        assert retention_days(days).name


def test_config_from_cdk_context_with_alarm_email_shorthand() -> None:
    from aws_cdk import App

    from infra.app import _overrides

    # GIVEN `-c env=prod -c alarm_email=...` plus a JSON override, as the CLI passes them
    app = App(
        context={
            "env": "prod",
            "alarm_email": "ops@example.com",
            "punctual:prod": json.dumps({"shards": 32}),
        }
    )
    # WHEN the overrides are read / THEN both apply
    config = load_config("prod", _overrides(app, "prod"))
    assert config.alarms.email == "ops@example.com"
    assert config.shards == 32


def test_config_dispatch_concurrency_follows_the_fan_out() -> None:
    # GIVEN the defaults / THEN one reserved dispatch invocation per range a tick runs at once
    assert load_config("prod").dispatch_concurrency == 32
    assert load_config("dev").dispatch_concurrency == 4
    assert load_config("prod", {"dispatch_shards_per_range": 5}).dispatch_concurrency == 7
    # ... at most the 32 a tick invokes in parallel
    assert load_config("prod", {"shards": 64}).dispatch_concurrency == 32
    # AND an explicit reservation is kept, 0 leaving the function unreserved
    assert load_config("prod", {"dispatch_reserved_concurrency": 40}).dispatch_concurrency == 40
    assert load_config("prod", {"dispatch_reserved_concurrency": 0}).dispatch_concurrency is None
