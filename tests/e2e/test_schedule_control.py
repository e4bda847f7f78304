"""A recurring job end to end through `python -m local`: rate(3 seconds), pause, resume,
cancel. Every run that starts does so within 2 s of its scheduled time."""

from __future__ import annotations

import itertools
import time
from datetime import datetime
from typing import Any

import pytest

from e2e.harness import LocalRuntime, assert_punctual, ms_between, started_lags_ms, wait_for

pytestmark = pytest.mark.e2e

ECHO = {"type": "handler", "name": "echo"}
PERIOD_S = 3
# A run that read the job just before a pause/cancel committed may still start a moment after.
IN_FLIGHT_MS = 500


def started_at(run: dict[str, Any]) -> datetime | None:
    return datetime.fromisoformat(run["attempts"][0]["started_at"]) if run["attempts"] else None


def runs_started_after(runs: list[dict[str, Any]], moment: datetime) -> list[dict[str, Any]]:
    return [r for r in runs if (s := started_at(r)) is not None and s > moment]


def api_time(resp_job: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(resp_job["updated_at"])


def control(runtime: LocalRuntime, job_id: str, action: str) -> dict[str, Any]:
    job: dict[str, Any] = runtime.expect(runtime.http.post(f"/v1/jobs/{job_id}/{action}"), 200)
    return job


def succeeded_since(runtime: LocalRuntime, job_id: str, moment: datetime, n: int) -> Any:
    def probe() -> list[dict[str, Any]] | None:
        runs = runtime.runs(job_id)
        done = [r for r in runs_started_after(runs, moment) if r["status"] == "succeeded"]
        return runs if len(done) >= n else None

    return wait_for(f"{n} run(s) of {job_id} after {moment}", probe, timeout=PERIOD_S * n + 4)


def test_rate_job_pause_resume_cancel(runtime: LocalRuntime) -> None:
    # GIVEN a job every 3 seconds
    job = runtime.create_job(
        {"name": "e2e-rate", "schedule": f"rate({PERIOD_S} seconds)", "target": ECHO}
    )
    job_id = job["job_id"]
    created = api_time(job)

    # WHEN it is active, runs accrue, each on time, from the creation time on, none missed
    runs = succeeded_since(runtime, job_id, created, 2)
    assert_punctual(runs)
    scheduled = sorted(r["scheduled_for"] for r in runs)
    assert scheduled[0] == job["created_at"], (job["created_at"], scheduled, runtime.problems())
    gaps = {ms_between(a, b) for a, b in itertools.pairwise(scheduled)}
    assert gaps == {PERIOD_S * 1000}, scheduled

    # WHEN it is paused, no new run starts (a queued occurrence ends skipped)
    paused_at = api_time(control(runtime, job_id, "pause"))
    time.sleep(PERIOD_S + 1)
    runs = runtime.runs(job_id)
    late = runs_started_after(runs, paused_at)
    assert all(
        (started_at(r) - paused_at).total_seconds() * 1000 <= IN_FLIGHT_MS  # type: ignore[operator]
        for r in late
    ), late
    skipped = [r for r in runs if r["status"] == "skipped"]
    assert skipped, f"an occurrence due while paused should end skipped: {runs}"
    assert runtime.job(job_id)["status"] == "paused"

    # WHEN it is resumed, runs continue, on time
    resumed_at = api_time(control(runtime, job_id, "resume"))
    runs = succeeded_since(runtime, job_id, resumed_at, 2)
    assert_punctual(runs)

    # WHEN it is cancelled, no new run starts
    cancelled = control(runtime, job_id, "cancel")
    assert cancelled["status"] == "cancelled"
    cancelled_at = api_time(cancelled)
    time.sleep(PERIOD_S + 1)
    runs = runtime.runs(job_id)
    late = [
        r
        for r in runs_started_after(runs, cancelled_at)
        if (started_at(r) - cancelled_at).total_seconds() * 1000 > IN_FLIGHT_MS  # type: ignore[operator]
    ]
    assert not late, late
    assert any(r["status"] == "cancelled" for r in runs), runs
    assert runtime.job(job_id)["status"] == "cancelled"

    # AND overall: every run that started did so on time, and the runtime printed a line for
    # each run outcome
    assert_punctual(runs)
    print(f"rate start lags (ms): {sorted(started_lags_ms(runs))}")
    lines = runtime.run_lines(job_id)
    finished = [r for r in runs if r["status"] not in ("queued", "running")]
    assert len(lines) >= len(finished), (lines, finished)
