"""Lambda target: a synchronous invocation with the envelope (idempotency key included)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from shared.models.job import LambdaTarget
from shared.targets.aws_errors import aws_errors
from shared.targets.base import (
    DETAIL_OUTPUT_NOT_JSON,
    Delivery,
    DeliveryResult,
    RetryableDeliveryError,
    envelope_json,
    result_with_output,
)

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


def function_error_message(function_error: str, body: bytes) -> str:
    """A readable message from a failed invocation's payload ({"errorType", "errorMessage"})."""
    text = body.decode("utf-8", errors="replace")
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and ("errorMessage" in parsed or "errorType" in parsed):
        error_type = str(parsed.get("errorType") or function_error)
        return f"{error_type}: {parsed.get('errorMessage', '')}"
    return f"{function_error}: {text}" if text else function_error


def deliver_lambda(
    target: LambdaTarget, delivery: Delivery, lambda_client: LambdaClient
) -> DeliveryResult:
    """Invoke the function and wait for it; a function error is retryable."""
    with aws_errors():
        response = lambda_client.invoke(
            FunctionName=target.function_arn,
            InvocationType="RequestResponse",
            Payload=envelope_json(delivery).encode("utf-8"),
        )
        # Reading the stream can still fail on the network, hence inside the error mapping.
        body = response["Payload"].read()
    function_error = response.get("FunctionError")
    if function_error:
        raise RetryableDeliveryError(
            "lambda_function_error", function_error_message(function_error, body)
        )
    detail = f"lambda_{response.get('StatusCode', 200)}"
    if not body:
        return DeliveryResult(detail=detail)
    try:
        output = json.loads(body)
    except ValueError:  # UnicodeDecodeError included
        return DeliveryResult(detail=DETAIL_OUTPUT_NOT_JSON)
    return result_with_output(output, detail)
