"""The local SQS event source mapping: polls the priority queues (high before medium before
low), hands each batch to a worker invocation on a small pool of threads (Lambda's concurrency),
and deletes what the worker did not report in `batchItemFailures`."""

from __future__ import annotations

import base64
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

# How long the dispatcher waits after finding every queue empty, without a `ready` hint: the
# added start lag is at most this (plus a receive round trip), far inside the worker's
# early-hold window; each check is three SQS receives.
IDLE_SLEEP_SECONDS = 0.1
# With a hint, how long one `ready` call may wait for a message to become receivable (it
# answers as soon as one does), and how often every queue is still really received from (in
# case the hint is wrong).
READY_WAIT_MS = 250
FORCED_RECEIVE_SECONDS = 2.0
# With a hint, the pause after receives that found nothing (a forced receive, or a hint that
# was wrong, e.g. one that cannot tell): no spinning on receives.
HINTED_IDLE_SLEEP_SECONDS = 0.03
ERROR_BACKOFF_SECONDS = 1.0

Invoke = Callable[[dict[str, Any]], dict[str, Any]]
# (queue ARNs, how long it may wait in ms) -> those a receive may return something from now.
Ready = Callable[[Sequence[str], int], Collection[str]]


@dataclass(frozen=True)
class QueueSource:
    """One work queue the worker consumes."""

    priority: str
    url: str
    arn: str
    region: str


def _message_attributes(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in raw.items():
        binary = value.get("BinaryValue")
        out[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode() if binary is not None else None,
            "stringListValues": list(value.get("StringListValues") or []),
            "binaryListValues": [
                base64.b64encode(b).decode() for b in value.get("BinaryListValues") or []
            ],
            "dataType": value.get("DataType", "String"),
        }
    return out


def sqs_event(source: QueueSource, messages: Sequence[MessageTypeDef]) -> dict[str, Any]:
    """The event Lambda's SQS event source mapping would send for these messages."""
    records = []
    for m in messages:
        attributes: dict[str, str] = {str(k): v for k, v in (m.get("Attributes") or {}).items()}
        attributes.setdefault("ApproximateReceiveCount", "1")
        records.append(
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": attributes,
                "messageAttributes": _message_attributes(dict(m.get("MessageAttributes") or {})),
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": source.arn,
                "awsRegion": source.region,
            }
        )
    return {"Records": records}


class SqsPollers:
    """One dispatcher thread that receives (only when a worker thread is free) and
    `concurrency` worker threads that invoke the worker handler."""

    def __init__(
        self,
        sqs: SQSClient,
        sources: Sequence[QueueSource],
        invoke: Invoke,
        *,
        concurrency: int = 8,
        batch_size: int = 10,
        ready: Ready | None = None,
    ) -> None:
        self._sqs = sqs
        self._ready = ready
        self._last_receive = {source.url: time.monotonic() for source in sources}
        self._received_this_round = False
        self._sources = list(sources)  # in priority order
        self._invoke = invoke
        self._batch_size = max(1, min(10, batch_size))
        self._slots = threading.Semaphore(concurrency)
        self._batches: queue.Queue[tuple[QueueSource, list[MessageTypeDef]] | None] = queue.Queue()
        self._stop = threading.Event()
        self._dispatcher = threading.Thread(
            target=self._dispatch_loop, name="local-sqs-dispatcher", daemon=True
        )
        self._workers = [
            threading.Thread(target=self._work_loop, name=f"local-worker-{i}", daemon=True)
            for i in range(concurrency)
        ]
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._receive_failing = False

    def start(self) -> None:
        """Start polling."""
        for worker in self._workers:
            worker.start()
        self._dispatcher.start()

    def stop(self, grace_seconds: float = 5.0) -> int:
        """Stop receiving, let the batches in hand finish for up to `grace_seconds`; returns
        how many invocations were still running (their messages reappear after the visibility
        timeout, like a Lambda that was stopped)."""
        self._stop.set()
        if self._dispatcher.is_alive():
            self._dispatcher.join(grace_seconds)
        for _ in self._workers:
            self._batches.put(None)
        deadline = time.monotonic() + grace_seconds
        for worker in self._workers:
            if worker.is_alive():
                worker.join(max(0.0, deadline - time.monotonic()))
        with self._busy_lock:
            return self._busy

    # ---- dispatcher ---------------------------------------------------------------------

    def _dispatch_loop(self) -> None:
        while not self._stop.is_set():
            if not self._slots.acquire(timeout=0.2):
                continue
            found = self._receive_next()
            if found is None:
                self._slots.release()
                if self._receive_failing:
                    self._stop.wait(ERROR_BACKOFF_SECONDS)
                elif self._ready is None:
                    self._stop.wait(IDLE_SLEEP_SECONDS)
                elif self._received_this_round:
                    self._stop.wait(HINTED_IDLE_SLEEP_SECONDS)
                # Otherwise the `ready` call has waited already.
                continue
            self._batches.put(found)

    def _receive_next(self) -> tuple[QueueSource, list[MessageTypeDef]] | None:
        """The first non-empty batch, trying the queues in priority order."""
        self._received_this_round = False
        ready: Collection[str] | None = None
        if self._ready is not None:
            now = time.monotonic()
            forced = any(
                now - last >= FORCED_RECEIVE_SECONDS for last in self._last_receive.values()
            )
            ready = self._ready([s.arn for s in self._sources], 0 if forced else READY_WAIT_MS)
        for source in self._sources:
            if self._stop.is_set():
                return None
            now = time.monotonic()
            if (
                ready is not None
                and source.arn not in ready
                and now - self._last_receive[source.url] < FORCED_RECEIVE_SECONDS
            ):
                continue
            self._last_receive[source.url] = now
            self._received_this_round = True
            try:
                response = self._sqs.receive_message(
                    QueueUrl=source.url,
                    MaxNumberOfMessages=self._batch_size,
                    WaitTimeSeconds=0,
                    MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"],
                )
            except (BotoCoreError, ClientError) as err:
                if not self._receive_failing:
                    print(f"receive from {source.url} failed: {err}", file=sys.stderr)
                self._receive_failing = True
                return None
            self._receive_failing = False
            messages = response.get("Messages") or []
            if messages:
                return source, list(messages)
        return None

    # ---- workers ------------------------------------------------------------------------

    def _work_loop(self) -> None:
        while True:
            item = self._batches.get()
            if item is None:
                return
            with self._busy_lock:
                self._busy += 1
            try:
                self._handle(*item)
            finally:
                with self._busy_lock:
                    self._busy -= 1
                self._slots.release()

    def _handle(self, source: QueueSource, messages: list[MessageTypeDef]) -> None:
        try:
            response = self._invoke(sqs_event(source, messages))
        except Exception:  # noqa: BLE001 - a failed invocation: the batch is retried by SQS
            print(
                f"worker invocation failed; {len(messages)} message(s) on {source.priority} "
                "reappear after the visibility timeout:",
                file=sys.stderr,
            )
            traceback.print_exc(file=sys.stderr)
            return
        failed = {f.get("itemIdentifier") for f in (response or {}).get("batchItemFailures", [])}
        done = [m for m in messages if m["MessageId"] not in failed]
        if not done:
            return
        try:
            self._sqs.delete_message_batch(
                QueueUrl=source.url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
        except (BotoCoreError, ClientError) as err:
            print(f"deleting handled messages on {source.url} failed: {err}", file=sys.stderr)
