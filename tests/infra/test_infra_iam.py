"""Least privilege: each function may do exactly what its code does, on the resources it does
it to, and user targets only on the operator's allow-list."""

from __future__ import annotations

from typing import Any

import pytest
from infra_testing import Synth, policy_statements

from shared import constants as c

ITEM_ACTIONS = {
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem",
}
LOGS = {"logs:CreateLogStream", "logs:PutLogEvents"}
XRAY = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def _resources(statement: dict[str, Any]) -> list[Any]:
    resource = statement["Resource"]
    return resource if isinstance(resource, list) else [resource]


class Ids:
    """Logical ids of the stack's tables and queues, by what they are."""

    def __init__(self, synthed: Synth) -> None:
        tables = synthed.resources("AWS::DynamoDB::Table")
        queues = synthed.resources("AWS::SQS::Queue")
        env = synthed.stack.config.name
        by_table = {t["Properties"]["TableName"]: k for k, t in tables.items()}
        self.jobs = by_table[f"{c.JOBS_TABLE}-{env}"]
        self.runs = by_table[f"{c.RUNS_TABLE}-{env}"]
        by_queue = {q["Properties"]["QueueName"]: k for k, q in queues.items()}
        self.work = {by_queue[f"{c.queue_name(p)}-{env}"] for p in c.PRIORITIES}
        self.dead = {by_queue[f"{c.dead_letter_queue_name(p)}-{env}"] for p in c.PRIORITIES}


def _arn_ids(resources: list[Any]) -> set[str]:
    out: set[str] = set()
    for r in resources:
        assert isinstance(r, dict), f"literal resource {r!r}"
        if "Fn::GetAtt" in r:
            out.add(r["Fn::GetAtt"][0])
    return out


def _index_arns(resources: list[Any]) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for r in resources:
        parts = r["Fn::Join"][1]
        out.add((parts[0]["Fn::GetAtt"][0], parts[1]))
    return out


def _grants(synthed: Synth, role: str) -> dict[str, dict[str, Any]]:
    """The statements by Sid (logs and X-Ray ones keyed by their first action)."""
    out: dict[str, dict[str, Any]] = {}
    for statement in policy_statements(synthed, f"{role}RoleDefaultPolicy"):
        assert statement["Effect"] == "Allow"
        out[statement.get("Sid") or sorted(_actions(statement))[0]] = statement
    return out


def test_iam_no_wildcard_action_anywhere(with_targets: Synth) -> None:
    for policy in with_targets.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            for action in _actions(statement):
                assert "*" not in action, action


@pytest.mark.parametrize("role", ["Api", "Tick", "Dispatch", "Worker"])
def test_iam_only_xray_is_granted_on_star(dev: Synth, role: str) -> None:
    for statement in policy_statements(dev, f"{role}RoleDefaultPolicy"):
        if "*" in _resources(statement):
            assert _actions(statement) == XRAY


@pytest.mark.parametrize("role", ["Api", "Tick", "Dispatch", "Worker"])
def test_iam_functions_write_only_their_own_log_group(dev: Synth, role: str) -> None:
    grants = _grants(dev, role)
    logs = grants["logs:CreateLogStream"]
    assert _actions(logs) == LOGS
    (group,) = _arn_ids(_resources(logs))
    assert group.startswith(f"{role}Logs")
    # No managed policies (no AWSLambdaBasicExecutionRole with logs on *).
    for logical_id, resource in dev.resources("AWS::IAM::Role").items():
        if logical_id.startswith(role + "Role"):
            assert "ManagedPolicyArns" not in resource["Properties"]


def test_iam_api_permissions(dev: Synth) -> None:
    ids = Ids(dev)
    grants = _grants(dev, "Api")
    assert set(grants) == {"logs:CreateLogStream", "xray:PutTelemetryRecords", "TablesItems",
                           "TablesIndexes", "Dispatch", "QueueDepths"}  # fmt: skip
    assert _actions(grants["TablesItems"]) == ITEM_ACTIONS
    assert _arn_ids(_resources(grants["TablesItems"])) == {ids.jobs, ids.runs}
    assert _actions(grants["TablesIndexes"]) == {"dynamodb:Query"}
    assert _index_arns(_resources(grants["TablesIndexes"])) == {
        (ids.jobs, f"/index/{c.DUE_INDEX}"),
        (ids.jobs, f"/index/{c.TENANT_INDEX}"),
        (ids.runs, f"/index/{c.DEAD_INDEX}"),
        (ids.runs, f"/index/{c.ACTIVITY_INDEX}"),
    }
    assert _actions(grants["Dispatch"]) == {"sqs:SendMessage"}
    assert _arn_ids(_resources(grants["Dispatch"])) == ids.work
    assert _actions(grants["QueueDepths"]) == {"sqs:GetQueueAttributes"}
    assert _arn_ids(_resources(grants["QueueDepths"])) == ids.work | ids.dead


def _dispatch_function_id(synthed: Synth) -> str:
    (fn_id,) = (
        k
        for k, f in synthed.resources("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == "functions.dispatch.handler.lambda_handler"
    )
    return fn_id


def _assert_due_index_grants(grants: dict[str, dict[str, Any]], ids: Ids) -> None:
    # The jobs table only (never runs), and no BatchGetItem
    assert _actions(grants["JobsItems"]) == ITEM_ACTIONS - {"dynamodb:BatchGetItem"}
    assert _arn_ids(_resources(grants["JobsItems"])) == {ids.jobs}
    assert _index_arns(_resources(grants["DueIndex"])) == {(ids.jobs, f"/index/{c.DUE_INDEX}")}
    assert _actions(grants["Dispatch"]) == {"sqs:SendMessage"}
    assert _arn_ids(_resources(grants["Dispatch"])) == ids.work


def test_iam_tick_permissions(dev: Synth) -> None:
    ids = Ids(dev)
    grants = _grants(dev, "Tick")
    assert set(grants) == {"logs:CreateLogStream", "xray:PutTelemetryRecords", "JobsItems",
                           "DueIndex", "Dispatch", "FanOut"}  # fmt: skip
    _assert_due_index_grants(grants, ids)
    # AND it may invoke the dispatch function, that one only
    assert _actions(grants["FanOut"]) == {"lambda:InvokeFunction"}
    assert _resources(grants["FanOut"]) == [{"Fn::GetAtt": [_dispatch_function_id(dev), "Arn"]}]


def test_iam_dispatch_permissions_are_the_ticks_without_invoke(dev: Synth) -> None:
    ids = Ids(dev)
    grants = _grants(dev, "Dispatch")
    assert set(grants) == {"logs:CreateLogStream", "xray:PutTelemetryRecords", "JobsItems",
                           "DueIndex", "Dispatch"}  # fmt: skip
    _assert_due_index_grants(grants, ids)
    tick = _grants(dev, "Tick")
    for sid in ("JobsItems", "DueIndex", "Dispatch"):
        assert grants[sid] == tick[sid]


def test_iam_worker_permissions(dev: Synth) -> None:
    ids = Ids(dev)
    grants = _grants(dev, "Worker")
    assert set(grants) == {"logs:CreateLogStream", "xray:PutTelemetryRecords", "TablesItems",
                           "TablesIndexes", "Consume", "Requeue", "DeadLetter"}  # fmt: skip
    assert _actions(grants["TablesItems"]) == ITEM_ACTIONS
    assert _arn_ids(_resources(grants["TablesItems"])) == {ids.jobs, ids.runs}
    assert _actions(grants["Consume"]) == {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:GetQueueAttributes",
    }
    assert _arn_ids(_resources(grants["Consume"])) == ids.work
    assert _arn_ids(_resources(grants["Requeue"])) == ids.work
    assert _actions(grants["DeadLetter"]) == {"sqs:SendMessage"}
    assert _arn_ids(_resources(grants["DeadLetter"])) == ids.dead


def test_iam_user_targets_denied_by_default(prod: Synth) -> None:
    # GIVEN no allow-list / THEN no function may publish, put events or invoke anything but the
    # tick its dispatch function
    fan_out = {"Fn::GetAtt": [_dispatch_function_id(prod), "Arn"]}
    for logical_id, policy in prod.resources("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement.get("Sid") == "FanOut":
                assert logical_id.startswith("TickRoleDefaultPolicy")
                assert _resources(statement) == [fan_out]
                continue
            for action in _actions(statement):
                assert action.split(":")[0] not in {"sns", "events", "lambda", "kms"}, action


def test_iam_user_targets_granted_to_the_worker_only(with_targets: Synth) -> None:
    # GIVEN an operator's allow-list
    allow = with_targets.stack.config.targets
    grants = _grants(with_targets, "Worker")
    # THEN the worker gets exactly those actions on exactly those ARNs
    expected = {
        "TargetQueues": ({"sqs:SendMessage"}, allow.sqs_queue_arns),
        "TargetTopics": ({"sns:Publish"}, allow.sns_topic_arns),
        "TargetEventBuses": ({"events:PutEvents"}, allow.event_bus_arns),
        "TargetFunctions": ({"lambda:InvokeFunction"}, allow.lambda_function_arns),
        "TargetKeys": ({"kms:GenerateDataKey", "kms:Decrypt"}, allow.kms_key_arns),
    }
    for sid, (actions, arns) in expected.items():
        assert _actions(grants[sid]) == actions
        assert _resources(grants[sid]) == list(arns)
    # AND the other functions do not
    for role in ("Api", "Tick", "Dispatch"):
        assert not set(_grants(with_targets, role)) & set(expected)
