"""Domain exceptions. One place (functions/api) maps them to HTTP responses."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FieldError:
    """One invalid field and why."""

    field: str
    message: str


class PunctualError(Exception):
    """Base of every domain error; carries a stable code and a human message."""

    code = "error"

    def __init__(self, message: str, details: list[FieldError] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: list[FieldError] = details or []


class ValidationFailed(PunctualError):
    """The client sent something invalid (400)."""

    code = "validation_error"


class PayloadTooLarge(PunctualError):
    """The request body is over the limit (413)."""

    code = "payload_too_large"


class NotFound(PunctualError):
    """No such resource for this tenant (404)."""

    code = "not_found"


class Conflict(PunctualError):
    """The request conflicts with current state (409)."""

    code = "conflict"


class PreconditionFailed(PunctualError):
    """If-Match did not match the current version (412)."""

    code = "precondition_failed"


class QuotaExceeded(PunctualError):
    """The tenant is over a quota (429)."""

    code = "quota_exceeded"


class ConcurrentUpdate(PunctualError):
    """A conditional write lost to a concurrent writer; the caller may retry."""

    code = "concurrent_update"


class Throttled(PunctualError):
    """AWS throttled the request; retry later (503)."""

    code = "throttled"


@dataclass
class TransactionFailure(Exception):
    """A TransactWriteItems was cancelled; reasons[i] is the code for item i (or None)."""

    reasons: list[str | None] = field(default_factory=list)
