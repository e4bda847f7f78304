"""The tables, indexes and queues Punctual needs, as one description used by the local runtime,
the tests and (through the same constants) the CDK stack."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared import constants as c
from shared.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

# Redrive: a message received this many times without success goes to the dead-letter queue.
MAX_RECEIVE_COUNT = 5
DLQ_RETENTION_SECONDS = 14 * 86_400
QUEUE_RETENTION_SECONDS = 4 * 86_400


def _gsi(name: str, pk: str, sk: str, projection: str = "ALL") -> dict[str, Any]:
    return {
        "IndexName": name,
        "KeySchema": [
            {"AttributeName": pk, "KeyType": "HASH"},
            {"AttributeName": sk, "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": projection},
    }


def jobs_table_spec(name: str) -> dict[str, Any]:
    """CreateTable arguments of the jobs table (definition, state, guards, due index)."""
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": c.PK, "KeyType": "HASH"},
            {"AttributeName": c.SK, "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": c.PK, "AttributeType": "S"},
            {"AttributeName": c.SK, "AttributeType": "S"},
            {"AttributeName": c.ATTR_DUE_BUCKET, "AttributeType": "S"},
            {"AttributeName": c.ATTR_NEXT_FIRE_AT, "AttributeType": "N"},
            {"AttributeName": c.ATTR_TENANT_ID, "AttributeType": "S"},
            {"AttributeName": c.ATTR_LIST_KEY, "AttributeType": "S"},
        ],
        "GlobalSecondaryIndexes": [
            _gsi(c.DUE_INDEX, c.ATTR_DUE_BUCKET, c.ATTR_NEXT_FIRE_AT),
            # Keys only: a dispatch rewrites the state item, and with ALL every dispatch would
            # also rewrite (and bill) its copy here; the list reads the states by key instead.
            _gsi(c.TENANT_INDEX, c.ATTR_TENANT_ID, c.ATTR_LIST_KEY, "KEYS_ONLY"),
        ],
    }


def runs_table_spec(name: str) -> dict[str, Any]:
    """CreateTable arguments of the runs table (runs, dead index, activity index)."""
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": c.RUNS_PK, "KeyType": "HASH"},
            {"AttributeName": c.RUNS_SK, "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": c.RUNS_PK, "AttributeType": "S"},
            {"AttributeName": c.RUNS_SK, "AttributeType": "S"},
            {"AttributeName": c.ATTR_DEAD_TENANT, "AttributeType": "S"},
            {"AttributeName": c.ATTR_SCHEDULED_FOR, "AttributeType": "N"},
            {"AttributeName": c.ATTR_ACTIVITY_TENANT, "AttributeType": "S"},
            {"AttributeName": c.ATTR_ACTIVITY_AT, "AttributeType": "N"},
        ],
        "GlobalSecondaryIndexes": [
            _gsi(c.DEAD_INDEX, c.ATTR_DEAD_TENANT, c.ATTR_SCHEDULED_FOR),
            _gsi(c.ACTIVITY_INDEX, c.ATTR_ACTIVITY_TENANT, c.ATTR_ACTIVITY_AT),
        ],
    }


def create_tables(client: DynamoDBClient, settings: Settings) -> None:
    """Create both tables with TTL on, if they do not exist yet."""
    for spec in (jobs_table_spec(settings.jobs_table), runs_table_spec(settings.runs_table)):
        try:
            client.create_table(**spec)
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") != "ResourceInUseException":
                raise
        client.get_waiter("table_exists").wait(TableName=spec["TableName"])
        client.update_time_to_live(
            TableName=spec["TableName"],
            TimeToLiveSpecification={"Enabled": True, "AttributeName": c.ATTR_EXPIRES_AT},
        )


def create_queues(
    client: SQSClient, *, visibility_timeout_seconds: int = 60
) -> dict[str, tuple[str, str]]:
    """Create the work and dead-letter queue of every priority; returns
    {priority: (queue_url, dlq_url)}."""
    out: dict[str, tuple[str, str]] = {}
    for priority in c.PRIORITIES:
        dlq_url = client.create_queue(
            QueueName=c.dead_letter_queue_name(priority),
            Attributes={"MessageRetentionPeriod": str(DLQ_RETENTION_SECONDS)},
        )["QueueUrl"]
        dlq_arn = client.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        queue_url = client.create_queue(
            QueueName=c.queue_name(priority),
            Attributes={
                "VisibilityTimeout": str(visibility_timeout_seconds),
                "MessageRetentionPeriod": str(QUEUE_RETENTION_SECONDS),
                "RedrivePolicy": (
                    f'{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"{MAX_RECEIVE_COUNT}"}}'
                ),
            },
        )["QueueUrl"]
        out[priority] = (queue_url, dlq_url)
    return out


def queue_settings_env(urls: dict[str, tuple[str, str]]) -> dict[str, str]:
    """Environment variables that point Settings at created queues."""
    env: dict[str, str] = {}
    for priority, (queue_url, dlq_url) in urls.items():
        env[f"PUNCTUAL_QUEUE_URL_{priority.upper()}"] = queue_url
        env[f"PUNCTUAL_DLQ_URL_{priority.upper()}"] = dlq_url
    return env
