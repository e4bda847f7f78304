"""Alarms to one SNS topic, and the dashboard."""

from __future__ import annotations

import json
from typing import Any

import pytest
from infra_testing import Synth, synth

from shared import constants as c


def _alarms(synthed: Synth) -> dict[str, dict[str, Any]]:
    return {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in synthed.resources("AWS::CloudWatch::Alarm").values()
    }


def _topic_id(synthed: Synth) -> str:
    (topic_id,) = synthed.resources("AWS::SNS::Topic")
    return topic_id


def test_monitoring_every_alarm_notifies_the_topic(dev: Synth) -> None:
    topic = {"Ref": _topic_id(dev)}
    alarms = _alarms(dev)
    assert len(alarms) == 3 + 3 + 1 + 2 + 1 + 1
    for name, alarm in alarms.items():
        assert alarm["AlarmActions"] == [topic], name
        assert alarm["OKActions"] == [topic], name
        assert alarm["AlarmDescription"], name


@pytest.mark.parametrize("priority", c.PRIORITIES)
def test_monitoring_any_dead_letter_alarms(dev: Synth, priority: str) -> None:
    alarm = _alarms(dev)[f"punctual-dev-dead-letters-{priority}"]
    assert alarm["Namespace"] == "AWS/SQS"
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert alarm["Threshold"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    (dimension,) = alarm["Dimensions"]
    queue_id = dimension["Value"]["Fn::GetAtt"][0]
    queue = dev.template_json["Resources"][queue_id]["Properties"]
    assert queue["QueueName"] == f"{c.dead_letter_queue_name(priority)}-dev"


@pytest.mark.parametrize("priority", c.PRIORITIES)
def test_monitoring_oldest_message_on_each_work_queue(dev: Synth, priority: str) -> None:
    alarm = _alarms(dev)[f"punctual-dev-oldest-message-{priority}"]
    assert alarm["MetricName"] == "ApproximateAgeOfOldestMessage"
    assert alarm["Threshold"] == dev.stack.config.queue(priority).oldest_message_alarm_seconds  # type: ignore[index]
    # A message may wait out a 900 s DelaySeconds legitimately.
    assert alarm["Threshold"] > 900
    queue_id = alarm["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
    assert dev.template_json["Resources"][queue_id]["Properties"]["QueueName"] == (
        f"{c.queue_name(priority)}-dev"
    )


def test_monitoring_start_lag_p99_over_two_seconds(dev: Synth) -> None:
    alarm = _alarms(dev)["punctual-dev-start-lag-p99"]
    assert alarm["Namespace"] == c.METRICS_NAMESPACE
    assert alarm["MetricName"] == "StartLagMs"
    assert alarm["ExtendedStatistic"] == "p99"
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "punctual"}]
    assert alarm["Threshold"] == 2000
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Period"] == 60


def test_monitoring_tick_errors_and_absence(dev: Synth) -> None:
    alarms = _alarms(dev)
    errors = alarms["punctual-dev-tick-errors"]
    assert (errors["Namespace"], errors["MetricName"]) == ("AWS/Lambda", "Errors")
    tick_id = errors["Dimensions"][0]["Value"]["Ref"]
    assert dev.template_json["Resources"][tick_id]["Properties"]["Handler"].startswith(
        "functions.tick."
    )
    missing = alarms["punctual-dev-tick-missing"]
    assert missing["MetricName"] == "Invocations"
    assert missing["TreatMissingData"] == "breaching"


def test_monitoring_dispatch_errors_and_throttles(dev: Synth) -> None:
    # GIVEN the dispatch alarm
    alarm = _alarms(dev)["punctual-dev-dispatch-errors"]
    # THEN it adds the dispatch function's errors and throttles (both fail a tick's range)
    by_id = {m["Id"]: m for m in alarm["Metrics"]}
    (expression,) = (m["Expression"] for m in alarm["Metrics"] if "Expression" in m)
    assert expression == "errors + throttles"
    for metric_id, name in (("errors", "Errors"), ("throttles", "Throttles")):
        stat = by_id[metric_id]["MetricStat"]
        assert stat["Metric"]["Namespace"] == "AWS/Lambda"
        assert stat["Metric"]["MetricName"] == name
        assert (stat["Stat"], stat["Period"]) == ("Sum", 300)
        fn_id = stat["Metric"]["Dimensions"][0]["Value"]["Ref"]
        handler = dev.template_json["Resources"][fn_id]["Properties"]["Handler"]
        assert handler.startswith("functions.dispatch.")
    assert alarm["Threshold"] == dev.stack.config.alarms.dispatch_errors == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_monitoring_api_5xx(dev: Synth) -> None:
    alarm = _alarms(dev)["punctual-dev-api-5xx"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/ApiGateway", "5XXError")
    assert alarm["Dimensions"] == [{"Name": "ApiName", "Value": "punctual-dev"}]


def test_monitoring_alarm_thresholds_from_config() -> None:
    synthed = synth("staging", {"alarms": {"start_lag_p99_ms": 500, "api_5xx_per_5_minutes": 3}})
    alarms = _alarms(synthed)
    assert alarms["punctual-staging-start-lag-p99"]["Threshold"] == 500
    assert alarms["punctual-staging-api-5xx"]["Threshold"] == 3


def test_monitoring_email_subscription_when_configured(dev: Synth) -> None:
    dev.template.resource_count_is("AWS::SNS::Subscription", 0)
    synthed = synth("staging", {"alarms": {"email": "ops@example.com"}})
    synthed.template.has_resource_properties(
        "AWS::SNS::Subscription",
        {
            "Protocol": "email",
            "Endpoint": "ops@example.com",
            "TopicArn": {"Ref": _topic_id(synthed)},
        },
    )


def test_monitoring_topic_requires_tls_and_lets_cloudwatch_publish(dev: Synth) -> None:
    (policy,) = dev.resources("AWS::SNS::TopicPolicy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in statements
    )
    allow = next(s for s in statements if s.get("Sid") == "AllowPunctualAlarms")
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    assert "alarm:punctual-dev-*" in json.dumps(allow["Condition"]["ArnLike"])
    assert set(allow["Condition"]["StringEquals"]) == {"aws:SourceAccount"}


def test_monitoring_dashboard_shows_lag_throughput_failures_depths(dev: Synth) -> None:
    (dashboard,) = dev.resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert dashboard["Properties"]["DashboardName"] == "punctual-dev"
    for title in ("Start lag", "Throughput", "Failures", "Queue depths"):
        assert title in body
    for metric in (
        "StartLagMs",
        "TriggerLagMs",
        "OccurrencesDispatched",
        "RunsSucceeded",
        "RunsFailed",
        "RunsRetried",
        "RunsDead",
        "DuplicatesPrevented",
        "TickDurationMs",
        "ApproximateNumberOfMessagesVisible",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ):
        assert metric in body, metric
