"""Tick Lambda entry point: EventBridge rate(1 minute) -> one tick pass."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import logger, metrics, tracer
from shared.services.container import get_services


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Run one tick; the EventBridge event carries nothing the tick needs."""
    report = get_services().ticker.tick()
    return {
        "jobs_dispatched": report.jobs_dispatched,
        "buckets_scanned": report.buckets_scanned,
        "errors": report.errors,
        "watermark": report.watermark_after,
    }
