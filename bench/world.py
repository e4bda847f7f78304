"""Punctual in-process on moto, driven through its real handlers, with a controllable clock, a
billing meter on every client, and the SQS event source mapping played by a small pump.

The pump receives and deletes the way Lambda's SQS event source mapping does on AWS (one
ReceiveMessage of up to `batch_size` messages, one worker invocation, one DeleteMessageBatch of
the records that did not fail), so its requests are metered like the project's own. moto's SQS
clock is pointed at the bench clock, so DelaySeconds behave as on AWS while time jumps."""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from bench.cpu import CpuMeter, LogSink
from bench.meter import Meter

NOOP_HANDLER = "bench-noop"
TENANT = "bench"


def prepare_process() -> None:
    """Fake credentials and Powertools defaults, before any handler module is imported."""
    from local.environment import prepare_environment

    prepare_environment()
    for name in [n for n in os.environ if n.startswith("PUNCTUAL_")]:
        del os.environ[name]
    os.environ["POWERTOOLS_TRACE_DISABLED"] = "true"
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Punctual")


@dataclass
class LambdaContext:
    """Enough of a Lambda context for Powertools."""

    function_name: str
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:punctual-bench"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


class BenchClock:
    """A ManualClock that remembers how long the worker held messages (its waits; the tick's
    waits to time its sends are not holds)."""

    def __init__(self, start_ms: int) -> None:
        from shared.clock import ManualClock

        self._clock = ManualClock(start_ms)
        self.held_ms: list[int] = []
        # Whether a wait now is the worker's (set by the World to its meter's phase).
        self.holding: Callable[[], bool] = lambda: True

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def set(self, now_ms: int) -> None:
        self._clock.set(now_ms)

    def advance(self, seconds: float) -> None:
        self._clock.advance(seconds)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            if self.holding():
                self.held_ms.append(round(seconds * 1000))
            self._clock.advance(seconds)

    def sleep_until(self, ms: int) -> None:
        held = ms - self._clock.now_ms()
        if held > 0 and self.holding():
            self.held_ms.append(held)
        self._clock.sleep_until(ms)


@contextmanager
def fast_moto() -> Iterator[None]:
    """Two emulator speed-ups that change no result: skip moto's O(n^2) 400 KB item-size check
    (our items are far below it), and skip the full-table sort moto does before filtering a GSI
    query (it sorts the matching items again afterwards). moto's GSI query still scans every
    item of the table."""
    from moto.dynamodb.models import dynamo_type, table

    saved_set = dynamo_type.LimitedSizeDict.__setitem__
    saved_all = table.Table.all_items

    def all_items(self: Any) -> list[Any]:
        out: list[Any] = []
        for hash_set in self.items.values():
            if self.range_key_attr:
                out.extend(hash_set.values())
            else:
                out.append(hash_set)
        return out

    dynamo_type.LimitedSizeDict.__setitem__ = dict.__setitem__  # type: ignore[method-assign]
    table.Table.all_items = all_items  # type: ignore[method-assign]
    try:
        yield
    finally:
        dynamo_type.LimitedSizeDict.__setitem__ = saved_set  # type: ignore[method-assign]
        table.Table.all_items = saved_all  # type: ignore[method-assign]


@contextmanager
def moto_sqs_time(clock: BenchClock) -> Iterator[None]:
    """moto's SQS decides delays and visibility from its own clock: make it the bench clock."""
    from moto.sqs import models

    saved = models.unix_time, models.unix_time_millis  # type: ignore[attr-defined]

    def unix_time(dt: Any = None) -> float:
        return clock.now_ms() / 1000 if dt is None else saved[0](dt)

    def unix_time_millis(dt: Any = None) -> float:
        return float(clock.now_ms()) if dt is None else saved[1](dt)

    models.unix_time, models.unix_time_millis = unix_time, unix_time_millis  # type: ignore[attr-defined]
    try:
        yield
    finally:
        models.unix_time, models.unix_time_millis = saved  # type: ignore[attr-defined]


@dataclass
class Invocations:
    """Lambda invocations by function, and the CPU each spent (see bench/cpu.py)."""

    counts: dict[str, int] = field(default_factory=lambda: {"api": 0, "tick": 0, "worker": 0})


class World:
    """One moto account with Punctual's tables and queues, the services wired to the bench
    clock, and the handlers. Use as a context manager."""

    def __init__(
        self,
        *,
        start_ms: int,
        shards: int = 16,
        batch_size: int = 1,
        metered: bool = True,
    ) -> None:
        self.clock = BenchClock(start_ms)
        self.shards = shards
        self.batch_size = batch_size
        self.metered = metered
        self.invocations = Invocations()
        self.cpu = CpuMeter()
        self.logs = LogSink()
        self._stack: list[Callable[[], object]] = []
        self._ids = itertools.count()

    # ---- life cycle ---------------------------------------------------------------------

    def __enter__(self) -> World:
        import boto3
        from moto import mock_aws

        mock = mock_aws()
        mock.start()
        self._stack.append(mock.stop)
        for cm in (fast_moto(), moto_sqs_time(self.clock)):
            cm.__enter__()
            self._stack.append(partial(cm.__exit__, None, None, None))

        from shared.aws import AwsClients
        from shared.services.container import build_services, set_services
        from shared.settings import Settings
        from shared.storage.schema import create_queues, create_tables
        from shared.targets import HandlerRegistry, default_registry

        base = Settings(tenant_source="header", shards=self.shards)
        admin = AwsClients(base)
        create_tables(admin.dynamodb, base)
        urls = create_queues(admin.sqs)
        fields: dict[str, Any] = {}
        for priority, (queue_url, dlq_url) in urls.items():
            fields[f"queue_url_{priority}"] = queue_url
            fields[f"dlq_url_{priority}"] = dlq_url
        self.settings = base.model_copy(update=fields)
        self.clients = AwsClients(self.settings)
        self.esm_sqs = boto3.client("sqs", region_name="us-east-1")
        self.meter = Meter(shadow=boto3.client("dynamodb", region_name="us-east-1"))
        self.clock.holding = lambda: self.meter.phase == "worker"
        self.meter.enabled = self.metered
        for client in (self.clients.dynamodb, self.clients.sqs, self.esm_sqs):
            self.meter.attach(client)
        self.queue_arns = {
            p: self.esm_sqs.get_queue_attributes(
                QueueUrl=self.settings.queue_url(p), AttributeNames=["QueueArn"]
            )["Attributes"]["QueueArn"]
            for p in urls
        }
        handlers = HandlerRegistry()
        for name in default_registry.names():
            handlers.register(name, default_registry.get(name))
        # Stands for an HTTP target that answers 200 (its output is {"status": 200} too).
        handlers.register(NOOP_HANDLER, lambda ctx: {"status": 200})
        self.services = build_services(
            settings=self.settings,
            clients=self.clients,
            clock=self.clock,
            handlers=handlers,
            rand=lambda: 1.0,
        )
        set_services(self.services)
        self._stack.append(lambda: set_services(None))
        self.cpu.install(self.meter)
        self._stack.append(self.cpu.uninstall)
        self._stack.append(self.logs.install())
        return self

    def __exit__(self, *exc: object) -> None:
        while self._stack:
            self._stack.pop()()

    # ---- handlers -----------------------------------------------------------------------

    def _invoke(self, function: str, call: Callable[[], Any]) -> Any:
        self.invocations.counts[function] += 1
        with (
            self.meter.in_phase(function),
            self.logs.phase(function),
            self.cpu.measure(function),
            redirect_stdout(self.logs.stream(function)),
        ):
            return call()

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One request through the API handler, as API Gateway would send it."""
        from functions.api.handler import lambda_handler
        from local.apigw import rest_proxy_event

        data = json.dumps(body).encode() if body is not None else None
        event = rest_proxy_event(
            method,
            path,
            body=data,
            headers={"X-Tenant-Id": TENANT, "Content-Type": "application/json"},
        )
        result = self._invoke("api", lambda: lambda_handler(event, LambdaContext("api", 512)))
        text = result.get("body") or ""
        return result["statusCode"], (json.loads(text) if text else None)

    def create_job(self, name: str, schedule: str, **extra: Any) -> str:
        """Create a job with the no-op handler target; returns its id."""
        body = {
            "name": name,
            "schedule": schedule,
            "target": {"type": "handler", "name": NOOP_HANDLER},
            **extra,
        }
        status, job = self.api("POST", "/v1/jobs", body)
        if status != 201:
            raise RuntimeError(f"create {name}: {status} {job}")
        return str(job["job_id"])

    def tick(self) -> dict[str, Any]:
        """One tick, as the EventBridge rule invokes it."""
        from functions.tick.handler import lambda_handler
        from local.lambdas import scheduled_event

        result: dict[str, Any] = self._invoke(
            "tick", lambda: lambda_handler(scheduled_event(), LambdaContext("tick", 512))
        )
        return result

    def pump(self) -> int:
        """Play the event source mapping once over every queue (high first): receive a batch,
        invoke the worker, delete what succeeded. Returns how many records were handed over."""
        from functions.worker.handler import lambda_handler
        from local.pollers import QueueSource, sqs_event

        handed = 0
        for priority in ("high", "medium", "low"):
            url = self.settings.queue_url(priority)
            while True:
                with self.meter.in_phase("esm"):
                    received = self.esm_sqs.receive_message(
                        QueueUrl=url,
                        MaxNumberOfMessages=self.batch_size,
                        WaitTimeSeconds=0,
                        MessageSystemAttributeNames=["All"],
                    ).get("Messages", [])
                if not received:
                    break
                source = QueueSource(priority, url, self.queue_arns[priority], "us-east-1")
                event = sqs_event(source, received)
                context = LambdaContext("worker", 1024)
                result = self._invoke("worker", partial(lambda_handler, event, context))
                failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
                done = [m for m in received if m["MessageId"] not in failed]
                if done:
                    with self.meter.in_phase("esm"):
                        self.esm_sqs.delete_message_batch(
                            QueueUrl=url,
                            Entries=[
                                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                for i, m in enumerate(done)
                            ],
                        )
                handed += len(received)
        return handed

    def run_until(self, end_ms: int, *, tick_at: set[int], step_ms: int = 1000) -> int:
        """Walk the clock to end_ms in steps, ticking at the given instants and pumping the
        queues at every step. Returns the records handed to the worker."""
        handed = 0
        pending = sorted(t for t in tick_at if t >= self.clock.now_ms())
        while self.clock.now_ms() <= end_ms:
            now = self.clock.now_ms()
            while pending and pending[0] <= now:
                pending.pop(0)
                self.tick()
            handed += self.pump()
            # A worker that held a message moved the clock already: never step back.
            self.clock.set(max(self.clock.now_ms(), now + step_ms))
        return handed
