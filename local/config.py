"""The local runtime's own settings (PUNCTUAL_PORT and friends). Light on imports, so a bad
value is reported before the handlers load. The app's settings are read by shared.settings."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class ConfigError(ValueError):
    """An environment variable of the local runtime has an unusable value."""


def _number(env: Mapping[str, str], name: str, default: float, kind: type = float) -> Any:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a valid {kind.__name__}") from None
    if value <= 0 and not (name == "PUNCTUAL_PORT" and value == 0):
        raise ConfigError(f"{name} must be positive, got {raw!r}")
    return value


@dataclass(frozen=True)
class RuntimeConfig:
    """How the local runtime runs (from PUNCTUAL_* variables; the app's own settings are
    separate and read by Settings)."""

    port: int = 8080
    tick_seconds: float = 5.0
    concurrency: int = 8
    batch_size: int = 10
    verbose: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RuntimeConfig:
        """Read PUNCTUAL_PORT, PUNCTUAL_TICK_SECONDS, PUNCTUAL_WORKER_CONCURRENCY,
        PUNCTUAL_BATCH_SIZE and PUNCTUAL_VERBOSE."""
        env = os.environ if env is None else env
        port = _number(env, "PUNCTUAL_PORT", 8080, int)
        if port > 65535:
            raise ConfigError(f"PUNCTUAL_PORT={port} is not a port number")
        return cls(
            port=port,
            tick_seconds=_number(env, "PUNCTUAL_TICK_SECONDS", 5.0),
            concurrency=_number(env, "PUNCTUAL_WORKER_CONCURRENCY", 8, int),
            batch_size=min(10, _number(env, "PUNCTUAL_BATCH_SIZE", 10, int)),
            verbose=env.get("PUNCTUAL_VERBOSE", "").lower() in ("1", "true", "yes"),
        )
