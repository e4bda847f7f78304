"""Expression building with aliased names, and the conditional write that reports who won."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared.storage.codec import to_value
from shared.storage.errors import is_conditional_failure, raise_if_throttled

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class Expr:
    """Builds aliased expression attribute names and values (no raw names in expressions)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def n(self, attr: str) -> str:
        """Placeholder for an attribute name."""
        for placeholder, name in self.names.items():
            if name == attr:
                return placeholder
        placeholder = f"#n{len(self.names)}"
        self.names[placeholder] = attr
        return placeholder

    def v(self, value: Any) -> str:
        """Placeholder for a value."""
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = to_value(value)
        return placeholder

    def kwargs(self) -> dict[str, Any]:
        """ExpressionAttributeNames/Values for a request (omitting empty maps)."""
        out: dict[str, Any] = {}
        if self.names:
            out["ExpressionAttributeNames"] = self.names
        if self.values:
            out["ExpressionAttributeValues"] = self.values
        return out


def conditional_update(
    client: DynamoDBClient,
    *,
    table: str,
    key: dict[str, Any],
    update: str,
    condition: str,
    expr: Expr,
) -> bool:
    """One UpdateItem guarded by a condition: True if it was applied, False if the condition
    did not hold (a concurrent writer won). Throttling becomes the domain's Throttled."""
    try:
        client.update_item(
            TableName=table,
            Key=key,
            UpdateExpression=update,
            ConditionExpression=condition,
            **expr.kwargs(),
        )
    except ClientError as err:
        if is_conditional_failure(err):
            return False
        raise_if_throttled(err)
        raise
    return True
