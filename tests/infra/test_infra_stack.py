"""CDK assertions on the stack's data and compute: tables, queues, functions, the tick rule and
the worker's event sources (properties, not only counts)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match
from infra_testing import Synth

from infra.config import LAMBDA_PYTHON_VERSION
from infra.stack import HANDLERS
from shared import constants as c
from shared.storage.schema import (
    DLQ_RETENTION_SECONDS,
    MAX_RECEIVE_COUNT,
    QUEUE_RETENTION_SECONDS,
    jobs_table_spec,
    runs_table_spec,
)


def _table(synthed: Synth, name: str) -> dict[str, Any]:
    tables = [
        t
        for t in synthed.resources("AWS::DynamoDB::Table").values()
        if t["Properties"]["TableName"] == name
    ]
    assert len(tables) == 1, name
    return tables[0]


@pytest.mark.parametrize(
    ("spec_of", "base"), [(jobs_table_spec, c.JOBS_TABLE), (runs_table_spec, c.RUNS_TABLE)]
)
def test_stack_tables_follow_the_runtime_spec(dev: Synth, spec_of: Any, base: str) -> None:
    # GIVEN the CreateTable spec the local runtime uses
    spec = spec_of(f"{base}-dev")
    # WHEN the stack is synthesized
    props = _table(dev, f"{base}-dev")["Properties"]
    # THEN keys, attribute types and every index are the spec's
    assert props["KeySchema"] == spec["KeySchema"]
    assert sorted(props["AttributeDefinitions"], key=str) == sorted(
        spec["AttributeDefinitions"], key=str
    )
    by_name = {g["IndexName"]: g for g in props["GlobalSecondaryIndexes"]}
    assert set(by_name) == {g["IndexName"] for g in spec["GlobalSecondaryIndexes"]}
    for gsi in spec["GlobalSecondaryIndexes"]:
        assert by_name[gsi["IndexName"]]["KeySchema"] == gsi["KeySchema"]
        assert by_name[gsi["IndexName"]]["Projection"] == gsi["Projection"]
    # AND on-demand, point-in-time recovery, TTL on expires_at
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["TimeToLiveSpecification"] == {"AttributeName": c.ATTR_EXPIRES_AT, "Enabled": True}


def test_stack_jobs_table_has_the_due_index(dev: Synth) -> None:
    props = _table(dev, f"{c.JOBS_TABLE}-dev")["Properties"]
    due = next(g for g in props["GlobalSecondaryIndexes"] if g["IndexName"] == c.DUE_INDEX)
    assert due["KeySchema"] == [
        {"AttributeName": c.ATTR_DUE_BUCKET, "KeyType": "HASH"},
        {"AttributeName": c.ATTR_NEXT_FIRE_AT, "KeyType": "RANGE"},
    ]


def test_stack_tables_are_protected_and_retained_outside_dev(dev: Synth, prod: Synth) -> None:
    # GIVEN dev and prod / THEN prod keeps its tables, dev may delete them
    for base in (c.JOBS_TABLE, c.RUNS_TABLE):
        prod_table = _table(prod, f"{base}-prod")
        assert prod_table["DeletionPolicy"] == "Retain"
        assert prod_table["UpdateReplacePolicy"] == "Retain"
        assert prod_table["Properties"]["DeletionProtectionEnabled"] is True
        dev_table = _table(dev, f"{base}-dev")
        assert dev_table["DeletionPolicy"] == "Delete"
        assert dev_table["Properties"]["DeletionProtectionEnabled"] is False


@pytest.mark.parametrize("priority", c.PRIORITIES)
def test_stack_work_queue_redrives_to_its_dead_letter_queue(prod: Synth, priority: str) -> None:
    # GIVEN one priority's queues
    queues = {
        q["Properties"]["QueueName"]: (k, q) for k, q in prod.resources("AWS::SQS::Queue").items()
    }
    dlq_id, dlq = queues[f"{c.dead_letter_queue_name(priority)}-prod"]
    _, work = queues[f"{c.queue_name(priority)}-prod"]
    # THEN the work queue redrives to it after maxReceiveCount receives
    assert work["Properties"]["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
        "maxReceiveCount": MAX_RECEIVE_COUNT,
    }
    # AND visibility is at least 6x the worker timeout (900 s), retention as the runtime's
    assert work["Properties"]["VisibilityTimeout"] >= 6 * 900
    assert work["Properties"]["MessageRetentionPeriod"] == QUEUE_RETENTION_SECONDS
    assert dlq["Properties"]["MessageRetentionPeriod"] == DLQ_RETENTION_SECONDS == 14 * 86_400
    # AND both are encrypted, retained outside dev
    for queue in (work, dlq):
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
        assert queue["DeletionPolicy"] == "Retain"


def test_stack_queues_deny_unencrypted_transport(dev: Synth) -> None:
    dev.template.resource_count_is("AWS::SQS::QueuePolicy", 6)
    dev.template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "PolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Effect": "Deny",
                            "Action": "sqs:*",
                            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                        }
                    )
                ]
            }
        },
    )


def test_stack_max_receive_count_comes_from_config() -> None:
    from infra_testing import synth

    synthed = synth("staging", {"max_receive_count": 9, "worker_timeout_seconds": 120})
    work = [
        q["Properties"]
        for q in synthed.resources("AWS::SQS::Queue").values()
        if "RedrivePolicy" in q["Properties"]
    ]
    assert len(work) == 3
    assert {q["RedrivePolicy"]["maxReceiveCount"] for q in work} == {9}
    assert {q["VisibilityTimeout"] for q in work} == {720}


def _function(synthed: Synth, handler: str) -> dict[str, Any]:
    fns = [
        f["Properties"]
        for f in synthed.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == handler
    ]
    assert len(fns) == 1, handler
    return fns[0]


@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_stack_functions_share_runtime_architecture_and_asset(dev: Synth, name: str) -> None:
    # GIVEN each handler of functions/
    fn = _function(dev, HANDLERS[name])
    # THEN arm64, the Python the asset is built for, the one asset, X-Ray, own log group
    assert fn["Architectures"] == ["arm64"]
    assert fn["Runtime"] == f"python{LAMBDA_PYTHON_VERSION}"
    assert tuple(int(p) for p in LAMBDA_PYTHON_VERSION.split(".")) >= (3, 12)
    assert fn["TracingConfig"] == {"Mode": "Active"}
    assert "LogGroup" in fn["LoggingConfig"]
    assert fn["Code"]["S3Key"].endswith(".zip")
    keys = {
        f["Properties"]["Code"]["S3Key"] for f in dev.resources("AWS::Lambda::Function").values()
    }
    assert len(keys) == 1


@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_stack_functions_get_powertools_and_punctual_settings(dev: Synth, name: str) -> None:
    env = _function(dev, HANDLERS[name])["Environment"]["Variables"]
    # Powertools
    assert env["POWERTOOLS_SERVICE_NAME"] == "punctual"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == c.METRICS_NAMESPACE
    assert env["POWERTOOLS_LOG_LEVEL"] in {"DEBUG", "INFO"}
    # Punctual settings: tables, every queue, scheduler knobs, the deployed tenant source
    jobs_id = next(
        k
        for k, t in dev.resources("AWS::DynamoDB::Table").items()
        if t["Properties"]["TableName"] == f"{c.JOBS_TABLE}-dev"
    )
    assert env["PUNCTUAL_JOBS_TABLE"] == {"Ref": jobs_id}
    assert "PUNCTUAL_RUNS_TABLE" in env
    for priority in c.PRIORITIES:
        assert set(env[f"PUNCTUAL_QUEUE_URL_{priority.upper()}"]) == {"Ref"}
        assert set(env[f"PUNCTUAL_DLQ_URL_{priority.upper()}"]) == {"Ref"}
    assert env["PUNCTUAL_SHARDS"] == "32"
    assert env["PUNCTUAL_HORIZON_SECONDS"] == "120"
    assert env["PUNCTUAL_RUN_RETENTION_DAYS"] == "30"
    assert env["PUNCTUAL_TENANT_SOURCE"] == "context"
    assert env["PUNCTUAL_AWS_REGION"] == {"Ref": "AWS::Region"}


def test_stack_tick_runs_alone_every_minute(dev: Synth) -> None:
    # GIVEN the tick function
    tick_id = next(
        k
        for k, f in dev.resources("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == HANDLERS["tick"]
    )
    tick = dev.template_json["Resources"][tick_id]["Properties"]
    # THEN one at a time, and a stale invocation is dropped rather than retried
    assert tick["ReservedConcurrentExecutions"] == 1
    dev.template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": {"Ref": tick_id},
            "MaximumRetryAttempts": 0,
            "MaximumEventAgeInSeconds": 60,
        },
    )
    # AND an EventBridge rule invokes it every minute
    dev.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(1 minute)",
            "State": "ENABLED",
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": [tick_id, "Arn"]}})],
        },
    )
    dev.template.has_resource_properties(
        "AWS::Lambda::Permission",
        {"FunctionName": {"Fn::GetAtt": [tick_id, "Arn"]}, "Principal": "events.amazonaws.com"},
    )


def _function_id(synthed: Synth, handler: str) -> str:
    (fn_id,) = (
        k
        for k, f in synthed.resources("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == handler
    )
    return fn_id


def test_stack_has_one_function_per_handler(dev: Synth) -> None:
    assert set(HANDLERS) == {"api", "tick", "dispatch", "worker"}
    dev.template.resource_count_is("AWS::Lambda::Function", len(HANDLERS))


def test_stack_tick_fans_out_to_the_dispatch_function(prod: Synth) -> None:
    # GIVEN the tick and the dispatch function
    config = prod.stack.config
    tick = _function(prod, HANDLERS["tick"])
    dispatch = _function(prod, HANDLERS["dispatch"])
    # THEN the tick names the dispatch function and the range size in its settings
    env = tick["Environment"]["Variables"]
    assert env["PUNCTUAL_DISPATCH_FUNCTION"] == {"Ref": _function_id(prod, HANDLERS["dispatch"])}
    assert env["PUNCTUAL_DISPATCH_SHARDS_PER_RANGE"] == "1"
    # AND the dispatch function never fans out again: it drains what it is handed
    assert "PUNCTUAL_DISPATCH_FUNCTION" not in dispatch["Environment"]["Variables"]
    # AND it answers within the tick's budget, on one full vCPU, with one reserved
    # invocation per range a tick invokes at once (32 shards, 1 per range)
    assert dispatch["Timeout"] == config.dispatch_timeout_seconds
    assert dispatch["Timeout"] <= config.tick_budget_seconds < tick["Timeout"]
    assert dispatch["MemorySize"] == 1769
    assert dispatch["ReservedConcurrentExecutions"] == 32
    # AND only the tick invokes it, synchronously: no schedule, no event source, no async config
    dispatch_id = _function_id(prod, HANDLERS["dispatch"])
    for kind in ("AWS::Events::Rule", "AWS::Lambda::EventSourceMapping"):
        assert dispatch_id not in json.dumps(prod.resources(kind))
    for kind in ("AWS::Lambda::EventInvokeConfig", "AWS::Lambda::Permission"):
        assert dispatch_id not in json.dumps(prod.resources(kind))


def test_stack_dispatch_function_from_config() -> None:
    from infra_testing import synth

    # GIVEN ranges of 4 shards, a bigger dispatch function, and no reservation
    synthed = synth(
        "staging",
        {
            "dispatch_shards_per_range": 4,
            "dispatch_memory_mb": 3008,
            "dispatch_timeout_seconds": 20,
            "dispatch_reserved_concurrency": 0,
        },
    )
    tick = _function(synthed, HANDLERS["tick"])
    dispatch = _function(synthed, HANDLERS["dispatch"])
    # THEN the tick hands out 4 shards a range, and the function is as configured, unreserved
    assert tick["Environment"]["Variables"]["PUNCTUAL_DISPATCH_SHARDS_PER_RANGE"] == "4"
    assert (dispatch["MemorySize"], dispatch["Timeout"]) == (3008, 20)
    assert "ReservedConcurrentExecutions" not in dispatch


def test_stack_worker_timeout_and_visibility(prod: Synth) -> None:
    worker = _function(prod, HANDLERS["worker"])
    assert worker["Timeout"] == 900
    visibilities = {
        q["Properties"]["VisibilityTimeout"]
        for q in prod.resources("AWS::SQS::Queue").values()
        if "RedrivePolicy" in q["Properties"]
    }
    assert visibilities == {6 * worker["Timeout"]}


def test_stack_worker_consumes_each_queue_with_its_settings(prod: Synth) -> None:
    # GIVEN the configured per-priority consumption
    config = prod.stack.config
    queue_ids = {
        q["Properties"]["QueueName"]: k for k, q in prod.resources("AWS::SQS::Queue").items()
    }
    worker_id = next(
        k
        for k, f in prod.resources("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == HANDLERS["worker"]
    )
    mappings = list(prod.resources("AWS::Lambda::EventSourceMapping").values())
    assert len(mappings) == len(c.PRIORITIES)
    # THEN one mapping per work queue, with partial batch failures and the configured limits
    for priority in c.PRIORITIES:
        settings = config.queue(priority)
        queue_id = queue_ids[f"{c.queue_name(priority)}-prod"]
        mapping = next(
            m
            for m in mappings
            if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
        )
        props = mapping["Properties"]
        assert props["FunctionName"] == {"Ref": worker_id}
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert props["BatchSize"] == settings.batch_size
        if settings.min_pollers is None:
            assert props["ScalingConfig"] == {"MaximumConcurrency": settings.max_concurrency}
        else:
            assert props["ProvisionedPollerConfig"] == {
                "MinimumPollers": settings.min_pollers,
                "MaximumPollers": settings.max_pollers,
            }
        assert (
            props.get("MaximumBatchingWindowInSeconds", 0) == settings.max_batching_window_seconds
        )
        # created only once the worker may read the queue
        assert any(d.startswith("WorkerRoleDefaultPolicy") for d in mapping["DependsOn"])


def test_stack_worker_batching_window_from_config() -> None:
    from infra_testing import synth

    synthed = synth(
        "staging",
        {
            "queues": {
                "low": {"batch_size": 50, "max_batching_window_seconds": 5, "max_concurrency": 3}
            }
        },
    )
    synthed.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "BatchSize": 50,
            "MaximumBatchingWindowInSeconds": 5,
            "ScalingConfig": {"MaximumConcurrency": 3},
        },
    )


def test_stack_outputs_name_what_a_deployer_needs(dev: Synth) -> None:
    outputs = dev.template_json["Outputs"]
    for key in (
        "ApiUrl",
        "ApiId",
        "Region",
        "JobsTableName",
        "RunsTableName",
        "QueueUrlHigh",
        "DeadLetterQueueUrlLow",
        "AlarmTopicArn",
        "DashboardName",
        "DispatchFunctionName",
    ):
        assert key in outputs, key


def test_stack_is_environment_agnostic_and_makes_no_lookups(dev: Synth) -> None:
    # No account or region is baked in, and synthesis needed no AWS call (no lookups).
    assert dev.stack.resolve(dev.stack.account) == {"Ref": "AWS::AccountId"}
    assert dev.app.node.try_get_context("aws:cdk:missing") is None
    manifest = (dev.outdir / "manifest.json").read_text()
    assert '"missing"' not in manifest


def test_stack_worker_queue_in_provisioned_mode() -> None:
    from infra_testing import synth

    # GIVEN the medium queue in provisioned mode
    synthed = synth(
        "staging",
        {"queues": {"medium": {"max_concurrency": None, "min_pollers": 5, "max_pollers": 100}}},
    )
    # THEN its mapping keeps pollers ready and has no ScalingConfig (they are exclusive)
    synthed.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "ProvisionedPollerConfig": {"MinimumPollers": 5, "MaximumPollers": 100},
            "ScalingConfig": Match.absent(),
        },
    )
