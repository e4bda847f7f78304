"""Announces runs that end in a status the job asked about (webhook and/or SNS)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.clock import format_ms
from shared.models.job import StoredJob
from shared.models.run import RunRecord
from shared.observability import count, logger
from shared.storage.runs import Outcome

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

WEBHOOK_TIMEOUT_SECONDS = 5


def notification_body(job: StoredJob, run: RunRecord, outcome: Outcome) -> dict[str, Any]:
    """The JSON announced for a finished run."""
    attempt = outcome.attempt
    return {
        "event": "run_finished",
        "job_id": run.job_id,
        "job_name": job.state.name,
        "run_id": run.run_id,
        "status": outcome.status.value,
        "reason": outcome.reason,
        "scheduled_for": format_ms(run.scheduled_for_ms),
        "attempt": run.attempt_count,
        "error_code": attempt.error_code if attempt else None,
        "error_message": attempt.error_message if attempt else None,
    }


class Notifier:
    """Best effort: a failed notification is logged and counted, never retried into the run."""

    def __init__(self, sns: SNSClient) -> None:
        self._sns = sns

    def notify(self, job: StoredJob, run: RunRecord, outcome: Outcome) -> None:
        """Send the notifications the job asked for, if its run ended in a listed status."""
        policy = job.definition.notify
        if outcome.status.value not in policy.on:
            return
        body = json.dumps(notification_body(job, run, outcome)).encode()
        if policy.webhook_url is not None:
            request = urllib.request.Request(  # noqa: S310 - the URL is a validated http(s) URL
                str(policy.webhook_url),
                data=body,
                method="POST",
                headers={"Content-Type": "application/json", "User-Agent": "punctual"},
            )
            try:
                with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_SECONDS):  # noqa: S310
                    pass
                count("NotificationsSent")
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                count("NotificationsFailed")
                logger.warning(
                    "notification_failed",
                    extra={"job_id": run.job_id, "channel": "webhook", "error": str(exc)},
                )
        if policy.sns_topic_arn is not None:
            try:
                self._sns.publish(TopicArn=policy.sns_topic_arn, Message=body.decode())
                count("NotificationsSent")
            except (ClientError, BotoCoreError) as exc:
                count("NotificationsFailed")
                logger.warning(
                    "notification_failed",
                    extra={"job_id": run.job_id, "channel": "sns", "error": str(exc)},
                )
