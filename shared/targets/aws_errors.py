"""Turn botocore errors into retryable or permanent delivery errors, in one place."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError,
    ConnectTimeoutError,
    HTTPClientError,
    ParamValidationError,
    ReadTimeoutError,
)

from shared.targets.base import DeliveryError, PermanentDeliveryError, RetryableDeliveryError

# Codes are compared on their last dot-separated part: SQS reports query-compatible codes such
# as "AWS.SimpleQueueService.NonExistentQueue" or "KMS.ThrottlingException".
RETRYABLE_CODES: Final = frozenset(
    {
        # Throttling, across services.
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "Throttled",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "SlowDown",
        "KmsThrottled",
        "KMSThrottling",
        "KMSThrottlingException",
        "EC2ThrottledException",
        # The service (or its dependency) failed or is not ready yet.
        "InternalError",
        "InternalErrorException",
        "InternalException",
        "InternalFailure",
        "InternalServerError",
        "ServiceException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "RequestTimeout",
        "RequestTimeoutException",
        "ResourceNotReadyException",
        "ResourceConflictException",  # Lambda: function is being created or updated
        "EC2UnexpectedException",
        "ENILimitReachedException",
        "ENINotReadyException",
        "SubnetIPAddressLimitReachedException",
        "SnapStartNotReadyException",
        "SnapStartTimeoutException",
        "EFSMountConnectivityException",
        "EFSMountTimeoutException",
        "EFSIOException",
    }
)

# Listed explicitly because some of them come back as 5xx (Lambda reports a disabled KMS key
# or a bad subnet as 502), and retrying a configuration error only delays the dead letter.
PERMANENT_CODES: Final = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "AuthorizationError",
        "NotAuthorized",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "ExpiredTokenException",
        "NotFound",
        "NotFoundException",
        "ResourceNotFoundException",
        "QueueDoesNotExist",
        "NonExistentQueue",
        "ValidationError",
        "ValidationException",
        "InvalidParameter",
        "InvalidParameterException",
        "InvalidParameterValue",
        "InvalidParameterValueException",
        "ParameterValueInvalid",
        "InvalidRequestContentException",
        "InvalidMessageContents",
        "InvalidAddress",
        "InvalidSecurity",
        "UnsupportedOperation",
        "RequestTooLargeException",
        "UnsupportedMediaTypeException",
        "EndpointDisabled",
        "PlatformApplicationDisabled",
        "KmsAccessDenied",
        "KmsDisabled",
        "KmsInvalidState",
        "KmsInvalidKeyUsage",
        "KmsNotFound",
        "KmsOptInRequired",
        "KMSAccessDenied",
        "KMSAccessDeniedException",
        "KMSDisabled",
        "KMSDisabledException",
        "KMSInvalidState",
        "KMSInvalidStateException",
        "KMSNotFound",
        "KMSNotFoundException",
        "KMSOptInRequired",
        "EC2AccessDeniedException",
        "InvalidRuntimeException",
        "InvalidZipFileException",
        "InvalidSecurityGroupIDException",
        "InvalidSubnetIDException",
        "RecursiveInvocationException",
    }
)

_UNSAFE_CODE_CHARS = re.compile(r"[^A-Za-z0-9_]")


def _short_code(code: str) -> str:
    return code.rsplit(".", 1)[-1]


def is_known_retryable_code(code: str) -> bool:
    """Whether an AWS error code is one of the throttling / service-side codes that retry."""
    return _short_code(code) in RETRYABLE_CODES


def is_retryable_aws_error(code: str, http_status: int | None) -> bool:
    """Whether an AWS error is worth retrying: by its code first, then by its HTTP status.

    Unknown codes fall back on the status (408, 429 and 5xx retry, other 4xx do not); with
    neither a known code nor a status the error is retried, since the attempts are bounded.
    """
    short = _short_code(code)
    if short in PERMANENT_CODES:
        return False
    if short in RETRYABLE_CODES:
        return True
    if http_status is None:
        return True
    if http_status in (408, 429) or http_status >= 500:
        return True
    return not 400 <= http_status < 500


def aws_error_code(code: str) -> str:
    """The delivery error code for an AWS error code, e.g. "aws_AccessDenied"."""
    return "aws_" + (_UNSAFE_CODE_CHARS.sub("_", _short_code(code))[:64] or "Unknown")


def classify_aws_error(exc: BotoCoreError | ClientError) -> DeliveryError:
    """The delivery error for a botocore exception (service error, network error, bad input)."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code") or "Unknown")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        message = str(error.get("Message") or code)
        if is_retryable_aws_error(code, status):
            return RetryableDeliveryError(aws_error_code(code), message)
        return PermanentDeliveryError(aws_error_code(code), message)
    if isinstance(exc, ConnectTimeoutError | ReadTimeoutError):
        return RetryableDeliveryError("timeout", str(exc))
    if isinstance(exc, ConnectionError | HTTPClientError):
        return RetryableDeliveryError("connection_error", str(exc))
    if isinstance(exc, ParamValidationError):
        return PermanentDeliveryError("aws_param_validation", str(exc))
    # Anything else (credentials not yet available, a response botocore cannot parse) is
    # treated as transient: the run's retry policy bounds how often it is tried.
    return RetryableDeliveryError(aws_error_code(type(exc).__name__), str(exc))


@contextmanager
def aws_errors() -> Iterator[None]:
    """Re-raise botocore exceptions raised inside the block as delivery errors."""
    try:
        yield
    except (BotoCoreError, ClientError) as exc:
        raise classify_aws_error(exc) from exc
