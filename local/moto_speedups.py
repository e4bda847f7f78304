"""Cheaper equivalents of a few hot spots of moto, applied in the embedded AWS's process.

moto's SQS walks every message of a queue, several times, for each message it receives, and
asks each one whether it is visible and undelayed through `unix_time_millis()`, which builds
two datetimes per call: with the dispatch horizon's delayed messages waiting (hundreds at
20 runs/s) that was over a quarter of the local runtime's CPU. The replacements compute the
same answers from the same fields:

- `Message.visible` / `Message.delayed`: the same comparisons against the epoch in ms, from
  `time.time()` (what `unix_time_millis()` computes through datetimes);
- `SQSBackend.is_message_valid_based_on_retention_period`: reads the queue's retention
  period directly instead of building every queue attribute (each a walk of the messages)
  to pick one.

moto's DynamoDB parses each UpdateExpression twice per UpdateItem (about 1.4 ms each for the
worker's claim) and deep-copies the tree for each validation (about 1.1 ms):

- `UpdateExpressionParser.make`: each distinct expression is parsed once, and the one tree is
  handed out again. moto never changes the tree `make` returns: it reads it (`find_clauses`)
  and gives it to the validators, which work on a copy of it;
- the validators' copy (`deepcopy`): a tree from the cache is unpickled from the pickle taken
  when it was parsed (a tenth of the time); anything else goes through a pickle round trip,
  or `deepcopy` where pickle cannot copy it;
- the check that an expression has at most one SET, REMOVE and ADD clause walks the whole tree
  three times at every node of it (10 % of the embedded AWS's CPU): it depends on the
  expression alone, so it runs once per distinct expression, and a tree that passed it is
  marked so; a tree that did not is checked (and refused) as before;
- which node types a validator processes is worked out once per validator class, not at
  every node (`nodes_to_be_processed`, a dict built and walked per node).

moto's DynamoDB sorts the whole table for every Query, even one on the table's own key
(`Table.all_items`, comparing keys as DynamoType objects: about 40 % of the embedded AWS's CPU
once a benchmark has left a thousand items); the replacement sorts by the same keys' values,
compared as plain Python values (a table's key attributes all have one type), and falls back
to moto's sort when they do not compare.

moto's DynamoDB deep-copies every table a TransactWriteItems names, to roll it back if the
transaction fails (over 30 ms per transaction once a table holds a few hundred items: every
job create, and every one-shot job's completion). The replacement backs up only the items the
transaction names (an item outside them cannot change) and puts those back on the same
failures; tables with a stream fall back to moto's own copy. The copy of an item that
UpdateItem takes before it changes it is a pickle round trip too.

And for every request, moto's server lists its own package directory (`list_of_moto_modules`:
a `listdir` and ~170 `isdir` calls, under the lock that routes requests to services) and the
methods of the service's response class (`method_names_from_class`, `inspect.getmembers`);
both are read once.

When moto's internals are not what this expects, nothing is patched (moto stays correct,
only slower)."""

from __future__ import annotations

import copy
import pickle
import threading
import time
from typing import Any

from moto import backends as _backends
from moto.core import responses as _core_responses
from moto.dynamodb import models as _ddb_models
from moto.dynamodb.models import table as _ddb_table
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.parsing import expressions as _ddb_expressions
from moto.dynamodb.parsing import validators as _ddb_validators
from moto.sqs import models as _sqs_models

# moto's modules, untyped here: what is patched is checked at run time (_EXPECTED).
backends: Any = _backends
core_responses: Any = _core_responses
ddb_models: Any = _ddb_models
ddb_table: Any = _ddb_table
ddb_expressions: Any = _ddb_expressions
ddb_validators: Any = _ddb_validators
sqs_models: Any = _sqs_models

# Distinct update expressions kept parsed (the app uses a few dozen).
PARSED_CACHE_SIZE = 1024
# Set on a parsed tree that passed ActionCountValidator.
_COUNTS_OK = "_punctual_action_counts_ok"

_EXPECTED = (
    hasattr(sqs_models, "Message")
    and hasattr(sqs_models, "SQSBackend")
    and isinstance(getattr(sqs_models.Message, "visible", None), property)
    and isinstance(getattr(sqs_models.Message, "delayed", None), property)
    and hasattr(sqs_models.SQSBackend, "is_message_valid_based_on_retention_period")
    and hasattr(ddb_expressions, "UpdateExpressionParser")
    and hasattr(ddb_expressions.UpdateExpressionParser, "make")
    and getattr(ddb_validators, "deepcopy", None) is copy.deepcopy
    and hasattr(ddb_validators, "ActionCountValidator")
    and hasattr(ddb_validators.ActionCountValidator, "traverse")
    and hasattr(ddb_validators.DepthFirstTraverser, "nodes_to_be_processed")
    and callable(getattr(backends, "list_of_moto_modules", None))
    and callable(getattr(core_responses, "method_names_from_class", None))
    and callable(getattr(getattr(ddb_table, "Table", None), "all_items", None))
    and getattr(ddb_models, "copy", None) is copy
    and callable(getattr(getattr(ddb_models, "DynamoDBBackend", None), "transact_write_items", 0))
)
_parsed: dict[str, Any] = {}  # expression -> its tree, shared
_pickled: dict[int, bytes] = {}  # id(a shared tree) -> its pickle (the tree stays in _parsed)
_parsed_lock = threading.Lock()
_original_make = ddb_expressions.UpdateExpressionParser.make if _EXPECTED else None
_original_count_check = ddb_validators.ActionCountValidator.traverse if _EXPECTED else None
_node_types: dict[type, tuple[type, ...]] = {}
_original_modules = backends.list_of_moto_modules if _EXPECTED else None
_modules: list[tuple[str, ...]] = []
_original_method_names = core_responses.method_names_from_class if _EXPECTED else None
_method_names: dict[type, list[str]] = {}
_original_all_items = ddb_table.Table.all_items if _EXPECTED else None
_original_transact = ddb_models.DynamoDBBackend.transact_write_items if _EXPECTED else None
_transaction = threading.local()  # .active: inside _transact_write_items


def _visible(self: Any) -> bool:
    return bool(time.time() * 1000.0 > self.visible_at)


def _delayed(self: Any) -> bool:
    return bool(time.time() * 1000.0 < self.delayed_until)


def _is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
    retention_period = int(self.get_queue(queue_name).message_retention_period)
    return bool(retention_period + message.sent_timestamp / 1000 > time.time())


def _copy(value: Any, memo: Any = None) -> Any:
    """What `copy.deepcopy` returns, faster for moto's expression trees."""
    blob = _pickled.get(id(value))
    if blob is not None:
        return pickle.loads(blob)  # noqa: S301 - bytes this process pickled
    try:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))  # noqa: S301 - ours
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return copy.deepcopy(value, memo)


def _make(cls: Any, expression_str: str) -> Any:
    """`UpdateExpressionParser.make`, parsing each distinct expression once."""
    tree = _parsed.get(expression_str)
    if tree is not None:
        return tree
    assert _original_make is not None and _original_count_check is not None
    tree = _original_make(expression_str)  # raises on a bad expression: not cached
    try:
        _original_count_check(ddb_validators.ActionCountValidator(), tree)
        setattr(tree, _COUNTS_OK, True)
    except ddb_validators.TooManyClauses:
        pass  # the validator refuses it, where it always did
    try:
        blob = pickle.dumps(tree, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return tree
    with _parsed_lock:
        if len(_parsed) >= PARSED_CACHE_SIZE:
            _parsed.clear()
            _pickled.clear()
        _parsed[expression_str] = tree
        _pickled[id(tree)] = blob
    return tree


def _count_check(self: Any, node: Any) -> Any:
    """ActionCountValidator.traverse, skipped for a tree that passed it when parsed."""
    if getattr(node, _COUNTS_OK, False):
        return node
    assert _original_count_check is not None
    return _original_count_check(self, node)


def _nodes_to_be_processed(self: Any) -> tuple[type, ...]:
    """The node types this validator processes (its `_processing_map`'s keys, fixed per
    class)."""
    kinds = _node_types.get(type(self))
    if kinds is None:
        kinds = _node_types[type(self)] = tuple(self._processing_map().keys())
    return kinds


def _list_of_moto_modules() -> tuple[str, ...]:
    """moto's service packages (its installed files do not change while it runs)."""
    if not _modules:
        assert _original_modules is not None
        _modules.append(tuple(_original_modules()))
    return _modules[0]


def _method_names_from_class(clazz: type) -> list[str]:
    """The names of a response class's methods (its actions), listed once per class."""
    names = _method_names.get(clazz)
    if names is None:
        assert _original_method_names is not None
        names = _method_names[clazz] = list(_original_method_names(clazz))
    return list(names)


def _item_key(item: Any) -> Any:
    if item.range_key:
        return (item.hash_key.cast_value, item.range_key.cast_value)
    return item.hash_key.cast_value


def _all_items(self: Any) -> list[Any]:
    """Table.all_items: every item, in key order."""
    items: list[Any] = []
    for hash_set in self.items.values():
        if self.range_key_attr:
            items.extend(hash_set.values())
        else:
            items.append(hash_set)
    try:
        return sorted(items, key=_item_key)
    except TypeError:  # keys of different types: moto's own comparison decides
        assert _original_all_items is not None
        return list(_original_all_items(self))


def _models_deepcopy(value: Any, memo: Any = None) -> Any:
    """`copy.deepcopy` as moto's DynamoDB models call it; inside a transaction, a table is not
    copied (its items are backed up one by one instead)."""
    if getattr(_transaction, "active", False) and isinstance(value, ddb_table.Table):
        return value
    return _copy(value, memo)  # an item before its update: a pickle round trip


class _CopyModule:
    """Stands for the `copy` module in moto.dynamodb.models."""

    deepcopy = staticmethod(_models_deepcopy)
    copy = staticmethod(copy.copy)


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> Any:
    """DynamoDBBackend.transact_write_items, backing up only the items it names."""
    assert _original_transact is not None
    backups: list[tuple[Any, Any, Any, bool, Any]] = []
    own_way = False  # moto's own copy of the tables: a stream, or a request it will refuse
    try:
        for entry in transact_items:
            for op_type, op in entry.items():
                table = self.tables.get(op.get("TableName"))
                if table is None:
                    continue  # moto reports it; nothing of it to restore
                own_way = own_way or table.stream_shard is not None
                key = op["Item"] if op_type == "Put" else op["Key"]
                hash_key = DynamoType(key[table.hash_key_attr])
                range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
                had_hash = hash_key in table.items
                current = table.get_item(hash_key, range_key) if had_hash else None
                backups.append((table, hash_key, range_key, had_hash, copy.deepcopy(current)))
    except (KeyError, TypeError, AttributeError, ValueError, ddb_models.MockValidationException):
        own_way = True
    if own_way:
        return _original_transact(self, transact_items)
    _transaction.active = True
    try:
        return _original_transact(self, transact_items)
    except Exception:
        # moto rolls back (and re-raises) on every failure it raises after its backup
        for table, hash_key, range_key, had_hash, item in reversed(backups):
            if range_key is None:
                table.items.pop(hash_key, None)
                if item is not None:
                    table.items[hash_key] = item
            else:
                if hash_key in table.items:
                    table.items[hash_key].pop(range_key, None)
                if item is not None:
                    table.items[hash_key][range_key] = item
                elif not had_hash and not table.items.get(hash_key, True):
                    del table.items[hash_key]
        raise
    finally:
        _transaction.active = False


def _replacements() -> list[tuple[Any, str, Any]]:
    return [
        (sqs_models.Message, "visible", property(_visible)),
        (sqs_models.Message, "delayed", property(_delayed)),
        (
            sqs_models.SQSBackend,
            "is_message_valid_based_on_retention_period",
            _is_message_valid_based_on_retention_period,
        ),
        (ddb_expressions.UpdateExpressionParser, "make", classmethod(_make)),
        (ddb_validators, "deepcopy", _copy),
        (ddb_validators.ActionCountValidator, "traverse", _count_check),
        (ddb_validators.DepthFirstTraverser, "nodes_to_be_processed", _nodes_to_be_processed),
        (backends, "list_of_moto_modules", _list_of_moto_modules),
        (core_responses, "method_names_from_class", _method_names_from_class),
        (ddb_table.Table, "all_items", _all_items),
        (ddb_models, "copy", _CopyModule),
        (ddb_models.DynamoDBBackend, "transact_write_items", _transact_write_items),
    ]


_saved: list[tuple[Any, str, Any]] = []
_INHERITED = object()  # the patched name was not in the owner's own namespace


def apply() -> bool:
    """Patch moto in this process (once); False, and nothing patched, when moto does not look
    as expected."""
    if not _EXPECTED:
        return False
    if not _saved:
        for owner, name, replacement in _replacements():
            # From the owner's own namespace, so that restore() puts back exactly that.
            _saved.append((owner, name, vars(owner).get(name, _INHERITED)))
            setattr(owner, name, replacement)
    return True


def restore() -> None:
    """Undo apply() (tests)."""
    while _saved:
        owner, name, original = _saved.pop()
        if original is _INHERITED:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
    with _parsed_lock:
        _parsed.clear()
        _pickled.clear()
