"""Handler target: Python functions registered by name and run inside the worker."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from shared.clock import Clock
from shared.models.job import HandlerTarget
from shared.targets.base import (
    Delivery,
    DeliveryError,
    DeliveryResult,
    PermanentDeliveryError,
    RetryableDeliveryError,
    result_with_output,
)


@dataclass(frozen=True)
class HandlerContext:
    """What a handler gets: the run's identity, its payload, its deadline and the clock."""

    job_id: str
    run_id: str
    tenant_id: str
    attempt: int
    idempotency_key: str
    payload: Any
    scheduled_for_ms: int
    deadline_ms: int  # epoch ms by which the attempt must finish (now + the job's timeout)
    clock: Clock

    def remaining_seconds(self) -> float:
        """Seconds left before the deadline (negative once it has passed)."""
        return (self.deadline_ms - self.clock.now_ms()) / 1000

    @classmethod
    def for_delivery(cls, delivery: Delivery, clock: Clock) -> HandlerContext:
        """The context of one attempt, its deadline counted from now."""
        return cls(
            job_id=delivery.job_id,
            run_id=delivery.run_id,
            tenant_id=delivery.tenant_id,
            attempt=delivery.attempt,
            idempotency_key=delivery.idempotency_key,
            payload=delivery.payload,
            scheduled_for_ms=delivery.scheduled_for_ms,
            deadline_ms=clock.now_ms() + round(delivery.timeout_seconds * 1000),
            clock=clock,
        )


Handler: TypeAlias = Callable[[HandlerContext], Any]


class HandlerRegistry:
    """Handlers by unique name; register one with the `handler(name)` decorator."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}

    def register(self, name: str, func: Handler) -> Handler:
        """Add a handler under a name; a name can only be taken once."""
        if not name:
            raise ValueError("handler name must not be empty")
        if name in self._handlers:
            raise ValueError(f"handler {name!r} is already registered")
        self._handlers[name] = func
        return func

    def handler(self, name: str) -> Callable[[Handler], Handler]:
        """Decorator registering the function under `name`, returned unchanged."""

        def decorate(func: Handler) -> Handler:
            return self.register(name, func)

        return decorate

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._handlers)

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    def get(self, name: str) -> Handler:
        """The handler for a name; an unknown name fails the run for good."""
        try:
            return self._handlers[name]
        except KeyError:
            raise PermanentDeliveryError(
                "unknown_handler", f"no handler named {name!r} is registered"
            ) from None

    def run(self, name: str, ctx: HandlerContext) -> DeliveryResult:
        """Run a handler: its return value becomes the output, its exceptions delivery errors."""
        func = self.get(name)
        try:
            output = func(ctx)
        except DeliveryError:
            raise
        except Exception as exc:
            # The one broad catch: handlers are user code and may raise anything. The error is
            # not swallowed, it fails the attempt (retryably, as the cause is unknown) and its
            # type and message are kept on the run.
            raise RetryableDeliveryError("handler_error", f"{type(exc).__name__}: {exc}") from exc
        return result_with_output(output)


def deliver_handler(
    target: HandlerTarget, delivery: Delivery, clock: Clock, registry: HandlerRegistry
) -> DeliveryResult:
    """Run the named handler for one attempt."""
    return registry.run(target.name, HandlerContext.for_delivery(delivery, clock))


default_registry = HandlerRegistry()


@default_registry.handler("echo")
def echo(ctx: HandlerContext) -> Any:
    """Return the payload unchanged."""
    return ctx.payload


@default_registry.handler("sleep")
def sleep(ctx: HandlerContext) -> Any:
    """Wait `payload.seconds`; past the deadline, wait until it and fail as a timeout."""
    payload = ctx.payload
    seconds = payload.get("seconds") if isinstance(payload, dict) else None
    # bool is an int subclass, but {"seconds": true} is a mistake, not one second.
    if (
        not isinstance(seconds, int | float)
        or isinstance(seconds, bool)
        or not math.isfinite(seconds)
        or seconds < 0
    ):
        raise PermanentDeliveryError(
            "invalid_payload", 'the "sleep" handler needs {"seconds": <number >= 0>}'
        )
    remaining = ctx.remaining_seconds()
    if seconds > remaining:
        ctx.clock.sleep(max(remaining, 0.0))
        raise RetryableDeliveryError(
            "timeout", f"sleep of {seconds:g}s exceeds the {max(remaining, 0.0):g}s left"
        )
    ctx.clock.sleep(seconds)
    return {"slept_seconds": seconds}


@default_registry.handler("fail")
def fail(ctx: HandlerContext) -> Any:
    """Fail on purpose: retryably, or for good when `payload.permanent` is true."""
    payload = ctx.payload if isinstance(ctx.payload, dict) else {}
    message = payload.get("message")
    text = message if isinstance(message, str) and message else "failed on purpose"
    if payload.get("permanent") is True:
        raise PermanentDeliveryError("handler_failed", text)
    raise RetryableDeliveryError("handler_failed", text)
