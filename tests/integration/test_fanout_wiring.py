"""Fan-out wiring: `build_services` hands the tick a `LambdaFanOut` to the configured dispatch
function (and drains in-process without one), and a tick so built invokes that function once
per range of shards, every due job dispatched once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from functions.dispatch.handler import lambda_handler as dispatch_handler
from shared.aws import AwsClients
from shared.clock import parse_rfc3339_ms
from shared.services.container import Services, build_services
from shared.services.ticker import DispatchRange, LambdaFanOut
from shared.settings import Settings
from shared.storage import keys
from support.api import Api, create_jobs_due_at
from support.fakes import InProcessLambda, bodies

EVENTS = Path(__file__).resolve().parents[2] / "events"
DISPATCH = "punctual-dispatch-test"
DUE = "2026-11-22T09:10:00Z"


class ClientsWithLambda(AwsClients):
    """AWS clients (moto) whose Lambda client is the given one."""

    def __init__(self, settings: Settings, lambda_client: Any) -> None:
        super().__init__(settings)
        self._lambda = lambda_client

    @property
    def lambda_(self) -> Any:
        return self._lambda


def _fanned_out(services: Services, lambda_client: Any, per_range: int) -> Services:
    """Services built as the deployed tick's: the same tables and queue, plus the dispatch
    function's name and range size in the settings."""
    settings = services.settings.model_copy(
        update={"dispatch_function": DISPATCH, "dispatch_shards_per_range": per_range}
    )
    return build_services(
        settings=settings,
        clients=ClientsWithLambda(settings, lambda_client),
        clock=services.clock,
        queue=services.queue,
    )


def _jobs_due_at_0910(api: Api, n: int) -> list[str]:
    return create_jobs_due_at(api, DUE, n, handler="echo")


def test_settings_without_dispatch_function_drain_in_process(services: Services) -> None:
    # GIVEN the default settings (no dispatch function) / THEN the tick does not fan out
    assert services.settings.dispatch_function == ""
    assert services.settings.dispatch_shards_per_range == 1
    assert services.ticker._fan_out is None  # private: the wiring under test


def test_settings_with_dispatch_function_fan_out_to_it(services: Services) -> None:
    # GIVEN settings naming a dispatch function, 4 shards per range
    client = InProcessLambda(None)
    built = _fanned_out(services, client, per_range=4)
    # THEN the tick fans out through the Lambda client to that function, by ranges of 4
    fan_out = built.ticker._fan_out  # private: the wiring under test
    assert isinstance(fan_out, LambdaFanOut)
    assert fan_out._function == DISPATCH
    assert fan_out._client is client
    assert [(r.shard_start, r.shard_end) for r in built.ticker.ranges(0, 0)] == [
        (0, 4),
        (4, 8),
        (8, 12),
        (12, 16),
    ]


def test_settings_read_the_fan_out_from_the_environment(monkeypatch: Any) -> None:
    # GIVEN the variables the stack gives the tick / THEN the settings read them
    monkeypatch.setenv("PUNCTUAL_DISPATCH_FUNCTION", DISPATCH)
    monkeypatch.setenv("PUNCTUAL_DISPATCH_SHARDS_PER_RANGE", "8")
    settings = Settings()
    assert (settings.dispatch_function, settings.dispatch_shards_per_range) == (DISPATCH, 8)


def test_fanned_out_tick_invokes_the_dispatch_function_per_range(
    services: Services, queue: Any, clock: Any, lambda_context: Any
) -> None:
    # GIVEN 20 jobs due at 09:10, and a tick built with a dispatch function, 4 shards a range
    ids = _jobs_due_at_0910(Api(lambda_context), 20)
    assert bodies(queue) == []
    client = InProcessLambda(lambda_context)
    tick = _fanned_out(services, client, per_range=4).ticker
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    # WHEN it ticks
    report = tick.tick()
    # THEN it invoked that function once per range of every minute it walked
    minutes = sorted({event["minute"] for _, event in client.invokes})
    assert {name for name, _ in client.invokes} == {DISPATCH}
    assert len(client.invokes) == report.ranges == 4 * len(minutes)
    for minute in minutes:
        assert sorted(
            (e["shard_start"], e["shard_end"]) for _, e in client.invokes if e["minute"] == minute
        ) == [(0, 4), (4, 8), (8, 12), (12, 16)]
    # AND every due job was dispatched once, and the watermark moved up to the horizon's minute
    assert report.jobs_dispatched == 20
    assert report.errors == 0
    assert sorted(b["job_id"] for b in bodies(queue)) == sorted(ids)
    assert report.watermark_after == keys.minute_of(report.until_ms)


def test_sample_dispatch_event_drains_its_range(
    services: Services, queue: Any, clock: Any, lambda_context: Any
) -> None:
    # GIVEN the sample dispatch event (shards 0-3 of 09:10) and jobs due at 09:10
    event = json.loads((EVENTS / "dispatch_range.json").read_text())
    work = DispatchRange.from_event(event)
    assert work.minute_ms == parse_rfc3339_ms(DUE)
    ids = _jobs_due_at_0910(Api(lambda_context), 24)
    in_range = sorted(i for i in ids if keys.shard_of(i, services.settings.shards) in work.shards)
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    # WHEN the dispatch function is invoked with it
    answer = dispatch_handler(event, lambda_context)
    # THEN exactly the jobs of its shards were dispatched
    assert answer == {"dispatched": len(in_range), "lost": 0, "errors": 0, "stopped": False}
    assert sorted(b["job_id"] for b in bodies(queue)) == in_range
