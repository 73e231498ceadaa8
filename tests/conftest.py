"""pytest fixtures for the mcp_sync tests.

Two one-time installs back the slow session fixtures:

- ``reference_servers``: the official npm reference servers, ``npm ci`` in
  tests/reference_servers (pinned by its package-lock.json; node_modules is gitignored);
- ``legacy_v1_python``: a virtualenv with the 1.x ``mcp`` SDK under ``.test-venvs/mcp1``
  (gitignored), from tests/servers/requirements-v1.txt.

Each is redone only when its pin changes (a marker holds the hash of the lock or
requirements file), under a file lock so concurrent pytest runs don't install over each
other, and bounded in time (`INSTALL_TIMEOUT`). They run in `pytest_collection_finish`,
before the first test, when a selected test needs them: pytest-timeout's per-test limit
(setup.cfg: 60 s) covers fixture setup, and a first-time install (a minute or two on a
cold cache) must not be charged to whichever test happens to run first. A failed install
is not a skip: every test that needs it errors with the installer's output.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests import support  # noqa: E402
from tests.support import (  # noqa: E402
    EVERYTHING_ENTRY,
    FILESYSTEM_ENTRY,
    REFERENCE_SERVERS_DIR,
    EventLog,
    HttpServer,
    Records,
    ReferenceServers,
)

INSTALL_TIMEOUT = 300.0
"""Bound, in seconds, on each one-time install (npm ci; venv creation + pip install)."""

TEST_VENVS = REPO_ROOT / ".test-venvs"
V1_REQUIREMENTS = REPO_ROOT / "tests" / "servers" / "requirements-v1.txt"
V1_VENV = TEST_VENVS / "mcp1"


class InstallError(RuntimeError):
    pass


@contextlib.contextmanager
def _install_lock(name: str, timeout: float = INSTALL_TIMEOUT) -> Iterator[None]:
    """An exclusive lock between pytest processes sharing this work tree (bounded wait)."""
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


def ensure_legacy_v1_venv() -> Path:
    """Create the 1.x-SDK virtualenv once; return its python."""
    python = V1_VENV / "bin" / "python"
    marker = V1_VENV / ".mcp-sync-requirements"
    digest = _digest(V1_REQUIREMENTS.read_bytes(), sys.version.encode())

    def ready() -> bool:
        return python.is_file() and marker.is_file() and marker.read_text() == digest

    if ready():
        return python
    with _install_lock("mcp1"):
        if not ready():
            shutil.rmtree(V1_VENV, ignore_errors=True)
            _run([sys.executable, "-m", "venv", str(V1_VENV)], REPO_ROOT, "creating the 1.x SDK virtualenv")
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
                    str(V1_REQUIREMENTS),
                ],
                REPO_ROOT,
                "pip install -r tests/servers/requirements-v1.txt",
            )
            marker.write_text(digest)
    return python


_INSTALLERS: dict[str, Callable[[], Path]] = {
    "reference_servers": ensure_reference_servers,
    "legacy_v1_python": ensure_legacy_v1_venv,
}
_install_errors: dict[str, InstallError] = {}


NODE_MISSING = "needs Node.js and npm on PATH (the official reference servers are npm packages)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that uses the reference servers carries the `node` marker, and without Node.js
    on PATH every `node` test is skipped with the reason, instead of erroring in the install."""
    node_missing = shutil.which("node") is None or shutil.which("npm") is None
    for item in items:
        if (
            "reference_servers" in getattr(item, "fixturenames", ())
            and item.get_closest_marker("node") is None
        ):
            item.add_marker(pytest.mark.node)
        if node_missing and item.get_closest_marker("node") is not None:
            item.add_marker(pytest.mark.skip(reason=NODE_MISSING))


def _skipped(item: pytest.Item) -> bool:
    return any(mark.name == "skip" for mark in item.iter_markers())


def pytest_collection_finish(session: pytest.Session) -> None:
    """Run the one-time installs the selected tests need, outside any test's timeout."""
    if session.config.option.collectonly:
        return
    wanted = {
        name
        for item in session.items
        if not _skipped(item)
        for name in getattr(item, "fixturenames", ())
        if name in _INSTALLERS
    }
    for name in sorted(wanted):
        try:
            _INSTALLERS[name]()
        except InstallError as exc:
            _install_errors[name] = exc


def _installed(name: str) -> Path:
    if name in _install_errors:
        pytest.fail(str(_install_errors[name]), pytrace=False)
    try:
        return _INSTALLERS[name]()
    except InstallError as exc:
        _install_errors[name] = exc
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def reference_servers() -> ReferenceServers:
    """The pinned @modelcontextprotocol/server-everything and server-filesystem, installed."""
    root = _installed("reference_servers")
    node = shutil.which("node")
    if node is None:
        pytest.fail("the reference servers need Node.js: `node` is not on PATH", pytrace=False)
    return ReferenceServers(root=root, node=node)


@pytest.fixture(scope="session")
def legacy_v1_python() -> Path:
    """The python of the virtualenv holding the 1.x `mcp` SDK (runs tests/servers/legacy_v1_server.py)."""
    return _installed("legacy_v1_python")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fixture servers are warm-launched (tests/servers/warm_launcher.py) unless the test is marked
    ``real_processes``: a test about a server's own process gets a fresh interpreter. Set before any
    fixture of the test starts, module-scoped ones included."""
    support.warm_launching = item.get_closest_marker("real_processes") is None


@pytest.fixture
def events(tmp_path: Path) -> EventLog:
    """An `EventLog` on a fresh file; pass it as the fixture server's ``events=``."""
    return EventLog(tmp_path / "events.jsonl")


@pytest.fixture
def http_server() -> Iterator[Callable[..., HttpServer]]:
    """Start fixture servers over HTTP: ``http_server(*flags, events=..., **kwargs)`` returns
    a listening `HttpServer`; every one started is stopped and reaped at teardown."""
    started: list[HttpServer] = []

    def start(*flags: str, **kwargs: Any) -> HttpServer:
        server = HttpServer(*flags, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
        server.close()


# --- sign-in ------------------------------------------------------------------------------------------


@pytest.fixture
def token_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A token store of the test's own (`MCP_SYNC_TOKEN_DIR`)."""
    directory = tmp_path / "tokens"
    monkeypatch.setenv("MCP_SYNC_TOKEN_DIR", os.fspath(directory))
    return directory


@pytest.fixture
def oauth_events(tmp_path: Path) -> EventLog:
    """The event log of the test's OAuth fixture server."""
    return EventLog(tmp_path / "oauth-events.jsonl")


# --- log records ---------------------------------------------------------------------------------------


@pytest.fixture
def records() -> Iterator[Records]:
    """Capture every record at DEBUG from every logger."""
    handler = Records()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
