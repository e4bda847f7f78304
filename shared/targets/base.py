"""Types shared by every target: the delivery, its result, its errors and the message envelope."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from shared.clock import format_ms

# Longest error message kept: it ends up in the run record and in notifications.
MAX_ERROR_MESSAGE_CHARS: Final = 1000
# Largest handler / function output kept on the run record, as compact JSON.
MAX_OUTPUT_BYTES: Final = 4 * 1024

DETAIL_OUTPUT_TOO_LARGE: Final = "output_too_large"
DETAIL_OUTPUT_NOT_JSON: Final = "output_not_json"


@dataclass(frozen=True)
class Delivery:
    """One attempt of one run, as handed to a target."""

    job_id: str
    run_id: str
    tenant_id: str
    attempt: int
    scheduled_for_ms: int
    idempotency_key: str  # "<job_id>:<run_id>"
    payload: Any  # JSON-compatible value (may be None)
    timeout_seconds: float  # the job's timeout for this attempt


@dataclass(frozen=True)
class DeliveryResult:
    """What a successful delivery reports back to the worker."""

    detail: str | None = None  # e.g. "http_200"
    output: Any = None  # small JSON-compatible result, may be None


class DeliveryError(Exception):
    """A failed delivery; `code` is a short snake_case reason, `retryable` says what to do next."""

    retryable: ClassVar[bool] = True

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = truncate(message, MAX_ERROR_MESSAGE_CHARS)
        # Both arguments in args, so the error survives pickling (e.g. across processes).
        super().__init__(code, self.message)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class RetryableDeliveryError(DeliveryError):
    """The attempt failed but a later one may succeed."""

    retryable = True


class PermanentDeliveryError(DeliveryError):
    """The attempt failed and retrying will not help."""

    retryable = False


def truncate(text: str, limit: int) -> str:
    """Cut text to at most `limit` characters, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def build_envelope(delivery: Delivery) -> dict[str, Any]:
    """The JSON envelope sent to queue, topic, bus and function targets."""
    return {
        "job_id": delivery.job_id,
        "run_id": delivery.run_id,
        "tenant_id": delivery.tenant_id,
        "attempt": delivery.attempt,
        "scheduled_for": format_ms(delivery.scheduled_for_ms),
        "idempotency_key": delivery.idempotency_key,
        "payload": delivery.payload,
    }


def dumps(value: Any) -> str:
    """Compact, strict JSON (no NaN or infinities), ASCII only.

    ASCII so that a lone surrogate in a string cannot break UTF-8 encoding on the wire.
    """
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def payload_json(value: Any) -> str:
    """`dumps` for what is sent: a value that is not JSON fails the same way every attempt."""
    try:
        return dumps(value)
    except (TypeError, ValueError) as exc:
        raise PermanentDeliveryError("invalid_payload", f"payload is not JSON: {exc}") from exc


def envelope_json(delivery: Delivery) -> str:
    """The envelope of a delivery as a JSON string."""
    return payload_json(build_envelope(delivery))


def result_with_output(output: Any, detail: str | None = None) -> DeliveryResult:
    """A result carrying `output` only if it is JSON and small; otherwise say why it was dropped."""
    if output is None:
        return DeliveryResult(detail=detail, output=None)
    try:
        text = dumps(output)
    except (TypeError, ValueError):
        return DeliveryResult(detail=DETAIL_OUTPUT_NOT_JSON, output=None)
    if len(text.encode("utf-8")) > MAX_OUTPUT_BYTES:
        return DeliveryResult(detail=DETAIL_OUTPUT_TOO_LARGE, output=None)
    # Round-trip so the worker stores plain JSON types (tuples become lists, keys strings).
    return DeliveryResult(detail=detail, output=json.loads(text))
