"""EventBridge target: the envelope (idempotency key included) as the event detail."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.models.job import EventBridgeTarget
from shared.targets.aws_errors import aws_error_code, aws_errors, is_known_retryable_code
from shared.targets.base import (
    Delivery,
    DeliveryResult,
    PermanentDeliveryError,
    RetryableDeliveryError,
    envelope_json,
)

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient


def deliver_eventbridge(
    target: EventBridgeTarget, delivery: Delivery, events: EventBridgeClient
) -> DeliveryResult:
    """Put one event on the bus; a rejected entry is an error even though the call succeeded."""
    with aws_errors():
        response = events.put_events(
            Entries=[
                {
                    "Source": target.source,
                    "DetailType": target.detail_type,
                    "Detail": envelope_json(delivery),
                    "EventBusName": target.event_bus_name,
                }
            ]
        )
    entries = response.get("Entries", [])
    entry = entries[0] if entries else {}
    if response.get("FailedEntryCount", 0) or entry.get("ErrorCode"):
        code = entry.get("ErrorCode") or "Unknown"
        message = entry.get("ErrorMessage") or code
        # Per-entry codes are few: throttling and internal failures retry, the rest (malformed
        # detail, not authorized for the source...) will fail the same way next time.
        if is_known_retryable_code(code):
            raise RetryableDeliveryError(aws_error_code(code), message)
        raise PermanentDeliveryError(aws_error_code(code), message)
    return DeliveryResult(detail="eventbridge_put", output={"event_id": entry.get("EventId")})
