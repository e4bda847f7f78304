"""The one factory for Punctual's Lambda functions: same asset, runtime, architecture, logging,
tracing and Powertools settings for all; each with its own role that starts empty, so every
permission a function has is one the stack grants it explicitly."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import LAMBDA_PYTHON_VERSION, EnvironmentConfig
from infra.nag import acknowledge
from shared.constants import METRICS_NAMESPACE
from shared.observability import SERVICE

_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS,
    2557: logs.RetentionDays.SEVEN_YEARS,
    2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}

RUNTIME = lambda_.Runtime(f"python{LAMBDA_PYTHON_VERSION}", lambda_.RuntimeFamily.PYTHON)


def powertools_environment(config: EnvironmentConfig) -> dict[str, str]:
    """Powertools settings shared by every function."""
    return {
        "POWERTOOLS_SERVICE_NAME": SERVICE,
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        "POWERTOOLS_LOG_LEVEL": config.log_level,
        "POWERTOOLS_LOGGER_LOG_EVENT": "false",
        "POWERTOOLS_TRACE_DISABLED": "false" if config.tracing else "true",
        # Responses and exceptions can hold job payloads: keep them out of trace metadata.
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        "POWERTOOLS_TRACER_CAPTURE_ERROR": "false",
    }


class PunctualFunction(Construct):
    """A Punctual Lambda function with its log group and a role of its own."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        code: lambda_.Code,
        handler: str,
        description: str,
        environment: Mapping[str, str],
        timeout_seconds: int,
        memory_mb: int,
        reserved_concurrency: int | None = None,
        async_retry_attempts: int | None = None,
        async_max_event_age_seconds: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.DESTROY if config.destroy_on_delete else RemovalPolicy.RETAIN

        self.log_group = logs.LogGroup(
            self,
            "Logs",
            retention=retention_days(config.log_retention_days),
            removal_policy=removal,
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Punctual {construct_id} function ({config.name})",
        )
        # The function writes only to its own log group (no CreateLogGroup: it exists).
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )
        self.function = lambda_.Function(
            self,
            "Function",
            code=code,
            handler=handler,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            description=description,
            role=self.role,
            log_group=self.log_group,
            timeout=Duration.seconds(timeout_seconds),
            memory_size=memory_mb,
            reserved_concurrent_executions=reserved_concurrency,
            tracing=lambda_.Tracing.ACTIVE if config.tracing else lambda_.Tracing.DISABLED,
            environment={**powertools_environment(config), **environment},
            retry_attempts=async_retry_attempts,
            max_event_age=(
                Duration.seconds(async_max_event_age_seconds)
                if async_max_event_age_seconds is not None
                else None
            ),
        )
        acknowledge(
            self.function,
            "AwsSolutions-L1",
            f"Pinned to python{LAMBDA_PYTHON_VERSION}, a supported Lambda runtime, because the "
            "asset's compiled wheels (pydantic-core) are built for exactly that interpreter and "
            "the asset test imports the handlers with it; move LAMBDA_PYTHON_VERSION in "
            "infra/config.py to upgrade both together.",
        )
        if config.tracing:
            acknowledge(
                self.role,
                "AwsSolutions-IAM5[Resource::*]",
                "Active X-Ray tracing: xray:PutTraceSegments and xray:PutTelemetryRecords "
                "support no resource-level permissions, so AWS requires Resource '*'; nothing "
                "else is granted on '*'.",
            )

    def add_to_policy(self, *statements: iam.PolicyStatement) -> None:
        """Grant the function exactly these statements."""
        for statement in statements:
            self.role.add_to_policy(statement)


def retention_days(days: int) -> logs.RetentionDays:
    """The RetentionDays member for a number of days (validated by the config)."""
    return _RETENTION[days]
