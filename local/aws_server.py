"""The embedded AWS's own process (`python -m local.aws_server --host H`): moto's server on a
free port of H. It prints `{"port": N}` on one line once it listens, ignores Ctrl-C (the
runtime stops it after its workers are done with it) and exits when its standard input closes,
so it never outlives the runtime that started it, however that one ends.

Run apart from the runtime, moto has a core of its own instead of sharing one interpreter
lock with the API and the workers. Three adjustments to moto's server:

- DynamoDB requests are handled one at a time. moto applies an UpdateItem to the stored item
  attribute by attribute (an upsert first stores the bare key), so a read served by another
  server thread meanwhile could see a half-written item, where DynamoDB's single-item writes
  are atomic. The runtime's worker claims runs with such upserts while the API lists them.
- Connections are kept alive: werkzeug's development server closes every connection after one
  response, so each AWS call paid for a new TCP connection and a new server thread.
- `GET /_punctual/ready` answers which queues hold a message a receive would return
  (local.moto_peek), and moto's SQS hot spots are replaced by equivalents (local.moto_speedups).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from typing import IO, Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server

from local import moto_speedups
from local.moto_peek import ReadyRoute

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
GC_YOUNG_THRESHOLD = 50_000
# Framing headers the server sets itself.
_FRAMING = {"content-length", "transfer-encoding", "connection"}


class OneDynamoDbRequestAtATime:
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


class KeepAliveHandler(MotoRequestHandler):
    """moto's request handler, answering with a Content-Length and keeping the connection
    open (HTTP/1.1) instead of closing it after each response."""

    protocol_version = "HTTP/1.1"

    def run_wsgi(self) -> None:
        """Read the whole body, call the app, send its whole answer."""
        if self.headers.get("Expect", "").strip().lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        environ = self.make_environ()
        if environ.get("wsgi.input_terminated"):  # chunked: werkzeug dechunks it
            body = environ["wsgi.input"].read()
        else:
            body = self.rfile.read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        status = "500 Internal Server Error"
        headers: list[tuple[str, str]] = []
        chunks: list[bytes] = []

        def start_response(
            new_status: str, new_headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], None]:
            nonlocal status, headers
            status, headers = new_status, new_headers
            return chunks.append

        try:
            result = self.server.app(environ, start_response)
            try:
                chunks.extend(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except Exception:  # the client gets a 500, as from werkzeug's server
            logging.getLogger(__name__).exception("embedded AWS request failed")
            status, headers, chunks = "500 Internal Server Error", [], []
            self.close_connection = True
        payload = b"".join(chunks)
        code, _, reason = status.partition(" ")
        self.send_response(int(code), reason)
        for name, value in headers:
            if name.lower() not in _FRAMING:
                self.send_header(name, value)
        no_body = self.command == "HEAD" or int(code) in (204, 304) or int(code) < 200
        self.send_header("Content-Length", "0" if no_body else str(len(payload)))
        self.end_headers()
        if not no_body:
            self.wfile.write(payload)
        self.wfile.flush()

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return  # werkzeug would log every request


def build_app() -> WsgiApp:
    """moto's app with the adjustments above (the SQS speedups are process-wide)."""
    moto_speedups.apply()
    app: WsgiApp = DomainDispatcherApplication(create_backend_app)
    return ReadyRoute(OneDynamoDbRequestAtATime(app))


def make_aws_server(host: str, port: int = 0) -> BaseWSGIServer:
    """Bind (without serving yet) the embedded AWS on host:port (0: a free port)."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    return make_server(host, port, build_app(), threaded=True, request_handler=KeepAliveHandler)


def serve(host: str, port: int, stdin: IO[Any], stdout: IO[str]) -> None:
    """Serve until `stdin` is closed (the runtime stopped or died)."""
    server = make_aws_server(host, port)
    # What is loaded by now (moto, Flask, botocore's service models) lives as long as the
    # process: keep it out of the cyclic collector's full passes, which otherwise walk it
    # every few seconds under load (moto's expression trees are cyclic garbage).
    gc.collect()
    gc.freeze()
    # Each request leaves cyclic garbage (moto's expression trees link child and parent); a
    # young collection every GC_YOUNG_THRESHOLD allocations finds most of it dead already,
    # where the default (700) kept promoting the trees of requests in flight until a full
    # pass over all of moto's state (100-200 ms, every few seconds) had to free them.
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    stdout.write(json.dumps({"port": server.server_address[1]}) + "\n")
    stdout.flush()

    def watch_parent() -> None:
        while stdin.read(4096):
            pass
        server.shutdown()

    threading.Thread(target=watch_parent, name="parent-watch", daemon=True).start()
    server.serve_forever(poll_interval=0.2)
    server.server_close()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the child process."""
    parser = argparse.ArgumentParser(prog="python -m local.aws_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(args.host, args.port, sys.stdin.buffer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
