"""The three Lambda functions, invoked in-process the way their event sources would invoke them.

On AWS each function instance handles one event at a time. Here several threads share one
process, so the runtime keeps the handlers' module-level state apart: the API (its resolver
holds the current event) runs one request at a time, and each worker thread gets its own
batch processor."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from aws_lambda_powertools.utilities.batch import BatchProcessor

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


class _PerThreadProcessor:
    """Stands in for the worker's module-level BatchProcessor, which keeps the batch it is
    processing in its attributes: every thread gets a processor of its own."""

    def __init__(self, template: BatchProcessor) -> None:
        self._event_type = template.event_type
        self._local = threading.local()

    def _current(self) -> BatchProcessor:
        processor: BatchProcessor | None = getattr(self._local, "processor", None)
        if processor is None:
            processor = BatchProcessor(event_type=self._event_type)
            self._local.processor = processor
        return processor

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._current()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._current(), name)


def _isolate_worker_batches() -> None:
    if not isinstance(worker_module.processor, _PerThreadProcessor):
        proxy = _PerThreadProcessor(worker_module.processor)
        worker_module.processor = cast(BatchProcessor, proxy)


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
    """Invokes the real handlers: API (one request at a time), tick and worker."""

    def __init__(self) -> None:
        _isolate_worker_batches()

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
