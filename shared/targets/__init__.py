"""Delivery of one run attempt to its target: HTTP, SQS, SNS, EventBridge, Lambda or a handler."""

from __future__ import annotations

from typing import assert_never

from shared.aws import AwsClients
from shared.clock import Clock
from shared.models.job import (
    EventBridgeTarget,
    HandlerTarget,
    HttpTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    Target,
)
from shared.targets.base import (
    Delivery,
    DeliveryError,
    DeliveryResult,
    PermanentDeliveryError,
    RetryableDeliveryError,
    build_envelope,
)
from shared.targets.eventbridge import deliver_eventbridge
from shared.targets.handler import (
    Handler,
    HandlerContext,
    HandlerRegistry,
    default_registry,
    deliver_handler,
)
from shared.targets.http import deliver_http
from shared.targets.lambda_ import deliver_lambda
from shared.targets.sns import deliver_sns
from shared.targets.sqs import deliver_sqs

__all__ = [
    "Delivery",
    "DeliveryError",
    "DeliveryResult",
    "Handler",
    "HandlerContext",
    "HandlerRegistry",
    "PermanentDeliveryError",
    "RetryableDeliveryError",
    "build_envelope",
    "default_registry",
    "deliver",
]


def deliver(
    target: Target,
    delivery: Delivery,
    *,
    clients: AwsClients,
    clock: Clock,
    handlers: HandlerRegistry | None = None,
) -> DeliveryResult:
    """Deliver one attempt to the target; raises RetryableDeliveryError / PermanentDeliveryError."""
    if isinstance(target, HttpTarget):
        return deliver_http(target, delivery)
    if isinstance(target, SqsTarget):
        return deliver_sqs(target, delivery, clients.sqs)
    if isinstance(target, SnsTarget):
        return deliver_sns(target, delivery, clients.sns)
    if isinstance(target, EventBridgeTarget):
        return deliver_eventbridge(target, delivery, clients.events)
    if isinstance(target, LambdaTarget):
        return deliver_lambda(target, delivery, clients.lambda_)
    if isinstance(target, HandlerTarget):
        return deliver_handler(
            target, delivery, clock, default_registry if handlers is None else handlers
        )
    assert_never(target)
