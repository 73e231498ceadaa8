"""Host model: a server fails at one step of connecting, then fresh hubs start in the same process.

    python -m tests.hosts.start_after_fault MODE WORKDIR

MODE names the fault of the first hub (server ``bad``):

- ``missing-command``: the command does not exist (spawn fails);
- ``exits-at-once``: the process writes an error to stderr and exits before it says anything;
- ``exit-during-handshake``: the fixture server exits on the first handshake request;
- ``handshake-timeout``: a server that never answers, with a short ``connect_timeout_ms``;
- ``listing-fails``: the fixture server answers the first ``tools/list`` with an error;
- ``warm-up-raises``: the one-time warm-up of result validation raises (its work replaced);
- ``warm-up-slow``: the one-time warm-up never finishes (its work replaced): the first hub,
  on a good server, waits out the warm-up's bound;
- ``fork``: ``missing-command``, then ``os.fork()``: the child runs the good hubs;
- ``fork-warm-up-in-flight``: the same, while the parent's one-time warm-up is still running
  (held until the fork is done, in the parent only).

Then two good hubs (``good0``, ``good1``) start one after the other, each is called once and
closed. In the fork modes the child does that (and writes WORKDIR/child.json), then the parent.
Each hub's report says whether its start waited out the warm-up's bound (`waited_out`: it waited
and the work was still not done), so a start that waited on a fault stands out without timing it.
The bound is `WARM_UP_LIMIT` seconds, far above a normal warm-up; in ``warm-up-slow``, whose work
never ends, `SLOW_WARM_UP_LIMIT`: the first hub waits that long by design. Prints ``REPORT <json>``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import mcp_sync._server.session
import mcp_sync._server.warm_up
from mcp_sync import MCPHub
from tests.hosts._common import bounded, report
from tests.support import HANGING_SERVER, stdio_config

WARM_UP_LIMIT = 20.0
"""The warm-up's bound in this process (5 s by default): a real warm-up never reaches it, even on a loaded
machine, so a start that waited it out waited on a fault."""
SLOW_WARM_UP_LIMIT = 1.0
"""The bound in mode ``warm-up-slow``, where the work never ends and the first hub waits it out."""
CHILD_LIMIT = 90.0
"""How long the parent waits for the forked child's report."""

MODE = sys.argv[1]
WORKDIR = Path(sys.argv[2])
PARENT = os.getpid()
HELD = threading.Event()
"""Holds the parent's warm-up in mode fork-warm-up-in-flight until the fork is done."""

mcp_sync._server.session._WARM_UP_TIMEOUT = (  # type: ignore[attr-defined]
    SLOW_WARM_UP_LIMIT if MODE == "warm-up-slow" else WARM_UP_LIMIT
)
real_work = mcp_sync._server.warm_up._import
WAITS: list[tuple[bool, bool]] = []
"""One entry per session's wait for the warm-up: (whether it had time left to wait, whether the work was
done when the wait ended). Waited and not done: it waited out the bound."""
real_wait = mcp_sync._server.warm_up.RESULT_VALIDATION.wait


async def recorded_wait(limit: float) -> bool:
    work = mcp_sync._server.warm_up.RESULT_VALIDATION
    started_at = work._started_at  # type: ignore[attr-defined]
    had_time_left = started_at is not None and started_at + limit > time.monotonic()
    done = await real_wait(limit)
    WAITS.append((had_time_left, done))
    return done


mcp_sync._server.warm_up.RESULT_VALIDATION.wait = recorded_wait  # type: ignore[method-assign]


def raising_work() -> None:
    raise RuntimeError("warm-up failed on purpose")


def endless_work() -> None:
    threading.Event().wait()


def held_work() -> None:
    if os.getpid() == PARENT:
        HELD.wait(60)
    real_work()


if MODE == "warm-up-raises":
    mcp_sync._server.warm_up._import = raising_work
elif MODE == "warm-up-slow":
    mcp_sync._server.warm_up._import = endless_work
elif MODE == "fork-warm-up-in-flight":
    mcp_sync._server.warm_up._import = held_work


def faulty_config() -> dict[str, Any]:
    if MODE in ("missing-command", "fork", "fork-warm-up-in-flight"):
        return {"server_name": "bad", "transport": "stdio", "command": "no-such-mcp-server-command"}
    if MODE == "exits-at-once":
        # As a server whose required variable is not set does: a line on stderr, and out.
        script = "echo 'error: MCP_DEMO_TOKEN is not set' >&2; exit 1"
        return {"server_name": "bad", "transport": "stdio", "command": "/bin/sh", "args": ["-c", script]}
    if MODE == "exit-during-handshake":
        return stdio_config("bad", "--exit-during-handshake")
    if MODE == "handshake-timeout":
        return stdio_config("bad", script=HANGING_SERVER, connect_timeout_ms=1500)
    if MODE == "listing-fails":
        return stdio_config("bad", "--fail-listings", "1")
    return stdio_config("bad")  # the warm-up modes: a good server


def run_hub(config: dict[str, Any], call: bool) -> dict[str, Any]:
    """Start a hub on one server; its state, error and start time, and one call's answer."""
    name = config["server_name"]
    waits_before = len(WAITS)
    hub = MCPHub([config])
    try:
        hub.start()
        seen: dict[str, Any] = {
            "waited_out": any(waited and not done for waited, done in WAITS[waits_before:]),
            "warm_up_done": all(done for _waited, done in WAITS[waits_before:]),
            "state": hub.servers[name].state,
            "error": None if hub.servers[name].error is None else str(hub.servers[name].error),
        }
        if call:
            seen["call"] = bounded(
                lambda: hub.call_tool(f"mcp__{name}__echo", {"text": "after the fault"}, timeout=20).text, 30
            )
        return seen
    finally:
        hub.close()


def good_hubs() -> list[dict[str, Any]]:
    return [run_hub(stdio_config(f"good{i}"), call=True) for i in range(2)]


def wait_for_child(pid: int) -> dict[str, Any]:
    deadline = time.monotonic() + CHILD_LIMIT
    while time.monotonic() < deadline:
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done:
            path = WORKDIR / "child.json"
            return json.loads(path.read_text()) if path.exists() else {"outcome": "no report"}
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return {"outcome": "blocked"}


def main() -> None:
    seen: dict[str, Any] = {"mode": MODE, "pid": PARENT}
    seen["faulty"] = run_hub(faulty_config(), call=False)
    if MODE.startswith("fork"):
        pid = os.fork()
        if pid == 0:
            try:
                child: dict[str, Any] = {"good": good_hubs()}
            except BaseException as exc:
                child = {"outcome": "raised", "error": repr(exc)}
            try:
                (WORKDIR / "child.json").write_text(json.dumps(child, default=repr))
            finally:
                os._exit(0)
        HELD.set()
        seen["child"] = wait_for_child(pid)
    seen["good"] = good_hubs()
    report(seen)


if __name__ == "__main__":
    main()
