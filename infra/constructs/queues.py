"""One work queue and one dead-letter queue per priority, with the retention and redrive the
local runtime uses (`shared.storage.schema`)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import EnvironmentConfig
from shared import constants as c
from shared.storage.schema import DLQ_RETENTION_SECONDS, QUEUE_RETENTION_SECONDS


@dataclass(frozen=True)
class PriorityQueues:
    """The queues of one priority."""

    priority: str
    work: sqs.Queue
    dead_letter: sqs.Queue


class Queues(Construct):
    """The work and dead-letter queues of every priority."""

    def __init__(self, scope: Construct, construct_id: str, *, config: EnvironmentConfig) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.DESTROY if config.destroy_on_delete else RemovalPolicy.RETAIN
        self.by_priority: dict[str, PriorityQueues] = {}
        for priority in c.PRIORITIES:
            title = priority.capitalize()
            dead_letter = sqs.Queue(
                self,
                f"{title}DeadLetter",
                queue_name=config.resource_name(c.dead_letter_queue_name(priority)),
                retention_period=Duration.seconds(DLQ_RETENTION_SECONDS),
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
                removal_policy=removal,
            )
            work = sqs.Queue(
                self,
                title,
                queue_name=config.resource_name(c.queue_name(priority)),
                retention_period=Duration.seconds(QUEUE_RETENTION_SECONDS),
                visibility_timeout=Duration.seconds(config.queue_visibility_seconds),
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
                dead_letter_queue=sqs.DeadLetterQueue(
                    queue=dead_letter, max_receive_count=config.max_receive_count
                ),
                removal_policy=removal,
            )
            self.by_priority[priority] = PriorityQueues(priority, work, dead_letter)

    @property
    def work_queues(self) -> list[sqs.Queue]:
        """The work queues, in priority order."""
        return [q.work for q in self.by_priority.values()]

    @property
    def dead_letter_queues(self) -> list[sqs.Queue]:
        """The dead-letter queues, in priority order."""
        return [q.dead_letter for q in self.by_priority.values()]
