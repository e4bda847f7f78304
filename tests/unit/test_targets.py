"""Unit tests of shared.targets: pure, no sockets (AWS clients are hand-written fakes)."""

from __future__ import annotations

import io
import json
import math
import pickle
import socket
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
)

from shared.aws import AwsClients
from shared.clock import ManualClock
from shared.models.job import (
    EventBridgeTarget,
    HandlerTarget,
    HttpTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
)
from shared.targets import (
    Delivery,
    DeliveryError,
    DeliveryResult,
    HandlerContext,
    HandlerRegistry,
    PermanentDeliveryError,
    RetryableDeliveryError,
    build_envelope,
    default_registry,
    deliver,
)
from shared.targets.aws_errors import aws_errors, classify_aws_error
from shared.targets.base import MAX_ERROR_MESSAGE_CHARS, envelope_json, result_with_output
from shared.targets.http import HttpOutcome, build_http_request, classify_http_status
from shared.targets.sns import build_publish_request
from shared.targets.sqs import build_send_message_request, deduplication_id

START_MS = 1_763_802_000_000  # 2025-11-22T09:00:00.000Z
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:receiver"


@pytest.fixture(autouse=True)
def _no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests stay pure: any attempt to connect anywhere fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("unit tests must not open network connections")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def make_delivery(**changes: Any) -> Delivery:
    delivery = Delivery(
        job_id="job-1",
        run_id="run-1",
        tenant_id="tenant-1",
        attempt=2,
        scheduled_for_ms=START_MS,
        idempotency_key="job-1:run-1",
        payload={"hello": "world"},
        timeout_seconds=10,
    )
    return replace(delivery, **changes)


def make_context(clock: ManualClock, payload: Any = None, timeout_seconds: float = 10) -> Any:
    return HandlerContext.for_delivery(
        make_delivery(payload=payload, timeout_seconds=timeout_seconds), clock
    )


def client_error(code: str, status: int | None, operation: str = "SendMessage") -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": f"{code} happened"}}
    if status is not None:
        response["ResponseMetadata"] = {"HTTPStatusCode": status}
    return ClientError(response, operation)  # type: ignore[arg-type]


def fake_clients(**clients: Any) -> AwsClients:
    """Stands in for AwsClients: each keyword becomes a fake service client attribute."""
    return cast(AwsClients, SimpleNamespace(**clients))


class RecordingClient:
    """A fake boto3 client: records calls and answers with a canned response."""

    def __init__(self, response: dict[str, Any]) -> None:
        self.response = response
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _record(self, operation: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((operation, kwargs))
        return self.response

    def send_message(self, **kwargs: Any) -> dict[str, Any]:
        return self._record("send_message", kwargs)

    def publish(self, **kwargs: Any) -> dict[str, Any]:
        return self._record("publish", kwargs)

    def put_events(self, **kwargs: Any) -> dict[str, Any]:
        return self._record("put_events", kwargs)

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        return self._record("invoke", kwargs)


# --- base: errors, envelope, output ---------------------------------------------------------


def test_delivery_error_kinds_carry_retryable_flag_and_code() -> None:
    # GIVEN one error of each kind
    retryable = RetryableDeliveryError("http_503", "busy")
    permanent = PermanentDeliveryError("http_404", "gone")

    # WHEN / THEN they say whether to retry and keep code and message
    assert retryable.retryable is True
    assert permanent.retryable is False
    assert isinstance(retryable, DeliveryError)
    assert isinstance(permanent, DeliveryError)
    assert (retryable.code, retryable.message) == ("http_503", "busy")


def test_delivery_error_truncates_long_message() -> None:
    # GIVEN a message far over the limit
    message = "x" * 5000

    # WHEN it is wrapped in an error
    error = RetryableDeliveryError("handler_error", message)

    # THEN it is cut to the limit
    assert len(error.message) == MAX_ERROR_MESSAGE_CHARS


def test_delivery_error_survives_pickling() -> None:
    # GIVEN an error (the worker may hand it across processes)
    error = PermanentDeliveryError("http_404", "gone")

    # WHEN it is pickled and restored
    restored = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes

    # THEN kind, code and message are kept
    assert type(restored) is PermanentDeliveryError
    assert (restored.code, restored.message, str(restored)) == ("http_404", "gone", str(error))


def test_envelope_json_payload_not_json_is_permanent() -> None:
    # GIVEN a payload JSON cannot carry
    delivery = make_delivery(payload={"ratio": math.nan})

    # WHEN it is serialised
    with pytest.raises(PermanentDeliveryError) as caught:
        envelope_json(delivery)

    # THEN the attempt fails for good: every retry would fail the same way
    assert caught.value.code == "invalid_payload"


def test_build_http_request_payload_not_json_is_permanent() -> None:
    # GIVEN an HTTP target and a payload JSON cannot carry
    target = HttpTarget(url="https://example.com/hook")

    # WHEN the request is built
    with pytest.raises(PermanentDeliveryError) as caught:
        build_http_request(target, make_delivery(payload=math.inf))

    # THEN the attempt fails for good
    assert caught.value.code == "invalid_payload"


def test_build_envelope_has_metadata_key_and_payload() -> None:
    # GIVEN a delivery
    delivery = make_delivery()

    # WHEN the envelope is built
    envelope = build_envelope(delivery)

    # THEN it carries every field, the time as RFC 3339 with milliseconds
    assert envelope == {
        "job_id": "job-1",
        "run_id": "run-1",
        "tenant_id": "tenant-1",
        "attempt": 2,
        "scheduled_for": "2025-11-22T09:00:00.000Z",
        "idempotency_key": "job-1:run-1",
        "payload": {"hello": "world"},
    }


def test_envelope_json_keeps_none_payload() -> None:
    # GIVEN a delivery without payload
    delivery = make_delivery(payload=None)

    # WHEN it is serialised
    envelope = json.loads(envelope_json(delivery))

    # THEN the payload is an explicit null
    assert "payload" in envelope
    assert envelope["payload"] is None


def test_result_with_output_keeps_small_json_normalised() -> None:
    # GIVEN a small output with a tuple
    output = {"values": (1, 2)}

    # WHEN it becomes a result
    result = result_with_output(output, "ok")

    # THEN it is kept as plain JSON types
    assert result == DeliveryResult(detail="ok", output={"values": [1, 2]})


@pytest.mark.parametrize(
    ("output", "detail"),
    [
        ("x" * 5000, "output_too_large"),
        ({"when": object()}, "output_not_json"),
        (math.nan, "output_not_json"),
    ],
)
def test_result_with_output_drops_large_or_non_json(output: Any, detail: str) -> None:
    # GIVEN an output that is too large or not JSON
    # WHEN it becomes a result
    result = result_with_output(output, "ok")

    # THEN the output is dropped and the detail says why
    assert result == DeliveryResult(detail=detail, output=None)


# --- AWS error classification ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "retryable", "delivery_code"),
    [
        ("ThrottlingException", 400, True, "aws_ThrottlingException"),
        ("TooManyRequestsException", 429, True, "aws_TooManyRequestsException"),
        ("RequestThrottled", 400, True, "aws_RequestThrottled"),
        ("KMS.ThrottlingException", 400, True, "aws_ThrottlingException"),
        ("ServiceUnavailable", 503, True, "aws_ServiceUnavailable"),
        ("InternalError", 500, True, "aws_InternalError"),
        ("SomethingNew", 503, True, "aws_SomethingNew"),
        ("SomethingNew", None, True, "aws_SomethingNew"),
        ("AccessDenied", 403, False, "aws_AccessDenied"),
        ("AccessDeniedException", 400, False, "aws_AccessDeniedException"),
        ("AuthorizationError", 403, False, "aws_AuthorizationError"),
        ("ResourceNotFoundException", 404, False, "aws_ResourceNotFoundException"),
        ("AWS.SimpleQueueService.NonExistentQueue", 400, False, "aws_NonExistentQueue"),
        ("NotFound", 404, False, "aws_NotFound"),
        ("ValidationException", 400, False, "aws_ValidationException"),
        ("InvalidParameterValue", 400, False, "aws_InvalidParameterValue"),
        ("KMSDisabledException", 502, False, "aws_KMSDisabledException"),
        ("SomethingNew", 400, False, "aws_SomethingNew"),
    ],
)
def test_classify_aws_error_client_error_by_code_then_status(
    code: str, status: int | None, retryable: bool, delivery_code: str
) -> None:
    # GIVEN a service error
    exc = client_error(code, status)

    # WHEN it is classified
    error = classify_aws_error(exc)

    # THEN the code decides first, the HTTP status second
    assert error.retryable is retryable
    assert error.code == delivery_code
    assert error.message == f"{code} happened"


@pytest.mark.parametrize(
    ("exc", "retryable", "code"),
    [
        (EndpointConnectionError(endpoint_url="https://sqs"), True, "connection_error"),
        (ConnectTimeoutError(endpoint_url="https://sqs"), True, "timeout"),
        (ReadTimeoutError(endpoint_url="https://sqs"), True, "timeout"),
        (NoCredentialsError(), True, "aws_NoCredentialsError"),
        (ParamValidationError(report="bad"), False, "aws_param_validation"),
    ],
)
def test_classify_aws_error_client_side_errors(exc: Any, retryable: bool, code: str) -> None:
    # GIVEN a botocore error raised before any service answer
    # WHEN it is classified
    error = classify_aws_error(exc)

    # THEN network trouble retries and invalid input does not
    assert (error.retryable, error.code) == (retryable, code)


def test_aws_errors_reraises_as_delivery_error_with_cause() -> None:
    # GIVEN a block raising a botocore error
    cause = client_error("AccessDenied", 403)

    # WHEN it runs inside the mapping
    with pytest.raises(PermanentDeliveryError) as caught, aws_errors():
        raise cause

    # THEN the delivery error chains the original
    assert caught.value.__cause__ is cause


# --- HTTP -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, HttpOutcome.SUCCESS),
        (201, HttpOutcome.SUCCESS),
        (204, HttpOutcome.SUCCESS),
        (299, HttpOutcome.SUCCESS),
        (301, HttpOutcome.PERMANENT),
        (302, HttpOutcome.PERMANENT),
        (304, HttpOutcome.PERMANENT),
        (400, HttpOutcome.PERMANENT),
        (401, HttpOutcome.PERMANENT),
        (404, HttpOutcome.PERMANENT),
        (408, HttpOutcome.RETRYABLE),
        (409, HttpOutcome.PERMANENT),
        (429, HttpOutcome.RETRYABLE),
        (500, HttpOutcome.RETRYABLE),
        (503, HttpOutcome.RETRYABLE),
        (599, HttpOutcome.RETRYABLE),
        (100, HttpOutcome.PERMANENT),
    ],
)
def test_classify_http_status_maps_status_to_outcome(status: int, outcome: HttpOutcome) -> None:
    # GIVEN a response status
    # WHEN it is classified
    result = classify_http_status(status)

    # THEN 2xx succeeds, 408/429/5xx retry, anything else is permanent
    assert result is outcome


def test_build_http_request_post_sends_payload_and_metadata_headers() -> None:
    # GIVEN a POST target with its own headers
    target = HttpTarget(url="https://example.com/hook", headers={"Authorization": "Bearer t"})

    # WHEN the request is built
    request = build_http_request(target, make_delivery())

    # THEN the payload is the JSON body and the metadata travels as headers
    assert request.get_method() == "POST"
    assert request.full_url == "https://example.com/hook"
    assert json.loads(request.data) == {"hello": "world"}  # type: ignore[arg-type]
    headers = {name.lower(): value for name, value in request.header_items()}
    assert headers["idempotency-key"] == "job-1:run-1"
    assert headers["x-punctual-job-id"] == "job-1"
    assert headers["x-punctual-run-id"] == "run-1"
    assert headers["x-punctual-attempt"] == "2"
    assert headers["x-punctual-scheduled-for"] == "2025-11-22T09:00:00.000Z"
    assert headers["content-type"] == "application/json"
    assert headers["authorization"] == "Bearer t"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_build_http_request_get_and_delete_send_no_body(method: str) -> None:
    # GIVEN a target whose method carries no body
    target = HttpTarget(url="https://example.com/hook", method=method)

    # WHEN the request is built
    request = build_http_request(target, make_delivery())

    # THEN there is no body nor content type, but the key is there
    assert request.get_method() == method
    assert request.data is None
    headers = {name.lower(): value for name, value in request.header_items()}
    assert "content-type" not in headers
    assert headers["idempotency-key"] == "job-1:run-1"


def test_build_http_request_metadata_wins_over_target_headers() -> None:
    # GIVEN a target trying to set a metadata header and its own content type
    target = HttpTarget(
        url="https://example.com/hook",
        headers={"X-Punctual-Job-Id": "spoofed", "Content-Type": "application/vnd.x+json"},
    )

    # WHEN the request is built
    request = build_http_request(target, make_delivery())

    # THEN the metadata is Punctual's but the content type is the target's
    headers = {name.lower(): value for name, value in request.header_items()}
    assert headers["x-punctual-job-id"] == "job-1"
    assert headers["content-type"] == "application/vnd.x+json"


# --- SQS / SNS --------------------------------------------------------------------------------


def test_build_send_message_request_standard_queue_has_envelope_and_key() -> None:
    # GIVEN a standard queue
    target = SqsTarget(queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/jobs")

    # WHEN the request is built
    request = build_send_message_request(target, make_delivery())

    # THEN it has the envelope, the key attribute and no FIFO fields
    assert json.loads(request["MessageBody"]) == build_envelope(make_delivery())
    assert request["MessageAttributes"] == {
        "Idempotency-Key": {"DataType": "String", "StringValue": "job-1:run-1"}
    }
    assert "MessageGroupId" not in request
    assert "MessageDeduplicationId" not in request


def test_build_send_message_request_fifo_queue_groups_by_job() -> None:
    # GIVEN a FIFO queue
    target = SqsTarget(queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/jobs.fifo")

    # WHEN the request is built
    request = build_send_message_request(target, make_delivery())

    # THEN messages are grouped by job and de-duplicated by run
    assert request["MessageGroupId"] == "job-1"
    assert request["MessageDeduplicationId"] == deduplication_id("job-1:run-1")


def test_deduplication_id_is_stable_and_within_limits() -> None:
    # GIVEN a very long key with characters SQS would refuse
    key = "j" * 200 + ":" + "r é" * 50

    # WHEN the deduplication id is derived
    dedup = deduplication_id(key)

    # THEN it is a short hex digest, the same every time
    assert len(dedup) == 64
    assert dedup == deduplication_id(key)
    assert all(char in "0123456789abcdef" for char in dedup)


def test_build_publish_request_fifo_topic_groups_by_job() -> None:
    # GIVEN a FIFO topic
    target = SnsTarget(topic_arn="arn:aws:sns:us-east-1:123456789012:jobs.fifo")

    # WHEN the request is built
    request = build_publish_request(target, make_delivery())

    # THEN it carries envelope, key attribute and the FIFO fields
    assert json.loads(request["Message"])["idempotency_key"] == "job-1:run-1"
    assert request["MessageAttributes"]["Idempotency-Key"]["StringValue"] == "job-1:run-1"
    assert request["MessageGroupId"] == "job-1"


def test_deliver_sqs_returns_message_id() -> None:
    # GIVEN a queue client that accepts the message
    sqs = RecordingClient({"MessageId": "m-1"})
    target = SqsTarget(queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/jobs")

    # WHEN a delivery is made
    result = deliver(
        target, make_delivery(), clients=fake_clients(sqs=sqs), clock=ManualClock(START_MS)
    )

    # THEN one message was sent and its id reported
    assert [operation for operation, _ in sqs.calls] == ["send_message"]
    assert result == DeliveryResult(detail="sqs_sent", output={"message_id": "m-1"})


# --- EventBridge ------------------------------------------------------------------------------


def test_deliver_eventbridge_puts_envelope_as_detail() -> None:
    # GIVEN a bus that accepts the event
    events = RecordingClient({"FailedEntryCount": 0, "Entries": [{"EventId": "e-1"}]})

    # WHEN a delivery is made
    result = deliver(
        EventBridgeTarget(event_bus_name="jobs"),
        make_delivery(),
        clients=fake_clients(events=events),
        clock=ManualClock(START_MS),
    )

    # THEN the entry carries the envelope and the event id is reported
    (entry,) = events.calls[0][1]["Entries"]
    assert entry["EventBusName"] == "jobs"
    assert entry["Source"] == "punctual"
    assert entry["DetailType"] == "Punctual Job"
    assert json.loads(entry["Detail"])["idempotency_key"] == "job-1:run-1"
    assert result.output == {"event_id": "e-1"}


@pytest.mark.parametrize(
    ("error_code", "error_cls"),
    [
        ("ThrottlingException", RetryableDeliveryError),
        ("InternalFailure", RetryableDeliveryError),
        ("MalformedDetail", PermanentDeliveryError),
        ("NotAuthorizedForSourceException", PermanentDeliveryError),
    ],
)
def test_deliver_eventbridge_failed_entry_is_classified(
    error_code: str, error_cls: type[DeliveryError]
) -> None:
    # GIVEN a bus rejecting the entry although the call succeeded
    events = RecordingClient(
        {
            "FailedEntryCount": 1,
            "Entries": [{"ErrorCode": error_code, "ErrorMessage": "rejected"}],
        }
    )

    # WHEN a delivery is made
    with pytest.raises(DeliveryError) as caught:
        deliver(
            EventBridgeTarget(),
            make_delivery(),
            clients=fake_clients(events=events),
            clock=ManualClock(START_MS),
        )

    # THEN throttling retries and the rest is permanent
    assert type(caught.value) is error_cls
    assert caught.value.code == f"aws_{error_code}"
    assert caught.value.message == "rejected"


# --- Lambda -----------------------------------------------------------------------------------


def test_deliver_lambda_invokes_synchronously_and_returns_output() -> None:
    # GIVEN a function returning a small JSON value
    lambda_ = RecordingClient({"StatusCode": 200, "Payload": io.BytesIO(b'{"ok": true}')})

    # WHEN a delivery is made
    result = deliver(
        LambdaTarget(function_arn=FUNCTION_ARN),
        make_delivery(),
        clients=fake_clients(lambda_=lambda_),
        clock=ManualClock(START_MS),
    )

    # THEN it was a request-response call with the envelope and the output is kept
    call = lambda_.calls[0][1]
    assert call["InvocationType"] == "RequestResponse"
    assert call["FunctionName"] == FUNCTION_ARN
    assert json.loads(call["Payload"])["idempotency_key"] == "job-1:run-1"
    assert result == DeliveryResult(detail="lambda_200", output={"ok": True})


def test_deliver_lambda_function_error_is_retryable_with_its_message() -> None:
    # GIVEN a function that raised
    body = b'{"errorType": "KeyError", "errorMessage": "\'id\'"}'
    lambda_ = RecordingClient(
        {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(body)}
    )

    # WHEN a delivery is made
    with pytest.raises(RetryableDeliveryError) as caught:
        deliver(
            LambdaTarget(function_arn=FUNCTION_ARN),
            make_delivery(),
            clients=fake_clients(lambda_=lambda_),
            clock=ManualClock(START_MS),
        )

    # THEN the error names the function's exception
    assert caught.value.code == "lambda_function_error"
    assert caught.value.message == "KeyError: 'id'"


def test_deliver_lambda_non_json_output_is_dropped() -> None:
    # GIVEN a function answering with bytes that are not JSON
    lambda_ = RecordingClient({"StatusCode": 200, "Payload": io.BytesIO(b"\xff not json")})

    # WHEN a delivery is made
    result = deliver(
        LambdaTarget(function_arn=FUNCTION_ARN),
        make_delivery(),
        clients=fake_clients(lambda_=lambda_),
        clock=ManualClock(START_MS),
    )

    # THEN the delivery succeeded without output
    assert result == DeliveryResult(detail="output_not_json", output=None)


# --- handler registry -------------------------------------------------------------------------


def test_handler_registry_decorator_registers_and_returns_function() -> None:
    # GIVEN an empty registry
    registry = HandlerRegistry()

    # WHEN a function is decorated
    @registry.handler("double")
    def double(ctx: HandlerContext) -> Any:
        return ctx.payload * 2

    # THEN it is registered and still callable as is
    assert registry.names() == ["double"]
    assert "double" in registry
    assert double(make_context(ManualClock(START_MS), payload=2)) == 4


def test_handler_registry_duplicate_name_raises_value_error() -> None:
    # GIVEN a registry with a handler
    registry = HandlerRegistry()
    registry.register("job", lambda ctx: None)

    # WHEN the name is registered again
    # THEN it is refused
    with pytest.raises(ValueError, match="already registered"):

        @registry.handler("job")
        def again(ctx: HandlerContext) -> Any:
            return None


def test_handler_registry_unknown_name_is_permanent() -> None:
    # GIVEN a registry without the name
    registry = HandlerRegistry()

    # WHEN the handler target is delivered
    with pytest.raises(PermanentDeliveryError) as caught:
        deliver(
            HandlerTarget(name="missing"),
            make_delivery(),
            clients=fake_clients(),
            clock=ManualClock(START_MS),
            handlers=registry,
        )

    # THEN it fails for good
    assert caught.value.code == "unknown_handler"


def test_handler_registry_wraps_user_exception_as_retryable() -> None:
    # GIVEN a handler with a bug
    registry = HandlerRegistry()

    @registry.handler("buggy")
    def buggy(ctx: HandlerContext) -> Any:
        raise KeyError("id")

    # WHEN it runs
    with pytest.raises(RetryableDeliveryError) as caught:
        registry.run("buggy", make_context(ManualClock(START_MS)))

    # THEN the error names the exception and chains it
    assert caught.value.code == "handler_error"
    assert caught.value.message == "KeyError: 'id'"
    assert isinstance(caught.value.__cause__, KeyError)


def test_handler_registry_delivery_error_propagates_as_is() -> None:
    # GIVEN a handler raising a delivery error itself
    registry = HandlerRegistry()
    raised = PermanentDeliveryError("bad_input", "no")

    @registry.handler("strict")
    def strict(ctx: HandlerContext) -> Any:
        raise raised

    # WHEN it runs
    with pytest.raises(PermanentDeliveryError) as caught:
        registry.run("strict", make_context(ManualClock(START_MS)))

    # THEN the very same error comes out
    assert caught.value is raised


def test_handler_registry_large_output_is_dropped() -> None:
    # GIVEN a handler returning more than 4 KiB
    registry = HandlerRegistry()
    registry.register("big", lambda ctx: "x" * 10_000)

    # WHEN it runs
    result = registry.run("big", make_context(ManualClock(START_MS)))

    # THEN the output is dropped and the detail says so
    assert result == DeliveryResult(detail="output_too_large", output=None)


def test_handler_context_deadline_is_now_plus_timeout() -> None:
    # GIVEN a clock and a 2.5 s timeout
    clock = ManualClock(START_MS)

    # WHEN the context is made
    ctx = make_context(clock, timeout_seconds=2.5)

    # THEN the deadline is counted from now
    assert ctx.deadline_ms == START_MS + 2500
    assert ctx.remaining_seconds() == 2.5


def test_default_registry_has_builtins() -> None:
    # GIVEN the default registry
    # WHEN its names are listed
    names = default_registry.names()

    # THEN the built-ins are there
    assert {"echo", "sleep", "fail"} <= set(names)


def test_echo_handler_returns_payload_via_deliver() -> None:
    # GIVEN the echo handler target and no explicit registry
    target = HandlerTarget(name="echo")

    # WHEN it is delivered
    result = deliver(target, make_delivery(), clients=fake_clients(), clock=ManualClock(START_MS))

    # THEN the payload comes back as output
    assert result == DeliveryResult(detail=None, output={"hello": "world"})


def test_sleep_handler_waits_on_the_clock() -> None:
    # GIVEN a manual clock and a sleep shorter than the timeout
    clock = ManualClock(START_MS)
    ctx = make_context(clock, payload={"seconds": 1.5}, timeout_seconds=10)

    # WHEN the sleep handler runs
    result = default_registry.run("sleep", ctx)

    # THEN the clock moved by the sleep
    assert clock.now_ms() == START_MS + 1500
    assert result.output == {"slept_seconds": 1.5}


def test_sleep_handler_past_deadline_sleeps_to_deadline_then_times_out() -> None:
    # GIVEN a sleep longer than the time left
    clock = ManualClock(START_MS)
    ctx = make_context(clock, payload={"seconds": 60}, timeout_seconds=5)

    # WHEN the sleep handler runs
    with pytest.raises(RetryableDeliveryError) as caught:
        default_registry.run("sleep", ctx)

    # THEN it waited exactly until the deadline and reports a timeout
    assert caught.value.code == "timeout"
    assert clock.now_ms() == ctx.deadline_ms


@pytest.mark.parametrize(
    "payload",
    [None, {}, {"seconds": -1}, {"seconds": "1"}, {"seconds": True}, {"seconds": math.inf}, [1]],
)
def test_sleep_handler_invalid_payload_is_permanent(payload: Any) -> None:
    # GIVEN a payload without a usable number of seconds
    clock = ManualClock(START_MS)
    ctx = make_context(clock, payload=payload)

    # WHEN the sleep handler runs
    with pytest.raises(PermanentDeliveryError) as caught:
        default_registry.run("sleep", ctx)

    # THEN it fails for good without waiting
    assert caught.value.code == "invalid_payload"
    assert clock.now_ms() == START_MS


@pytest.mark.parametrize("payload", [None, {}, {"permanent": False}, {"message": "boom"}])
def test_fail_handler_is_retryable_by_default(payload: Any) -> None:
    # GIVEN a fail payload not asking for a permanent failure
    ctx = make_context(ManualClock(START_MS), payload=payload)

    # WHEN the fail handler runs
    with pytest.raises(RetryableDeliveryError) as caught:
        default_registry.run("fail", ctx)

    # THEN it fails retryably
    assert caught.value.code == "handler_failed"


def test_fail_handler_permanent_when_asked() -> None:
    # GIVEN a fail payload asking for a permanent failure
    ctx = make_context(ManualClock(START_MS), payload={"permanent": True, "message": "nope"})

    # WHEN the fail handler runs
    with pytest.raises(PermanentDeliveryError) as caught:
        default_registry.run("fail", ctx)

    # THEN it fails for good with the given message
    assert (caught.value.code, caught.value.message) == ("handler_failed", "nope")
