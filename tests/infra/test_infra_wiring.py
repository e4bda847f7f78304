"""Wiring: the synthesized template deployed into moto's CloudFormation creates the tables,
indexes, queues and redrive policies the local runtime creates, and the functions' settings
point at them, so the infrastructure and the code cannot drift apart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from infra_testing import (
    MOTO_REGION,
    MOTO_UNSUPPORTED,
    Deployed,
    Synth,
    deploy_to_moto,
    load_event,
    settings_from_env,
)

from functions.api.handler import lambda_handler as api_handler
from infra.stack import HANDLERS
from shared import constants as c
from shared.aws import AwsClients
from shared.services.container import build_services, set_services
from shared.settings import Settings
from shared.storage.schema import create_queues, create_tables


@pytest.fixture
def deployed(dev: Synth, aws: None) -> Iterator[Deployed]:
    # GIVEN a bootstrapped (mock) account / WHEN CloudFormation creates the dev stack
    yield deploy_to_moto(dev)
    set_services(None)


def _shape(table: dict[str, Any]) -> dict[str, Any]:
    """What must match between two tables, whatever their names."""
    return {
        "KeySchema": table["KeySchema"],
        "AttributeDefinitions": sorted(
            table["AttributeDefinitions"], key=lambda a: a["AttributeName"]
        ),
        "BillingMode": table["BillingModeSummary"]["BillingMode"],
        "GlobalSecondaryIndexes": {
            g["IndexName"]: (g["KeySchema"], g["Projection"])
            for g in table.get("GlobalSecondaryIndexes", [])
        },
    }


def _settings(deployed: Deployed, handler: str) -> Settings:
    return settings_from_env(deployed.function_env(handler))


def test_wiring_only_monitoring_is_left_out(deployed: Deployed) -> None:
    types = {deployed.synthed.template_json["Resources"][k]["Type"] for k in deployed.dropped}
    assert types == MOTO_UNSUPPORTED


def test_wiring_tables_match_the_local_runtime(deployed: Deployed) -> None:
    # GIVEN the tables the local runtime creates, in the same account
    local = Settings(jobs_table="local-jobs", runs_table="local-runs")
    create_tables(deployed.dynamodb, local)
    ddb = deployed.dynamodb
    for deployed_name, local_name in (
        (deployed.outputs["JobsTableName"], local.jobs_table),
        (deployed.outputs["RunsTableName"], local.runs_table),
    ):
        # THEN keys, attribute types, billing and indexes are the same
        ours = ddb.describe_table(TableName=deployed_name)["Table"]
        theirs = ddb.describe_table(TableName=local_name)["Table"]
        assert _shape(ours) == _shape(theirs)
        # AND the TTL attribute is the one the runtime turns on (moto's CloudFormation does not
        # apply TimeToLiveSpecification, so it is read from the template)
        ttl = ddb.describe_time_to_live(TableName=local_name)["TimeToLiveDescription"]
        template_table = next(
            t
            for t in deployed.synthed.resources("AWS::DynamoDB::Table").values()
            if t["Properties"]["TableName"] == deployed_name
        )
        assert template_table["Properties"]["TimeToLiveSpecification"] == {
            "AttributeName": ttl["AttributeName"],
            "Enabled": True,
        }


def _queue(sqs: Any, url: str) -> dict[str, str]:
    attributes: dict[str, str] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])[
        "Attributes"
    ]
    return attributes


def test_wiring_queues_and_redrive_match_the_local_runtime(deployed: Deployed) -> None:
    # GIVEN the queues the local runtime creates
    local = create_queues(deployed.sqs)
    for priority in c.PRIORITIES:
        title = priority.capitalize()
        work = _queue(deployed.sqs, deployed.outputs[f"QueueUrl{title}"])
        dead = _queue(deployed.sqs, deployed.outputs[f"DeadLetterQueueUrl{title}"])
        local_work = _queue(deployed.sqs, local[priority][0])
        local_dead = _queue(deployed.sqs, local[priority][1])
        # THEN retention and redrive are the same, and each work queue redrives to the
        # dead-letter queue of its own priority
        assert work["MessageRetentionPeriod"] == local_work["MessageRetentionPeriod"]
        assert dead["MessageRetentionPeriod"] == local_dead["MessageRetentionPeriod"]
        redrive = json.loads(work["RedrivePolicy"])
        local_redrive = json.loads(local_work["RedrivePolicy"])
        assert int(redrive["maxReceiveCount"]) == int(local_redrive["maxReceiveCount"])
        assert redrive["deadLetterTargetArn"] == dead["QueueArn"]
        assert dead["QueueArn"].endswith(c.dead_letter_queue_name(priority) + "-dev")
        # AND the deployed visibility is 6x the worker's timeout (the local runtime's is short)
        assert (
            int(work["VisibilityTimeout"]) == deployed.synthed.stack.config.queue_visibility_seconds
        )


@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_wiring_function_settings_point_at_created_resources(deployed: Deployed, name: str) -> None:
    # GIVEN a function's environment as CloudFormation resolved it
    settings = _settings(deployed, HANDLERS[name])
    # THEN its tables exist and have the indexes the code queries
    for table, indexes in (
        (settings.jobs_table, {c.DUE_INDEX, c.TENANT_INDEX}),
        (settings.runs_table, {c.DEAD_INDEX, c.ACTIVITY_INDEX}),
    ):
        described = deployed.dynamodb.describe_table(TableName=table)["Table"]
        assert {g["IndexName"] for g in described["GlobalSecondaryIndexes"]} == indexes
    # AND every priority's queue URL is a queue that redrives to that priority's DLQ URL
    for priority in c.PRIORITIES:
        work = _queue(deployed.sqs, settings.queue_url(priority))
        dead = _queue(deployed.sqs, settings.dlq_url(priority))
        assert json.loads(work["RedrivePolicy"])["deadLetterTargetArn"] == dead["QueueArn"]
    assert settings.tenant_source == "context"
    assert settings.aws_region == MOTO_REGION


def test_wiring_tick_fans_out_to_the_created_dispatch_function(deployed: Deployed) -> None:
    from shared.services.ticker import LambdaFanOut

    # GIVEN the tick's and the dispatch function's settings as CloudFormation resolved them
    tick = _settings(deployed, HANDLERS["tick"])
    dispatch = _settings(deployed, HANDLERS["dispatch"])
    # THEN the tick names the created dispatch function, with the configured range size
    function = deployed.lambda_.get_function(FunctionName=tick.dispatch_function)["Configuration"]
    assert function["Handler"] == HANDLERS["dispatch"]
    assert deployed.outputs["DispatchFunctionName"] == tick.dispatch_function
    config = deployed.synthed.stack.config
    assert tick.dispatch_shards_per_range == config.dispatch_shards_per_range
    # AND the dispatch function drains what it is handed, never fanning out again
    assert dispatch.dispatch_function == ""
    # AND the tick built from those settings invokes it, once per range of shards
    services = build_services(settings=tick, clients=AwsClients(tick))
    fan_out = services.ticker._fan_out  # private: the wiring under test
    assert isinstance(fan_out, LambdaFanOut)
    assert fan_out._function == tick.dispatch_function
    ranges = services.ticker.ranges(0, 0)
    assert len(ranges) == -(-config.shards // config.dispatch_shards_per_range)
    assert sorted(s for r in ranges for s in r.shards) == list(range(config.shards))
    assert build_services(settings=dispatch, clients=AwsClients(dispatch)).ticker._fan_out is None


def test_wiring_worker_consumes_every_queue_by_priority(deployed: Deployed) -> None:
    from functions.worker.handler import priority_of

    # GIVEN the worker's settings
    settings = _settings(deployed, HANDLERS["worker"])
    set_services(build_services(settings=settings, clients=AwsClients(settings)))
    mappings = deployed.lambda_.list_event_source_mappings()["EventSourceMappings"]
    # THEN each work queue feeds the worker once, and the worker recognizes its priority
    seen = set()
    for mapping in mappings:
        assert (
            mapping["FunctionArn"]
            .split(":function:")[1]
            .startswith(f"{deployed.synthed.stack.stack_name}-WorkerFunction")
        )
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        priority = priority_of(mapping["EventSourceArn"])
        assert mapping["EventSourceArn"].endswith(f":{c.queue_name(priority)}-dev")
        seen.add(priority)
    assert seen == set(c.PRIORITIES)


def _call(event: dict[str, Any], context: Any) -> tuple[int, Any]:
    result = api_handler(event, context)
    return result["statusCode"], json.loads(result.get("body") or "null")


def test_wiring_api_takes_the_tenant_from_the_request_context(
    deployed: Deployed, lambda_context: Any
) -> None:
    # GIVEN the api function's settings (tenant from the request context) on the created tables
    settings = _settings(deployed, HANDLERS["api"])
    set_services(build_services(settings=settings, clients=AwsClients(settings)))
    create = load_event("api_iam_request.json")
    # WHEN role billing-team (session alice) creates a job with a SigV4-signed request
    status, job = _call(create, lambda_context)
    assert status == 201, job
    # THEN another session of the same role sees it (one tenant per role)
    read = load_event("api_iam_request.json")
    read.update(httpMethod="GET", path=f"/v1/jobs/{job['job_id']}", body=None)
    read["pathParameters"] = {"proxy": f"jobs/{job['job_id']}"}
    read["requestContext"]["identity"]["userArn"] = (
        "arn:aws:sts::123456789012:assumed-role/billing-team/bob"
    )
    status, body = _call(read, lambda_context)
    assert status == 200, body
    assert body["job_id"] == job["job_id"]
    # AND another role, or an API key, does not: 404, as if the job did not exist
    read["requestContext"]["identity"]["userArn"] = "arn:aws:sts::123456789012:assumed-role/other/x"
    assert _call(read, lambda_context)[0] == 404
    keyed = load_event("api_key_request.json")
    keyed.update(path=f"/v1/jobs/{job['job_id']}")
    keyed["pathParameters"] = {"proxy": f"jobs/{job['job_id']}"}
    assert _call(keyed, lambda_context)[0] == 404
    # AND a request without any caller identity is refused, never given a default tenant
    anonymous = load_event("api_iam_request.json")
    anonymous["requestContext"]["identity"] = {"sourceIp": "203.0.113.10"}
    assert _call(anonymous, lambda_context)[0] == 400
