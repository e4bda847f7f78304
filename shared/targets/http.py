"""HTTP target: one request with the standard library, so the worker needs no extra package."""

from __future__ import annotations

import urllib.error
import urllib.request
from enum import StrEnum
from http.client import HTTPException
from typing import IO, Any, Final

from shared.clock import format_ms
from shared.constants import IDEMPOTENCY_KEY_ATTRIBUTE
from shared.models.job import HttpTarget
from shared.targets.base import (
    Delivery,
    DeliveryResult,
    PermanentDeliveryError,
    RetryableDeliveryError,
    payload_json,
)

# At most this much of an error response is read for the error message.
MAX_ERROR_BODY_BYTES: Final = 64 * 1024
USER_AGENT: Final = "Punctual/0.1"
_METHODS_WITHOUT_BODY: Final = frozenset({"GET", "DELETE"})


class HttpOutcome(StrEnum):
    """What a response status means for the run."""

    SUCCESS = "success"
    RETRYABLE = "retryable"
    PERMANENT = "permanent"


def classify_http_status(status: int) -> HttpOutcome:
    """2xx succeeds; 408, 429 and 5xx may succeed later; anything else (3xx, 4xx) will not."""
    if 200 <= status < 300:
        return HttpOutcome.SUCCESS
    if status in (408, 429) or 500 <= status < 600:
        return HttpOutcome.RETRYABLE
    return HttpOutcome.PERMANENT


def build_http_request(target: HttpTarget, delivery: Delivery) -> urllib.request.Request:
    """The request for one attempt: the payload as JSON body, the run's metadata as headers."""
    headers: dict[str, str] = {"User-Agent": USER_AGENT}
    # The target's headers may replace the user agent or content type, but not the metadata
    # below: receivers rely on it to de-duplicate attempts.
    headers.update(target.headers)
    headers.update(
        {
            IDEMPOTENCY_KEY_ATTRIBUTE: delivery.idempotency_key,
            "X-Punctual-Job-Id": delivery.job_id,
            "X-Punctual-Run-Id": delivery.run_id,
            "X-Punctual-Attempt": str(delivery.attempt),
            "X-Punctual-Scheduled-For": format_ms(delivery.scheduled_for_ms),
        }
    )
    data: bytes | None = None
    if target.method not in _METHODS_WITHOUT_BODY:
        data = payload_json(delivery.payload).encode("utf-8")
        if not any(name.lower() == "content-type" for name in headers):
            headers["Content-Type"] = "application/json"
    # The scheme is http(s): HttpTarget.url is validated as an AnyHttpUrl.
    return urllib.request.Request(  # noqa: S310
        str(target.url), data=data, headers=headers, method=target.method
    )


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse to follow redirects, so the 3xx reaches the caller as an HTTPError."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None


# build_opener is safe to share between threads: handlers keep no per-request state.
_OPENER: Final = urllib.request.build_opener(_NoRedirect)


def _read_error_body(error: urllib.error.HTTPError) -> str:
    try:
        return error.read(MAX_ERROR_BODY_BYTES).decode("utf-8", errors="replace")
    except (OSError, HTTPException):
        # The status already decided the outcome; a body that breaks off only loses detail.
        return ""
    finally:
        error.close()


def _status_error(
    status: int, reason: str, body: str
) -> RetryableDeliveryError | PermanentDeliveryError | None:
    outcome = classify_http_status(status)
    if outcome is HttpOutcome.SUCCESS:
        return None
    message = f"HTTP {status} {reason}".rstrip()
    if body:
        message = f"{message}: {body}"
    if outcome is HttpOutcome.RETRYABLE:
        return RetryableDeliveryError(f"http_{status}", message)
    return PermanentDeliveryError(f"http_{status}", message)


def deliver_http(target: HttpTarget, delivery: Delivery) -> DeliveryResult:
    """Send the request; the job's timeout bounds the connect and each read from the socket."""
    request = build_http_request(target, delivery)
    try:
        with _OPENER.open(request, timeout=delivery.timeout_seconds) as response:
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        # Non-2xx answers (redirects included, as they are not followed) arrive here.
        error = _status_error(exc.code, str(exc.reason or ""), _read_error_body(exc))
        # urllib never raises HTTPError for a 2xx; the fallback only keeps the types honest.
        raise error or PermanentDeliveryError(f"http_{exc.code}", str(exc)) from exc
    except urllib.error.URLError as exc:
        # Failures before a response: DNS, refused or reset connections, TLS, connect timeout.
        if isinstance(exc.reason, TimeoutError):
            raise RetryableDeliveryError("timeout", f"timed out: {exc.reason}") from exc
        raise RetryableDeliveryError("connection_error", str(exc.reason)) from exc
    except TimeoutError as exc:
        # Raised by the read of the status line when the server does not answer in time.
        raise RetryableDeliveryError(
            "timeout", f"no response within {delivery.timeout_seconds:g}s"
        ) from exc
    except (OSError, HTTPException) as exc:
        # The connection broke off mid-response (reset, closed without a status line).
        raise RetryableDeliveryError("connection_error", f"{type(exc).__name__}: {exc}") from exc
    except ValueError as exc:
        # http.client refuses a URL or header value it cannot put on the wire.
        raise PermanentDeliveryError("invalid_request", str(exc)) from exc
    # urllib raises HTTPError for every non-2xx status, so this is a success.
    return DeliveryResult(detail=f"http_{status}", output={"status": status})
