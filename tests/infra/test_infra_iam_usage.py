"""Least privilege that still works: every AWS call the real handlers make, run against the stack
moto's CloudFormation created with each function's own settings, is allowed by that function's
IAM policy in the template, on that resource (table, named index or queue)."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from infra_testing import (
    Deployed,
    Synth,
    deploy_to_moto,
    load_event,
    policy_statements,
    settings_from_env,
)

from infra.stack import HANDLERS
from shared import constants as c
from shared.aws import AwsClients
from shared.services.container import build_services, set_services

# Operations whose IAM action has another name.
ACTION_OF = {
    ("sqs", "SendMessageBatch"): "sqs:SendMessage",
    ("sqs", "DeleteMessageBatch"): "sqs:DeleteMessage",
    ("sqs", "ChangeMessageVisibilityBatch"): "sqs:ChangeMessageVisibility",
}
# TransactWriteItems is authorized item by item.
TRANSACT_ACTION = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}

Need = tuple[str, tuple[str, str | None]]  # (action, (resource logical id, index name))


@dataclass
class Recorder:
    """Records every call made through clients of its session."""

    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def session(self) -> boto3.Session:
        session = boto3.Session(region_name="us-east-1")
        session.events.register("provide-client-params", self._record)
        return session

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.append((model.service_model.endpoint_prefix, model.name, dict(params)))


def _needs(deployed: Deployed, calls: list[tuple[str, str, dict[str, Any]]]) -> set[Need]:
    logical = {physical: lid for lid, physical in deployed.physical_ids.items()}
    out: set[Need] = set()
    for service, operation, params in calls:
        if service == "dynamodb":
            if operation == "TransactWriteItems":
                for item in params["TransactItems"]:
                    ((kind, body),) = item.items()
                    out.add((TRANSACT_ACTION[kind], (logical[body["TableName"]], None)))
            elif operation in {"BatchGetItem", "BatchWriteItem"}:
                for table in params["RequestItems"]:
                    out.add((f"dynamodb:{operation}", (logical[table], None)))
            else:
                index = params.get("IndexName")
                out.add((f"dynamodb:{operation}", (logical[params["TableName"]], index)))
        elif service == "sqs":
            action = ACTION_OF.get((service, operation), f"sqs:{operation}")
            out.add((action, (logical[params["QueueUrl"]], None)))
        elif (service, operation) == ("lambda", "Invoke"):
            out.add(("lambda:InvokeFunction", (logical[params["FunctionName"]], None)))
        else:
            raise AssertionError(f"unexpected call {service}:{operation}")
    return out


def _granted(synthed: Synth, role: str) -> set[Need]:
    out: set[Need] = set()
    for statement in policy_statements(synthed, f"{role}RoleDefaultPolicy"):
        actions = statement["Action"]
        resources = statement["Resource"]
        for action in [actions] if isinstance(actions, str) else actions:
            for resource in resources if isinstance(resources, list) else [resources]:
                if isinstance(resource, dict) and "Fn::GetAtt" in resource:
                    out.add((action, (resource["Fn::GetAtt"][0], None)))
                elif isinstance(resource, dict) and "Fn::Join" in resource:
                    arn, suffix = resource["Fn::Join"][1]
                    out.add((action, (arn["Fn::GetAtt"][0], suffix.removeprefix("/index/"))))
    return out


@pytest.fixture
def deployed(dev: Synth, aws: None) -> Iterator[Deployed]:
    yield deploy_to_moto(dev)
    set_services(None)


def _use(deployed: Deployed, handler: str) -> Recorder:
    recorder = Recorder()
    settings = settings_from_env(deployed.function_env(handler))
    clients = AwsClients(settings, session=recorder.session())
    set_services(build_services(settings=settings, clients=clients))
    return recorder


class _InProcessDispatch:
    """The tick's Lambda client: moto cannot run the dispatch function, so an invoke is recorded
    as the tick's call and runs the dispatch handler here, with the dispatch function's own
    settings and a recorder of its own."""

    def __init__(self, deployed: Deployed, tick: Recorder, context: Any) -> None:
        from functions.dispatch.handler import lambda_handler

        self.handler = lambda_handler
        self.tick = tick
        self.context = context
        self.recorder = Recorder()
        settings = settings_from_env(deployed.function_env(HANDLERS["dispatch"]))
        clients = AwsClients(settings, session=self.recorder.session())
        self.services = build_services(settings=settings, clients=clients)

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:
        self.tick.calls.append(("lambda", "Invoke", {"FunctionName": FunctionName}))
        # The tick holds its own services: from here on the process is the dispatch function.
        set_services(self.services)
        answer = self.handler(json.loads(Payload), self.context)
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(answer).encode())}


class _TickClients(AwsClients):
    def __init__(self, settings: Any, session: boto3.Session, lambda_client: Any) -> None:
        super().__init__(settings, session=session)
        self._lambda = lambda_client

    @property
    def lambda_(self) -> Any:
        return self._lambda


def _tick_fanned_out(deployed: Deployed, lambda_context: Any) -> tuple[Recorder, Recorder]:
    """The tick, fanned out to the dispatch function as deployed: (tick's, dispatch's calls)."""
    from functions.tick.handler import lambda_handler

    tick = Recorder()
    dispatch = _InProcessDispatch(deployed, tick, lambda_context)
    settings = settings_from_env(deployed.function_env(HANDLERS["tick"]))
    assert settings.dispatch_function
    clients = _TickClients(settings, tick.session(), dispatch)
    set_services(build_services(settings=settings, clients=clients))
    lambda_handler({"source": "aws.events", "detail-type": "Scheduled Event"}, lambda_context)
    return tick, dispatch.recorder


def _request(
    method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    event = load_event("api_iam_request.json")
    event.update(httpMethod=method, path=path, body=json.dumps(body) if body is not None else None)
    event["pathParameters"] = {"proxy": path.removeprefix("/v1/")}
    event["headers"] = {**event["headers"], **(headers or {})}
    return event


def _api_session(deployed: Deployed, lambda_context: Any) -> Recorder:
    from functions.api.handler import lambda_handler

    recorder = _use(deployed, HANDLERS["api"])

    def call(method: str, path: str, body: Any = None, **headers: str) -> Any:
        result = lambda_handler(_request(method, path, body, headers), lambda_context)
        assert result["statusCode"] < 300, (method, path, result["body"])
        return json.loads(result["body"] or "null")

    echo = {"type": "handler", "name": "echo"}
    job = call(
        "POST", "/v1/jobs", {"name": "every-minute", "schedule": "rate(1 minute)", "target": echo}
    )
    job_id = job["job_id"]
    call(
        "POST",
        "/v1/jobs",
        {"name": "keyed", "schedule": "rate(1 hour)", "target": echo},
        **{"Idempotency-Key": "k-1"},
    )
    call(
        "POST",
        "/v1/jobs",
        {"name": "keyed", "schedule": "rate(1 hour)", "target": echo},
        **{"Idempotency-Key": "k-1"},
    )
    call(
        "POST",
        "/v1/jobs",
        {
            "name": "dies",
            "schedule": "now",
            "target": {"type": "handler", "name": "fail"},
            "retry": {"max_attempts": 1},
        },
    )
    call("GET", "/v1/jobs")
    call("GET", f"/v1/jobs/{job_id}")
    call("PATCH", f"/v1/jobs/{job_id}", {"tags": {"team": "ops"}})
    call("POST", f"/v1/jobs/{job_id}/pause")
    call("POST", f"/v1/jobs/{job_id}/resume")
    run = call("POST", f"/v1/jobs/{job_id}/trigger")
    call("GET", f"/v1/jobs/{job_id}/runs")
    call("GET", f"/v1/jobs/{job_id}/runs/{run['run_id']}")
    call("GET", "/v1/dead-letters")
    call("GET", "/v1/metrics")
    other = call(
        "POST", "/v1/jobs", {"name": "short-lived", "schedule": "rate(2 hours)", "target": echo}
    )
    call("DELETE", f"/v1/jobs/{other['job_id']}")
    return recorder


def _drain_into_worker(deployed: Deployed, lambda_context: Any) -> Recorder:
    from functions.worker.handler import lambda_handler

    recorder = _use(deployed, HANDLERS["worker"])
    sqs = deployed.sqs
    for priority in c.PRIORITIES:
        url = deployed.outputs[f"QueueUrl{priority.capitalize()}"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])
        records = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
                "awsRegion": "us-east-1",
            }
            for m in messages.get("Messages", [])
        ]
        if records:
            lambda_handler({"Records": records}, lambda_context)
    return recorder


def test_iam_usage_every_call_is_granted(deployed: Deployed, lambda_context: Any) -> None:
    # GIVEN each function's deployed settings and a client recording its calls
    # WHEN the API serves a tour of its endpoints, the tick runs (fanned out to the dispatch
    # function), and the worker runs what was queued (a success, and a failure whose attempts
    # are exhausted)
    api = _api_session(deployed, lambda_context)
    tick, dispatch = _tick_fanned_out(deployed, lambda_context)
    time.sleep(0.1)
    worker = _drain_into_worker(deployed, lambda_context)

    # THEN each call was allowed by that function's policy, on that resource
    roles = (("Api", api), ("Tick", tick), ("Dispatch", dispatch), ("Worker", worker))
    for role, recorder in roles:
        needed = _needs(deployed, recorder.calls)
        assert needed, role
        missing = needed - _granted(deployed.synthed, role)
        assert not missing, f"{role} calls what its role does not allow: {sorted(missing)}"

    # AND the tour did reach the interesting paths
    worker_ops = {op for _, op, _ in worker.calls}
    assert "SendMessageBatch" in worker_ops or "SendMessage" in worker_ops
    dead_queues = {deployed.outputs[f"DeadLetterQueueUrl{p.capitalize()}"] for p in c.PRIORITIES}
    assert any(params.get("QueueUrl") in dead_queues for _, _, params in worker.calls)
    assert any(params.get("IndexName") == c.DUE_INDEX for _, _, params in dispatch.calls)
    assert sum(op == "Invoke" for _, op, _ in tick.calls) >= deployed.synthed.stack.config.shards
