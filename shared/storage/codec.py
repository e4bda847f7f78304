"""Plain dicts to DynamoDB attribute values and back (numbers come back as int when whole)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _to_dynamo(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _to_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_dynamo(v) for v in value]
    return value


def _from_dynamo(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_dynamo(v) for v in value]
    return value


def to_item(data: dict[str, Any]) -> dict[str, Any]:
    """Serialize a dict to a DynamoDB item, dropping None values."""
    return {k: _serializer.serialize(_to_dynamo(v)) for k, v in data.items() if v is not None}


def to_value(value: Any) -> Any:
    """Serialize one value to a DynamoDB attribute value."""
    return _serializer.serialize(_to_dynamo(value))


def from_item(item: dict[str, Any]) -> dict[str, Any]:
    """Deserialize a DynamoDB item to plain Python values."""
    return {k: _from_dynamo(_deserializer.deserialize(v)) for k, v in item.items()}
