"""boto3 clients made on first use, pointed at the configured endpoint (moto locally)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from shared.settings import Settings, get_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient

_BOTO_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=5,
    read_timeout=30,
    max_pool_connections=32,
)
# A synchronous invoke may run up to the job's timeout, and a client-side retry would invoke the
# function twice: the worker's own retry policy decides instead.
_LAMBDA_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 1},
    connect_timeout=5,
    read_timeout=900,
    max_pool_connections=32,
)


class AwsClients:
    """A lazily built, thread-safe set of boto3 clients sharing one session."""

    def __init__(self, settings: Settings | None = None, session: boto3.Session | None = None):
        self._settings = settings
        self._session = session
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def settings(self) -> Settings:
        """The settings these clients were made for."""
        return self._settings or get_settings()

    def _client(self, service: str) -> Any:
        with self._lock:
            if service not in self._clients:
                session = self._session or boto3.Session()
                self._clients[service] = session.client(
                    service,  # type: ignore[call-overload]
                    region_name=self.settings.aws_region,
                    endpoint_url=self.settings.aws_endpoint_url,
                    config=_LAMBDA_CONFIG if service == "lambda" else _BOTO_CONFIG,
                )
            return self._clients[service]

    @property
    def dynamodb(self) -> DynamoDBClient:
        """DynamoDB client."""
        client: DynamoDBClient = self._client("dynamodb")
        return client

    @property
    def sqs(self) -> SQSClient:
        """SQS client."""
        client: SQSClient = self._client("sqs")
        return client

    @property
    def sns(self) -> SNSClient:
        """SNS client."""
        client: SNSClient = self._client("sns")
        return client

    @property
    def events(self) -> EventBridgeClient:
        """EventBridge client."""
        client: EventBridgeClient = self._client("events")
        return client

    @property
    def lambda_(self) -> LambdaClient:
        """Lambda client."""
        client: LambdaClient = self._client("lambda")
        return client


_default: AwsClients | None = None
_default_lock = threading.Lock()


def get_clients() -> AwsClients:
    """The process-wide clients, made on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = AwsClients()
        return _default


def reset_clients() -> None:
    """Forget the process-wide clients (tests and the local runtime re-point them)."""
    global _default
    with _default_lock:
        _default = None
