"""End to end through the handlers, in-process: create, dispatch, run, history."""

from __future__ import annotations

from functions.worker.handler import lambda_handler as worker
from support.api import Api
from support.fakes import pump


def test_now_job_runs_once_and_is_recorded(services, queue, lambda_context):
    # GIVEN a job that runs now with the echo handler
    api = Api(lambda_context)
    created = api.post(
        "/v1/jobs",
        {
            "name": "hello",
            "schedule": "now",
            "target": {"type": "handler", "name": "echo"},
            "payload": {"x": 1},
        },
    )
    assert created.status == 201, created.body
    job_id = created.body["job_id"]
    # WHEN the worker drains the queue
    handed = pump(queue, worker, lambda_context)
    # THEN one run succeeded and the job completed
    assert handed == 1
    runs = api.get(f"/v1/jobs/{job_id}/runs").body["runs"]
    assert [r["status"] for r in runs] == ["succeeded"]
    assert runs[0]["output"] == {"x": 1}
    job = api.get(f"/v1/jobs/{job_id}").body
    assert job["status"] == "completed"
    assert job["last_run"]["status"] == "succeeded"
