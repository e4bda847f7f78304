"""The local EventBridge rule: calls the tick handler at a fixed rate on a thread."""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any


class TickLoop:
    """Runs `tick()` at once, then every `interval` seconds (fixed rate, no pile-up)."""

    def __init__(self, tick: Callable[[], Any], interval: float) -> None:
        self._tick = tick
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="local-tick", daemon=True)
        self.ticks = 0
        self.failures = 0

    def start(self) -> None:
        """Start ticking."""
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the tick in progress, if any."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _loop(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                self._tick()
                self.ticks += 1
            except Exception:  # noqa: BLE001 - a failed tick is retried at the next one
                self.failures += 1
                print("tick failed (retried at the next tick):", file=sys.stderr)
                traceback.print_exc(file=sys.stderr)
            next_at += self._interval
            now = time.monotonic()
            if next_at < now:  # a tick longer than the interval: do not run a burst
                next_at = now
            self._stop.wait(next_at - now)
