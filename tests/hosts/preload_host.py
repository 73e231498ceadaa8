"""Host model: a pre-fork server (gunicorn ``--preload``, Celery prefork) whose app module builds the
hub, and whose workers, forked from it, use it.

    python -m tests.hosts.preload_host MODE WORKDIR

MODE ``hub``: the app module creates a hub (server ``app``) and does not start it; a ``multiprocessing``
fork ``Pool`` of two workers starts it in each worker (the pool's initializer, as gunicorn's
``post_fork`` or Celery's ``worker_process_init`` does), and each worker's task calls a tool. Each
worker closes its hub when it exits.

MODE ``registry``: the app module makes a `ToolRegistry` and uses it (a function registered, a listener
told): its callback thread is alive when the pool forks. Each worker's task starts a hub of its own on
that registry and calls a tool with a progress callback; the report says which progress the callback
saw by the time the call returned, and which tools the registry's listener heard of.

MODE ``started``: the app module makes a `ToolRegistry`, registers a function, and starts a hub on it
(server ``app``, with its resource tool) before the pool forks. Each worker's task lists the registry
it inherited and what its removal listener heard, starts a hub of its own on it with a server of the
same name and calls its tools, and calls the parent's connection of ``app`` (a tool, and a resource
through its features) directly. The parent's hub answers again once the workers are done.

The parent prints ``REPORT <json>``: each worker's view, and the servers the workers started.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.util
import os
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from mcp_sync import MCPHub, MCPSyncError, ToolCallTimeoutError, ToolRegistry
from tests.hosts._common import mcp_threads, poll, report
from tests.support import stdio_config

# Python 3.12+ warns that forking a multi-threaded process may deadlock: that is the scenario.
warnings.filterwarnings("ignore", category=DeprecationWarning, message=r".*fork\(\).*")

MODE, WORKDIR = sys.argv[1], Path(sys.argv[2])
# How long a worker's task may take: a hub's start and a call (the pool waits for both tasks).
TASK_LIMIT = 90.0
# A call's timeout: generous, so that only a call that can never be answered reaches it.
CALL_TIMEOUT = 30.0
# A hub's resource tool is registered, and listeners told, on the callback thread: bound those waits.
RESOURCE_TOOL_TIMEOUT = 30.0
RESOURCE_TOOL = "mcp__app__read_resource"

# -- the app module: what a pre-fork server imports once, before forking its workers --------------------

HUB = MCPHub([stdio_config("app", events=WORKDIR / "app.jsonl")]) if MODE == "hub" else None

REGISTRY = ToolRegistry()
HEARD: list[str] = []
HEARD_ONE = threading.Event()


def _heard(tool: Any) -> None:
    HEARD.append(tool.name)
    HEARD_ONE.set()


REGISTRY.on_tool_added(_heard)
STARTED: MCPHub | None = None  # MODE "started": the app module's hub, started before the fork
REMOVED: list[str] = []


def _removed(tool: Any) -> None:
    REMOVED.append(tool.name)


REGISTRY.on_tool_removed(_removed)


def host_tool(text: str) -> str:
    """The host's own tool."""
    return text


# -- the workers --------------------------------------------------------------------------------------


def start_in_worker() -> None:
    """The pool's initializer: start the app's hub in this worker, and close it when the worker exits."""
    assert HUB is not None
    HUB.start()
    multiprocessing.util.Finalize(HUB, HUB.close, exitpriority=10)


def hub_task(index: int) -> dict[str, Any]:
    assert HUB is not None
    return {
        "pid": os.getpid(),
        "state": HUB.state,
        "echo": HUB.call_tool("mcp__app__echo", {"text": f"worker {index}"}, timeout=30).text,
        "server_pid": int(HUB.call_tool("mcp__app__pid", timeout=30).text),
    }


def registry_task(index: int) -> dict[str, Any]:
    name = f"kid{index}"
    seen: list[float] = []
    with MCPHub([stdio_config(name, events=WORKDIR / f"{name}.jsonl")], registry=REGISTRY) as hub:
        began = time.monotonic()
        text = hub.call_tool(
            f"mcp__{name}__progress", {"steps": 3}, timeout=30, progress=lambda p, _t, _m: seen.append(p)
        ).text
        seconds = time.monotonic() - began
        server_pid = hub.servers[name].pid
    return {
        "pid": os.getpid(),
        "text": text,
        "progress": seen,
        "seconds": seconds,
        "heard": sorted(HEARD),
        "server_pid": server_pid,
        "threads_at_end": mcp_threads(name),
    }


def started_task(index: int) -> dict[str, Any]:
    assert STARTED is not None
    out: dict[str, Any] = {"pid": os.getpid(), "inherited_tools": sorted(tool.name for tool in REGISTRY)}
    # The listener hears, on the worker's callback thread, of what the fork took out of the registry.
    poll(lambda: "mcp__app__echo" in REMOVED, RESOURCE_TOOL_TIMEOUT)
    out["heard_removed"] = sorted(set(REMOVED))
    parent_connection: Any = STARTED.servers["app"]  # what `hub.servers` hands out, from the parent
    try:
        parent_connection.call("echo", {"text": "x"}, public_name="mcp__app__echo", timeout=CALL_TIMEOUT)
        out["parent_connection"] = "answered"
    except ToolCallTimeoutError as exc:
        out["parent_connection"] = f"timed out: {exc}"
    except MCPSyncError as exc:
        out["parent_connection"] = f"refused: {exc}"
    try:
        parent_connection.features.request(
            lambda client: client.read_resource("fixture://items/fig"),
            label="read fixture://items/fig",
            timeout=CALL_TIMEOUT,
            cancel=None,
        )
        out["parent_features"] = "answered"
    except ToolCallTimeoutError as exc:
        out["parent_features"] = f"timed out: {exc}"
    except MCPSyncError as exc:
        out["parent_features"] = f"refused: {type(exc).__name__}: {exc}"
    config = stdio_config("app", events=WORKDIR / f"app{index}.jsonl")
    with MCPHub([config], registry=REGISTRY, resource_tools=True) as hub:
        poll(lambda: RESOURCE_TOOL in REGISTRY, RESOURCE_TOOL_TIMEOUT)
        server = hub.servers["app"]
        out["state"] = server.state
        out["error"] = str(server.error) if server.error is not None else None
        out["server_pid"] = server.pid
        out["tools"] = sorted(tool.name for tool in hub.tools())
        calls = (
            ("mcp__app__echo", {"text": f"worker {index}"}),
            ("host_tool", {"text": "host"}),
            (RESOURCE_TOOL, {"uri": "fixture://items/fig"}),
        )
        for name, arguments in calls:
            try:
                out[name] = hub.call_tool(name, arguments, timeout=CALL_TIMEOUT).text
            except MCPSyncError as exc:
                out[name] = f"{type(exc).__name__}: {exc}"
    return out


def main() -> None:
    global STARTED
    out: dict[str, Any] = {"mode": MODE, "parent_pid": os.getpid()}
    if MODE == "registry":
        REGISTRY.register_function(host_tool)
        assert HEARD_ONE.wait(30), "the listener was never told"
        # The callback thread stays alive for a few seconds once idle: the fork below inherits it.
        alive = [thread.name for thread in threading.enumerate() if thread.name == "mcp-sync:callbacks"]
        out["callback_thread_alive_at_fork"] = bool(alive)
    if MODE == "started":
        REGISTRY.register_function(host_tool)
        config = stdio_config("app", events=WORKDIR / "parent.jsonl")
        STARTED = MCPHub([config], registry=REGISTRY, resource_tools=True).start()
        poll(lambda: RESOURCE_TOOL in REGISTRY, RESOURCE_TOOL_TIMEOUT)
        out["parent_tools"] = sorted(tool.name for tool in REGISTRY)
    pool = multiprocessing.get_context("fork").Pool(2, initializer=start_in_worker if MODE == "hub" else None)
    try:
        task = {"hub": hub_task, "registry": registry_task, "started": started_task}[MODE]
        out["workers"] = pool.map_async(task, [0, 1]).get(timeout=TASK_LIMIT)
    except Exception as exc:
        out["workers_error"] = repr(exc)
        pool.terminate()
    pool.close()
    pool.join()
    out["parent_hub_state"] = HUB.state if HUB is not None else None
    if STARTED is not None:
        with STARTED:
            echo = STARTED.call_tool("mcp__app__echo", {"text": "parent"}, timeout=CALL_TIMEOUT)
            out["parent_echo_after"] = echo.text
            out["parent_server_pid"] = STARTED.servers["app"].pid
    report(out)


if __name__ == "__main__":
    main()
