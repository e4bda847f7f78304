"""The jobs and runs tables, built from the same CreateTable specs the local runtime uses
(`shared.storage.schema`), so keys, attribute types and indexes cannot drift."""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from infra.config import EnvironmentConfig
from shared import constants as c
from shared.storage.schema import jobs_table_spec, runs_table_spec

_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
_PROJECTIONS = {
    "ALL": dynamodb.ProjectionType.ALL,
    "KEYS_ONLY": dynamodb.ProjectionType.KEYS_ONLY,
    "INCLUDE": dynamodb.ProjectionType.INCLUDE,
}


def _keys(
    spec: dict[str, Any], key_schema: list[dict[str, str]]
) -> tuple[dynamodb.Attribute, dynamodb.Attribute | None]:
    """The (partition, sort) key attributes of a key schema, typed from the spec."""
    types = {a["AttributeName"]: a["AttributeType"] for a in spec["AttributeDefinitions"]}
    keys = {k["KeyType"]: k["AttributeName"] for k in key_schema}
    partition = dynamodb.Attribute(name=keys["HASH"], type=_TYPES[types[keys["HASH"]]])
    sort = (
        dynamodb.Attribute(name=keys["RANGE"], type=_TYPES[types[keys["RANGE"]]])
        if "RANGE" in keys
        else None
    )
    return partition, sort


class SpecTable(Construct):
    """A DynamoDB table made from a CreateTable-shaped spec: on-demand, point-in-time
    recovery, TTL on `expires_at`, deletion protection and RETAIN outside dev."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        spec: dict[str, Any],
        config: EnvironmentConfig,
    ) -> None:
        super().__init__(scope, construct_id)
        if spec["BillingMode"] != "PAY_PER_REQUEST":
            raise ValueError("Punctual's tables are on-demand")
        self.spec = spec
        partition, sort = _keys(spec, spec["KeySchema"])
        self.table = dynamodb.Table(
            self,
            "Table",
            table_name=spec["TableName"],
            partition_key=partition,
            sort_key=sort,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=c.ATTR_EXPIRES_AT,
            deletion_protection=config.deletion_protection,
            removal_policy=(
                RemovalPolicy.DESTROY if config.destroy_on_delete else RemovalPolicy.RETAIN
            ),
        )
        for gsi in spec.get("GlobalSecondaryIndexes", []):
            projection = gsi["Projection"]
            gsi_partition, gsi_sort = _keys(spec, gsi["KeySchema"])
            self.table.add_global_secondary_index(
                index_name=gsi["IndexName"],
                projection_type=_PROJECTIONS[projection["ProjectionType"]],
                non_key_attributes=projection.get("NonKeyAttributes"),
                partition_key=gsi_partition,
                sort_key=gsi_sort,
            )

    @property
    def index_names(self) -> list[str]:
        """Names of the table's global secondary indexes."""
        return [gsi["IndexName"] for gsi in self.spec.get("GlobalSecondaryIndexes", [])]

    def index_arn(self, name: str) -> str:
        """ARN of one index (by name: no `index/*` wildcard in any policy)."""
        if name not in self.index_names:
            raise KeyError(name)
        return f"{self.table.table_arn}/index/{name}"


class Tables(Construct):
    """Both tables of an environment."""

    def __init__(self, scope: Construct, construct_id: str, *, config: EnvironmentConfig) -> None:
        super().__init__(scope, construct_id)
        self.jobs = SpecTable(
            self, "Jobs", spec=jobs_table_spec(config.resource_name(c.JOBS_TABLE)), config=config
        )
        self.runs = SpecTable(
            self, "Runs", spec=runs_table_spec(config.resource_name(c.RUNS_TABLE)), config=config
        )
