"""The one place that turns botocore ClientError codes into domain outcomes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError

from shared.errors import FieldError, Throttled, TransactionFailure, ValidationFailed

CONDITIONAL_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"
THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "Throttling",
        "TransactionConflictException",
    }
)


def error_code(err: ClientError) -> str:
    """The AWS error code of a ClientError."""
    return str(err.response.get("Error", {}).get("Code", ""))


def is_conditional_failure(err: ClientError) -> bool:
    """True when a conditional write lost."""
    return error_code(err) == CONDITIONAL_FAILED


def old_item(err: ClientError) -> dict[str, Any] | None:
    """The item returned with ReturnValuesOnConditionCheckFailure=ALL_OLD, if any."""
    item: Any = err.response.get("Item")
    return dict(item) if isinstance(item, dict) and item else None


def transaction_failure(err: ClientError) -> TransactionFailure:
    """Per-item cancellation codes of a cancelled transaction; re-raise anything else."""
    code = error_code(err)
    if code in THROTTLING_CODES:
        raise Throttled("DynamoDB is throttling; retry shortly") from err
    if code != TRANSACTION_CANCELED:
        raise err
    raw: Any = err.response.get("CancellationReasons", [])
    reasons_raw: list[dict[str, Any]] = [dict(r) for r in raw]
    reasons: list[str | None] = []
    for reason in reasons_raw:
        value = reason.get("Code")
        reasons.append(None if value in (None, "None") else str(value))
    if any(r in THROTTLING_CODES or r == "ThrottlingError" for r in reasons):
        raise Throttled("DynamoDB is throttling; retry shortly") from err
    return TransactionFailure(reasons)


def raise_if_throttled(err: ClientError) -> None:
    """Turn throttling into the domain's Throttled error."""
    if error_code(err) in THROTTLING_CODES:
        raise Throttled("AWS is throttling; retry shortly") from err


@contextmanager
def start_key_errors(start_key: dict[str, Any] | None) -> Iterator[None]:
    """A paging start key the client sent back that DynamoDB refuses is the client's 400 on
    next_token, not a 500 (moto does not check start keys; DynamoDB does)."""
    try:
        yield
    except ClientError as err:
        if start_key and error_code(err) == "ValidationException":
            raise ValidationFailed(
                "invalid next_token",
                [FieldError("next_token", "not a token this API issued for this list")],
            ) from err
        raise
