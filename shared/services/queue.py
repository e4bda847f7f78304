"""Sends run messages to the priority queues (and the dead-letter queues)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.models.messages import RunMessage
from shared.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

SQS_BATCH = 10


class SendFailed(Exception):
    """Some messages could not be sent; nothing that depends on them may be committed."""


@dataclass(frozen=True)
class Outgoing:
    """One message and its delay."""

    message: RunMessage
    delay_seconds: int


class RunQueue:
    """SQS access for run messages."""

    def __init__(self, client: SQSClient, settings: Settings) -> None:
        self._sqs = client
        self._settings = settings

    def send(self, priority: str, outgoing: Sequence[Outgoing]) -> None:
        """Send messages in batches of ten; failed entries are retried once, then SendFailed."""
        self._send_batches(self._settings.queue_url(priority), outgoing)

    def send_dead_letter(self, priority: str, message: RunMessage) -> None:
        """Put a run whose attempts are exhausted on its priority's dead-letter queue."""
        self._send_batches(self._settings.dlq_url(priority), [Outgoing(message, 0)])

    def _send_batches(self, url: str, outgoing: Sequence[Outgoing]) -> None:
        for start in range(0, len(outgoing), SQS_BATCH):
            chunk = outgoing[start : start + SQS_BATCH]
            entries: list[SendMessageBatchRequestEntryTypeDef] = [
                {
                    "Id": str(i),
                    "MessageBody": o.message.model_dump_json(),
                    "DelaySeconds": o.delay_seconds,
                }
                for i, o in enumerate(chunk)
            ]
            for _ in range(2):
                resp = self._sqs.send_message_batch(QueueUrl=url, Entries=entries)
                failed_ids = {f["Id"] for f in resp.get("Failed", [])}
                if not failed_ids:
                    break
                entries = [e for e in entries if e["Id"] in failed_ids]
            else:
                raise SendFailed(f"{len(entries)} message(s) could not be sent to {url}")

    def resend(self, priority: str, message: RunMessage, delay_seconds: int) -> None:
        """Send one message (a retry, a hop or a buffered run)."""
        self._send_batches(self._settings.queue_url(priority), [Outgoing(message, delay_seconds)])
