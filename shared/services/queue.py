"""Sends run messages to the priority queues (and the dead-letter queues)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from shared.clock import Clock, SystemClock
from shared.models.messages import RunMessage
from shared.policies import align_wait_ms, sqs_delay_seconds
from shared.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

SQS_BATCH = 10


class SendFailed(Exception):
    """Some messages could not be sent; nothing that depends on them may be committed."""


@dataclass(frozen=True)
class Outgoing:
    """One message and its delay. A delay of None is worked out at the moment of sending,
    from the message's `not_before` (so time spent before the send does not make it late)."""

    message: RunMessage
    delay_seconds: int | None = None


class RunQueue:
    """SQS access for run messages."""

    def __init__(self, client: SQSClient, settings: Settings, clock: Clock | None = None) -> None:
        self._sqs = client
        self._settings = settings
        self._clock: Clock = clock or SystemClock()

    def send(self, priority: str, outgoing: Sequence[Outgoing], *, align: bool = False) -> None:
        """Send messages in batches of ten; failed entries are retried once, then SendFailed.
        `align`: first wait (under a second) for the moment the first delayed message's delay
        lands it just after its due time (see Settings.send_late_tolerance_ms)."""
        if align:
            self._align(outgoing)
        self._send_batches(self._settings.queue_url(priority), outgoing)

    def send_dead_letter(self, priority: str, message: RunMessage) -> None:
        """Put a run whose attempts are exhausted on its priority's dead-letter queue."""
        self._send_batches(self._settings.dlq_url(priority), [Outgoing(message, 0)])

    def resend(self, priority: str, message: RunMessage, delay_seconds: int | None = None) -> None:
        """Send one message (a retry, a hop or a buffered run); no delay given: the message's
        `not_before` decides."""
        self._send_batches(self._settings.queue_url(priority), [Outgoing(message, delay_seconds)])

    def _align(self, outgoing: Sequence[Outgoing]) -> None:
        now = self._clock.now_ms()
        late = self._settings.send_late_tolerance_ms
        if late == 0:
            # Never late: every whole-second delay lands early whenever it is sent.
            return
        for o in outgoing:
            # Only a message SQS will delay can be placed; one due now goes out at once.
            if o.delay_seconds is None and o.message.not_before - now >= 1000 + late:
                wait = align_wait_ms(o.message.not_before, now, late)
                if wait:
                    self._clock.sleep_until(now + wait)
                return

    def _send_batches(self, url: str, outgoing: Sequence[Outgoing]) -> None:
        for start in range(0, len(outgoing), SQS_BATCH):
            now = self._clock.now_ms()
            late = self._settings.send_late_tolerance_ms
            chunk = [
                o
                if o.delay_seconds is not None
                else replace(o, delay_seconds=sqs_delay_seconds(o.message.not_before, now, late))
                for o in outgoing[start : start + SQS_BATCH]
            ]
            self._transmit(url, chunk)

    def _transmit(self, url: str, chunk: Sequence[Outgoing]) -> None:
        """One SendMessageBatch (every delay resolved), with one retry of failed entries."""
        entries: list[SendMessageBatchRequestEntryTypeDef] = [
            {
                "Id": str(i),
                "MessageBody": o.message.model_dump_json(),
                "DelaySeconds": o.delay_seconds or 0,
            }
            for i, o in enumerate(chunk)
        ]
        for _ in range(2):
            resp = self._sqs.send_message_batch(QueueUrl=url, Entries=entries)
            failed_ids = {f["Id"] for f in resp.get("Failed", [])}
            if not failed_ids:
                return
            entries = [e for e in entries if e["Id"] in failed_ids]
        raise SendFailed(f"{len(entries)} message(s) could not be sent to {url}")
