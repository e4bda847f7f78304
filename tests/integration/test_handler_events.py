"""Each Lambda handler driven by its sample event from events/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from functions.api.handler import lambda_handler as api_handler
from functions.tick.handler import lambda_handler as tick_handler
from functions.worker.handler import lambda_handler as worker_handler
from shared.clock import parse_rfc3339_ms
from shared.services.container import build_services, set_services
from support.api import Api

EVENTS = Path(__file__).resolve().parents[2] / "events"


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


@pytest.fixture
def context_tenancy(services, settings, clock, handlers, queue):
    """Services as deployed: the tenant comes from the API Gateway request context."""
    deployed = build_services(
        settings=settings.model_copy(update={"tenant_source": "context"}),
        clients=services.clients,
        clock=clock,
        handlers=handlers,
        queue=queue,
    )
    set_services(deployed)
    yield deployed
    set_services(services)


def test_api_handler_sample_event_creates_a_job_for_the_iam_role(context_tenancy, lambda_context):
    # GIVEN the sample REST proxy event of an assumed-role caller
    event = load_event("api_create_job_event.json")
    # WHEN the API handler resolves it
    response = api_handler(event, lambda_context)
    # THEN the job is created for the role (the session name is not part of the tenant)
    assert response["statusCode"] == 201, response["body"]
    job = json.loads(response["body"])
    stored = context_tenancy.jobs.get(job["job_id"])
    assert stored is not None
    assert stored.state.tenant_id == "arn:aws:iam::123456789012:role/billing-team"
    # AND the X-Tenant-Id header in the sample is ignored when deployed
    event["headers"]["X-Tenant-Id"] = "someone-else"
    event["headers"]["Idempotency-Key"] = "sample-create-2"
    event["body"] = event["body"].replace("daily-report", "other-report")
    again = json.loads(api_handler(event, lambda_context)["body"])
    assert context_tenancy.jobs.get(again["job_id"]).state.tenant_id.endswith("role/billing-team")


def test_api_handler_without_caller_identity_is_rejected(context_tenancy, lambda_context):
    # GIVEN a request context with no identity (a misconfigured authorizer)
    event = load_event("api_create_job_event.json")
    event["requestContext"]["identity"] = {"sourceIp": "203.0.113.10"}
    # WHEN / THEN it is a 400, not a job for an empty tenant and not a 500
    response = api_handler(event, lambda_context)
    assert response["statusCode"] == 400


def test_api_handler_uses_api_key_id_when_present(context_tenancy, lambda_context):
    event = load_event("api_create_job_event.json")
    event["requestContext"]["identity"]["apiKeyId"] = "k7x3abcd"
    response = api_handler(event, lambda_context)
    job = json.loads(response["body"])
    assert context_tenancy.jobs.get(job["job_id"]).state.tenant_id == "apikey:k7x3abcd"


def test_tick_handler_sample_event_dispatches_due_jobs(services, queue, clock, lambda_context):
    # GIVEN a job due at 09:10
    api = Api(lambda_context)
    api.post(
        "/v1/jobs",
        {
            "name": "t",
            "schedule": "at(2026-11-22T09:10:00Z)",
            "target": {"type": "handler", "name": "echo"},
        },
    )
    clock.set(parse_rfc3339_ms("2026-11-22T09:08:30Z"))
    # WHEN the tick handler gets the scheduled event
    result = tick_handler(load_event("tick_scheduled_event.json"), lambda_context)
    # THEN the occurrence was dispatched
    assert result["jobs_dispatched"] == 1
    assert result["errors"] == 0
    assert len(queue.sent) == 1


def test_worker_handler_sample_event_runs_the_job(services, queue, clock, lambda_context):
    # GIVEN a job and the sample SQS event carrying its occurrence
    api = Api(lambda_context)
    job = api.post(
        "/v1/jobs",
        {
            "name": "w",
            "schedule": "at(2026-11-22T09:00:00Z)",
            "target": {"type": "handler", "name": "echo"},
        },
    ).body
    event = load_event("worker_sqs_event.json")
    body = json.loads(event["Records"][0]["body"])
    body["job_id"] = job["job_id"]
    event["Records"][0]["body"] = json.dumps(body)
    # WHEN the worker handler gets it
    result = worker_handler(event, lambda_context)
    # THEN no batch item failed and the run succeeded
    assert result == {"batchItemFailures": []}
    runs = api.get(f"/v1/jobs/{job['job_id']}/runs").body["runs"]
    assert [(r["run_id"], r["status"]) for r in runs] == [("2026-11-22T09:00:00.000Z", "succeeded")]
