"""The local runtime with the deployed dispatch horizon (120 s + 60 s margin). The API then
sends a short-period job's first three minutes of occurrences before it commits its write,
which widens the window in which a worker receives the occurrence due at once before the
write that dispatched it is visible."""

from __future__ import annotations

import time
from typing import Any

import pytest

from e2e.harness import LocalRuntime, assert_punctual, wait_for

pytestmark = pytest.mark.e2e

RUNTIME_ENV = {"PUNCTUAL_HORIZON_SECONDS": "120", "PUNCTUAL_DISPATCH_MARGIN_SECONDS": "60"}
ECHO = {"type": "handler", "name": "echo"}


def test_occurrence_due_at_creation_is_not_lost(runtime: LocalRuntime) -> None:
    # GIVEN a job every 5 seconds, whose first occurrence is its creation time
    job = runtime.create_job({"name": "e2e-first", "schedule": "rate(5 seconds)", "target": ECHO})
    # WHEN a moment has passed
    time.sleep(2)
    runs = runtime.runs(job["job_id"])
    runtime.expect(runtime.http.post(f"/v1/jobs/{job['job_id']}/cancel"), 200)
    # THEN the first occurrence ran, on time
    assert [r["run_id"] for r in runs] == [job["created_at"]], (
        f"the occurrence at {job['created_at']} did not run: {runs}\n{runtime.problems()}"
    )
    assert runs[0]["status"] == "succeeded", runs
    assert_punctual(runs)


def test_occurrence_due_at_a_schedule_change_is_not_lost(runtime: LocalRuntime) -> None:
    # GIVEN an hourly job
    job = runtime.create_job({"name": "e2e-patch", "schedule": "rate(1 hour)", "target": ECHO})
    time.sleep(0.5)
    # WHEN its schedule becomes every second, anchored at the change
    changed = runtime.expect(
        runtime.http.patch(f"/v1/jobs/{job['job_id']}", json={"schedule": "rate(1 second)"}),
        200,
    )

    # THEN the new schedule's first occurrence (the change itself) runs; not necessarily within
    # 2 s, as a worker that finds the PATCH not yet committed may look again a second later
    def first_run() -> dict[str, Any] | None:
        runs = {r["run_id"]: r for r in runtime.runs(job["job_id"])}
        run = runs.get(changed["updated_at"])
        return run if run is not None and run["status"] not in ("queued", "running") else None

    first = wait_for(f"the run at {changed['updated_at']}", first_run, timeout=6)
    runtime.expect(runtime.http.post(f"/v1/jobs/{job['job_id']}/cancel"), 200)
    assert first["status"] == "succeeded", first
