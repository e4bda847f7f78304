"""Worker invariants and policies: leases, duplicates, retries with backoff, dead letters,
permanent failures, overlap, hops, orphans, dependencies, notifications."""

from __future__ import annotations

import json
from typing import Any

import pytest

from functions.worker.handler import lambda_handler as worker
from shared.clock import format_ms, parse_rfc3339_ms
from shared.models.messages import RunMessage
from shared.services.container import Services, build_services
from shared.targets import RetryableDeliveryError
from support.api import Api
from support.fakes import MemoryQueue, pump


class WorkerCrash(BaseException):
    """Stands for the worker process dying mid-run (not an error the code may catch)."""


def _create(api: Api, **body: Any) -> dict[str, Any]:
    body.setdefault("name", "job")
    body.setdefault("schedule", "now")
    body.setdefault("target", {"type": "handler", "name": "count"})
    resp = api.post("/v1/jobs", body)
    assert resp.status == 201, resp.body
    return resp.body


def _runs(api: Api, job_id: str) -> list[dict[str, Any]]:
    return api.get(f"/v1/jobs/{job_id}/runs?limit=100").body["runs"]


def _message(queue: MemoryQueue, index: int = 0) -> RunMessage:
    return queue.sent[index].message


def _other_worker(services: Services, queue: MemoryQueue, clock, handlers) -> Services:
    """A second worker process: same AWS, its own owner id."""
    return build_services(
        settings=services.settings,
        clients=services.clients,
        clock=clock,
        handlers=handlers,
        rand=lambda: 1.0,
        queue=queue,
    )


def test_worker_duplicate_message_for_finished_run_has_no_second_effect(
    services, queue, clock, effects, lambda_context
):
    # GIVEN a run that finished
    api = Api(lambda_context)
    job = _create(api)
    msg = _message(queue)
    pump(queue, worker, lambda_context)
    assert len(effects) == 1
    # WHEN SQS delivers the same message again
    result = services.executor.process(msg, "medium")
    # THEN it is counted as a prevented duplicate and the target is not called again
    assert result.action == "duplicate"
    assert len(effects) == 1
    assert [r["status"] for r in _runs(api, job["job_id"])] == ["succeeded"]


def test_worker_duplicate_while_running_is_dropped(
    services, queue, clock, handlers, lambda_context
):
    # GIVEN a run held by a worker that is still inside the target
    api = Api(lambda_context)
    calls: list[str] = []
    other = _other_worker(services, queue, clock, handlers)

    @handlers.handler("reenter")
    def _reenter(ctx):
        calls.append(ctx.run_id)
        # WHEN the duplicate arrives at a second worker meanwhile
        inner = other.executor.process(msg, "medium")
        assert inner.action == "duplicate"
        assert inner.status is not None and inner.status.value == "running"
        return

    _create(api, target={"type": "handler", "name": "reenter"})
    msg = _message(queue)
    services.executor.process(msg, "medium")
    # THEN the target ran once
    assert len(calls) == 1


def test_worker_dying_mid_run_is_taken_over_after_the_lease(
    services, queue, clock, handlers, effects, lambda_context
):
    # GIVEN a handler that kills its worker the first time
    api = Api(lambda_context)
    crashed: list[int] = []

    @handlers.handler("crash-once")
    def _crash_once(ctx):
        if not crashed:
            crashed.append(ctx.attempt)
            raise WorkerCrash()
        return "done"

    job = _create(api, target={"type": "handler", "name": "crash-once"}, timeout_seconds=60)
    msg = _message(queue)
    with pytest.raises(WorkerCrash):
        services.executor.process(msg, "medium")
    run = _runs(api, job["job_id"])[0]
    assert run["status"] == "running"
    # WHEN SQS redelivers before the lease expires, another worker leaves it alone
    other = _other_worker(services, queue, clock, handlers)
    clock.advance(30)
    assert other.executor.process(msg, "medium").action == "duplicate"
    # AND after the lease (timeout 60 s + margin 30 s) it takes the run over
    clock.advance(61)
    result = other.executor.process(msg, "medium")
    # THEN the run succeeds on attempt 2 and the lost attempt is recorded as such
    assert result.action == "claimed"
    run = _runs(api, job["job_id"])[0]
    assert run["status"] == "succeeded"
    assert [(a["attempt"], a["status"]) for a in run["attempts"]] == [(1, "lost"), (2, "succeeded")]
    assert run["attempts"][0]["error_code"] == "lease_expired"


def test_worker_that_lost_its_lease_cannot_overwrite_the_new_owner(
    services, queue, clock, handlers, lambda_context
):
    # GIVEN a slow worker whose lease expires while its target still runs
    api = Api(lambda_context)
    other = _other_worker(services, queue, clock, handlers)
    outcomes: list[str] = []

    @handlers.handler("slow")
    def _slow(ctx):
        if not outcomes:
            outcomes.append("slow-start")
            clock.advance(100)  # past timeout (60) + margin (30)
            # the message is redelivered and another worker runs it to the end
            inner = other.executor.process(msg, "medium")
            outcomes.append(inner.status.value if inner.status else inner.action)
            raise RetryableDeliveryError("late_failure", "the slow worker fails after all")
        return "fast"

    job = _create(api, target={"type": "handler", "name": "slow"}, timeout_seconds=60)
    msg = _message(queue)
    result = services.executor.process(msg, "medium")
    # THEN the slow worker's late failure is fenced off; the new owner's success stands
    assert outcomes == ["slow-start", "succeeded"]
    assert result.action == "stale"
    run = _runs(api, job["job_id"])[0]
    assert run["status"] == "succeeded"
    # AND the retry it sent before it found out (send-then-commit) is absorbed as a duplicate
    stray = [q.message for q in queue.sent if q.message.attempt > 1]
    assert len(stray) == 1
    assert services.executor.process(stray[0], "medium").action == "duplicate"
    assert _runs(api, job["job_id"])[0]["status"] == "succeeded"


def test_worker_retries_with_exponential_backoff_then_dead_letters(
    services, queue, clock, lambda_context
):
    # GIVEN a job that always fails retryably, 4 attempts, base 2 s, no jitter
    api = Api(lambda_context)
    job = _create(
        api,
        target={"type": "handler", "name": "fail"},
        retry={"max_attempts": 4, "base_delay_seconds": 2, "max_delay_seconds": 5, "jitter": False},
    )
    start = clock.now_ms()
    # WHEN the worker runs each attempt when it becomes due
    starts: list[int] = []
    for _ in range(4):
        due = queue.due()
        assert len(due) == 1
        pump(queue, worker, lambda_context)
        starts.append(clock.now_ms() - start)
        upcoming = [q for q in queue.messages if q.url == services.settings.queue_url("medium")]
        if upcoming:
            clock.set(upcoming[0].visible_at_ms)
    # THEN attempts started at 0, 2, 6 (2+4) and 11 (6+min(8, 5)) seconds
    assert starts == [0, 2000, 6000, 11000]
    run = _runs(api, job["job_id"])[0]
    assert run["status"] == "dead"
    assert [a["status"] for a in run["attempts"]] == ["failed"] * 4
    assert {a["error_code"] for a in run["attempts"]} == {"handler_failed"}
    # AND the message went to the medium dead-letter queue, and the run is listed as dead
    dead_letters = queue.on(services.settings.dlq_url("medium"))
    assert [q.message.run_id for q in dead_letters] == [run["run_id"]]
    listed = api.get("/v1/dead-letters").body["runs"]
    assert [r["run_id"] for r in listed] == [run["run_id"]]


def test_worker_retry_records_next_attempt_time(services, queue, clock, lambda_context):
    # GIVEN a failing job with base delay 10 s and no jitter
    api = Api(lambda_context)
    job = _create(
        api,
        target={"type": "handler", "name": "fail"},
        retry={"max_attempts": 3, "base_delay_seconds": 10, "jitter": False},
    )
    # WHEN the first attempt fails
    pump(queue, worker, lambda_context)
    # THEN the run is retrying with its next attempt 10 s later, sent with a 10 s delay
    run = _runs(api, job["job_id"])[0]
    assert run["status"] == "retrying"
    assert run["next_attempt_at"] == format_ms(clock.now_ms() + 10_000)
    retry = queue.sent[-1]
    assert retry.message.attempt == 2
    assert retry.visible_at_ms == clock.now_ms() + 10_000


def test_worker_full_jitter_draws_within_the_cap(services, queue, clock, handlers, lambda_context):
    # GIVEN a worker whose random source returns 0.25
    jittery = build_services(
        settings=services.settings,
        clients=services.clients,
        clock=clock,
        handlers=handlers,
        rand=lambda: 0.25,
        queue=queue,
    )
    api = Api(lambda_context)
    _create(
        api,
        target={"type": "handler", "name": "fail"},
        retry={"max_attempts": 3, "base_delay_seconds": 8, "jitter": True},
    )
    # WHEN the first attempt fails
    jittery.executor.process(_message(queue), "medium")
    # THEN the delay is a quarter of the 8 s cap
    assert queue.sent[-1].message.not_before == clock.now_ms() + 2_000


def test_worker_permanent_error_fails_at_once(services, queue, clock, lambda_context):
    # GIVEN a job that fails permanently
    api = Api(lambda_context)
    job = _create(api, target={"type": "handler", "name": "fail"}, payload={"permanent": True})
    # WHEN it runs
    pump(queue, worker, lambda_context)
    # THEN one attempt, failed, no retry and no dead letter; a one-shot job is failed
    run = _runs(api, job["job_id"])[0]
    assert run["status"] == "failed"
    assert len(run["attempts"]) == 1
    assert len(queue.sent) == 1
    assert queue.on(services.settings.dlq_url("medium")) == []
    assert api.get(f"/v1/jobs/{job['job_id']}").body["status"] == "failed"


def test_worker_backoff_longer_than_sqs_delay_hops(services, queue, clock, lambda_context):
    # GIVEN a failing job whose backoff is 1,500 s (over SQS's 900 s)
    api = Api(lambda_context)
    job = _create(
        api,
        target={"type": "handler", "name": "fail"},
        retry={"max_attempts": 2, "base_delay_seconds": 1500, "jitter": False},
    )
    pump(queue, worker, lambda_context)
    t0 = clock.now_ms()
    first_retry = queue.sent[-1]
    assert first_retry.visible_at_ms == t0 + 900_000
    # WHEN the message arrives after 900 s, it is re-sent with the remaining 600 s
    clock.set(first_retry.visible_at_ms)
    pump(queue, worker, lambda_context)
    hop = queue.sent[-1]
    assert hop.visible_at_ms == t0 + 1_500_000
    assert _runs(api, job["job_id"])[0]["status"] == "retrying"
    # THEN the attempt runs at 1,500 s, not before
    clock.set(hop.visible_at_ms)
    pump(queue, worker, lambda_context)
    run = _runs(api, job["job_id"])[0]
    assert run["status"] == "dead"
    assert parse_rfc3339_ms(run["attempts"][1]["started_at"]) == t0 + 1_500_000


def test_worker_holds_a_slightly_early_message_until_due(
    services, queue, clock, effects, lambda_context
):
    # GIVEN a job due at 09:00:05.400, whose message SQS delivers at 09:00:05 (whole seconds)
    api = Api(lambda_context)
    _create(api, schedule="at(2026-11-22T09:00:05.400Z)")
    assert queue.sent[0].visible_at_ms == parse_rfc3339_ms("2026-11-22T09:00:05Z")
    clock.set(queue.sent[0].visible_at_ms)
    # WHEN the worker receives it
    pump(queue, worker, lambda_context)
    # THEN the target starts exactly at the due time
    assert [format_ms(e["at"]) for e in effects] == ["2026-11-22T09:00:05.400Z"]


def test_worker_overlap_skip_skips_while_another_run_holds_the_slot(
    services, queue, clock, effects, lambda_context
):
    # GIVEN an overlap=skip job whose previous run is still running
    api = Api(lambda_context)
    job = _create(api, overlap="skip")
    services.jobs.acquire_slot(
        job["job_id"], "previous-run", clock.now_ms() + 60_000, clock.now_ms()
    )
    # WHEN its next occurrence arrives
    pump(queue, worker, lambda_context)
    # THEN it is skipped and the target is not called
    run = _runs(api, job["job_id"])[0]
    assert (run["status"], run["reason"]) == ("skipped", "overlap")
    assert effects == []


def test_worker_overlap_buffer_one_waits_then_runs(services, queue, clock, effects, lambda_context):
    # GIVEN an overlap=buffer_one job whose previous run is still running
    api = Api(lambda_context)
    job = _create(
        api, schedule="rate(1 second)", overlap="buffer_one", end_at="2026-11-22T09:00:01Z"
    )
    job_id = job["job_id"]
    services.jobs.acquire_slot(job_id, "previous-run", clock.now_ms() + 60_000, clock.now_ms())
    # WHEN two occurrences arrive while it runs
    clock.set(parse_rfc3339_ms("2026-11-22T09:00:01Z"))
    pump(queue, worker, lambda_context)
    # THEN one waits (queued) and the other is skipped
    statuses = sorted(r["status"] for r in _runs(api, job_id))
    assert statuses == ["queued", "skipped"]
    # AND once the previous run ends, the buffered one runs
    services.jobs.release_slot(job_id, "previous-run")
    clock.advance(2)
    pump(queue, worker, lambda_context)
    assert sorted(r["status"] for r in _runs(api, job_id)) == ["skipped", "succeeded"]
    assert len(effects) == 1


def test_worker_message_faster_than_its_create_runs_once_the_job_exists(
    services, queue, clock, effects, lambda_context, monkeypatch
):
    # GIVEN a create whose first occurrence reaches the worker before the job is committed
    api = Api(lambda_context)
    real_create = services.jobs.create
    held: list[tuple[Any, ...]] = []
    monkeypatch.setattr(services.jobs, "create", lambda *a: held.append(a))
    created = api.post(
        "/v1/jobs",
        {"name": "racy", "schedule": "now", "target": {"type": "handler", "name": "count"}},
    )
    assert created.status == 201
    # WHEN the worker gets the message first
    first = services.executor.process(_message(queue), "medium")
    # THEN it does not run it and does not drop it: it looks again a second later
    assert first.action == "hop"
    assert effects == []
    assert services.runs.get(created.body["job_id"], _message(queue).run_id) is None
    # AND once the create has committed, the occurrence runs
    real_create(*held[0])
    queue.messages.remove(queue.sent[0])
    clock.advance(1)
    pump(queue, worker, lambda_context)
    assert [e["run_id"] for e in effects] == [_message(queue).run_id]


def test_worker_orphan_message_leaves_no_run(services, queue, clock, effects, lambda_context):
    # GIVEN a message, sent ten minutes ago, for a job whose create never committed
    sent_at = clock.now_ms() - 600_000
    msg = RunMessage(
        job_id="0000000000000000000000",
        tenant_id="default",
        run_id=format_ms(sent_at),
        scheduled_for=sent_at,
        schedule_version=1,
        not_before=sent_at,
        dispatched_at=sent_at,
    )
    # WHEN the worker receives it
    result = services.executor.process(msg, "medium")
    # THEN nothing runs and no run item is left behind
    assert result.action == "orphan"
    assert effects == []
    assert services.runs.get(msg.job_id, msg.run_id) is None


def test_worker_idempotency_key_is_job_and_run(services, queue, clock, effects, lambda_context):
    # GIVEN a job
    api = Api(lambda_context)
    job = _create(api)
    # WHEN it runs
    pump(queue, worker, lambda_context)
    # THEN the target saw <job_id>:<run_id>
    run = _runs(api, job["job_id"])[0]
    assert effects[0]["key"] == f"{job['job_id']}:{run['run_id']}"


def test_worker_dependency_triggers_dependent_job(services, queue, clock, effects, lambda_context):
    # GIVEN job B depends on job A
    api = Api(lambda_context)
    upstream = _create(api, name="a", schedule="at(2026-11-22T09:00:30Z)")
    dependent = _create(
        api, name="b", schedule="at(2026-11-30T00:00:00Z)", depends_on=[upstream["job_id"]]
    )
    # WHEN A's run succeeds
    clock.set(parse_rfc3339_ms("2026-11-22T09:00:30Z"))
    pump(queue, worker, lambda_context)
    # THEN B ran once, with trigger dependency
    b_runs = _runs(api, dependent["job_id"])
    assert [(r["trigger"], r["status"]) for r in b_runs] == [("dependency", "succeeded")]
    assert len(effects) == 2


def test_worker_notifies_webhook_and_sns_on_dead(services, queue, clock, lambda_context):
    # GIVEN an SNS topic with an SQS subscriber, and a job that dies after one attempt
    sns, sqs = services.clients.sns, services.clients.sqs
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    inbox = sqs.create_queue(QueueName="inbox")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=inbox_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    api = Api(lambda_context)
    job = _create(
        api,
        target={"type": "handler", "name": "fail"},
        retry={"max_attempts": 1},
        notify={"on": ["dead"], "sns_topic_arn": topic},
    )
    # WHEN it runs
    pump(queue, worker, lambda_context)
    # THEN a run_finished notification arrived with status dead
    messages = sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", [])
    assert len(messages) == 1
    note = json.loads(messages[0]["Body"])
    assert (note["job_id"], note["status"]) == (job["job_id"], "dead")


def test_worker_malformed_message_is_dropped_not_retried(services, queue, clock, lambda_context):
    # GIVEN a message whose body is not a run message
    from support.fakes import Queued

    queue.messages.append(
        Queued(999, services.settings.queue_url("low"), "{not json", clock.now_ms())
    )
    # WHEN the worker receives it
    pump(queue, worker, lambda_context)
    # THEN it is deleted (not reported as a batch failure)
    assert queue.messages == []


def test_worker_aws_failure_reports_batch_item_failure(
    services, queue, clock, effects, lambda_context, monkeypatch
):
    # GIVEN DynamoDB failing for the claim of one message
    api = Api(lambda_context)
    _create(api, name="a")
    _create(api, name="b")
    real_claim = services.runs.claim
    failed_once: list[str] = []

    def flaky_claim(msg, **kw):
        if not failed_once:
            failed_once.append(msg.run_id)
            raise ConnectionError("DynamoDB unreachable")
        return real_claim(msg, **kw)

    monkeypatch.setattr(services.runs, "claim", flaky_claim)
    # WHEN the batch is processed
    due = queue.due()
    for q in due:
        queue.receive(q)
    from support.fakes import sqs_event

    result = worker(sqs_event(queue, due), lambda_context)
    # THEN only that message is reported failed; the other ran
    assert [f["itemIdentifier"] for f in result["batchItemFailures"]] == [str(due[0].id)]
    assert len(effects) == 1


def test_worker_heartbeat_extends_lease_and_visibility_until_lost(
    services, queue, clock, lambda_context
):
    # GIVEN a run claimed by worker w1 with a 90 s lease
    from shared.services.executor import Heartbeat

    api = Api(lambda_context)
    _create(api, timeout_seconds=60)
    msg = _message(queue)
    start = clock.now_ms()
    claim = services.runs.claim(
        msg, owner="w1", now_ms=start, lease_until_ms=start + 90_000, priority="medium"
    )
    assert claim.run is not None
    visibility: list[int] = []
    heartbeat = Heartbeat(services.runs, claim.run, "w1", clock, 90_000, visibility.append)
    # WHEN it beats 50 s later
    clock.advance(50)
    # THEN the lease and the message visibility are pushed out by one lease
    assert heartbeat.beat()
    assert services.runs.get(msg.job_id, msg.run_id).lease_expires_at_ms == start + 140_000
    assert visibility == [90]
    assert heartbeat.interval_seconds == 20.0
    # AND once another worker took the run over, a beat reports the lease lost
    clock.advance(141)
    assert services.runs.claim(
        msg,
        owner="w2",
        now_ms=clock.now_ms(),
        lease_until_ms=clock.now_ms() + 90_000,
        priority="medium",
    ).claimed
    assert not heartbeat.beat()
    assert heartbeat.lost


def test_worker_message_from_a_resume_not_yet_committed_waits_for_it(
    services, queue, clock, effects, lambda_context, monkeypatch
):
    # GIVEN a paused job, and a resume that has sent its first occurrence but not committed
    api = Api(lambda_context)
    job = _create(api, schedule="rate(1 hour)")
    pump(queue, worker, lambda_context)
    api.post(f"/v1/jobs/{job['job_id']}/pause")
    clock.set(parse_rfc3339_ms("2026-11-22T10:00:30Z"))
    real_change = services.jobs.change_status
    held: list[tuple[Any, ...]] = []
    monkeypatch.setattr(services.jobs, "change_status", lambda *a: held.append(a))
    assert api.post(f"/v1/jobs/{job['job_id']}/resume").status == 200
    # WHEN the worker gets the occurrence before the resume lands
    sent = queue.sent[-1].message
    assert services.executor.process(sent, "medium").action == "hop"
    queue.messages.remove(queue.sent[-2])
    # THEN it is not skipped: once the resume lands, it runs
    real_change(*held[0])
    clock.advance(1)
    pump(queue, worker, lambda_context)
    assert [e["run_id"] for e in effects] == ["2026-11-22T09:00:00.000Z", sent.run_id]


def test_worker_message_from_a_schedule_change_not_yet_committed_waits_for_it(
    services, queue, clock, effects, lambda_context, monkeypatch
):
    # GIVEN rate(1 hour), changed to rate(5 seconds) by a PATCH that has sent but not committed
    api = Api(lambda_context)
    job = _create(api, schedule="rate(1 hour)")
    pump(queue, worker, lambda_context)
    clock.advance(10)
    real_update = services.jobs.update_definition
    held: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    monkeypatch.setattr(services.jobs, "update_definition", lambda *a, **k: held.append((a, k)))
    assert api.patch(f"/v1/jobs/{job['job_id']}", {"schedule": "rate(5 seconds)"}).status == 200
    first_new = next(q for q in queue.sent if q.message.schedule_version > 1)
    # WHEN the worker gets the new schedule's first occurrence before the PATCH lands
    assert services.executor.process(first_new.message, "medium").action == "hop"
    queue.messages.remove(first_new)
    # THEN once it lands, the occurrence runs under the new schedule
    args, kwargs = held[0]
    real_update(*args, **kwargs)
    clock.advance(1)
    pump(queue, worker, lambda_context)
    assert first_new.message.run_id in [e["run_id"] for e in effects]


def test_worker_message_from_a_write_that_lost_is_dropped_without_a_trace(
    services, queue, clock, effects, lambda_context, monkeypatch
):
    # GIVEN a PATCH that sent the new schedule's occurrences and then lost its commit
    api = Api(lambda_context)
    job = _create(api, schedule="rate(1 hour)")
    pump(queue, worker, lambda_context)
    clock.advance(10)
    monkeypatch.setattr(services.jobs, "update_definition", lambda *a, **k: None)
    api.patch(f"/v1/jobs/{job['job_id']}", {"schedule": "rate(5 seconds)"})
    stray = next(q for q in queue.sent if q.message.schedule_version > 1)
    # WHEN one of its messages arrives after the settle window
    clock.advance(31)
    result = services.executor.process(stray.message, "medium")
    # THEN nothing runs and no run is recorded for it
    assert result.action == "stale"
    assert services.runs.get(job["job_id"], stray.message.run_id) is None
    assert len(effects) == 1


def test_worker_message_from_a_tick_that_lost_to_a_pause_is_skipped_at_once(
    services, queue, clock, effects, lambda_context
):
    # GIVEN a tick that read the job active, then a pause that committed before its send
    api = Api(lambda_context)
    job = _create(api, schedule="at(2026-11-22T09:10:00Z)")
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    seen_by_tick = services.jobs.get_state(job["job_id"])
    assert api.post(f"/v1/jobs/{job['job_id']}/pause").status == 200
    until = clock.now_ms() + services.settings.horizon_seconds * 1000
    assert services.dispatcher.dispatch(seen_by_tick, clock.now_ms(), until) is False
    # WHEN its message arrives
    clock.set(parse_rfc3339_ms("2026-11-22T09:10:00Z"))
    result = services.executor.process(queue.sent[-1].message, "medium")
    # THEN the run ends skipped at once (no waiting for a write that will never land)
    assert result.action == "claimed"
    run = _runs(api, job["job_id"])[0]
    assert (run["status"], run["reason"]) == ("skipped", "job_paused")
    assert effects == []


@pytest.mark.parametrize("strict", [False, True])
def test_worker_reads_the_job_eventually_consistent_unless_told_or_the_message_is_fresh(
    services, queue, clock, effects, lambda_context, monkeypatch, strict
):
    # GIVEN the worker's read setting and an hourly job whose first run has been
    settings = services.settings.model_copy(update={"consistent_job_reads": strict})
    monkeypatch.setattr(services.executor, "_settings", settings)
    reads: list[bool] = []
    real_get = services.jobs.get

    def spy(job_id: str, *, consistent: bool = True):
        reads.append(consistent)
        return real_get(job_id, consistent=consistent)

    api = Api(lambda_context)
    job = _create(api, schedule="rate(1 hour)")
    monkeypatch.setattr(services.jobs, "get", spy)
    pump(queue, worker, lambda_context)
    # THEN the run of a message the API has just sent reads the job strongly consistent (its
    # write may have only just landed)
    assert reads == [True]
    # WHEN the tick sends the next occurrence 90 s ahead and it runs when due
    reads.clear()
    clock.set(parse_rfc3339_ms("2026-11-22T09:58:30Z"))
    services.ticker.tick()
    clock.set(parse_rfc3339_ms("2026-11-22T10:00:00Z"))
    pump(queue, worker, lambda_context)
    # THEN that run reads it eventually consistent, unless the setting asks otherwise
    assert reads == [strict]
    assert len(effects) == 2
    # WHEN a pause and a resume are answered, the resume's occurrence sent but not yet landed
    api.post(f"/v1/jobs/{job['job_id']}/pause")
    clock.set(parse_rfc3339_ms("2026-11-22T11:00:30Z"))
    real_change = services.jobs.change_status
    held: list[tuple[Any, ...]] = []
    monkeypatch.setattr(services.jobs, "change_status", lambda *a: held.append(a))
    api.post(f"/v1/jobs/{job['job_id']}/resume")
    reads.clear()
    clock_before = clock.now_ms()

    def land_on_sleep(seconds: float) -> None:
        real_change(*held[0])
        clock.set(clock_before + int(seconds * 1000))

    monkeypatch.setattr(services.executor._clock, "sleep", land_on_sleep)
    result = services.executor.process(queue.sent[-1].message, "medium")
    # THEN both reads, before and after the write lands, are strongly consistent, and it runs
    assert reads == [True, True]
    assert result.action != "hop"
    assert len(effects) == 3
