"""One local runtime (`python -m local` in a subprocess) per e2e test module. A module may set
`RUNTIME_ENV = {...}` to start its runtime with extra environment variables."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from e2e.harness import LocalRuntime, start_runtime


@pytest.fixture(scope="module")
def runtime(request: pytest.FixtureRequest) -> Iterator[LocalRuntime]:
    """One local runtime per test module; it must stop cleanly on SIGINT."""
    rt = start_runtime(extra_env=getattr(request.module, "RUNTIME_ENV", None))
    try:
        yield rt
    finally:
        code = rt.stop()
    assert code == 0, f"local runtime exited with {code} after SIGINT\n{rt.output()}"
    assert rt.stdout and rt.stdout[-1] == "Stopped.", rt.output()
    assert not [line for line in rt.stderr if "Traceback" in line], rt.output()
