"""Starting the local runtime as a child process (`python -m local`), as the benchmark and the
end-to-end tests do."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def child_env(port: int, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for `python -m local` serving on `port`: this process's, without its
    AWS_ and PUNCTUAL_ settings (the runtime sets its own), unbuffered, and with no proxy
    between it and loopback; `extra` last."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PUNCTUAL_"))}
    env.update(
        {
            "PUNCTUAL_PORT": str(port),
            "PYTHONUNBUFFERED": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    env.update(extra or {})
    return env
