"""The local API Gateway: a loopback HTTP server that turns each request into a REST proxy event
for the API handler and writes its proxy result back."""

from __future__ import annotations

import base64
import errno
import json
import sys
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from local.apigw import rest_proxy_event

HOST = "127.0.0.1"
# API Gateway's own limit on a request payload.
MAX_REQUEST_BYTES = 10 * 1024 * 1024
# Headers the server sets itself (framing), never copied from the proxy result.
_OWN_HEADERS = {"content-length", "transfer-encoding", "connection", "keep-alive", "date"}

Invoke = Callable[[dict[str, Any]], dict[str, Any]]


def starting(event: dict[str, Any]) -> dict[str, Any]:
    """The answer before the handlers are wired (the server is bound early)."""
    return {
        "statusCode": 503,
        "headers": {"Content-Type": "application/json", "Retry-After": "1"},
        "body": '{"message": "starting"}',
    }


class PortInUse(Exception):
    """The HTTP port cannot be bound."""


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ApiServer(ThreadingHTTPServer):
    """A threading HTTP server that hands every request to `invoke`."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], invoke: Invoke = starting) -> None:
        self.invoke = invoke
        super().__init__(address, _ProxyHandler)

    @property
    def port(self) -> int:
        """The bound port (useful when asked for port 0)."""
        return int(self.server_address[1])


def make_api_server(host: str, port: int, invoke: Invoke = starting) -> ApiServer:
    """Bind (without serving yet); a busy port raises PortInUse with a one-line reason."""
    try:
        return ApiServer((host, port), invoke)
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise PortInUse(
                f"port {port} on {host} is already in use; set PUNCTUAL_PORT to a free port"
            ) from err
        raise PortInUse(f"cannot listen on {host}:{port}: {err.strerror or err}") from err


class _ProxyHandler(BaseHTTPRequestHandler):
    server: ApiServer
    protocol_version = "HTTP/1.1"
    server_version = "punctual-local"
    timeout = 60  # idle keep-alive connections are closed after this
    # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
    # the client's delayed ACK add ~40 ms to every keep-alive response.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        self._proxy()

    def do_POST(self) -> None:
        self._proxy()

    def do_PUT(self) -> None:
        self._proxy()

    def do_PATCH(self) -> None:
        self._proxy()

    def do_DELETE(self) -> None:
        self._proxy()

    def do_OPTIONS(self) -> None:
        self._proxy()

    def log_message(self, format: str, *args: Any) -> None:  # stdlib signature
        return  # one line per run is the runtime's output; requests are not logged

    # ---- request -> event -> response ---------------------------------------------------

    def _proxy(self) -> None:
        try:
            body = self._read_body()
        except _BadRequest as bad:
            self.close_connection = True
            self._send(bad.status, {}, json.dumps({"message": bad.message}).encode())
            return
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            headers[name] = f"{headers[name]},{value}" if name in headers else value
        event = rest_proxy_event(
            self.command, self.path, body=body, headers=headers, source_ip=self.client_address[0]
        )
        try:
            result = self.server.invoke(event)
        except Exception:  # noqa: BLE001 - a failed invocation is API Gateway's 502
            traceback.print_exc(file=sys.stderr)
            self._send(502, {}, b'{"message": "Internal server error"}')
            return
        self._send_result(result)

    def _read_body(self) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        length_header = self.headers.get("Content-Length")
        if not length_header:
            return None
        try:
            length = int(length_header)
        except ValueError:
            raise _BadRequest(400, "invalid Content-Length") from None
        if length < 0:
            raise _BadRequest(400, "invalid Content-Length")
        if length > MAX_REQUEST_BYTES:
            raise _BadRequest(413, "Request Too Long")
        return self.rfile.read(length) if length else None

    def _read_chunked(self) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            size_line = self.rfile.readline(1024).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise _BadRequest(400, "invalid chunked body") from None
            if size == 0:
                while self.rfile.readline(1024).strip():
                    pass  # trailers
                return b"".join(chunks)
            total += size
            if total > MAX_REQUEST_BYTES:
                raise _BadRequest(413, "Request Too Long")
            chunks.append(self.rfile.read(size))
            self.rfile.readline(8)  # the CRLF after the chunk

    def _send_result(self, result: dict[str, Any]) -> None:
        status = int(result.get("statusCode") or 200)
        headers: dict[str, list[str]] = {}
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers.setdefault(name, []).extend(str(v) for v in values)
        for name, value in (result.get("headers") or {}).items():
            if name not in headers:
                headers[name] = [str(value)]
        body = result.get("body") or ""
        raw = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode()
        self._send(status, headers, raw)

    def _send(self, status: int, headers: dict[str, list[str]], raw: bytes) -> None:
        self.send_response(status)
        has_type = False
        for name, values in headers.items():
            if name.lower() in _OWN_HEADERS:
                continue
            has_type = has_type or name.lower() == "content-type"
            for value in values:
                self.send_header(name, value)
        if raw and not has_type:
            self.send_header("Content-Type", "application/json")
        no_body = status in (204, 304) or 100 <= status < 200
        self.send_header("Content-Length", "0" if no_body else str(len(raw)))
        self.end_headers()
        if not no_body:
            self.wfile.write(raw)
