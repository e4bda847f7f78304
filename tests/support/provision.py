"""Tables and queues on the current (moto) AWS, and the settings that point at them."""

from __future__ import annotations

from typing import Any

from shared.aws import AwsClients
from shared.settings import Settings
from shared.storage.schema import create_queues, create_tables


def provisioned_settings() -> Settings:
    """Create Punctual's tables and queues and return settings pointing at them (tenant from
    the X-Tenant-Id header, as in the local runtime)."""
    base = Settings(tenant_source="header")
    clients = AwsClients(base)
    create_tables(clients.dynamodb, base)
    fields: dict[str, Any] = {}
    for priority, (queue_url, dlq_url) in create_queues(clients.sqs).items():
        fields[f"queue_url_{priority}"] = queue_url
        fields[f"dlq_url_{priority}"] = dlq_url
    return base.model_copy(update=fields)
