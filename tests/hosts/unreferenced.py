"""Host model: hubs the program stops referencing without closing them.

    python -m tests.hosts.unreferenced del | rerun | cycle

``del``: start a hub, learn its server's pid, ``del hub; gc.collect()`` under
``warnings.catch_warnings(record=True)`` (``simplefilter("always")``), then poll up to 10 s for
the server process and every ``mcp-sync:`` thread to be gone.
``rerun``: ``hub = MCPHub([...]); hub.start()`` three times (rebinding ``hub``, as a re-run
cell or a re-imported module does), ``gc.collect()``, then poll up to 10 s for exactly one live
fixture server and one ``mcp-sync:cell`` thread; the last hub must still answer.
``cycle``: as ``del``, for hubs held by an object that subscribed its own bound methods
(``on_tool_added``, ``on_server_state``, ``subscribe_resource``) or passed one as the elicitation
handler: a reference cycle through the user's callable, which only ``gc.collect()`` breaks; one hub
per kind.
Prints ``REPORT <json>``.
"""

from __future__ import annotations

import gc
import sys
import time
import warnings
from typing import Any

from mcp_sync import MCPHub
from tests.hosts._common import bounded, live_children, mcp_threads, poll, report
from tests.support import pid_alive, stdio_config

SETTLE = 10.0


def forgotten() -> dict[str, Any]:
    out: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hub = MCPHub([stdio_config("lost")])
        hub.start()
        pid = int(hub.call_tool("mcp__lost__pid", timeout=20).text)
        out["server_pid"] = pid
        del hub
        gc.collect()
        out["warnings_right_after_collect"] = [f"{w.category.__name__}: {w.message}" for w in caught]
        dropped = time.monotonic()
        out["gone_within_10s"] = poll(
            lambda: not pid_alive(pid) and not mcp_threads() and not live_children(), SETTLE
        )
        out["seconds"] = time.monotonic() - dropped
        out["server_alive"] = pid_alive(pid)
        out["threads"] = mcp_threads()
        out["children"] = live_children()
        out["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return out


class Agent:
    """An object holding its hub and reacting with its own methods: hub and agent refer to each other."""

    def __init__(self, kind: str) -> None:
        elicitation = {"elicitation": self.ask} if kind == "elicitation" else {}
        self.hub = MCPHub([stdio_config(kind.replace("_", "-"))], **elicitation)
        if kind == "on_tool_added":
            self.hub.on_tool_added(self.added)
        if kind == "on_server_state":
            self.hub.on_server_state(self.state)
        self.hub.start()
        if kind == "subscribe_resource":
            self.hub.subscribe_resource("fixture://text/readme", self.changed)

    def ask(self, request: object) -> None:
        return None

    def added(self, tool: object) -> None:
        pass

    def changed(self, uri: str) -> None:
        pass

    def state(self, name: str, state: str, error: BaseException | None) -> None:
        pass


def cycles() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("on_tool_added", "on_server_state", "elicitation", "subscribe_resource"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            agent = Agent(kind)
            pid = int(agent.hub.call_tool(f"mcp__{kind.replace('_', '-')}__pid", timeout=20).text)
            del agent
            gc.collect()
            gone = poll(
                lambda pid=pid: not pid_alive(pid) and not mcp_threads() and not live_children(), SETTLE
            )
            out[kind] = {
                "server_pid": pid,
                "gone_within_10s": gone,
                "threads": mcp_threads(),
                "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
            }
    out["children"] = live_children()
    out["servers"] = [run["server_pid"] for run in out.values() if isinstance(run, dict)]
    return out


def rerun() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _ in range(3):
        hub = MCPHub([stdio_config("cell")])
        hub.start()
    gc.collect()

    def servers() -> list[int]:
        return live_children(marker="fixture_server.py")

    out["one_left_within_10s"] = poll(lambda: len(servers()) == 1 and len(mcp_threads("cell")) == 1, SETTLE)
    out["servers"] = servers()
    out["threads"] = mcp_threads("cell")
    out["last_hub_call"] = bounded(
        lambda: hub.call_tool("mcp__cell__echo", {"text": "still mine"}, timeout=20).text, 25
    )
    hub.close()
    return out


if __name__ == "__main__":
    report({"del": forgotten, "rerun": rerun, "cycle": cycles}[sys.argv[1]]())
