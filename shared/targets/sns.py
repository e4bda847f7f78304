"""SNS target: the envelope as message, the idempotency key as a message attribute."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.constants import IDEMPOTENCY_KEY_ATTRIBUTE
from shared.models.job import SnsTarget
from shared.targets.aws_errors import aws_errors
from shared.targets.base import Delivery, DeliveryResult, envelope_json
from shared.targets.sqs import deduplication_id, is_fifo

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sns.type_defs import PublishInputTypeDef


def build_publish_request(target: SnsTarget, delivery: Delivery) -> PublishInputTypeDef:
    """The Publish parameters: FIFO topics group by job and de-duplicate by run."""
    request: PublishInputTypeDef = {
        "TopicArn": target.topic_arn,
        "Message": envelope_json(delivery),
        "MessageAttributes": {
            IDEMPOTENCY_KEY_ATTRIBUTE: {
                "DataType": "String",
                "StringValue": delivery.idempotency_key,
            }
        },
    }
    if is_fifo(target.topic_arn):
        request["MessageGroupId"] = delivery.job_id
        request["MessageDeduplicationId"] = deduplication_id(delivery.idempotency_key)
    return request


def deliver_sns(target: SnsTarget, delivery: Delivery, sns: SNSClient) -> DeliveryResult:
    """Publish one message to the topic."""
    with aws_errors():
        response = sns.publish(**build_publish_request(target, delivery))
    return DeliveryResult(detail="sns_published", output={"message_id": response.get("MessageId")})
