"""`python -m local` (`make run`): Punctual on this machine, until Ctrl-C."""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

from local.config import ConfigError, RuntimeConfig
from local.environment import prepare_environment
from local.http import HOST, PortInUse, make_api_server

CURL_EXAMPLE = (
    "curl -s -X POST {url}/v1/jobs -H 'Content-Type: application/json' -d "
    """'{{"name":"hello","schedule":"rate(10 seconds)","""
    """"target":{{"type":"handler","name":"echo"}},"payload":{{"hi":1}}}}'"""
)


def main() -> int:
    """Run until SIGINT/SIGTERM; 0 on a clean stop, 1 when the runtime cannot start."""
    try:
        config = RuntimeConfig.from_env()
    except ConfigError as err:
        print(f"punctual: {err}", file=sys.stderr)
        return 2
    # Claim the port before the slow imports, so a busy port fails at once.
    try:
        server = make_api_server(HOST, config.port)
    except PortInUse as err:
        print(f"punctual: {err}", file=sys.stderr)
        return 1
    # Before the handlers are imported: Powertools reads part of its configuration at import.
    prepare_environment()
    from local.runtime import Runtime

    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()
        # A second Ctrl-C while stopping ends the process at once.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    runtime = Runtime(config, server=server)
    runtime.start()
    print(f"Punctual is running at {runtime.url}  (embedded AWS: moto at {runtime.moto_url})")
    settings = runtime.settings
    print(
        f"tick every {config.tick_seconds:g}s, dispatch horizon {settings.horizon_seconds}s, "
        f"{config.concurrency} worker threads; state is in memory. Ctrl-C to stop. Try:"
    )
    print(f"  {CURL_EXAMPLE.format(url=runtime.url)}")
    print(f"  curl -s {runtime.url}/v1/jobs/<job_id>/runs")
    sys.stdout.flush()
    while not stop.wait(0.5):
        pass
    print("Stopping...", flush=True)
    runtime.stop()
    if runtime.abandoned:
        # Worker threads still inside a target (e.g. a long `sleep`): do not wait for them.
        print(f"left {runtime.abandoned} running invocation(s) behind", flush=True)
        os._exit(0)
    print("Stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
