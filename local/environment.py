"""The process environment of the local runtime: fake AWS credentials (nothing may reach a real
account) and Powertools defaults. Imports nothing from Punctual, so it can run before the
handlers are imported (Powertools reads some of these variables at import time)."""

from __future__ import annotations

import os
from collections.abc import MutableMapping

REGION = "us-east-1"
ACCOUNT_ID = "123456789012"  # moto's default account

FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",  # moto accepts any credentials
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}

POWERTOOLS_DEFAULTS = {
    "POWERTOOLS_SERVICE_NAME": "punctual",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "Punctual",
}


def prepare_environment(env: MutableMapping[str, str] | None = None) -> None:
    """Drop every AWS_* variable of the developer's shell (profiles, session tokens, endpoint
    overrides) and put fake credentials in their place; default the Powertools settings."""
    env = os.environ if env is None else env
    for name in [n for n in env if n.startswith("AWS_")]:
        del env[name]
    env.update(FAKE_AWS)
    for name, value in POWERTOOLS_DEFAULTS.items():
        env.setdefault(name, value)
