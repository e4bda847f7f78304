"""The three Lambda functions, invoked in-process the way their event sources would invoke them.

On AWS each function instance handles one event at a time. Here several threads share one
process, so the runtime keeps the handlers' module-level state apart: the API (its resolver
holds the current event) runs one request at a time; the worker builds a batch processor per
invocation, so its batches can run side by side. The worker runs a batch's records on a pool
of RECORD_THREADS threads per instance, which is one module-level pool here: it is sized for
all of the runtime's concurrent worker invocations, or these would queue for ten threads
(each held by a record waiting for its due millisecond)."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import functions.worker.handler as worker_module
from functions.api.handler import lambda_handler as api_handler
from functions.tick.handler import lambda_handler as tick_handler
from local.environment import ACCOUNT_ID, REGION

API_TIMEOUT_SECONDS = 29
TICK_TIMEOUT_SECONDS = 60
WORKER_TIMEOUT_SECONDS = 900
TICK_RULE = "punctual-tick"
# The API's resolver is one module-level object holding the request it is resolving.
_API_LOCK = threading.Lock()
# Record threads of one worker instance (read before the runtime resizes the pool).
RECORD_THREADS_PER_INSTANCE = worker_module.RECORD_THREADS


@dataclass
class LocalContext:
    """Enough of a Lambda context for Powertools and the handlers."""

    function_name: str
    timeout_seconds: float
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        """The function's ARN, as Lambda reports it."""
        return f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        """Time left before this invocation would time out."""
        left = self.timeout_seconds - (time.monotonic() - self._started)
        return max(0, int(left * 1000))


def scheduled_event() -> dict[str, Any]:
    """The event an EventBridge schedule rule sends."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/{TICK_RULE}"],
        "detail": {},
    }


class LocalLambdas:
    """Invokes the real handlers: API (one request at a time), tick and worker (up to
    `worker_concurrency` invocations side by side)."""

    def __init__(self, worker_concurrency: int = 1) -> None:
        # The pool is made on first use, at this size.
        worker_module.RECORD_THREADS = RECORD_THREADS_PER_INSTANCE * max(1, worker_concurrency)

    def api(self, event: dict[str, Any]) -> dict[str, Any]:
        """One API Gateway REST proxy event -> the proxy result."""
        with _API_LOCK:
            context = LocalContext("punctual-local-api", API_TIMEOUT_SECONDS)
            result: dict[str, Any] = api_handler(event, context)
            return result

    def tick(self) -> dict[str, Any]:
        """One tick, as the EventBridge rule would trigger it."""
        context = LocalContext("punctual-local-tick", TICK_TIMEOUT_SECONDS)
        result: dict[str, Any] = tick_handler(scheduled_event(), context)
        return result

    def worker(self, event: dict[str, Any]) -> dict[str, Any]:
        """One SQS batch -> {"batchItemFailures": [...]}."""
        context = LocalContext("punctual-local-worker", WORKER_TIMEOUT_SECONDS)
        result: dict[str, Any] = worker_module.lambda_handler(event, context)
        return result
