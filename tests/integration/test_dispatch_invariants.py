"""Dispatch invariants: never miss an occurrence, never run one twice (tick, API writers,
misfires, schedule changes), with moto in-process and an injected clock."""

from __future__ import annotations

import threading
from typing import Any

from functions.worker.handler import lambda_handler as worker
from shared.clock import format_ms, parse_rfc3339_ms
from shared.services.container import Services, build_services, set_services
from shared.storage import keys
from support.api import Api
from support.fakes import MemoryQueue, bodies, pump


def _create(api: Api, schedule: str, **extra: Any) -> dict[str, Any]:
    body = {
        "name": extra.pop("name", "job"),
        "schedule": schedule,
        "target": {"type": "handler", "name": "count"},
        **extra,
    }
    resp = api.post("/v1/jobs", body)
    assert resp.status == 201, resp.body
    return resp.body


def _run_until(
    services: Services,
    queue: MemoryQueue,
    clock,
    ctx,
    until_ms: int,
    *,
    tick_every_s: int = 60,
    step_s: float = 1.0,
) -> None:
    """Play the world forward: a tick every minute, the worker draining what is due."""
    next_tick = clock.now_ms()
    while clock.now_ms() <= until_ms:
        if clock.now_ms() >= next_tick:
            services.ticker.tick()
            next_tick += tick_every_s * 1000
        pump(queue, worker, ctx)
        clock.advance(step_s)


def test_dispatch_two_ticks_racing_over_one_bucket_run_once(
    services, queue, clock, effects, lambda_context
):
    # GIVEN a job due at 09:10, beyond what its creation dispatched
    api = Api(lambda_context)
    job = _create(api, "at(2026-11-22T09:10:00Z)")
    assert job["next_fire_at"] == "2026-11-22T09:10:00.000Z"
    assert bodies(queue) == []
    # WHEN two ticks read the same bucket at 09:08:30 and both dispatch the same state item
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    bucket = keys.due_bucket(
        parse_rfc3339_ms("2026-11-22T09:10:00Z"),
        keys.shard_of(job["job_id"], services.settings.shards),
    )
    until = clock.now_ms() + services.settings.horizon_seconds * 1000
    seen_by_a = list(services.jobs.query_due(bucket, until))
    seen_by_b = list(services.jobs.query_due(bucket, until))
    committed_a = services.dispatcher.dispatch(seen_by_a[0], clock.now_ms(), until)
    committed_b = services.dispatcher.dispatch(seen_by_b[0], clock.now_ms(), until)
    # THEN one commit wins, the occurrence is sent twice, and it runs exactly once
    assert (committed_a, committed_b) == (True, False)
    assert [b["run_id"] for b in bodies(queue)] == ["2026-11-22T09:10:00.000Z"] * 2
    clock.set(parse_rfc3339_ms("2026-11-22T09:10:00Z"))
    pump(queue, worker, lambda_context)
    assert [e["run_id"] for e in effects] == ["2026-11-22T09:10:00.000Z"]
    assert effects[0]["at"] == parse_rfc3339_ms("2026-11-22T09:10:00Z")


def test_dispatch_concurrent_ticks_in_threads_run_each_occurrence_once(
    services, queue, clock, effects, lambda_context
):
    # GIVEN twenty jobs due in the same minute, spread over the shards
    api = Api(lambda_context)
    for i in range(20):
        _create(api, f"at(2026-11-22T09:10:{i:02d}Z)", name=f"job-{i}")
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    # WHEN two ticks run at the same time
    threads = [threading.Thread(target=services.ticker.tick) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    clock.set(parse_rfc3339_ms("2026-11-22T09:10:30Z"))
    pump(queue, worker, lambda_context)
    # THEN every occurrence ran exactly once, whatever was sent twice
    assert sorted(e["run_id"] for e in effects) == [
        f"2026-11-22T09:10:{i:02d}.000Z" for i in range(20)
    ]


def test_dispatch_tick_dying_after_send_before_commit_runs_once(
    services, queue, clock, effects, lambda_context, monkeypatch
):
    # GIVEN a job due at 09:10 and a tick that dies right after its send
    api = Api(lambda_context)
    _create(api, "at(2026-11-22T09:10:00Z)")
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    real_commit = services.jobs.commit_dispatch

    def die(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("tick killed between send and commit")

    monkeypatch.setattr(services.jobs, "commit_dispatch", die)
    first = services.ticker.tick()
    # THEN the occurrence was sent, the bucket was not marked done
    assert first.errors == 1
    assert len(bodies(queue)) == 1
    assert first.watermark_after is None or first.watermark_after <= keys.minute_of(
        parse_rfc3339_ms("2026-11-22T09:10:00Z")
    )
    # WHEN the next tick runs normally
    monkeypatch.setattr(services.jobs, "commit_dispatch", real_commit)
    clock.advance(60)
    second = services.ticker.tick()
    assert second.errors == 0
    # THEN it re-sent the occurrence (a duplicate), and the worker absorbed it
    assert len(bodies(queue)) == 2
    clock.set(parse_rfc3339_ms("2026-11-22T09:10:00Z"))
    pump(queue, worker, lambda_context)
    assert [e["run_id"] for e in effects] == ["2026-11-22T09:10:00.000Z"]
    run = api.get(f"/v1/jobs/{bodies(queue)[0]['job_id']}/runs").body["runs"]
    assert [r["status"] for r in run] == ["succeeded"]


def test_dispatch_job_created_between_ticks_inside_horizon_is_sent_by_the_api(
    services, queue, clock, effects, lambda_context
):
    # GIVEN a tick has already passed the buckets up to now + horizon
    services.ticker.tick()
    clock.advance(10)
    # WHEN a job due in 60 s (inside the horizon) is created between ticks
    api = Api(lambda_context)
    job = _create(api, "at(2026-11-22T09:01:10Z)")
    # THEN the API dispatched it itself, with the delay to its due time
    sent = bodies(queue)
    assert [b["run_id"] for b in sent] == ["2026-11-22T09:01:10.000Z"]
    assert queue.sent[0].visible_at_ms == parse_rfc3339_ms("2026-11-22T09:01:10Z")
    assert job["next_fire_at"] is None
    # AND it runs once, on time, even though no tick saw it
    _run_until(services, queue, clock, lambda_context, parse_rfc3339_ms("2026-11-22T09:03:00Z"))
    assert [(e["run_id"], format_ms(e["at"])) for e in effects] == [
        ("2026-11-22T09:01:10.000Z", "2026-11-22T09:01:10.000Z")
    ]


def test_dispatch_job_just_beyond_the_horizon_is_left_to_the_tick(
    services, queue, clock, effects, lambda_context
):
    # GIVEN ticks are running
    services.ticker.tick()
    clock.advance(10)
    # WHEN a job is created due 1 s beyond now + HORIZON + DISPATCH_MARGIN
    s = services.settings
    due = clock.now_ms() + (s.horizon_seconds + s.dispatch_margin_seconds + 1) * 1000
    api = Api(lambda_context)
    job = _create(api, f"at({format_ms(due)})")
    # THEN nothing is sent yet; the job waits in a bucket no tick has passed
    assert bodies(queue) == []
    assert job["next_fire_at"] == format_ms(due)
    watermark = services.jobs.get_watermark()
    assert watermark is not None and watermark <= keys.minute_of(due)
    # AND the ticks dispatch it in time and it runs once, at its due time
    _run_until(services, queue, clock, lambda_context, due + 5_000)
    assert [(e["run_id"], e["at"]) for e in effects] == [(format_ms(due), due)]


def test_dispatch_recurring_job_runs_every_occurrence_once_across_ticks(
    services, queue, clock, effects, lambda_context
):
    # GIVEN rate(7 seconds) created at 09:00:00
    api = Api(lambda_context)
    _create(api, "rate(7 seconds)")
    # WHEN ten minutes pass with a tick every minute
    end = parse_rfc3339_ms("2026-11-22T09:10:00Z")
    _run_until(services, queue, clock, lambda_context, end)
    # THEN every occurrence up to now ran exactly once, on time
    expected = list(range(parse_rfc3339_ms("2026-11-22T09:00:00Z"), end + 1, 7000))
    assert [e["at"] for e in effects] == expected
    assert len({e["run_id"] for e in effects}) == len(effects)


def test_dispatch_tick_outage_follows_fire_once(services, queue, clock, effects, lambda_context):
    # GIVEN a job every minute and the ticks stopped for ten minutes (an outage)
    api = Api(lambda_context)
    _create(api, "cron(* * * * *)", misfire="fire_once")
    clock.set(parse_rfc3339_ms("2026-11-22T09:12:30Z"))
    queue.messages.clear()
    queue.sent.clear()
    # WHEN the tick comes back
    services.ticker.tick()
    # THEN the missed minutes collapse into one catch-up run sent now, then the schedule goes on
    sent = bodies(queue)
    assert sent[0]["run_id"] == "2026-11-22T09:11:00.000Z"
    assert sent[0]["not_before"] == clock.now_ms()
    assert [b["run_id"] for b in sent[1:]] == [
        "2026-11-22T09:12:00.000Z",
        "2026-11-22T09:13:00.000Z",
        "2026-11-22T09:14:00.000Z",
    ]


def test_dispatch_tick_outage_follows_fire_all_and_skip(services, queue, clock, lambda_context):
    # GIVEN two jobs every minute, one fire_all and one skip, and a ten minute outage
    api = Api(lambda_context)
    all_job = _create(api, "cron(* * * * *)", misfire="fire_all", name="all")
    skip_job = _create(api, "cron(* * * * *)", misfire="skip", name="skip")
    clock.set(parse_rfc3339_ms("2026-11-22T09:12:30Z"))
    queue.sent.clear()
    # WHEN the tick comes back
    services.ticker.tick()
    sent = bodies(queue)
    all_runs = [b["run_id"] for b in sent if b["job_id"] == all_job["job_id"]]
    skip_runs = [b["run_id"] for b in sent if b["job_id"] == skip_job["job_id"]]
    # THEN fire_all sends each missed minute; skip sends none of them (grace is 60 s)
    assert all_runs[:8] == [f"2026-11-22T09:{m:02d}:00.000Z" for m in range(4, 12)]
    assert skip_runs[0] == "2026-11-22T09:12:00.000Z"
    assert "2026-11-22T09:11:00.000Z" not in skip_runs


def test_dispatch_resume_after_pause_applies_misfire_policy(
    services, queue, clock, effects, lambda_context
):
    # GIVEN rate(1 minute) paused at 09:00:30 for ten minutes
    api = Api(lambda_context)
    job = _create(api, "rate(1 minute)", misfire="fire_once")
    job_id = job["job_id"]
    clock.set(parse_rfc3339_ms("2026-11-22T09:00:30Z"))
    pump(queue, worker, lambda_context)
    assert api.post(f"/v1/jobs/{job_id}/pause").body["status"] == "paused"
    _run_until(services, queue, clock, lambda_context, parse_rfc3339_ms("2026-11-22T09:10:30Z"))
    during_pause = [e["run_id"] for e in effects]
    # WHEN it is resumed
    assert api.post(f"/v1/jobs/{job_id}/resume").body["status"] == "active"
    pump(queue, worker, lambda_context)
    # THEN nothing ran while paused (in-flight occurrences ended skipped); one catch-up run
    # stands for 09:04-09:09, and 09:10 (30 s late, inside the 60 s grace) runs as usual
    assert during_pause == ["2026-11-22T09:00:00.000Z"]
    runs = {r["run_id"]: r for r in api.get(f"/v1/jobs/{job_id}/runs?limit=100").body["runs"]}
    assert runs["2026-11-22T09:01:00.000Z"]["status"] == "skipped"
    assert runs["2026-11-22T09:01:00.000Z"]["reason"] == "job_paused"
    # (the two run side by side in one batch: their order is not fixed)
    assert sorted(e["run_id"] for e in effects[1:]) == [
        "2026-11-22T09:09:00.000Z",
        "2026-11-22T09:10:00.000Z",
    ]


def test_dispatch_schedule_change_skips_in_flight_occurrences(
    services, queue, clock, effects, lambda_context
):
    # GIVEN rate(30 seconds): its first occurrences are already queued
    api = Api(lambda_context)
    job = _create(api, "rate(30 seconds)")
    job_id = job["job_id"]
    in_flight = [b["run_id"] for b in bodies(queue)]
    assert len(in_flight) == 7  # 09:00:00 .. 09:03:00 (horizon + margin)
    # WHEN the schedule changes to rate(45 seconds) at 09:00:10
    clock.set(parse_rfc3339_ms("2026-11-22T09:00:10Z"))
    pump(queue, worker, lambda_context)
    patched = api.patch(f"/v1/jobs/{job_id}", {"schedule": "rate(45 seconds)"})
    assert patched.status == 200, patched.body
    _run_until(services, queue, clock, lambda_context, parse_rfc3339_ms("2026-11-22T09:03:00Z"))
    # THEN old occurrences after the change ended skipped, the new schedule ran from 09:00:10
    runs = {r["run_id"]: r for r in api.get(f"/v1/jobs/{job_id}/runs?limit=100").body["runs"]}
    assert runs["2026-11-22T09:00:30.000Z"]["status"] == "skipped"
    assert runs["2026-11-22T09:00:30.000Z"]["reason"] == "schedule_changed"
    assert [e["run_id"] for e in effects] == [
        "2026-11-22T09:00:00.000Z",
        "2026-11-22T09:00:10.000Z",
        "2026-11-22T09:00:55.000Z",
        "2026-11-22T09:01:40.000Z",
        "2026-11-22T09:02:25.000Z",
    ]


def test_dispatch_new_schedule_reusing_an_old_occurrence_time_still_runs(
    services, queue, clock, effects, lambda_context
):
    # GIVEN rate(1 minute) with 09:01 and 09:02 already queued
    api = Api(lambda_context)
    job = _create(api, "rate(1 minute)")
    job_id = job["job_id"]
    clock.set(parse_rfc3339_ms("2026-11-22T09:00:30Z"))
    pump(queue, worker, lambda_context)
    # WHEN the schedule changes to a cron that also fires at 09:02
    assert api.patch(f"/v1/jobs/{job_id}", {"schedule": "cron(*/2 * * * *)"}).status == 200
    _run_until(services, queue, clock, lambda_context, parse_rfc3339_ms("2026-11-22T09:02:30Z"))
    # THEN 09:01 (old schedule) is skipped, but 09:02 runs once under the new schedule
    assert [e["run_id"] for e in effects] == [
        "2026-11-22T09:00:00.000Z",
        "2026-11-22T09:02:00.000Z",
    ]


def test_dispatch_cancel_while_occurrences_queued_starts_nothing(
    services, queue, clock, effects, lambda_context
):
    # GIVEN rate(20 seconds) with occurrences already on the queue
    api = Api(lambda_context)
    job = _create(api, "rate(20 seconds)")
    job_id = job["job_id"]
    pump(queue, worker, lambda_context)
    assert len(effects) == 1
    # WHEN it is cancelled
    assert api.post(f"/v1/jobs/{job_id}/cancel").body["status"] == "cancelled"
    _run_until(services, queue, clock, lambda_context, parse_rfc3339_ms("2026-11-22T09:05:00Z"))
    # THEN no further run started; the queued ones ended cancelled
    assert len(effects) == 1
    runs = api.get(f"/v1/jobs/{job_id}/runs?limit=100").body["runs"]
    assert {r["status"] for r in runs[:-1]} == {"cancelled"}
    assert api.get(f"/v1/jobs/{job_id}").body["next_fire_at"] is None


def test_dispatch_send_failure_leaves_the_job_for_the_next_tick(
    services, queue, clock, effects, lambda_context
):
    # GIVEN a job due at 09:10 and SQS failing at the first tick that sees it
    api = Api(lambda_context)
    _create(api, "at(2026-11-22T09:10:00Z)")
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    queue.fail_sends = True
    report = services.ticker.tick()
    assert report.errors == 1
    # WHEN SQS is back for the next tick
    queue.fail_sends = False
    clock.advance(60)
    services.ticker.tick()
    clock.set(parse_rfc3339_ms("2026-11-22T09:10:00Z"))
    pump(queue, worker, lambda_context)
    # THEN the occurrence was not lost
    assert [e["run_id"] for e in effects] == ["2026-11-22T09:10:00.000Z"]


def test_dispatch_end_at_completes_the_job(services, queue, clock, effects, lambda_context):
    # GIVEN rate(1 minute) ending at 09:03
    api = Api(lambda_context)
    job = _create(api, "rate(1 minute)", end_at="2026-11-22T09:03:00Z")
    # WHEN time passes beyond the end
    _run_until(services, queue, clock, lambda_context, parse_rfc3339_ms("2026-11-22T09:05:00Z"))
    # THEN four runs and the job is completed
    assert len(effects) == 4
    assert api.get(f"/v1/jobs/{job['job_id']}").body["status"] == "completed"


def _tick_with_shards(services, queue, clock, handlers, shards: int) -> Services:
    settings = services.settings.model_copy(update={"shards": shards})
    built = build_services(
        settings=settings, clients=services.clients, clock=clock, queue=queue, handlers=handlers
    )
    set_services(built)
    return built


def test_dispatch_tick_sends_many_jobs_together(
    services, queue, clock, effects, lambda_context, monkeypatch, handlers
):
    # GIVEN thirty jobs due in the same minute, in one shard
    single = _tick_with_shards(services, queue, clock, handlers, shards=1)
    api = Api(lambda_context)
    for i in range(30):
        _create(api, f"at(2026-11-22T09:10:{i:02d}Z)", name=f"batch-{i}")
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    sends: list[int] = []
    real_send = queue.send
    monkeypatch.setattr(
        queue, "send", lambda p, out, **kw: (sends.append(len(out)), real_send(p, out, **kw))
    )
    # WHEN one tick dispatches them
    single.ticker.tick()
    # THEN their thirty messages went out in one send (three SQS batches of ten), not thirty
    assert sends == [30]
    clock.set(parse_rfc3339_ms("2026-11-22T09:10:30Z"))
    pump(queue, worker, lambda_context)
    assert len(effects) == 30


def test_dispatch_tick_times_a_partial_chunk_to_land_just_after_due(
    services, queue, clock, lambda_context, handlers
):
    # GIVEN three jobs due on whole seconds, and a tick starting 0.6 s into a second
    single = _tick_with_shards(services, queue, clock, handlers, shards=1)
    api = Api(lambda_context)
    for i in range(3):
        _create(api, f"at(2026-11-22T09:10:{i:02d}Z)", name=f"aligned-{i}")
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z") + 600)
    # WHEN the tick dispatches them (a partial chunk)
    single.ticker.tick()
    # THEN it waited for the next whole second before sending, so each message becomes
    # visible at its due time, not up to a second before it (no hold) nor after it
    assert clock.now_ms() >= parse_rfc3339_ms("2026-11-22T09:08:31Z")
    sent = sorted(queue.sent, key=lambda q: q.message.not_before)
    assert [q.visible_at_ms - q.message.not_before for q in sent] == [0, 0, 0]


def test_dispatch_tick_times_every_chunk(services, queue, clock, lambda_context, handlers):
    # GIVEN more due jobs than one chunk, all in one shard, and a tick 0.6 s into a second
    from shared.services.ticker import DRAIN_CHUNK

    single = _tick_with_shards(services, queue, clock, handlers, shards=1)
    api = Api(lambda_context)
    total = DRAIN_CHUNK + 2
    for i in range(total):
        _create(api, f"at(2026-11-22T09:10:{i % 30:02d}Z)", name=f"full-{i}")
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z") + 600)
    # WHEN the tick dispatches them
    single.ticker.tick()
    # THEN every message lands at its due time, none early
    offsets = [q.visible_at_ms - q.message.not_before for q in queue.sent]
    assert offsets == [0] * total


def test_dispatch_api_send_works_out_the_delay_when_it_sends(
    services, queue, clock, lambda_context
):
    # GIVEN a job due 20 s from now, created 0.9 s into a second (the API does not wait)
    api = Api(lambda_context)
    clock.set(parse_rfc3339_ms("2026-11-22T09:00:10Z") + 900)
    _create(api, "at(2026-11-22T09:00:31Z)", name="api-sent")
    # THEN its 20 s delay, worked out at the send, makes it visible 0.1 s early (the worker
    # holds it): 21 s would be 0.9 s late, beyond the late tolerance
    (sent,) = queue.sent
    assert sent.visible_at_ms - sent.message.not_before == -100


def test_dispatch_with_no_late_tolerance_sends_at_once_and_lands_early(
    services, queue, clock, lambda_context, handlers
):
    # GIVEN no late tolerance (the local runtime's setting), and a tick 0.6 s into a second
    settings = services.settings.model_copy(update={"send_late_tolerance_ms": 0})
    strict = build_services(
        settings=settings, clients=services.clients, clock=clock, queue=queue, handlers=handlers
    )
    set_services(strict)
    queue._settings = settings
    api = Api(lambda_context)
    _create(api, "at(2026-11-22T09:10:00Z)", name="never-late")
    start = parse_rfc3339_ms("2026-11-22T09:08:30Z") + 600
    clock.set(start)
    # WHEN the tick dispatches it
    strict.ticker.tick()
    # THEN it did not wait, and the message lands 0.4 s early (for the worker to hold)
    assert clock.now_ms() == start
    (sent,) = queue.sent
    assert sent.visible_at_ms - sent.message.not_before == -400
