"""Fixtures for test modules that share one moto backend (import them into the module).

Speed: the moto backend, its tables and queues and the boto3 clients are made once per module
(building them takes most of a second), and every test gets a tenant of its own instead. A
tenant never sees another tenant's jobs or runs, so the tests stay independent; the clock and
the in-memory run queue are still fresh for every test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from shared.aws import AwsClients
from shared.clock import ManualClock
from shared.services.container import Services, build_services, set_services
from shared.settings import Settings
from shared.targets import HandlerRegistry
from support.api import Api
from support.fakes import MemoryQueue
from support.provision import provisioned_settings


@pytest.fixture(scope="module")
def aws() -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture(scope="module")
def settings(aws: None) -> Settings:
    return provisioned_settings()


@pytest.fixture(scope="module")
def clients(settings: Settings) -> AwsClients:
    return AwsClients(settings)


def wire(
    settings: Settings,
    clients: AwsClients,
    clock: ManualClock,
    handlers: HandlerRegistry,
    queue: MemoryQueue,
) -> Services:
    """Build the services on the module's backend and make them the process-wide ones."""
    built = build_services(
        settings=settings,
        clients=clients,
        clock=clock,
        handlers=handlers,
        rand=lambda: 1.0,
        queue=queue,
    )
    set_services(built)
    return built


@pytest.fixture
def services(
    settings: Settings,
    clients: AwsClients,
    clock: ManualClock,
    handlers: HandlerRegistry,
    queue: MemoryQueue,
) -> Iterator[Services]:
    yield wire(settings, clients, clock, handlers, queue)
    set_services(None)


@pytest.fixture
def api(services: Services, lambda_context: Any) -> Api:
    """A client whose tenant no other test uses."""
    return Api(lambda_context, tenant=f"t-{uuid.uuid4().hex}")
