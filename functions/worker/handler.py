"""Worker Lambda entry point: SQS batch -> one Executor.process per record, with partial batch
failures (a record that raises stays on its queue and is retried by SQS). The records of a
batch run side by side, so a long target does not hold up the others in its batch."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    EventType,
    async_process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from shared.constants import PRIORITIES
from shared.models.messages import RunMessage
from shared.observability import count, logger, metrics, tracer
from shared.services.container import get_services

# SQS hands at most ten records to one invocation: one thread each.
RECORD_THREADS = 10
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _record_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=RECORD_THREADS, thread_name_prefix="record")
        return _pool


def priority_of(event_source_arn: str) -> str:
    """Which priority a record's queue serves (its name is the ARN's last part)."""
    settings = get_services().settings
    queue_name = event_source_arn.rsplit(":", 1)[-1]
    for priority in PRIORITIES:
        if settings.queue_url(priority).rstrip("/").rsplit("/", 1)[-1] == queue_name:
            return priority
    return "medium"


def record_handler(record: SQSRecord) -> None:
    """Process one message; raising leaves it on the queue for SQS to redeliver."""
    try:
        message = RunMessage.model_validate_json(record.body)
    except ValidationError:
        # A body no retry can fix: log it and let it go rather than loop to the DLQ.
        count("MessagesMalformed")
        logger.error("malformed_message", extra={"message_id": record.message_id})
        return
    services = get_services()
    priority = priority_of(record.event_source_arn)
    queue_url = services.settings.queue_url(priority)

    def extend_visibility(seconds: int) -> None:
        services.clients.sqs.change_message_visibility(
            QueueUrl=queue_url, ReceiptHandle=record.receipt_handle, VisibilityTimeout=seconds
        )

    services.executor.process(message, priority, extend_visibility)


async def async_record_handler(record: SQSRecord) -> None:
    """Run the (blocking) record handler on a thread, so a batch's records run side by side."""
    await asyncio.get_running_loop().run_in_executor(_record_pool(), record_handler, record)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Process a batch; failed records are reported back (ReportBatchItemFailures). Every
    failed record is reported, even when the whole batch failed: SQS then keeps exactly those
    messages. A processor per invocation: it holds the batch it is working on."""
    processor = AsyncBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    return async_process_partial_response(  # type: ignore[return-value]
        event=event, record_handler=async_record_handler, processor=processor, context=context
    )
