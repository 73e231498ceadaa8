"""Host model: Ctrl-C while `MCPHub.reload()` stops a server whose entry changed.

    python -m tests.hosts.interrupt_reload WORKDIR

Starts a hub on ``changed`` (``fixture_server.py --ignore-signals``: its stop takes seconds) and
``kept``, prints ``RELOADING``, and reloads with ``changed``'s entry changed (another
``tool_call_timeout_ms``); the test sends SIGINT once the old ``changed`` server saw its stdin close.
The script catches the KeyboardInterrupt and reports, once ``changed`` is ready again on its previous
entry (bounded), what the hub runs: ``REPORT <json>``.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

from mcp_sync import MCPHub
from tests.hosts._common import describe_exception, poll, report
from tests.support import EventLog, stdio_config

# How long the servers of the previous configuration get to be ready again after the interrupt.
RECOVERY_LIMIT = 30.0
# The changed server's call timeout on its previous entry (the default); the reload sets 4.321 s.
PREVIOUS_TIMEOUT = 60.0


def main() -> None:
    workdir = Path(sys.argv[1])
    changed = stdio_config("changed", "--ignore-signals", events=EventLog(workdir / "changed.jsonl"))
    kept = stdio_config("kept", events=EventLog(workdir / "kept.jsonl"))
    hub = MCPHub([changed, kept])
    hub.start()
    kept_pid = hub.servers["kept"].pid
    out: dict[str, Any] = {}
    print("RELOADING", flush=True)
    try:
        hub.reload([{**changed, "tool_call_timeout_ms": 4321}, kept])
    except KeyboardInterrupt:
        out["reload"] = {"outcome": "KeyboardInterrupt"}
    except BaseException as exc:
        out["reload"] = {"outcome": "raised", **describe_exception(exc)}
    else:
        out["reload"] = {"outcome": "returned"}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a SIGINT that came after reload() lands nowhere
    try:
        # Going back does not wait: a replacement the interrupt found ready is stopped first, then the
        # previous entry starts again.
        out["recovered"] = poll(
            lambda: (
                "changed" in hub.servers
                and hub.servers["changed"].state == "ready"
                and hub.servers["changed"].config.tool_call_timeout == PREVIOUS_TIMEOUT
            ),
            RECOVERY_LIMIT,
        )
        out["hub_state"] = hub.state
        out["servers"] = {name: server.state for name, server in hub.servers.items()}
        if "changed" in hub.servers:
            config = hub.servers["changed"].config
            out["changed_timeout"] = config.tool_call_timeout if config is not None else None
        out["kept_same_process"] = hub.servers["kept"].pid == kept_pid
        began = time.monotonic()
        try:
            out["echo"] = hub.call_tool("mcp__changed__echo", {"text": "back"}, timeout=20).text
        except Exception as exc:
            out["echo"] = describe_exception(exc)
        out["echo_seconds"] = time.monotonic() - began
    finally:
        hub.close()
    report(out)


if __name__ == "__main__":
    main()
