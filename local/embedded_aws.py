"""The embedded AWS: moto's threaded server on loopback, in this process.

One adjustment: DynamoDB requests are handled one at a time. moto applies an UpdateItem to the
stored item attribute by attribute (an upsert first stores the bare key), so a read served by
another server thread meanwhile could see a half-written item, where DynamoDB's single-item
writes are atomic. The runtime's worker claims runs with such upserts while the API lists them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.server import ThreadedMotoServer

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _OneDynamoDbRequestAtATime:
    """WSGI middleware: DynamoDB requests (X-Amz-Target: DynamoDB_...) hold one lock."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith("DynamoDB_"):
            return self._app(environ, start_response)
        with self._lock:
            result = self._app(environ, start_response)
            try:
                return [b"".join(result)]
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()


def start_embedded_aws(host: str) -> ThreadedMotoServer:
    """Start moto's server on a free port of `host`."""
    # moto's server logs every request through werkzeug's logger.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address=host, port=0, verbose=False)
    server.start()
    wsgi = getattr(server, "_server", None)
    if wsgi is not None and hasattr(wsgi, "app"):
        wsgi.app = _OneDynamoDbRequestAtATime(wsgi.app)
    else:  # pragma: no cover - a moto release that moved its internals
        logging.getLogger(__name__).warning("cannot serialize DynamoDB requests on moto's server")
    return server
