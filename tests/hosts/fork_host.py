"""Host model: a program that forks while its hub is running.

    python -m tests.hosts.fork_host MODE WORKDIR

MODE ``exit`` / ``return`` / ``_exit``: the parent starts a hub (server ``parent``), then
``os.fork()``s; the child probes the inherited hub (a call, a submit, its state, ``close()``),
in mode ``return`` also starts and uses a hub of its own, writes what it saw to
WORKDIR/child-<pid>.json and ends by ``sys.exit(0)``, by returning to the end of the script,
or by ``os._exit(0)``.
MODE ``pool``: the same probes run in two workers of a ``multiprocessing`` fork ``Pool`` that
then exit normally (``pool.close(); pool.join()``).

The parent then checks that its server process is alive and its hub still works, and prints
``REPORT <json>``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from mcp_sync import MCPHub
from tests.hosts._common import Probe, bounded, mcp_threads, report
from tests.support import EventLog, pid_alive, stdio_config

# Python 3.12+ warns that forking a multi-threaded process may deadlock: that is the scenario.
warnings.filterwarnings("ignore", category=DeprecationWarning, message=r".*fork\(\).*")

ECHO = "mcp__parent__echo"
PROBE_LIMIT = 10.0  # the inherited hub must fail at once; the call's own timeout is 60 s
HUB: MCPHub | None = None
WORKDIR = Path(".")
MODE = ""


def own_hub_roundtrip(name: str) -> str:
    hub = MCPHub([stdio_config(name, events=WORKDIR / f"{name}.jsonl")])
    hub.start()
    try:
        return hub.call_tool(f"mcp__{name}__echo", {"text": f"own hub {name}"}, timeout=20).text
    finally:
        hub.close()


def probe(hub: MCPHub, own_name: str) -> dict[str, Any]:
    """What an inherited hub does in this (forked) process, and whether a new hub works here."""
    seen: dict[str, Any] = {"pid": os.getpid(), "ppid": os.getppid()}
    # All three at once: each must end (raise) well before PROBE_LIMIT.
    state = Probe(lambda: getattr(hub, "state", "<MCPHub has no state attribute>"))
    call = Probe(lambda: hub.call_tool(ECHO, {"text": "from the child"}, timeout=60))
    submit = Probe(lambda: hub.submit(ECHO, {"text": "from the child"}, timeout=60).result(timeout=60))
    deadline = time.monotonic() + PROBE_LIMIT
    seen["state"] = state.result(deadline - time.monotonic())
    seen["call"] = call.result(deadline - time.monotonic())
    seen["submit"] = submit.result(deadline - time.monotonic())
    seen["close"] = bounded(hub.close, PROBE_LIMIT)
    seen["close_again"] = bounded(hub.close, PROBE_LIMIT)
    if own_name != "child" or MODE == "return":  # one direct child is enough to show it (time)
        seen["own_hub"] = bounded(lambda: own_hub_roundtrip(own_name), 40)
    seen["threads_at_end"] = mcp_threads()
    return seen


def pool_worker(index: int) -> dict[str, Any]:
    assert HUB is not None
    return probe(HUB, f"worker{index}")


def child(mode: str) -> None:
    assert HUB is not None
    seen = probe(HUB, "child")
    (WORKDIR / f"child-{os.getpid()}.json").write_text(json.dumps(seen))
    if mode == "exit":
        sys.exit(0)
    if mode == "_exit":
        os._exit(0)
    # mode == "return": fall off the end of the script (interpreter shutdown, atexit, GC)


def wait_child(pid: int, limit: float) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return {"hung": False, "exit_code": os.waitstatus_to_exitcode(status)}
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return {"hung": True, "exit_code": None}


def parent_after(hub: MCPHub, server_pid: int, events: EventLog) -> dict[str, Any]:
    """The parent's view once its children are gone."""
    return {
        "call": bounded(lambda: hub.call_tool(ECHO, {"text": "parent again"}, timeout=20).text, 25),
        "server_alive": pid_alive(server_pid),
        "state": hub.servers["parent"].state if "parent" in hub.servers else None,
        "threads": mcp_threads("parent"),
        "server_events": [event["event"] for event in events.events()],
    }


def main() -> None:
    global HUB, WORKDIR, MODE
    mode, WORKDIR = sys.argv[1], Path(sys.argv[2])
    MODE = mode
    events = EventLog(WORKDIR / "parent-server.jsonl")
    HUB = MCPHub([stdio_config("parent", events=events)])
    HUB.start()
    server_pid = int(HUB.call_tool("mcp__parent__pid", timeout=20).text)
    out: dict[str, Any] = {"mode": mode, "parent_pid": os.getpid(), "server_pid": server_pid}
    if mode == "pool":
        pool = multiprocessing.get_context("fork").Pool(2)
        try:
            out["workers"] = pool.map_async(pool_worker, [0, 1]).get(timeout=90)
        except Exception as exc:
            out["workers_error"] = repr(exc)
            pool.terminate()
        pool.close()
        pool.join()
    else:
        pid = os.fork()
        if pid == 0:
            child(mode)
            return
        out["child_exit"] = wait_child(pid, 90)
        path = WORKDIR / f"child-{pid}.json"
        out["children"] = [json.loads(path.read_text())] if path.exists() else []
    out["parent_after"] = parent_after(HUB, server_pid, events)
    HUB.close()
    report(out)


if __name__ == "__main__":
    main()
