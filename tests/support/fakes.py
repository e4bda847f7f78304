"""Test doubles: an in-memory run queue that honours delays on the injected clock, and a pump
that feeds due messages to the worker the way SQS and the event source mapping would."""

from __future__ import annotations

import io
import itertools
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.clock import ManualClock
from shared.constants import PRIORITIES
from shared.models.messages import RunMessage
from shared.services.queue import Outgoing, RunQueue
from shared.settings import Settings

VISIBILITY_TIMEOUT_MS = 60_000


@dataclass
class Queued:
    """One message on a fake queue."""

    id: int
    url: str
    body: str
    visible_at_ms: int
    receive_count: int = 0

    @property
    def message(self) -> RunMessage:
        return RunMessage.model_validate_json(self.body)


@dataclass
class MemoryQueue(RunQueue):
    """RunQueue over lists, with DelaySeconds and visibility timeouts on the ManualClock."""

    settings: Settings
    clock: ManualClock
    messages: list[Queued] = field(default_factory=list)
    sent: list[Queued] = field(default_factory=list)
    fail_sends: bool = False
    _ids: Any = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        super().__init__(client=None, settings=self.settings, clock=self.clock)  # type: ignore[arg-type]

    def _transmit(self, url: str, outgoing: Sequence[Outgoing]) -> None:
        if self.fail_sends:
            from shared.services.queue import SendFailed

            raise SendFailed("injected send failure")
        now = self.clock.now_ms()
        for o in outgoing:
            q = Queued(
                next(self._ids),
                url,
                o.message.model_dump_json(),
                now + (o.delay_seconds or 0) * 1000,
            )
            self.messages.append(q)
            self.sent.append(q)

    def on(self, url: str) -> list[Queued]:
        """Messages currently on a queue (visible or not)."""
        return [m for m in self.messages if m.url == url]

    def due(self) -> list[Queued]:
        """Visible messages, high before medium before low, oldest first."""
        now = self.clock.now_ms()
        order = {self.settings.queue_url(p): i for i, p in enumerate(PRIORITIES)}
        visible = [m for m in self.messages if m.visible_at_ms <= now and m.url in order]
        return sorted(visible, key=lambda m: (order[m.url], m.visible_at_ms, m.id))

    def receive(self, q: Queued) -> None:
        q.receive_count += 1
        q.visible_at_ms = self.clock.now_ms() + VISIBILITY_TIMEOUT_MS

    def delete(self, q: Queued) -> None:
        self.messages.remove(q)


def sqs_event(queue: MemoryQueue, batch: list[Queued]) -> dict[str, Any]:
    """An SQS event for the worker handler, shaped like the event source mapping's."""
    arns = {
        queue.settings.queue_url(p): f"arn:aws:sqs:us-east-1:123456789012:punctual-{p}"
        for p in PRIORITIES
    }
    return {
        "Records": [
            {
                "messageId": str(q.id),
                "receiptHandle": f"rh-{q.id}",
                "body": q.body,
                "attributes": {"ApproximateReceiveCount": str(q.receive_count)},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": arns[q.url],
                "awsRegion": "us-east-1",
            }
            for q in batch
        ]
    }


def pump(queue: MemoryQueue, handler: Any, context: Any, *, max_rounds: int = 50) -> int:
    """Deliver every visible message to the worker handler in batches of ten; messages the
    handler reports as failed stay (invisible until the visibility timeout). Returns how many
    records were handed over."""
    handed = 0
    for _ in range(max_rounds):
        due = queue.due()
        if not due:
            return handed
        batch = due[:10]
        for q in batch:
            queue.receive(q)
        result = handler(sqs_event(queue, batch), context)
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        for q in batch:
            if str(q.id) not in failed:
                queue.delete(q)
        handed += len(batch)
    return handed


def bodies(queue: MemoryQueue) -> list[dict[str, Any]]:
    """Every message body ever sent, parsed."""
    return [json.loads(q.body) for q in queue.sent]


class InProcessLambda:
    """A Lambda client whose `invoke` runs the dispatch handler in this process, as the real
    function would (moto cannot run Lambda code). Ranges whose shard_start is in `fail`
    answer a function error instead, as a timed-out invocation does."""

    def __init__(self, context: Any, fail: set[int] | None = None) -> None:
        self.context = context
        self.fail = fail or set()
        self.invokes: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events of every invoke, in order."""
        return [event for _, event in self.invokes]

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:
        from functions.dispatch.handler import lambda_handler as dispatch_handler

        assert InvocationType == "RequestResponse"
        event = json.loads(Payload)
        with self._lock:
            self.invokes.append((FunctionName, event))
        if event["shard_start"] in self.fail:
            body = b'{"errorMessage": "Task timed out after 60.00 seconds"}'
            return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(body)}
        answer = dispatch_handler(event, self.context)
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(answer).encode())}
