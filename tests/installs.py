"""One-time installs of the servers the tests and benchmarks run, from the project's own pin files.

- the npm reference servers: ``npm ci`` in tests/reference_servers (pinned by its
  package-lock.json; node_modules is gitignored);
- a virtualenv per Python requirements file and interpreter version under ``.test-venvs/``
  (gitignored): ``mcp1-py3.11.7`` (say) from
  tests/servers/requirements-v1.txt (the 1.x ``mcp`` SDK and published servers built on it),
  ``published`` from tests/servers/requirements-published.txt (published servers on the 2.x SDK).

Each is redone only when its pin changes (a marker holds the hash of the lock or requirements
file), under a file lock so concurrent runs don't install over each other, and bounded in time
(`INSTALL_TIMEOUT`). tests/conftest.py runs them before the first test that needs them; the
benchmarks call them directly.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support import EVERYTHING_ENTRY, FILESYSTEM_ENTRY, REFERENCE_SERVERS_DIR, REPO_ROOT

INSTALL_TIMEOUT = 300.0
"""Bound, in seconds, on each one-time install (npm ci; venv creation + pip install)."""

TEST_VENVS = REPO_ROOT / ".test-venvs"
SERVERS_DIR = REPO_ROOT / "tests" / "servers"
V1_REQUIREMENTS = SERVERS_DIR / "requirements-v1.txt"
V1_VENV = TEST_VENVS / "mcp1"
PUBLISHED_REQUIREMENTS = SERVERS_DIR / "requirements-published.txt"
PUBLISHED_VENV = TEST_VENVS / "published"


class InstallError(RuntimeError):
    pass


@contextlib.contextmanager
def _install_lock(name: str, timeout: float = INSTALL_TIMEOUT) -> Iterator[None]:
    """An exclusive lock between processes sharing this work tree (bounded wait)."""
    TEST_VENVS.mkdir(exist_ok=True)
    with open(TEST_VENVS / f".{name}.lock", "w") as lock:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise InstallError(
                        f"timed out after {timeout}s waiting for another {name} install"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(argv: list[str], cwd: Path, what: str) -> None:
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"{what} took longer than {INSTALL_TIMEOUT}s: {argv!r}") from exc
    except OSError as exc:
        raise InstallError(f"{what} could not start {argv[0]!r}: {exc}") from exc
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr)[-4000:]
        raise InstallError(f"{what} failed (exit status {proc.returncode}): {argv!r}\n{output}")


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()


def ensure_reference_servers() -> Path:
    """Install the pinned reference servers once (``npm ci``); return tests/reference_servers."""
    marker = REFERENCE_SERVERS_DIR / "node_modules" / ".mcp-sync-installed"
    digest = _digest((REFERENCE_SERVERS_DIR / "package-lock.json").read_bytes())

    def ready() -> bool:
        return (
            marker.is_file()
            and marker.read_text() == digest
            and (REFERENCE_SERVERS_DIR / EVERYTHING_ENTRY).is_file()
            and (REFERENCE_SERVERS_DIR / FILESYSTEM_ENTRY).is_file()
        )

    if ready():
        return REFERENCE_SERVERS_DIR
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise InstallError("the reference servers need Node.js: `node` and `npm` must be on PATH")
    with _install_lock("reference-servers"):
        if not ready():
            _run(
                [npm, "ci", "--no-audit", "--no-fund"],
                REFERENCE_SERVERS_DIR,
                "npm ci in tests/reference_servers",
            )
            marker.write_text(digest)
    return REFERENCE_SERVERS_DIR


def ensure_venv(venv: Path, requirements: Path) -> Path:
    """Create `venv` from `requirements` once (again when either changes); return its python. Each
    interpreter has its own (`mcp1-py3.12.1`): suites of two Pythons in one work tree, one after the
    other or at once, never rebuild a virtualenv the other uses."""
    version = ".".join(map(str, sys.version_info[:3])) + sys.abiflags  # e.g. 3.13.0t, free-threaded
    venv = venv.with_name(f"{venv.name}-py{version}")
    python = venv / "bin" / "python"
    marker = venv / ".mcp-sync-requirements"
    digest = _digest(requirements.read_bytes(), sys.version.encode())

    def ready() -> bool:
        return python.is_file() and marker.is_file() and marker.read_text() == digest

    if ready():
        return python
    relative = requirements.relative_to(REPO_ROOT)
    with _install_lock(venv.name):
        if not ready():
            shutil.rmtree(venv, ignore_errors=True)
            _run(
                [sys.executable, "-m", "venv", str(venv)], REPO_ROOT, f"creating a virtualenv for {relative}"
            )
            _run(
                [
                    str(python),
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--no-input",
                    "--quiet",
                    "-r",
                    str(requirements),
                ],
                REPO_ROOT,
                f"pip install -r {relative}",
            )
            marker.write_text(digest)
    return python


def ensure_legacy_v1_venv() -> Path:
    """The virtualenv of the 1.x SDK and the published servers built on it; return its python."""
    return ensure_venv(V1_VENV, V1_REQUIREMENTS)


def ensure_published_venv() -> Path:
    """The virtualenv of the published servers built on the 2.x SDK; return its python."""
    return ensure_venv(PUBLISHED_VENV, PUBLISHED_REQUIREMENTS)
