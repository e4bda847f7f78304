"""Fixtures: moto in-process AWS, an injected clock, and the services wired to both."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from shared.aws import AwsClients
from shared.clock import ManualClock, datetime_to_ms
from shared.services.container import Services, build_services, set_services
from shared.settings import Settings
from shared.targets import HandlerRegistry, default_registry
from support.fakes import MemoryQueue
from support.provision import provisioned_settings

START = datetime(2026, 11, 22, 9, 0, 0, tzinfo=UTC)


@dataclass
class LambdaContext:
    """Enough of a Lambda context for Powertools."""

    function_name: str = "punctual-test"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:punctual-test"
    aws_request_id: str = "test-request"

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Never reach a real account, whatever the developer's environment holds.
    for name in list(os.environ):
        if name.startswith(("AWS_", "PUNCTUAL_")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Punctual")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime_to_ms(START))


@pytest.fixture
def lambda_context() -> LambdaContext:
    return LambdaContext()


@pytest.fixture
def handlers() -> HandlerRegistry:
    """A registry with the built-ins; tests add their own handlers to it."""
    registry = HandlerRegistry()
    for name in default_registry.names():
        registry.register(name, default_registry.get(name))
    return registry


_DYNAMODB_LOCK = threading.Lock()


@pytest.fixture(autouse=True, scope="session")
def _serialized_moto_dynamodb() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        serialize_moto_dynamodb(patch)
        yield


def serialize_moto_dynamodb(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto applies a conditional UpdateItem attribute by attribute, without a lock, so two
    threads can both pass the same condition; DynamoDB's single-item writes are atomic. Tests
    that run the worker's records side by side need DynamoDB's behaviour: one request at a
    time, as the local runtime does for moto's server."""
    from moto.dynamodb.responses import DynamoHandler

    original = DynamoHandler.call_action

    def one_at_a_time(self: Any) -> Any:
        with _DYNAMODB_LOCK:
            return original(self)

    monkeypatch.setattr(DynamoHandler, "call_action", one_at_a_time)


@pytest.fixture
def aws() -> Iterator[None]:
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture
def settings(aws: None) -> Settings:
    return provisioned_settings()


@pytest.fixture
def queue(settings: Settings, clock: ManualClock) -> MemoryQueue:
    return MemoryQueue(settings=settings, clock=clock)


@pytest.fixture
def services(
    settings: Settings, clock: ManualClock, handlers: HandlerRegistry, queue: MemoryQueue
) -> Iterator[Services]:
    built = build_services(
        settings=settings,
        clients=AwsClients(settings),
        clock=clock,
        handlers=handlers,
        rand=lambda: 1.0,
        queue=queue,
    )
    set_services(built)
    yield built
    set_services(None)


@pytest.fixture
def effects(handlers: HandlerRegistry) -> list[dict[str, Any]]:
    """Every execution of the `count` handler, the visible side effect of a run: its run id,
    idempotency key (<job_id>:<run_id>), attempt and the time it started."""
    seen: list[dict[str, Any]] = []
    lock = threading.Lock()

    @handlers.handler("count")
    def _count(ctx: Any) -> dict[str, int]:
        with lock:
            seen.append(
                {
                    "run_id": ctx.run_id,
                    "key": ctx.idempotency_key,
                    "attempt": ctx.attempt,
                    "at": ctx.clock.now_ms(),
                }
            )
            return {"n": len(seen)}

    return seen
