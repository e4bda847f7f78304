"""The Runs and Operations sections of the HTTP contract (API.md), through the real API Lambda
handler, with the real worker handler draining the in-memory queue."""

from __future__ import annotations

import re
from typing import Any

import pytest

from functions.worker.handler import lambda_handler as worker
from shared.clock import ManualClock
from support.api import Api, ApiResponse
from support.fakes import MemoryQueue, pump

RFC3339_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
NOW = "2026-11-22T09:00:00.000Z"
# A schedule that never fires during a test (next 1 January), so only the runs a test makes exist.
NEVER_SOON = "cron(0 0 1 1 *)"
ECHO = {"type": "handler", "name": "echo"}
FAIL = {"type": "handler", "name": "fail"}
RUN_KEYS = {
    "run_id",
    "job_id",
    "scheduled_for",
    "status",
    "attempts",
    "trigger",
    "created_at",
    "updated_at",
    "finished_at",
    "next_attempt_at",
    "start_lag_ms",
    "reason",
    "output",
}
ATTEMPT_KEYS = {
    "attempt",
    "started_at",
    "finished_at",
    "duration_ms",
    "status",
    "error_code",
    "error_message",
}
UNKNOWN_JOB = "0123456789abcdef012345"


# ---- fixtures ---------------------------------------------------------------------------------
# One moto backend per module, a tenant per test (see support/module_aws.py).
from support.module_aws import api, aws, clients, services, settings, wire  # noqa: E402, F401


@pytest.fixture
def drain(queue: MemoryQueue, lambda_context: Any) -> Any:
    """Feed every due message to the real worker handler."""
    return lambda: pump(queue, worker, lambda_context)


# ---- helpers ----------------------------------------------------------------------------------


def other_tenant(api: Api) -> str:
    return f"{api.tenant}-b"


def create(api: Api, name: str = "job", **overrides: Any) -> Any:
    body = {"name": name, "schedule": NEVER_SOON, "target": ECHO, **overrides}
    response = api.post("/v1/jobs", body)
    assert response.status == 201, response.body
    return response.body


def trigger(api: Api, job_id: str) -> Any:
    response = api.post(f"/v1/jobs/{job_id}/trigger")
    assert response.status == 202, response.body
    return response.body


def get_run(api: Api, job_id: str, run_id: str) -> Any:
    response = api.get(f"/v1/jobs/{job_id}/runs/{run_id}")
    assert response.status == 200, response.body
    return response.body


def assert_error(response: ApiResponse, status: int, field: str | None = None) -> None:
    """The one error body, with the offending field named when there is one."""
    assert response.status == status, response.body
    assert set(response.body) == {"error"}
    error = response.body["error"]
    assert set(error) == {"code", "message", "details"}
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    for detail in error["details"]:
        assert set(detail) == {"field", "message"}
    if field is not None:
        assert field in [d["field"] for d in error["details"]], error["details"]


def failed_run(api: Api, drain: Any) -> tuple[str, str]:
    """A run that ended `failed`: the `fail` handler with a permanent error."""
    job = create(api, "fails", target=FAIL, payload={"permanent": True})
    run = trigger(api, job["job_id"])
    drain()
    assert get_run(api, job["job_id"], run["run_id"])["status"] == "failed"
    return job["job_id"], run["run_id"]


def dead_run(api: Api, drain: Any, clock: ManualClock, name: str = "dies") -> tuple[str, str]:
    """A run that ended `dead`: two retryable failures with a one-second backoff."""
    job = create(
        api,
        name,
        target=FAIL,
        retry={"max_attempts": 2, "base_delay_seconds": 1, "jitter": False},
    )
    run = trigger(api, job["job_id"])
    drain()
    assert get_run(api, job["job_id"], run["run_id"])["status"] == "retrying"
    clock.advance(2)
    drain()
    assert get_run(api, job["job_id"], run["run_id"])["status"] == "dead"
    return job["job_id"], run["run_id"]


# ---- trigger ----------------------------------------------------------------------------------


def test_trigger_job_returns_202_queued_manual_run(api: Api) -> None:
    # GIVEN a job
    job = create(api)
    # WHEN it is triggered
    response = api.post(f"/v1/jobs/{job['job_id']}/trigger")
    # THEN 202 with a queued, manual Run scheduled for now
    assert response.status == 202, response.body
    run = response.body
    assert set(run) == RUN_KEYS
    assert run["job_id"] == job["job_id"]
    assert run["status"] == "queued"
    assert run["trigger"] == "manual"
    assert run["scheduled_for"] == NOW
    assert run["attempts"] == []
    assert run["run_id"].startswith(NOW)


def test_trigger_job_runs_after_the_worker_drains(api: Api, drain: Any) -> None:
    # GIVEN a triggered job
    job = create(api, payload={"hello": "world"})
    run = trigger(api, job["job_id"])
    # WHEN the worker drains the queue
    assert drain() == 1
    # THEN the run succeeded with the handler's output and the job shows it as its last run
    done = get_run(api, job["job_id"], run["run_id"])
    assert done["status"] == "succeeded"
    assert done["output"] == {"hello": "world"}
    last = api.get(f"/v1/jobs/{job['job_id']}").body["last_run"]
    assert last["run_id"] == run["run_id"]
    assert last["status"] == "succeeded"
    assert last["trigger"] == "manual"
    assert last["attempts"] == 1


def test_trigger_cancelled_job_is_409(api: Api) -> None:
    # GIVEN a cancelled job
    job = create(api)
    api.delete(f"/v1/jobs/{job['job_id']}")
    # WHEN it is triggered
    response = api.post(f"/v1/jobs/{job['job_id']}/trigger")
    # THEN 409
    assert_error(response, 409)


def test_cancel_job_stops_a_run_already_queued(api: Api, drain: Any) -> None:
    # GIVEN a triggered run still on the queue
    job = create(api)
    run = trigger(api, job["job_id"])
    # WHEN the job is cancelled before the worker takes the run
    assert api.post(f"/v1/jobs/{job['job_id']}/cancel").status == 200
    drain()
    # THEN the run never executed
    done = get_run(api, job["job_id"], run["run_id"])
    assert done["status"] == "cancelled"
    assert done["attempts"] == []


# ---- runs -------------------------------------------------------------------------------------


def test_get_run_returns_attempts_shape(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN a run the worker executed
    job = create(api)
    run = trigger(api, job["job_id"])
    clock.advance(0.25)
    drain()
    # WHEN it is read
    response = api.get(f"/v1/jobs/{job['job_id']}/runs/{run['run_id']}")
    # THEN it has the documented shape with one succeeded attempt
    assert response.status == 200, response.body
    body = response.body
    assert set(body) == RUN_KEYS
    assert (body["run_id"], body["job_id"]) == (run["run_id"], job["job_id"])
    assert body["scheduled_for"] == NOW
    assert body["trigger"] == "manual"
    assert body["status"] == "succeeded"
    assert len(body["attempts"]) == 1
    attempt = body["attempts"][0]
    assert set(attempt) == ATTEMPT_KEYS
    assert attempt["attempt"] == 1
    assert attempt["status"] == "succeeded"
    assert RFC3339_MS.match(attempt["started_at"])
    assert RFC3339_MS.match(attempt["finished_at"])
    assert isinstance(attempt["duration_ms"], int) and attempt["duration_ms"] >= 0
    assert attempt["error_code"] is None and attempt["error_message"] is None
    assert body["start_lag_ms"] == 250


def test_get_run_failed_attempt_has_error_code(api: Api, drain: Any) -> None:
    # GIVEN a run that failed permanently
    job_id, run_id = failed_run(api, drain)
    # WHEN it is read
    body = get_run(api, job_id, run_id)
    # THEN its attempt says why
    [attempt] = body["attempts"]
    assert attempt["status"] == "failed"
    assert attempt["error_code"]
    assert attempt["error_message"]
    assert RFC3339_MS.match(body["finished_at"])


def test_get_run_unknown_is_404(api: Api) -> None:
    # GIVEN a job without that run
    job = create(api)
    # WHEN an unknown run, or a run of an unknown job, is read
    unknown_run = api.get(f"/v1/jobs/{job['job_id']}/runs/2026-11-22T09:00:00.000Z")
    unknown_job = api.get(f"/v1/jobs/{UNKNOWN_JOB}/runs/2026-11-22T09:00:00.000Z")
    # THEN 404 both
    assert_error(unknown_run, 404)
    assert_error(unknown_job, 404)


def test_list_runs_newest_first_with_pagination(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN five runs, a second apart
    job = create(api)
    run_ids = []
    for _ in range(5):
        run_ids.append(trigger(api, job["job_id"])["run_id"])
        clock.advance(1)
    drain()
    # WHEN they are listed two at a time, following next_token
    path = f"/v1/jobs/{job['job_id']}/runs?limit=2"
    seen: list[str] = []
    scheduled: list[str] = []
    pages = 0
    while path:
        response = api.get(path)
        assert response.status == 200, response.body
        assert len(response.body["runs"]) <= 2
        seen.extend(r["run_id"] for r in response.body["runs"])
        scheduled.extend(r["scheduled_for"] for r in response.body["runs"])
        pages += 1
        token = response.body["next_token"]
        path = f"/v1/jobs/{job['job_id']}/runs?limit=2&next_token={token}" if token else ""
        assert pages < 10
    # THEN all five come back once, newest first by scheduled_for
    assert seen == list(reversed(run_ids))
    assert scheduled == sorted(scheduled, reverse=True)
    assert pages == 3


def test_list_runs_of_a_job_without_runs_is_empty(api: Api) -> None:
    # GIVEN a job that never ran
    job = create(api)
    # WHEN its runs are listed
    response = api.get(f"/v1/jobs/{job['job_id']}/runs")
    # THEN an empty page
    assert response.status == 200, response.body
    assert response.body == {"runs": [], "next_token": None}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=x", "limit"),
        ("next_token=@@", "next_token"),
    ],
)
def test_list_runs_invalid_query_is_400(api: Api, query: str, field: str) -> None:
    # GIVEN a job
    job = create(api)
    # WHEN its runs are listed with an invalid query parameter
    response = api.get(f"/v1/jobs/{job['job_id']}/runs?{query}")
    # THEN 400 naming it
    assert_error(response, 400, field)


def test_list_runs_token_of_another_list_is_400(api: Api, clock: ManualClock) -> None:
    # GIVEN a next_token from one job's runs
    first = create(api, "first")
    second = create(api, "second")
    for _ in range(2):
        trigger(api, first["job_id"])
        clock.advance(1)
    token = api.get(f"/v1/jobs/{first['job_id']}/runs?limit=1").body["next_token"]
    assert token
    # WHEN it is used on another job's runs, on the dead letters, or on the jobs list
    elsewhere = [
        api.get(f"/v1/jobs/{second['job_id']}/runs?next_token={token}"),
        api.get(f"/v1/dead-letters?next_token={token}"),
        api.get(f"/v1/jobs?next_token={token}"),
    ]
    # THEN each is a 400 on next_token
    for response in elsewhere:
        assert_error(response, 400, "next_token")


# ---- retry ------------------------------------------------------------------------------------


def test_retry_run_failed_gets_a_new_attempt(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN a run that failed permanently
    job_id, run_id = failed_run(api, drain)
    clock.advance(10)
    # WHEN it is retried
    response = api.post(f"/v1/jobs/{job_id}/runs/{run_id}/retry")
    # THEN 202 with the run queued again
    assert response.status == 202, response.body
    assert response.body["run_id"] == run_id
    assert response.body["status"] == "queued"
    assert len(response.body["attempts"]) == 1
    # AND after the worker drains, a second attempt was made (and failed the same way)
    drain()
    after = get_run(api, job_id, run_id)
    assert [a["attempt"] for a in after["attempts"]] == [1, 2]
    assert after["attempts"][1]["started_at"] == "2026-11-22T09:00:10.000Z"
    assert after["status"] == "failed"


def test_retry_run_succeeded_is_409(api: Api, drain: Any) -> None:
    # GIVEN a run that succeeded
    job = create(api)
    run = trigger(api, job["job_id"])
    drain()
    # WHEN it is retried
    response = api.post(f"/v1/jobs/{job['job_id']}/runs/{run['run_id']}/retry")
    # THEN 409 and it stays succeeded
    assert_error(response, 409)
    assert get_run(api, job["job_id"], run["run_id"])["status"] == "succeeded"


def test_retry_run_queued_is_409(api: Api) -> None:
    # GIVEN a run still queued
    job = create(api)
    run = trigger(api, job["job_id"])
    # WHEN it is retried
    response = api.post(f"/v1/jobs/{job['job_id']}/runs/{run['run_id']}/retry")
    # THEN 409
    assert_error(response, 409)


def test_retry_run_of_cancelled_job_is_409(api: Api, drain: Any) -> None:
    # GIVEN a failed run whose job is then cancelled
    job_id, run_id = failed_run(api, drain)
    api.delete(f"/v1/jobs/{job_id}")
    # WHEN it is retried
    response = api.post(f"/v1/jobs/{job_id}/runs/{run_id}/retry")
    # THEN 409
    assert_error(response, 409)


def test_retry_run_unknown_is_404(api: Api) -> None:
    # GIVEN a job without that run
    job = create(api)
    # WHEN an unknown run is retried
    response = api.post(f"/v1/jobs/{job['job_id']}/runs/{NOW}/retry")
    # THEN 404
    assert_error(response, 404)


def test_retry_run_dead_is_202(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN a dead run
    job_id, run_id = dead_run(api, drain, clock)
    # WHEN it is retried
    response = api.post(f"/v1/jobs/{job_id}/runs/{run_id}/retry")
    # THEN 202, queued, and it leaves the dead letters
    assert response.status == 202, response.body
    assert response.body["status"] == "queued"
    assert api.get("/v1/dead-letters").body["runs"] == []


# ---- dead letters -------------------------------------------------------------------------------


def test_dead_letters_lists_dead_runs(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN a run whose two attempts failed
    job_id, run_id = dead_run(api, drain, clock)
    # WHEN the dead letters are listed
    response = api.get("/v1/dead-letters")
    # THEN the run is there, dead after two attempts
    assert response.status == 200, response.body
    assert response.body["next_token"] is None
    [run] = response.body["runs"]
    assert set(run) == RUN_KEYS
    assert (run["job_id"], run["run_id"], run["status"]) == (job_id, run_id, "dead")
    assert [a["attempt"] for a in run["attempts"]] == [1, 2]
    assert all(a["status"] == "failed" for a in run["attempts"])


def test_dead_letters_newest_first_with_pagination(
    api: Api, drain: Any, clock: ManualClock
) -> None:
    # GIVEN three dead runs, made one after the other
    made = [dead_run(api, drain, clock, name=f"dies-{i}") for i in range(3)]
    # WHEN they are listed one at a time
    seen: list[tuple[str, str]] = []
    path = "/v1/dead-letters?limit=1"
    for _ in range(10):
        body = api.get(path).body
        seen.extend((r["job_id"], r["run_id"]) for r in body["runs"])
        if not body["next_token"]:
            break
        path = f"/v1/dead-letters?limit=1&next_token={body['next_token']}"
    # THEN each comes back once, newest first
    assert seen == list(reversed(made))


@pytest.mark.parametrize("query", ["limit=0", "limit=abc", "next_token=zzz"])
def test_dead_letters_invalid_query_is_400(api: Api, query: str) -> None:
    # GIVEN an invalid query parameter
    # WHEN the dead letters are listed with it
    response = api.get(f"/v1/dead-letters?{query}")
    # THEN 400 naming it
    assert_error(response, 400, query.split("=")[0])


def test_redrive_all_requeues_every_dead_run(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN two dead runs
    made = [dead_run(api, drain, clock, name=f"dies-{i}") for i in range(2)]
    # WHEN every dead letter is redriven (no body)
    response = api.post("/v1/dead-letters/redrive")
    # THEN 202 naming both; they are queued again and no longer dead letters
    assert response.status == 202, response.body
    assert response.body["count"] == 2
    redriven = {(r["job_id"], r["run_id"]) for r in response.body["redriven"]}
    assert redriven == set(made)
    for job_id, run_id in made:
        assert get_run(api, job_id, run_id)["status"] in ("queued", "running")
    assert api.get("/v1/dead-letters").body["runs"] == []
    # AND the worker gives each a fresh attempt budget
    drain()
    for job_id, run_id in made:
        run = get_run(api, job_id, run_id)
        assert len(run["attempts"]) == 3
        assert run["status"] == "retrying"


def test_redrive_with_empty_object_redrives_all(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN a dead run
    dead_run(api, drain, clock)
    # WHEN {} is posted
    response = api.post("/v1/dead-letters/redrive", {})
    # THEN it is redriven
    assert response.status == 202, response.body
    assert response.body["count"] == 1


def test_redrive_run_ids_requeues_only_those(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN three dead runs
    first, second, third = (dead_run(api, drain, clock, name=f"dies-{i}") for i in range(3))
    # WHEN two are redriven by id: one by run id alone, one as <job_id>:<run_id>
    response = api.post(
        "/v1/dead-letters/redrive",
        {"run_ids": [first[1], f"{second[0]}:{second[1]}", "no-such-run"]},
    )
    # THEN 202 naming exactly those two; the third is still a dead letter
    assert response.status == 202, response.body
    assert response.body["count"] == 2
    redriven = {(r["job_id"], r["run_id"]) for r in response.body["redriven"]}
    assert redriven == {first, second}
    assert get_run(api, *first)["status"] == "queued"
    assert get_run(api, *second)["status"] == "queued"
    remaining = api.get("/v1/dead-letters").body["runs"]
    assert [(r["job_id"], r["run_id"]) for r in remaining] == [third]


def test_redrive_nothing_dead_is_202_with_count_0(api: Api) -> None:
    # GIVEN no dead runs
    # WHEN they are redriven
    response = api.post("/v1/dead-letters/redrive", {"run_ids": []})
    # THEN 202 with nothing redriven
    assert response.status == 202, response.body
    assert response.body == {"redriven": [], "count": 0}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"run_ids": "all"}, "run_ids"),
        ({"run_ids": [1]}, "run_ids.0"),
        ({"ids": []}, "ids"),
        ({"run_ids": ["x"] * 1001}, "run_ids"),
    ],
)
def test_redrive_invalid_body_is_400(api: Api, body: dict[str, Any], field: str) -> None:
    # GIVEN an invalid redrive body
    # WHEN it is posted
    response = api.post("/v1/dead-letters/redrive", body)
    # THEN 400 naming the field
    assert_error(response, 400, field)


# ---- metrics / health ---------------------------------------------------------------------------


def test_metrics_counts_runs_lags_and_queues(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN a succeeded run (started 0.5 s late), a failed run and a dead run
    job = create(api)
    trigger(api, job["job_id"])
    clock.advance(0.5)
    drain()
    failed_run(api, drain)
    dead_run(api, drain, clock)
    # WHEN the metrics are read
    response = api.get("/v1/metrics")
    # THEN the counts, lags and queue depths are there
    assert response.status == 200, response.body
    metrics = response.body
    assert metrics["window_minutes"] == 15
    counts = metrics["runs_by_status"]
    assert set(counts) == {
        "queued",
        "running",
        "retrying",
        "succeeded",
        "failed",
        "dead",
        "skipped",
        "cancelled",
    }
    assert counts["succeeded"] == 1
    assert counts["failed"] == 1
    assert counts["dead"] == 1
    assert counts["queued"] == counts["running"] == counts["retrying"] == 0
    assert metrics["start_lag_ms_p50"] is not None
    assert metrics["start_lag_ms_p99"] is not None
    assert metrics["start_lag_ms_p99"] >= 500
    assert metrics["start_lag_ms_p99"] >= metrics["start_lag_ms_p50"] >= 0
    assert set(metrics["queues"]) == {"high", "medium", "low"}
    for depth in metrics["queues"].values():
        assert set(depth) == {"visible", "in_flight", "delayed", "dead_letter"}
        assert all(isinstance(v, int) and v >= 0 for v in depth.values())
    assert metrics["dead_letter_depth"] == 1


def test_metrics_without_runs_has_no_lag(api: Api) -> None:
    # GIVEN a tenant without runs
    # WHEN the metrics are read
    metrics = api.get("/v1/metrics").body
    # THEN zero counts and no lag percentiles
    assert set(metrics["runs_by_status"].values()) == {0}
    assert metrics["start_lag_ms_p50"] is None
    assert metrics["start_lag_ms_p99"] is None
    assert metrics["dead_letter_depth"] == 0


def test_metrics_counts_only_the_last_15_minutes(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN a run that succeeded, then 16 minutes pass
    job = create(api)
    trigger(api, job["job_id"])
    drain()
    assert api.get("/v1/metrics").body["runs_by_status"]["succeeded"] == 1
    clock.advance(16 * 60)
    # WHEN the metrics are read
    metrics = api.get("/v1/metrics").body
    # THEN the run is out of the window
    assert metrics["runs_by_status"]["succeeded"] == 0
    assert metrics["start_lag_ms_p50"] is None


def test_health_is_ok(api: Api) -> None:
    # GIVEN the API
    # WHEN its health is read
    response = api.get("/v1/health")
    # THEN ok
    assert response.status == 200
    assert response.body == {"status": "ok"}


# ---- tenant isolation ---------------------------------------------------------------------------


def test_runs_of_another_tenant_answer_404(api: Api, drain: Any, clock: ManualClock) -> None:
    # GIVEN tenant A's failed run
    job_id, run_id = failed_run(api, drain)
    b = other_tenant(api)
    # WHEN tenant B lists its runs, reads it, retries it or triggers its job
    calls = [
        api.get(f"/v1/jobs/{job_id}/runs", tenant=b),
        api.get(f"/v1/jobs/{job_id}/runs/{run_id}", tenant=b),
        api.post(f"/v1/jobs/{job_id}/runs/{run_id}/retry", tenant=b),
        api.post(f"/v1/jobs/{job_id}/trigger", tenant=b),
    ]
    # THEN every call answers 404 and nothing changed for tenant A
    for response in calls:
        assert_error(response, 404)
    run = get_run(api, job_id, run_id)
    assert run["status"] == "failed" and len(run["attempts"]) == 1
    assert len(api.get(f"/v1/jobs/{job_id}/runs").body["runs"]) == 1


def test_dead_letters_and_metrics_of_another_tenant_are_invisible(
    api: Api, drain: Any, clock: ManualClock
) -> None:
    # GIVEN tenant A's dead run and succeeded run
    job_id, run_id = dead_run(api, drain, clock)
    job = create(api, "ok")
    trigger(api, job["job_id"])
    drain()
    b = other_tenant(api)
    # WHEN tenant B lists dead letters, reads metrics and redrives everything
    dead = api.get("/v1/dead-letters", tenant=b)
    metrics = api.get("/v1/metrics", tenant=b)
    redrive_all = api.post("/v1/dead-letters/redrive", tenant=b)
    redrive_ids = api.post(
        "/v1/dead-letters/redrive", {"run_ids": [run_id, f"{job_id}:{run_id}"]}, tenant=b
    )
    # THEN B sees and touches none of A's runs
    assert dead.status == 200 and dead.body["runs"] == []
    assert set(metrics.body["runs_by_status"].values()) == {0}
    assert metrics.body["dead_letter_depth"] == 0
    assert metrics.body["start_lag_ms_p50"] is None
    assert redrive_all.body["count"] == 0
    assert redrive_ids.body["count"] == 0
    assert get_run(api, job_id, run_id)["status"] == "dead"
    assert [r["run_id"] for r in api.get("/v1/dead-letters").body["runs"]] == [run_id]
    assert api.get("/v1/metrics").body["dead_letter_depth"] == 1
