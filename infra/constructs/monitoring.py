"""Alarms (to one SNS topic) and the operations dashboard."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.config import EnvironmentConfig
from infra.constructs.queues import Queues
from shared.constants import METRICS_NAMESPACE
from shared.observability import SERVICE

ONE_MINUTE = Duration.minutes(1)
FIVE_MINUTES = Duration.minutes(5)


def app_metric(name: str, statistic: str, period: Duration = ONE_MINUTE) -> cw.Metric:
    """A metric the code emits with Powertools (EMF): namespace Punctual, service=punctual."""
    return cw.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": SERVICE},
        statistic=statistic,
        period=period,
    )


@dataclass(frozen=True)
class Functions:
    """The functions whose health is watched."""

    api: lambda_.Function
    tick: lambda_.Function
    dispatch: lambda_.Function
    worker: lambda_.Function


class Monitoring(Construct):
    """The alarm topic, the alarms and the dashboard of one environment."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        queues: Queues,
        functions: Functions,
        api: apigw.RestApi,
    ) -> None:
        super().__init__(scope, construct_id)
        self.config = config
        self.topic = sns.Topic(
            self,
            "AlarmTopic",
            display_name=f"Punctual alarms ({config.name})",
            enforce_ssl=True,
        )
        # enforce_ssl gives the topic a resource policy, which replaces SNS's default one: say
        # explicitly that this account's alarms may publish.
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowPunctualAlarms",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {
                        "aws:SourceArn": (
                            f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:"
                            f"alarm:punctual-{config.name}-*"
                        )
                    },
                },
            )
        )
        if config.alarms.email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarms.email))
        self.alarms: list[cw.Alarm] = []
        self._queue_alarms(queues)
        self._start_lag_alarm()
        self._tick_alarms(functions.tick)
        self._dispatch_alarm(functions.dispatch)
        self._api_alarm(api)
        self.dashboard = self._dashboard(queues, functions, api)

    def _alarm(
        self,
        name: str,
        *,
        description: str,
        metric: cw.IMetric,
        threshold: float,
        comparison: cw.ComparisonOperator,
        evaluation_periods: int = 1,
        datapoints_to_alarm: int | None = None,
        missing: cw.TreatMissingData = cw.TreatMissingData.NOT_BREACHING,
    ) -> cw.Alarm:
        alarm = cw.Alarm(
            self,
            name,
            alarm_name=f"punctual-{self.config.name}-{name}",
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=datapoints_to_alarm,
            treat_missing_data=missing,
        )
        action = cw_actions.SnsAction(self.topic)
        alarm.add_alarm_action(action)
        alarm.add_ok_action(action)
        self.alarms.append(alarm)
        return alarm

    def _queue_alarms(self, queues: Queues) -> None:
        alarms = self.config.alarms
        for priority, pair in queues.by_priority.items():
            self._alarm(
                f"dead-letters-{priority}",
                description=(
                    f"A message is in the {priority} dead-letter queue: a run exhausted its "
                    "attempts (see GET /v1/dead-letters; redrive with POST "
                    "/v1/dead-letters/redrive)."
                ),
                metric=pair.dead_letter.metric_approximate_number_of_messages_visible(
                    period=ONE_MINUTE, statistic="Maximum"
                ),
                threshold=alarms.dead_letter_messages,
                comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                evaluation_periods=1,
            )
            self._alarm(
                f"oldest-message-{priority}",
                description=(
                    f"The oldest message on the {priority} queue is older than "
                    f"{self.config.queue(priority).oldest_message_alarm_seconds} s: workers "
                    "are not keeping up or are failing."
                ),
                metric=pair.work.metric_approximate_age_of_oldest_message(
                    period=ONE_MINUTE, statistic="Maximum"
                ),
                threshold=self.config.queue(priority).oldest_message_alarm_seconds,
                comparison=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=3,
                datapoints_to_alarm=2,
            )

    def _start_lag_alarm(self) -> None:
        alarms = self.config.alarms
        self._alarm(
            "start-lag-p99",
            description=(
                f"StartLagMs p99 (worker start - due time) is over {alarms.start_lag_p99_ms} ms."
            ),
            metric=app_metric("StartLagMs", "p99"),
            threshold=alarms.start_lag_p99_ms,
            comparison=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=alarms.start_lag_periods,
            datapoints_to_alarm=alarms.start_lag_datapoints,
        )

    def _tick_alarms(self, tick: lambda_.Function) -> None:
        self._alarm(
            "tick-errors",
            description="The tick function failed: occurrences are dispatched late.",
            metric=tick.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
            threshold=self.config.alarms.tick_errors,
            comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
        )
        # A tick that does not run at all reports no errors: watch for its absence too.
        self._alarm(
            "tick-missing",
            description="The tick function has not run for 5 minutes.",
            metric=tick.metric_invocations(period=FIVE_MINUTES, statistic="Sum"),
            threshold=1,
            comparison=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
            missing=cw.TreatMissingData.BREACHING,
        )

    def _dispatch_alarm(self, dispatch: lambda_.Function) -> None:
        # A throttled invoke is no function error, yet the tick counts it as a failed range.
        self._alarm(
            "dispatch-errors",
            description=(
                "Dispatch invocations failed or were throttled: their ranges are retried by the "
                "next tick, so occurrences may start late."
            ),
            metric=cw.MathExpression(
                expression="errors + throttles",
                using_metrics={
                    "errors": dispatch.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
                    "throttles": dispatch.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
                },
                period=FIVE_MINUTES,
                label="dispatch errors and throttles",
            ),
            threshold=self.config.alarms.dispatch_errors,
            comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
        )

    def _api_alarm(self, api: apigw.RestApi) -> None:
        self._alarm(
            "api-5xx",
            description="The API answered 5xx: Punctual never answers 5xx to client input.",
            metric=api.metric_server_error(period=FIVE_MINUTES, statistic="Sum"),
            threshold=self.config.alarms.api_5xx_per_5_minutes,
            comparison=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
        )

    def _dashboard(self, queues: Queues, functions: Functions, api: apigw.RestApi) -> cw.Dashboard:
        lag_limit = cw.HorizontalAnnotation(
            value=self.config.alarms.start_lag_p99_ms, label="p99 limit"
        )
        dashboard = cw.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"punctual-{self.config.name}",
            default_interval=Duration.hours(3),
        )
        dashboard.add_widgets(
            cw.GraphWidget(
                title="Start lag (ms)",
                left=[
                    app_metric("StartLagMs", "p50").with_(label="start lag p50"),
                    app_metric("StartLagMs", "p99").with_(label="start lag p99"),
                    app_metric("TriggerLagMs", "p99").with_(label="trigger lag p99"),
                ],
                left_annotations=[lag_limit],
                width=12,
            ),
            cw.GraphWidget(
                title="Throughput (per minute)",
                left=[
                    app_metric("OccurrencesDispatched", "Sum").with_(label="dispatched"),
                    app_metric("RunsSucceeded", "Sum").with_(label="succeeded"),
                    functions.worker.metric_invocations(period=ONE_MINUTE).with_(
                        label="worker invocations"
                    ),
                    api.metric_count(period=ONE_MINUTE).with_(label="API requests"),
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cw.GraphWidget(
                title="Failures (per minute)",
                left=[
                    app_metric("RunsFailed", "Sum").with_(label="failed"),
                    app_metric("RunsRetried", "Sum").with_(label="retried"),
                    app_metric("RunsDead", "Sum").with_(label="dead"),
                    app_metric("RunsSkipped", "Sum").with_(label="skipped"),
                    app_metric("DuplicatesPrevented", "Sum").with_(label="duplicates prevented"),
                    functions.tick.metric_errors(period=ONE_MINUTE).with_(label="tick errors"),
                    functions.dispatch.metric_errors(period=ONE_MINUTE).with_(
                        label="dispatch errors"
                    ),
                    functions.dispatch.metric_throttles(period=ONE_MINUTE).with_(
                        label="dispatch throttles"
                    ),
                    functions.worker.metric_errors(period=ONE_MINUTE).with_(label="worker errors"),
                    api.metric_server_error(period=ONE_MINUTE).with_(label="API 5xx"),
                ],
                width=12,
            ),
            cw.GraphWidget(
                title="Queue depths",
                left=[
                    metric
                    for pair in queues.by_priority.values()
                    for metric in (
                        pair.work.metric_approximate_number_of_messages_visible(
                            period=ONE_MINUTE, statistic="Maximum"
                        ).with_(label=f"{pair.priority} visible"),
                        pair.work.metric_approximate_number_of_messages_not_visible(
                            period=ONE_MINUTE, statistic="Maximum"
                        ).with_(label=f"{pair.priority} in flight"),
                        pair.work.metric(
                            "ApproximateNumberOfMessagesDelayed",
                            period=ONE_MINUTE,
                            statistic="Maximum",
                        ).with_(label=f"{pair.priority} delayed"),
                    )
                ],
                right=[
                    pair.dead_letter.metric_approximate_number_of_messages_visible(
                        period=ONE_MINUTE, statistic="Maximum"
                    ).with_(label=f"{pair.priority} dead letters")
                    for pair in queues.by_priority.values()
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cw.GraphWidget(
                title="Tick and run duration (ms)",
                left=[
                    app_metric("TickDurationMs", "Maximum").with_(label="tick duration max"),
                    functions.dispatch.metric_duration(
                        period=ONE_MINUTE, statistic="Maximum"
                    ).with_(label="dispatch duration max"),
                    app_metric("RunDurationMs", "p50").with_(label="run duration p50"),
                    app_metric("RunDurationMs", "p99").with_(label="run duration p99"),
                ],
                width=12,
            ),
            cw.GraphWidget(
                title="Oldest message age (s)",
                left=[
                    pair.work.metric_approximate_age_of_oldest_message(
                        period=ONE_MINUTE, statistic="Maximum"
                    ).with_(label=pair.priority)
                    for pair in queues.by_priority.values()
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cw.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms), width=24)
        )
        return dashboard
