"""Fixtures: the app synthesized per configuration, once per test process."""

from __future__ import annotations

from typing import Any

import pytest
from infra_testing import Synth, synth

# API keys with one usage plan per tenant instead of IAM (SigV4).
API_KEY_OVERRIDES: dict[str, Any] = {
    "api": {
        "auth": "api_key",
        "api_key_tenants": ["acme", "globex"],
        "tenant_requests_per_day": 100_000,
    }
}
# An operator's allow-list of delivery targets: exact ARNs and patterns.
TARGET_OVERRIDES: dict[str, Any] = {
    "targets": {
        "sqs_queue_arns": ["arn:aws:sqs:eu-west-1:123456789012:team-a-*"],
        "sns_topic_arns": ["arn:aws:sns:eu-west-1:123456789012:job-events"],
        "event_bus_arns": ["arn:aws:events:eu-west-1:123456789012:event-bus/default"],
        "lambda_function_arns": ["arn:aws:lambda:eu-west-1:123456789012:function:report-*"],
        "kms_key_arns": [
            "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
        ],
    }
}


@pytest.fixture(scope="session")
def dev() -> Synth:
    return synth("dev")


@pytest.fixture(scope="session")
def prod() -> Synth:
    return synth("prod")


@pytest.fixture(scope="session")
def api_keys() -> Synth:
    return synth("dev", API_KEY_OVERRIDES)


@pytest.fixture(scope="session")
def with_targets() -> Synth:
    return synth("prod", TARGET_OVERRIDES)
