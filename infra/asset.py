"""Builds the one Lambda code asset (functions/, shared/ and the runtime dependencies) without
Docker: pip installs the wheels for the Lambda platform (manylinux aarch64, CPython of the
runtime) into a folder, and the code is copied beside them.

Both steps are cached under build/lambda/ (ignored by git): the dependencies by a hash of the
`[project] dependencies` of pyproject.toml and the target platform, the assembled asset by that
plus a hash of the code. A synth that changes neither reuses the folder as it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from infra.config import LAMBDA_PYTHON_VERSION

ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = ROOT / "build" / "lambda"
CODE_PACKAGES = ("functions", "shared")
# Bump when the recipe below changes, so cached folders built the old way are not reused.
RECIPE_VERSION = "1"
# Finished asset folders older than this and no longer current are removed.
STALE_AFTER_SECONDS = 3600


@dataclass(frozen=True)
class Target:
    """The platform the dependencies are installed for."""

    platform: str = "manylinux2014_aarch64"
    python_version: str = LAMBDA_PYTHON_VERSION

    @property
    def key(self) -> str:
        """Short name used in folder names."""
        return f"{self.platform}-cp{self.python_version.replace('.', '')}"


LAMBDA_TARGET = Target()


def runtime_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The runtime dependencies the functions need: `[project] dependencies`."""
    with pyproject.open("rb") as fh:
        data = tomllib.load(fh)
    return [str(req) for req in data["project"]["dependencies"]]


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _code_files() -> Iterator[Path]:
    for package in CODE_PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                yield path


def code_hash() -> str:
    """Hash of every file of the code packages (names and contents)."""
    h = hashlib.sha256()
    for path in _code_files():
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    # Parallel test workers (and a synth running beside them) build the same folders.
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with (BUILD_DIR / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _publish(tmp: Path, final: Path) -> None:
    if final.exists():
        shutil.rmtree(tmp, ignore_errors=True)
        return
    os.rename(tmp, final)


def _install_dependencies(requirements: list[str], target: Target, dest: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--quiet",  # twice: errors only (this machine's pip config warns per index)
        "--disable-pip-version-check",
        "--no-compile",
        "--only-binary=:all:",
        "--platform",
        target.platform,
        "--python-version",
        target.python_version,
        "--implementation",
        "cp",
        "--target",
        str(dest),
        *requirements,
    ]
    subprocess.run(cmd, check=True)  # noqa: S603 - fixed command, no shell
    # Console scripts and byte code compiled for another interpreter are of no use in Lambda.
    shutil.rmtree(dest / "bin", ignore_errors=True)
    for cache in list(dest.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)


def dependencies_dir(target: Target = LAMBDA_TARGET) -> Path:
    """The folder holding the runtime dependencies for `target`, installed if missing."""
    requirements = runtime_requirements()
    digest = _digest(RECIPE_VERSION, target.key, *requirements)
    final = BUILD_DIR / f"deps-{target.key}-{digest}"
    if final.exists():
        return final
    with _locked():
        if not final.exists():
            tmp = BUILD_DIR / f".tmp-deps-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            _install_dependencies(requirements, target, tmp)
            _publish(tmp, final)
    return final


def _copy_tree_linked(src: Path, dst: Path) -> None:
    # Hard links: the dependency folder is read-only input, so the asset need not copy 60 MB.
    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=link, dirs_exist_ok=True)


def _prune(keep: Path, prefix: str) -> None:
    now = time.time()
    for path in BUILD_DIR.glob(f"{prefix}*"):
        if path != keep and path.is_dir() and now - path.stat().st_mtime > STALE_AFTER_SECONDS:
            shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class LambdaAsset:
    """An assembled asset folder and the hash that identifies its content."""

    path: Path
    asset_hash: str


def build_asset(target: Target = LAMBDA_TARGET) -> LambdaAsset:
    """Assemble (or reuse) the asset folder: dependencies plus the code packages."""
    deps = dependencies_dir(target)
    digest = _digest(RECIPE_VERSION, deps.name, code_hash())
    final = BUILD_DIR / f"asset-{target.key}-{digest}"
    if not final.exists():
        with _locked():
            if not final.exists():
                tmp = BUILD_DIR / f".tmp-asset-{os.getpid()}"
                shutil.rmtree(tmp, ignore_errors=True)
                _copy_tree_linked(deps, tmp)
                for path in _code_files():
                    dest = tmp / path.relative_to(ROOT)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, dest)
                _publish(tmp, final)
                _prune(final, f"asset-{target.key}-")
    return LambdaAsset(path=final, asset_hash=digest)
