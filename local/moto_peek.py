"""A cheap, in-process look at the embedded moto's queues: does a queue hold a message that a
receive would return now? The pollers ask this before each SQS receive, so an idle runtime
does not spend a core on empty receives (about 6 ms of CPU each, client and server). The
answer is only a hint: messages are still received and deleted through the SQS API, and when
moto's internals are not what this expects, every queue simply looks ready."""

from __future__ import annotations

import time
from typing import Any

from moto.sqs.models import sqs_backends


class MotoQueuePeek:
    """Reads moto's SQS backends (the server runs in this process)."""

    def __init__(self) -> None:
        self.broken = False

    def ready(self, queue_arn: str) -> bool:
        """True when the queue may have a visible, undelayed message (or when unsure)."""
        if self.broken:
            return True
        try:
            _, _, _, region, account_id, name = queue_arn.split(":", 5)
            backend: Any = sqs_backends[account_id][region]
            queue = backend.queues.get(name)
            if queue is None:
                return True
            now_ms = time.time() * 1000
            return any(
                m.visible_at < now_ms and m.delayed_until <= now_ms for m in list(queue._messages)
            )
        except (AttributeError, KeyError, TypeError, ValueError):
            self.broken = True
            return True
