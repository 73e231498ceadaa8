"""The one-time work of result validation is done during start and after each listing, not in a call.

These look at the SDK's own caches (private attributes of `ClientSession`, in these checks only):
that is where the work would otherwise land, inside somebody's first call of each tool.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import MCPHub
from mcp_sync._runtime.lifecycle import OncePerProcess
from mcp_sync._server import session
from tests.hub_harness import TRANSPORTS_AND_ERAS, fixture_server, started_hub
from tests.support import stdio_config, wait_until

# How long the stalled warm-up of the test below would last: far beyond every bound it must not wait out.
STALL_LIMIT = 120.0

REPO_ROOT = Path(__file__).resolve().parent.parent


def _sdk_session(hub: MCPHub, server: str) -> Any:
    client = hub.servers[server]._session.client
    assert client is not None, f"server {server!r} has no session"
    return client.session


def _uncompiled(hub: MCPHub, server: str) -> set[str]:
    """Listed tools with an output schema whose validator the SDK has not compiled yet."""
    session = _sdk_session(hub, server)
    schemas: dict[str, Any] = session._tool_output_schemas
    return {name for name, schema in schemas.items() if schema is not None} - set(
        session._tool_output_validators
    )


@pytest.mark.parametrize(("transport", "era"), TRANSPORTS_AND_ERAS)
def test_validators_are_compiled_after_start_and_after_a_relisting(transport: str, era: str) -> None:
    with fixture_server("fx", transport, era) as served, started_hub(served.config) as hub:
        assert _sdk_session(hub, "fx")._tool_output_schemas, "the fixture's tools have output schemas"
        wait_until(lambda: not _uncompiled(hub, "fx"), message="validators not compiled after start")

        added = hub.call_tool("mcp__fx__add_tool", {"name": "late"})
        assert not added.is_error, added.text
        wait_until(lambda: hub.registry.get("mcp__fx__late") is not None, message="late tool not listed")
        wait_until(lambda: not _uncompiled(hub, "fx"), message="the new tool's validator not compiled")
        assert hub.call_tool("mcp__fx__late", {"text": "hi"}).text == "hi"


# In a process of its own: in this one, earlier tests have long built the models.
_MODELS_SCRIPT = """
import json, sys
import mcp_types
from mcp_sync import MCPHub
from tests.support import stdio_config

names = ("CallToolRequest", "ReadResourceRequest", "GetPromptRequest")
before = {name: getattr(mcp_types, name).__pydantic_complete__ for name in names}
with MCPHub([stdio_config("fx")]).start():
    after = {name: getattr(mcp_types, name).__pydantic_complete__ for name in names}
print(json.dumps({"before": before, "after": after}))
"""


def test_request_models_are_built_during_start() -> None:
    # pydantic builds these on their first use; start() builds them on an executor thread instead.
    done = subprocess.run(
        [sys.executable, "-c", _MODELS_SCRIPT],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert not any(seen["before"].values()), f"nothing to show: the models were built at import {seen}"
    assert all(seen["after"].values()), f"a request model is still deferred after start(): {seen}"


def test_a_stalled_warm_up_delays_ready_no_later_than_the_connect_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The process's one-time import stalls (a loaded machine, a slow disk): a server that connected and
    # listed its tools is ready at its connect deadline at the latest, never after it.
    released = threading.Event()
    stalled = OncePerProcess("stalled warm-up", lambda: released.wait(STALL_LIMIT))
    monkeypatch.setattr(session, "RESULT_VALIDATION", stalled)
    monkeypatch.setattr(session, "_WARM_UP_TIMEOUT", STALL_LIMIT)  # only the connect deadline bounds it
    try:
        with started_hub(stdio_config("fx", connect_timeout_ms=3000)) as hub:
            assert hub.servers["fx"].state == "ready"
            assert not stalled.done
            assert hub.call_tool("mcp__fx__echo", {"text": "hi"}).text == "hi"
    finally:
        released.set()


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
def test_the_result_checks_are_built_ahead_at_every_protocol_version_without_a_complaint(
    version: str, caplog: pytest.LogCaptureFixture
) -> None:
    from mcp_sync._server.warm_up import build_result_checks

    with caplog.at_level(logging.DEBUG, logger="mcp_sync"):
        build_result_checks(version)
    assert not [record.getMessage() for record in caplog.records if "not built ahead" in record.getMessage()]


EXIT_DURING_WARM_UP = """
import sys, time
from pathlib import Path
from mcp_sync import MCPHub, ServerStartError
from mcp_sync._server import warm_up

marker = Path(sys.argv[1])

def slow_warm_up() -> None:
    time.sleep(0.5)  # still at work when the script below has ended
    marker.write_text("done")

warm_up.RESULT_VALIDATION._work = slow_warm_up
try:
    MCPHub([{"server_name": "broken", "command": "no-such-command", "required": True}]).start()
except ServerStartError:
    pass
"""


def test_interpreter_exit_waits_for_the_warm_up_in_flight(tmp_path: Path) -> None:
    # A script whose only server fails at once ends while the warm-up still runs on its daemon thread;
    # finalizing the interpreter under a daemon thread inside pydantic-core's code could abort the
    # process. The exit waits for the warm-up (bounded) instead: it always finishes.
    marker = tmp_path / "warm-up-finished"
    done = subprocess.run(
        [sys.executable, "-c", EXIT_DURING_WARM_UP, str(marker)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "done"


CTRL_C_IN_THE_EXIT_WAIT = """
import sys
from pathlib import Path
from mcp_sync import MCPHub, ServerStartError
from mcp_sync._server import warm_up

marker = Path(sys.argv[1])
waits = []

def interrupted_wait() -> None:
    waits.append(1)
    marker.write_text(str(len(waits)))
    raise KeyboardInterrupt  # a Ctrl-C while the exit waits for the warm-up

warm_up.RESULT_VALIDATION._hold_fork = interrupted_wait
try:
    MCPHub([{"server_name": "broken", "command": "no-such-command", "required": True}]).start()
except ServerStartError:
    pass
"""


def test_the_exit_waits_for_the_warm_up_once_and_a_ctrl_c_there_only_ends_the_wait(tmp_path: Path) -> None:
    marker = tmp_path / "waits"
    argv = [sys.executable, "-c", CTRL_C_IN_THE_EXIT_WAIT, str(marker)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert (done.returncode, marker.read_text()) == (0, "1"), done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
