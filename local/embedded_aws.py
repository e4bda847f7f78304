"""The embedded AWS: moto's server on loopback, in a child process of its own (local.aws_server),
so that moto and the runtime's handlers do not share one interpreter lock (one core)."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import IO
from urllib.parse import urlencode

from local.moto_peek import READY_PATH

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 5.0


class EmbeddedAwsError(RuntimeError):
    """The embedded AWS did not start."""


class EmbeddedAws:
    """The child process running moto's server; `ready()` asks it which queues hold a
    message a receive would return."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._peek: http.client.HTTPConnection | None = None
        self._peek_lock = threading.Lock()

    @property
    def url(self) -> str:
        """The endpoint URL every AWS client of the runtime uses."""
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The child process's id, while it runs."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the child and wait until it listens."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self._proc = subprocess.Popen(  # noqa: S603 - this interpreter, our own module
            [sys.executable, "-m", "local.aws_server", "--host", self.host],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,  # closed by us (or by our death): the child then exits
            stdout=subprocess.PIPE,
        )
        line = self._first_line(self._proc.stdout)
        try:
            self.port = int(json.loads(line)["port"])
        except (ValueError, KeyError, TypeError):
            self.stop()
            raise EmbeddedAwsError(f"the embedded AWS did not start: {line!r}") from None

    def _first_line(self, stdout: IO[bytes] | None) -> str:
        assert stdout is not None
        result: list[bytes] = []
        reader = threading.Thread(target=lambda: result.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(START_TIMEOUT_SECONDS)
        return result[0].decode(errors="replace").strip() if result else ""

    def ready(self, arns: Sequence[str], wait_ms: int = 0) -> Collection[str]:
        """The queues of `arns` that may have a message to receive now, waiting up to `wait_ms`
        for one to have one; every queue when the embedded AWS cannot say."""
        path = f"{READY_PATH}?{urlencode([('arn', a) for a in arns] + [('wait_ms', wait_ms)])}"
        with self._peek_lock:
            for _ in range(2):  # a kept-alive connection may have been closed: once more
                if self._peek is None:
                    self._peek = http.client.HTTPConnection(
                        self.host, self.port, timeout=5 + wait_ms / 1000
                    )
                try:
                    self._peek.request("GET", path)
                    response = self._peek.getresponse()
                    body = response.read()
                    if response.status == 200:
                        return set(json.loads(body))
                except (OSError, http.client.HTTPException, ValueError):
                    pass
                self._peek.close()
                self._peek = None
        return set(arns)

    def stop(self) -> None:
        """Stop the child (it exits when its stdin closes; killed if it does not)."""
        with self._peek_lock:
            if self._peek is not None:
                self._peek.close()
                self._peek = None
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
        try:
            proc.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT_SECONDS)
