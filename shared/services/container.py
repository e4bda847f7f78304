"""Wiring: builds every service from settings, clients and a clock (cached per process)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from shared.aws import AwsClients
from shared.clock import Clock, SystemClock
from shared.constants import PRIORITIES
from shared.models.api import QueueDepth
from shared.services.dispatcher import Dispatcher
from shared.services.executor import Executor
from shared.services.jobs import JobService
from shared.services.notify import Notifier
from shared.services.queue import RunQueue
from shared.services.ticker import LambdaFanOut, Ticker
from shared.settings import Settings, get_settings
from shared.storage.jobs import JobStore
from shared.storage.runs import RunStore
from shared.targets import HandlerRegistry


@dataclass(frozen=True)
class Services:
    """Everything a handler needs."""

    settings: Settings
    clients: AwsClients
    clock: Clock
    jobs: JobStore
    runs: RunStore
    queue: RunQueue
    dispatcher: Dispatcher
    ticker: Ticker
    executor: Executor
    job_service: JobService


def queue_depths(clients: AwsClients, settings: Settings) -> dict[str, QueueDepth]:
    """Approximate depth of every priority's work and dead-letter queue."""
    out: dict[str, QueueDepth] = {}
    for priority in PRIORITIES:
        work = clients.sqs.get_queue_attributes(
            QueueUrl=settings.queue_url(priority),
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        dead = clients.sqs.get_queue_attributes(
            QueueUrl=settings.dlq_url(priority), AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        out[priority] = QueueDepth(
            visible=int(work.get("ApproximateNumberOfMessages", 0)),
            in_flight=int(work.get("ApproximateNumberOfMessagesNotVisible", 0)),
            delayed=int(work.get("ApproximateNumberOfMessagesDelayed", 0)),
            dead_letter=int(dead.get("ApproximateNumberOfMessages", 0)),
        )
    return out


def build_ticker(
    jobs: JobStore, dispatcher: Dispatcher, settings: Settings, clients: AwsClients, clock: Clock
) -> Ticker:
    """The tick: fanned out to the dispatch function when one is configured, else draining
    every shard in-process."""
    if not settings.dispatch_function:
        return Ticker(jobs, dispatcher, settings, clock)
    return Ticker(
        jobs,
        dispatcher,
        settings,
        clock,
        fan_out=LambdaFanOut(clients.lambda_, settings.dispatch_function),
        shards_per_range=settings.dispatch_shards_per_range,
    )


def build_services(
    settings: Settings | None = None,
    clients: AwsClients | None = None,
    clock: Clock | None = None,
    handlers: HandlerRegistry | None = None,
    rand: Callable[[], float] | None = None,
    queue: RunQueue | None = None,
) -> Services:
    """Build the object graph. Tests pass their own clock, clients and handler registry."""
    settings = settings or get_settings()
    clients = clients or AwsClients(settings)
    clock = clock or SystemClock()
    jobs = JobStore(clients.dynamodb, settings.jobs_table, settings.shards)
    runs = RunStore(clients.dynamodb, settings.runs_table, settings.run_retention_days)
    queue = queue or RunQueue(clients.sqs, settings, clock)
    dispatcher = Dispatcher(jobs, queue, settings)
    executor = Executor(
        jobs=jobs,
        runs=runs,
        queue=queue,
        dispatcher=dispatcher,
        clients=clients,
        settings=settings,
        clock=clock,
        handlers=handlers,
        notifier=Notifier(clients.sns),
        rand=rand,
    )
    job_service = JobService(
        jobs=jobs,
        runs=runs,
        dispatcher=dispatcher,
        settings=settings,
        clock=clock,
        queue_depths=lambda: queue_depths(clients, settings),
    )
    return Services(
        settings=settings,
        clients=clients,
        clock=clock,
        jobs=jobs,
        runs=runs,
        queue=queue,
        dispatcher=dispatcher,
        ticker=build_ticker(jobs, dispatcher, settings, clients, clock),
        executor=executor,
        job_service=job_service,
    )


_services: Services | None = None
_lock = threading.Lock()


def get_services() -> Services:
    """The process-wide services, built on first use (never at import time)."""
    global _services
    with _lock:
        if _services is None:
            _services = build_services()
        return _services


def set_services(services: Services | None) -> None:
    """Replace the process-wide services (tests, local runtime)."""
    global _services
    with _lock:
        _services = services
