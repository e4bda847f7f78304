"""SQS target: the envelope as message body, the idempotency key as a message attribute."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from shared.constants import IDEMPOTENCY_KEY_ATTRIBUTE
from shared.models.job import SqsTarget
from shared.targets.aws_errors import aws_errors
from shared.targets.base import Delivery, DeliveryResult, envelope_json

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageRequestTypeDef


def deduplication_id(idempotency_key: str) -> str:
    """A FIFO deduplication id for the key: its SHA-256 hex digest.

    Hashing keeps the id within the 128 allowed characters and the allowed alphabet whatever
    the job and run ids look like; the readable key travels in the message attribute.
    """
    return hashlib.sha256(idempotency_key.encode("utf-8")).hexdigest()


def is_fifo(name_or_url: str) -> bool:
    """Whether a queue URL or topic ARN names a FIFO queue or topic."""
    return name_or_url.rstrip("/").endswith(".fifo")


def build_send_message_request(target: SqsTarget, delivery: Delivery) -> SendMessageRequestTypeDef:
    """The SendMessage parameters: FIFO queues group by job and de-duplicate by run."""
    request: SendMessageRequestTypeDef = {
        "QueueUrl": str(target.queue_url),
        "MessageBody": envelope_json(delivery),
        "MessageAttributes": {
            IDEMPOTENCY_KEY_ATTRIBUTE: {
                "DataType": "String",
                "StringValue": delivery.idempotency_key,
            }
        },
    }
    if is_fifo(request["QueueUrl"]):
        request["MessageGroupId"] = delivery.job_id
        request["MessageDeduplicationId"] = deduplication_id(delivery.idempotency_key)
    return request


def deliver_sqs(target: SqsTarget, delivery: Delivery, sqs: SQSClient) -> DeliveryResult:
    """Send one message to the queue."""
    with aws_errors():
        response = sqs.send_message(**build_send_message_request(target, delivery))
    return DeliveryResult(detail="sqs_sent", output={"message_id": response.get("MessageId")})
