"""One Punctual environment: tables, queues, the api/tick/dispatch/worker functions, the tick
rule, the worker's event sources, the REST API, alarms and a dashboard; each function allowed
exactly the actions it uses on the resources it uses them on."""

from __future__ import annotations

from aws_cdk import AssetHashType, Aws, CfnOutput, Duration, Environment, Stack, Tags
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.asset import LambdaAsset
from infra.config import EnvironmentConfig
from infra.constructs.api import PunctualApi
from infra.constructs.function import PunctualFunction
from infra.constructs.monitoring import Functions, Monitoring
from infra.constructs.queues import Queues
from infra.constructs.tables import SpecTable, Tables
from infra.nag import acknowledge
from shared import constants as c

HANDLERS = {
    "api": "functions.api.handler.lambda_handler",
    "tick": "functions.tick.handler.lambda_handler",
    "dispatch": "functions.dispatch.handler.lambda_handler",
    "worker": "functions.worker.handler.lambda_handler",
}

# DynamoDB actions by use. TransactWriteItems has no IAM action of its own: each item in a
# transaction is authorized as its PutItem/UpdateItem/DeleteItem/ConditionCheckItem.
DDB_READ = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query")
DDB_WRITE = (
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem",
)
TICK_JOBS_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem",
)
WORKER_CONSUME = (
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
)


def _statement(
    sid: str, actions: tuple[str, ...] | list[str], resources: list[str]
) -> iam.PolicyStatement:
    return iam.PolicyStatement(sid=sid, actions=list(actions), resources=resources)


def _table_statements(
    prefix: str, tables: list[SpecTable], actions: tuple[str, ...]
) -> list[iam.PolicyStatement]:
    """Item actions on the tables, and Query on each of their indexes, named one by one."""
    indexes = [t.index_arn(name) for t in tables for name in t.index_names]
    return [
        _statement(f"{prefix}Items", actions, [t.table.table_arn for t in tables]),
        _statement(f"{prefix}Indexes", ("dynamodb:Query",), indexes),
    ]


class PunctualStack(Stack):
    """Everything one environment needs."""

    def __init__(
        self,
        scope: Construct,
        *,
        config: EnvironmentConfig,
        asset: LambdaAsset,
    ) -> None:
        env = (
            Environment(account=config.account, region=config.region)
            if config.account or config.region
            else None
        )
        super().__init__(
            scope,
            config.stack_name,
            env=env,
            description=f"Punctual job scheduler ({config.name})",
            termination_protection=not config.destroy_on_delete,
            analytics_reporting=False,
        )
        Tags.of(self).add("project", "punctual")
        Tags.of(self).add("environment", config.name)
        self.config = config

        self.tables = Tables(self, "Tables", config=config)
        self.queues = Queues(self, "Queues", config=config)

        code = lambda_.Code.from_asset(
            str(asset.path),
            asset_hash=asset.asset_hash,
            asset_hash_type=AssetHashType.CUSTOM,
        )
        environment = self.function_environment()
        self.api_fn = PunctualFunction(
            self,
            "Api",
            config=config,
            code=code,
            handler=HANDLERS["api"],
            description="Punctual HTTP API (API Gateway REST proxy)",
            environment=environment,
            timeout_seconds=config.api_timeout_seconds,
            memory_mb=config.api_memory_mb,
        )
        # Invoked by the tick only, synchronously, once per range of shards of each minute: not
        # retried by Lambda (a failed range keeps the tick's watermark; the next tick redoes it).
        self.dispatch_fn = PunctualFunction(
            self,
            "Dispatch",
            config=config,
            code=code,
            handler=HANDLERS["dispatch"],
            description="Punctual dispatch: dispatches the due jobs of a range of shards",
            environment=environment,
            timeout_seconds=config.dispatch_timeout_seconds,
            memory_mb=config.dispatch_memory_mb,
            # Reserved (config `dispatch_reserved_concurrency`, default one per range a tick
            # invokes at once) so workers cannot starve the fan-out; 0 in config: unreserved.
            reserved_concurrency=config.dispatch_concurrency,
        )
        self.tick_fn = PunctualFunction(
            self,
            "Tick",
            config=config,
            code=code,
            handler=HANDLERS["tick"],
            description="Punctual tick: fans the due index out to the dispatch function",
            environment={
                **environment,
                "PUNCTUAL_DISPATCH_FUNCTION": self.dispatch_fn.function.function_name,
                "PUNCTUAL_DISPATCH_SHARDS_PER_RANGE": str(config.dispatch_shards_per_range),
            },
            timeout_seconds=config.tick_timeout_seconds,
            memory_mb=config.tick_memory_mb,
            # One tick at a time; a late or failed tick is made up by the next one (its
            # watermark), so EventBridge's invocation is not retried or kept past a minute.
            reserved_concurrency=1,
            async_retry_attempts=0,
            async_max_event_age_seconds=60,
        )
        self.worker_fn = PunctualFunction(
            self,
            "Worker",
            config=config,
            code=code,
            handler=HANDLERS["worker"],
            description="Punctual worker: runs one occurrence per SQS message",
            environment=environment,
            timeout_seconds=config.worker_timeout_seconds,
            memory_mb=config.worker_memory_mb,
        )

        self.tick_rule = events.Rule(
            self,
            "TickRule",
            description="Runs the Punctual tick every minute",
            schedule=events.Schedule.rate(Duration.minutes(1)),
            targets=[targets.LambdaFunction(self.tick_fn.function, retry_attempts=0)],
        )
        self._worker_event_sources()
        self._grant()

        self.api = PunctualApi(self, "Http", config=config, handler=self.api_fn.function)
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            queues=self.queues,
            functions=Functions(
                api=self.api_fn.function,
                tick=self.tick_fn.function,
                dispatch=self.dispatch_fn.function,
                worker=self.worker_fn.function,
            ),
            api=self.api.rest_api,
        )
        self._outputs()

    def function_environment(self) -> dict[str, str]:
        """The PUNCTUAL_* settings every function reads (see shared/settings.py)."""
        config = self.config
        env = {
            "PUNCTUAL_JOBS_TABLE": self.tables.jobs.table.table_name,
            "PUNCTUAL_RUNS_TABLE": self.tables.runs.table.table_name,
            "PUNCTUAL_SHARDS": str(config.shards),
            "PUNCTUAL_HORIZON_SECONDS": str(config.horizon_seconds),
            "PUNCTUAL_RUN_RETENTION_DAYS": str(config.run_retention_days),
            "PUNCTUAL_TICK_BUDGET_SECONDS": str(config.tick_budget_seconds),
            "PUNCTUAL_DISPATCH_TIMEOUT_SECONDS": str(config.dispatch_timeout_seconds),
            "PUNCTUAL_TENANT_SOURCE": "context",
            "PUNCTUAL_CONSISTENT_JOB_READS": str(config.consistent_job_reads).lower(),
            # Settings defaults to us-east-1: point the clients at the deployment's region.
            "PUNCTUAL_AWS_REGION": Aws.REGION,
        }
        for priority, pair in self.queues.by_priority.items():
            env[f"PUNCTUAL_QUEUE_URL_{priority.upper()}"] = pair.work.queue_url
            env[f"PUNCTUAL_DLQ_URL_{priority.upper()}"] = pair.dead_letter.queue_url
        return env

    def _worker_event_sources(self) -> None:
        self.event_source_mappings: dict[str, lambda_.EventSourceMapping] = {}
        for priority, pair in self.queues.by_priority.items():
            settings = self.config.queue(priority)
            mapping = lambda_.EventSourceMapping(
                self,
                f"Worker{priority.capitalize()}Source",
                target=self.worker_fn.function,
                event_source_arn=pair.work.queue_arn,
                batch_size=settings.batch_size,
                max_batching_window=(
                    Duration.seconds(settings.max_batching_window_seconds)
                    if settings.max_batching_window_seconds
                    else None
                ),
                max_concurrency=settings.max_concurrency,
                provisioned_poller_config=(
                    lambda_.ProvisionedPollerConfig(
                        minimum_pollers=settings.min_pollers, maximum_pollers=settings.max_pollers
                    )
                    if settings.min_pollers is not None
                    else None
                ),
                report_batch_item_failures=True,
            )
            # Lambda checks the role's permissions when the mapping is created.
            mapping.node.add_dependency(self.worker_fn.role)
            self.event_source_mappings[priority] = mapping

    def _grant(self) -> None:
        jobs, runs = self.tables.jobs, self.tables.runs
        work = [q.queue_arn for q in self.queues.work_queues]
        dead = [q.queue_arn for q in self.queues.dead_letter_queues]

        self.api_fn.add_to_policy(
            *_table_statements("Tables", [jobs, runs], DDB_READ + DDB_WRITE),
            _statement("Dispatch", ("sqs:SendMessage",), work),
            _statement("QueueDepths", ("sqs:GetQueueAttributes",), work + dead),
        )
        # The tick and the dispatch function run the same code over the due index (the tick
        # reads and moves its watermark, and drains in-process when not fanned out): the same
        # grants. The tick may also invoke the dispatch function, and nothing else.
        for fn in (self.tick_fn, self.dispatch_fn):
            fn.add_to_policy(
                _statement("JobsItems", TICK_JOBS_ACTIONS, [jobs.table.table_arn]),
                _statement("DueIndex", ("dynamodb:Query",), [jobs.index_arn(c.DUE_INDEX)]),
                _statement("Dispatch", ("sqs:SendMessage",), work),
            )
        self.tick_fn.add_to_policy(
            _statement(
                "FanOut", ("lambda:InvokeFunction",), [self.dispatch_fn.function.function_arn]
            )
        )
        self.worker_fn.add_to_policy(
            *_table_statements("Tables", [jobs, runs], DDB_READ + DDB_WRITE),
            _statement("Consume", WORKER_CONSUME, work),
            _statement("Requeue", ("sqs:SendMessage",), work),
            _statement("DeadLetter", ("sqs:SendMessage",), dead),
        )
        self._grant_targets()

    def _grant_targets(self) -> None:
        """What job targets and notifications may reach: only the operator's allow-list."""
        allow = self.config.targets
        grants: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
            ("TargetQueues", ("sqs:SendMessage",), allow.sqs_queue_arns),
            ("TargetTopics", ("sns:Publish",), allow.sns_topic_arns),
            ("TargetEventBuses", ("events:PutEvents",), allow.event_bus_arns),
            ("TargetFunctions", ("lambda:InvokeFunction",), allow.lambda_function_arns),
            ("TargetKeys", ("kms:GenerateDataKey", "kms:Decrypt"), allow.kms_key_arns),
        ]
        for sid, actions, arns in grants:
            if not arns:
                continue
            self.worker_fn.add_to_policy(_statement(sid, actions, list(arns)))
            for arn in arns:
                if "*" in arn:
                    acknowledge(
                        self.worker_fn.role,
                        f"AwsSolutions-IAM5[Resource::{arn}]",
                        "An ARN pattern the operator put on the worker's target allow-list "
                        "(config `targets`), so jobs may deliver to those resources.",
                    )

    def _outputs(self) -> None:
        CfnOutput(self, "ApiUrl", value=self.api.url, description="Base URL of the API (/v1)")
        CfnOutput(self, "ApiId", value=self.api.rest_api.rest_api_id)
        CfnOutput(self, "Region", value=Aws.REGION)
        CfnOutput(self, "JobsTableName", value=self.tables.jobs.table.table_name)
        CfnOutput(self, "RunsTableName", value=self.tables.runs.table.table_name)
        for priority, pair in self.queues.by_priority.items():
            CfnOutput(self, f"QueueUrl{priority.capitalize()}", value=pair.work.queue_url)
            CfnOutput(
                self, f"DeadLetterQueueUrl{priority.capitalize()}", value=pair.dead_letter.queue_url
            )
        CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn)
        CfnOutput(self, "DashboardName", value=f"punctual-{self.config.name}")
        CfnOutput(self, "WorkerFunctionName", value=self.worker_fn.function.function_name)
        CfnOutput(self, "DispatchFunctionName", value=self.dispatch_fn.function.function_name)
