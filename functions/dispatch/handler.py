"""Dispatch Lambda entry point: one range of the due index (a minute, a range of shards) handed
over by a fanned-out tick (shared/services/ticker.py, LambdaFanOut) -> the tick's drain."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import logger, metrics, tracer
from shared.services.container import get_services
from shared.services.ticker import DispatchRange

# Stop taking new jobs this long before the function's timeout, so the answer gets back.
SAFETY_MS = 5_000


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Drain the range; the answer says what was dispatched and whether the range is empty."""
    work = DispatchRange.from_event(event)
    services = get_services()
    deadline = services.clock.now_ms() + context.get_remaining_time_in_millis() - SAFETY_MS
    result = services.ticker.drain(work, deadline_ms=deadline)
    logger.info("dispatch_finished", extra={**work.to_event(), **result.to_payload()})
    return result.to_payload()
