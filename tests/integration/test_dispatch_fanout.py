"""Tick fan-out: the tick hands (minute, shard range) work to the dispatch function and moves
its watermark only past minutes every range emptied; the invariants hold as without it."""

from __future__ import annotations

import io
import json

import pytest

from functions.dispatch.handler import lambda_handler as dispatch_handler
from functions.worker.handler import lambda_handler as worker
from shared.clock import parse_rfc3339_ms
from shared.services.ticker import (
    DispatchRange,
    LambdaFanOut,
    ShardResult,
    Ticker,
    split_shards,
)
from shared.storage import keys
from support.api import Api, create_jobs_due_at
from support.fakes import InProcessLambda, bodies, pump

DUE = "2026-11-22T09:10:00Z"


def _jobs_due_at_0910(api: Api, n: int) -> list[str]:
    return create_jobs_due_at(api, DUE, n, handler="count")


def _fanned_out_ticker(services, client: InProcessLambda, per_range: int) -> Ticker:
    return Ticker(
        services.jobs,
        services.dispatcher,
        services.settings,
        services.clock,
        fan_out=LambdaFanOut(client, "punctual-dispatch", max_parallel=1),  # type: ignore[arg-type]
        shards_per_range=per_range,
    )


def test_ticker_fan_out_dispatches_every_due_job_once_and_moves_the_watermark(
    services, queue, clock, effects, lambda_context
):
    # GIVEN 24 jobs due at 09:10, spread over the 16 shards, and a tick fanned out by 4 shards
    api = Api(lambda_context)
    ids = _jobs_due_at_0910(api, 24)
    assert bodies(queue) == []
    client = InProcessLambda(lambda_context)
    ticker = _fanned_out_ticker(services, client, per_range=4)
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    # WHEN it ticks
    report = ticker.tick()
    # THEN each minute went out as 4 ranges of 4 shards, every job was dispatched once
    minutes = len({e["minute"] for e in client.events})
    assert report.ranges == len(client.events) == 4 * minutes
    assert {(e["shard_start"], e["shard_end"]) for e in client.events} == {
        (0, 4),
        (4, 8),
        (8, 12),
        (12, 16),
    }
    assert report.jobs_dispatched == 24
    assert report.errors == 0
    assert sorted(b["job_id"] for b in bodies(queue)) == sorted(ids)
    # ... the watermark moved up to the minute that holds the horizon
    assert report.watermark_after == keys.minute_of(report.until_ms)
    # ... and each runs exactly once at its time
    clock.set(parse_rfc3339_ms(DUE))
    pump(queue, worker, lambda_context)
    assert sorted(e["key"] for e in effects) == sorted(f"{i}:2026-11-22T09:10:00.000Z" for i in ids)


def test_ticker_fan_out_failed_range_keeps_watermark_and_next_tick_catches_up(
    services, queue, clock, effects, lambda_context
):
    # GIVEN 24 jobs due at 09:10 and a dispatch function that times out on shards 0-7
    api = Api(lambda_context)
    ids = _jobs_due_at_0910(api, 24)
    failing = InProcessLambda(lambda_context, fail={0})
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    # WHEN a fanned-out tick runs
    first = _fanned_out_ticker(services, failing, per_range=8).tick()
    # THEN the failed ranges count as errors and the watermark does not pass their minutes
    assert first.errors >= 1
    lost_shards = {keys.shard_of(i, services.settings.shards) for i in ids} & set(range(8))
    if lost_shards:
        assert first.watermark_after is None or first.watermark_after <= keys.minute_of(
            parse_rfc3339_ms(DUE)
        )
    # WHEN the next tick's dispatch function works again
    clock.advance(30)
    second = _fanned_out_ticker(services, InProcessLambda(lambda_context), per_range=8).tick()
    # THEN every job was dispatched and runs exactly once
    assert second.errors == 0
    assert first.jobs_dispatched + second.jobs_dispatched == 24
    clock.set(parse_rfc3339_ms(DUE))
    pump(queue, worker, lambda_context)
    assert sorted(e["key"] for e in effects) == sorted(f"{i}:2026-11-22T09:10:00.000Z" for i in ids)


def test_ticker_drain_stops_at_deadline_without_emptying(services, queue, clock, lambda_context):
    # GIVEN jobs due at 09:10 and a deadline already passed
    api = Api(lambda_context)
    _jobs_due_at_0910(api, 24)
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    minute = keys.minute_of(parse_rfc3339_ms(DUE))
    work = DispatchRange(minute, 0, services.settings.shards, clock.now_ms() + 120_000)
    # WHEN the range is drained
    result = services.ticker.drain(work, deadline_ms=clock.now_ms() - 1)
    # THEN nothing was sent and the range is not reported empty
    assert result.stopped
    assert not result.emptied
    assert bodies(queue) == []


def test_ticker_drain_dispatches_a_whole_range_in_parallel(
    services, queue, clock, effects, lambda_context
):
    # GIVEN 40 jobs due at 09:10
    api = Api(lambda_context)
    ids = _jobs_due_at_0910(api, 40)
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    minute = keys.minute_of(parse_rfc3339_ms(DUE))
    # WHEN one dispatch invocation drains every shard of that minute
    answer = dispatch_handler(
        DispatchRange(minute, 0, services.settings.shards, clock.now_ms() + 120_000).to_event(),
        lambda_context,
    )
    # THEN all 40 were dispatched and committed, once each
    assert answer == {"dispatched": 40, "lost": 0, "errors": 0, "stopped": False}
    assert sorted(b["job_id"] for b in bodies(queue)) == sorted(ids)


def test_lambda_fan_out_keeps_range_order_and_counts_bad_answers_as_errors():
    # GIVEN a client answering a result, a function error and garbage for three ranges
    class Client:
        def invoke(self, *, FunctionName, InvocationType, Payload):
            start = json.loads(Payload)["shard_start"]
            if start == 0:
                body, error = b'{"dispatched": 3, "lost": 1, "errors": 0}', None
            elif start == 1:
                body, error = b'{"errorMessage": "boom"}', "Unhandled"
            else:
                body, error = b"not json", None
            out = {"StatusCode": 200, "Payload": io.BytesIO(body)}
            if error:
                out["FunctionError"] = error
            return out

    fan_out = LambdaFanOut(Client(), "punctual-dispatch")  # type: ignore[arg-type]
    work = [DispatchRange(0, s, s + 1, 0) for s in range(3)]
    # WHEN the three ranges are fanned out in parallel
    results = fan_out(work)
    # THEN results come back in range order; failures never look emptied
    assert results[0] == ShardResult(dispatched=3, lost=1, errors=0)
    assert results[1].errors == 1 and not results[1].emptied
    assert results[2].errors == 1 and not results[2].emptied


def test_dispatch_range_event_round_trips_and_rejects_garbage():
    # GIVEN a range
    work = DispatchRange(60_000 * 29_921_400, 4, 8, 1_795_338_120_000)
    # THEN its event reads back the same, and what is not a range is refused
    assert DispatchRange.from_event(work.to_event()) == work
    for bad in (
        {},
        {"minute": 1, "shard_start": 0, "shard_end": 1, "until": 0},
        {**work.to_event(), "shard_end": 4},
    ):
        with pytest.raises(ValueError, match="dispatch range"):
            DispatchRange.from_event(bad)


def test_split_shards_covers_every_shard_once():
    # GIVEN shard counts and range sizes
    for shards, per in ((16, 1), (16, 4), (32, 5), (3, 8)):
        # WHEN split
        pairs = split_shards(shards, per)
        # THEN the ranges cover 0..shards-1 exactly once, in order
        covered = [s for start, end in pairs for s in range(start, end)]
        assert covered == list(range(shards))
        assert all(end - start <= per for start, end in pairs)


def test_ticker_fan_out_starts_no_minute_that_could_overrun_its_budget(services, clock):
    # GIVEN a fan-out whose every minute takes the full 30 s dispatch timeout, and a 50 s budget
    calls: list[int] = []

    def slow_fan_out(ranges):
        calls.append(ranges[0].minute_ms)
        clock.advance(30)
        return [ShardResult() for _ in ranges]

    ticker = Ticker(
        services.jobs, services.dispatcher, services.settings, clock, fan_out=slow_fan_out
    )
    # WHEN a tick runs over several minutes of the due index
    report = ticker.tick()
    # THEN it stops before a minute that could end past its budget, and says so
    assert len(calls) == 1
    assert report.out_of_time
    assert (clock.now_ms() - report.now_ms) / 1000 <= services.settings.tick_budget_seconds


def test_ticker_drain_keeps_several_chunks_in_flight_and_dispatches_each_job_once(
    services, queue, clock, lambda_context
):
    # GIVEN more jobs due at 09:10 than the chunks one invocation works on at once can hold
    from shared.services.ticker import CHUNKS_IN_FLIGHT, DRAIN_CHUNK

    api = Api(lambda_context)
    total = CHUNKS_IN_FLIGHT * DRAIN_CHUNK + 5
    ids = _jobs_due_at_0910(api, total)
    queue.sent.clear()
    queue.messages.clear()
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z") + 400)
    minute = keys.minute_of(parse_rfc3339_ms(DUE))
    shards = services.settings.shards
    # WHEN one invocation drains every shard of the minute
    result = services.ticker.drain(DispatchRange(minute, 0, shards, clock.now_ms() + 120_000))
    # THEN every job was sent once and committed once, nothing is left due, and every message
    # lands on 09:10:00
    assert (result.dispatched, result.lost, result.errors, result.stopped) == (total, 0, 0, False)
    assert sorted(b["job_id"] for b in bodies(queue)) == sorted(ids)
    assert {q.visible_at_ms for q in queue.sent} == {parse_rfc3339_ms(DUE)}
    for shard in range(shards):
        assert list(services.jobs.query_due(f"{keys.bucket_name(minute)}#{shard:02d}", 2**62)) == []
