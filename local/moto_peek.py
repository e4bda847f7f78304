"""A cheap look at the embedded moto's queues, from inside the embedded AWS's process: does a
queue hold a message that a receive would return now? The pollers ask this (over one
keep-alive HTTP request, `GET /_punctual/ready`) before they receive, so an idle runtime does
not spend its CPU on empty receives, and the answer comes back the moment a delayed message
becomes visible. It is only a hint: messages are still received and deleted through the SQS
API, and when moto's internals are not what this expects, every queue simply looks ready."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import parse_qs

from moto.sqs.models import sqs_backends

READY_PATH = "/_punctual/ready"
# The longest a peek may wait for a message, and how often it looks for new ones meanwhile.
MAX_WAIT_MS = 1000
CHECK_SECONDS = 0.005

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _queue(queue_arn: str) -> Any:
    _, _, _, region, account_id, name = queue_arn.split(":", 5)
    return sqs_backends[account_id][region].queues.get(name)


def _scan(queue_arn: str, now_ms: float) -> tuple[bool, float]:
    """(may a receive return a message now, when the earliest message that is not ready yet
    becomes so)."""
    queue = _queue(queue_arn)
    if queue is None:
        return True, now_ms
    earliest = float("inf")
    for m in list(queue._messages):
        at = max(m.visible_at, m.delayed_until)
        if m.visible_at < now_ms and m.delayed_until <= now_ms:
            return True, now_ms
        earliest = min(earliest, at)
    return False, earliest


def ready_arns(
    arns: Sequence[str], wait_ms: float = 0, clock: Callable[[], float] = time.time
) -> list[str]:
    """The queues of `arns` that may have a visible, undelayed message (all of them when
    unsure), waiting up to `wait_ms` for one to have one."""
    deadline = clock() * 1000 + min(wait_ms, MAX_WAIT_MS)
    try:
        while True:
            now = clock() * 1000
            scans = {arn: _scan(arn, now) for arn in arns}
            ready = [arn for arn, (is_ready, _) in scans.items() if is_ready]
            if ready or now >= deadline:
                return ready
            wake = min([deadline, *(at for _, at in scans.values())])
            sizes = [len(_queue(arn)._messages) for arn in arns]
            # Until the next message is due, or a new one arrives (a send with no delay).
            while clock() * 1000 < wake and sizes == [len(_queue(arn)._messages) for arn in arns]:
                time.sleep(CHECK_SECONDS)
    except (AttributeError, KeyError, TypeError, ValueError):
        return list(arns)


class ReadyRoute:
    """WSGI middleware answering `GET /_punctual/ready?arn=...&arn=...&wait_ms=N` with the JSON
    list of the ready ARNs; every other request goes to `app`."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") != READY_PATH:
            return self._app(environ, start_response)
        query = parse_qs(environ.get("QUERY_STRING", ""))
        try:
            wait_ms = float(query.get("wait_ms", ["0"])[0])
        except ValueError:
            wait_ms = 0
        body = json.dumps(ready_arns(query.get("arn", []), wait_ms)).encode()
        start_response(
            "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]
