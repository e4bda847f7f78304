"""The Lambda code asset: functions/, shared/ and the runtime dependencies for the Lambda
platform, built without Docker; every handler imports with only the asset on the path."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from infra.asset import LAMBDA_TARGET, Target, build_asset, runtime_requirements
from infra.config import LAMBDA_PYTHON_VERSION, load_config
from infra.constructs.function import powertools_environment
from infra.stack import HANDLERS

ELF_MACHINE_AARCH64 = 183
LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024
TOP_LEVEL_PACKAGES = (
    "boto3",
    "botocore",
    "aws_lambda_powertools",
    "aws_xray_sdk",
    "pydantic",
    "pydantic_core",
    "pydantic_settings",
    "croniter",
    "tzdata",
)


@pytest.fixture(scope="module")
def asset() -> Path:
    return build_asset().path


def test_asset_holds_code_and_dependencies(asset: Path) -> None:
    # GIVEN the asset every function is deployed from
    # THEN it has every handler, the shared package and every runtime dependency
    for handler in HANDLERS.values():
        module = handler.rsplit(".", 1)[0]
        assert (asset / (module.replace(".", "/") + ".py")).is_file(), module
    assert (asset / "shared" / "__init__.py").is_file()
    assert (asset / "shared" / "storage" / "schema.py").is_file()
    for package in TOP_LEVEL_PACKAGES:
        assert (asset / package).is_dir(), package
    # AND nothing else of the repository, and no byte code compiled for another interpreter
    assert not (asset / "tests").exists()
    assert not (asset / "local").exists()
    assert not (asset / "infra").exists()
    assert not list(asset.rglob("__pycache__"))


def test_asset_compiled_code_is_for_lambda_arm64_and_its_python(asset: Path) -> None:
    # GIVEN pydantic-core, the compiled dependency
    tag = f"cpython-{LAMBDA_PYTHON_VERSION.replace('.', '')}-aarch64-linux-gnu"
    (core,) = (asset / "pydantic_core").glob("_pydantic_core.*.so")
    # THEN it is built for the runtime's interpreter on arm64 (an aarch64 ELF)
    assert tag in core.name
    header = core.read_bytes()[:20]
    assert header[:4] == b"\x7fELF"
    assert int.from_bytes(header[18:20], "little") == ELF_MACHINE_AARCH64
    for so in asset.rglob("*.so"):
        assert "x86_64" not in so.name, so


def test_asset_fits_lambda(asset: Path) -> None:
    size = sum(p.stat().st_size for p in asset.rglob("*") if p.is_file())
    assert size < LAMBDA_UNZIPPED_LIMIT


def test_asset_is_reused_until_code_or_dependencies_change(asset: Path) -> None:
    # GIVEN a built asset / WHEN built again with nothing changed / THEN the same folder
    again = build_asset()
    assert again.path == asset
    assert again.asset_hash in asset.name
    assert LAMBDA_TARGET.key in asset.name


def test_asset_dependencies_are_the_project_runtime_dependencies() -> None:
    names = {
        r.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip()
        for r in runtime_requirements()
    }
    assert {
        "boto3",
        "aws-lambda-powertools",
        "pydantic",
        "pydantic-settings",
        "croniter",
        "tzdata",
    } <= names


def _interpreter() -> tuple[str, str]:
    """A local CPython to import with: the runtime's version when this machine has it."""
    wanted = f"python{LAMBDA_PYTHON_VERSION}"
    pattern = f"~/.pyenv/versions/{LAMBDA_PYTHON_VERSION}*/bin/{wanted}"
    candidates = sorted(glob.glob(os.path.expanduser(pattern)))
    found = shutil.which(wanted)
    if found and "/shims/" not in found:  # a pyenv shim may not be allowed to run it
        candidates.append(found)
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate, LAMBDA_PYTHON_VERSION
    return sys.executable, f"{sys.version_info.major}.{sys.version_info.minor}"


IMPORT_CHECK = """
import importlib, sys, sysconfig
asset = sys.argv[1]
sys.path.insert(0, asset)
for handler in sys.argv[2:]:
    module, name = handler.rsplit(".", 1)
    assert callable(getattr(importlib.import_module(module), name)), handler
stdlib = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
outside = sorted(
    m.__name__ for m in list(sys.modules.values())
    if getattr(m, "__file__", None)
    and not m.__file__.startswith(asset)
    and not any(m.__file__.startswith(p) for p in stdlib)
)
assert not outside, outside
print("imported", len(sys.argv) - 2, "handlers from", asset)
"""


def test_asset_imports_every_handler_with_only_the_asset_on_the_path() -> None:
    # GIVEN the same recipe built for this machine (x86_64) and a local CPython: the runtime's
    # version when installed (pyenv), else this one. The arm64 asset itself cannot be loaded
    # on an x86_64 machine; the test above checks its binaries.
    python, version = _interpreter()
    local = build_asset(Target(platform="manylinux2014_x86_64", python_version=version)).path
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_LAMBDA_FUNCTION_NAME": "punctual-asset-check",
        **powertools_environment(load_config("dev")),
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    # WHEN each handler is imported in isolation: -I (no user site, no PYTHON* variables) and
    # -S (no site-packages), so only the standard library and the asset can be found
    result = subprocess.run(
        [python, "-I", "-S", "-c", IMPORT_CHECK, str(local), *HANDLERS.values()],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    # THEN all import, and nothing came from outside the asset
    assert result.returncode == 0, result.stderr
    assert f"imported {len(HANDLERS)} handlers" in result.stdout
    assert "functions.dispatch.handler.lambda_handler" in HANDLERS.values()
    assert sysconfig.get_paths()["stdlib"]
