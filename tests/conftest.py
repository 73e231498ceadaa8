"""pytest fixtures for the mcp_sync tests.

One-time installs (tests/installs.py) back the slow session fixtures:

- ``reference_servers``: the official npm reference servers, ``npm ci`` in
  tests/reference_servers (pinned by its package-lock.json; node_modules is gitignored);
- ``legacy_v1_python``: a virtualenv with the 1.x ``mcp`` SDK under ``.test-venvs/mcp1-py<version>``
  (gitignored), from tests/servers/requirements-v1.txt;
- ``published_python``: a virtualenv of published servers on the 2.x SDK under
  ``.test-venvs/published-py<version>``, from tests/servers/requirements-published.txt.

Each is redone only when its pin changes (a marker holds the hash of the lock or
requirements file), under a file lock so concurrent pytest runs don't install over each
other, and bounded in time (`INSTALL_TIMEOUT` there). They run in `pytest_collection_finish`,
before the first test, when a selected test needs them: pytest-timeout's per-test limit
(setup.cfg: 60 s) covers fixture setup, and a first-time install (a minute or two on a
cold cache) must not be charged to whichever test happens to run first. A failed install
is not a skip: every test that needs it errors with the installer's output.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests import support  # noqa: E402
from tests.installs import (  # noqa: E402
    InstallError,
    ensure_legacy_v1_venv,
    ensure_published_venv,
    ensure_reference_servers,
)
from tests.support import (  # noqa: E402
    EventLog,
    HttpServer,
    Records,
    ReferenceServers,
)

_INSTALLERS: dict[str, Callable[[], Path]] = {
    "reference_servers": ensure_reference_servers,
    "legacy_v1_python": ensure_legacy_v1_venv,
    "published_python": ensure_published_venv,
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


@pytest.fixture(scope="session")
def published_python() -> Path:
    """The python of the virtualenv holding the published servers on the 2.x SDK."""
    return _installed("published_python")


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
