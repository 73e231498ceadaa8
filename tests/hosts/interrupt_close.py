"""Host model: Ctrl-C while `MCPHub.close()` waits for a server that ignores signals.

    python -m tests.hosts.interrupt_close WORKDIR

Starts a hub on ``fixture_server.py --ignore-signals`` (``stubborn``), prints ``PID <server
pid>`` and ``CLOSING``, and calls ``close()``; the test sends SIGINT while that close is under
way. The script catches the KeyboardInterrupt, calls ``close()`` again, and reports what that
second close left (right after it returned) and whether a new hub on the same registry can start
a server of the same name and call it: ``REPORT <json>``.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

from mcp_sync import MCPHub
from tests.hosts._common import bounded, describe_exception, live_children, mcp_threads, report
from tests.support import EventLog, pid_alive, stdio_config


def reuse(hub: MCPHub) -> str:
    again = MCPHub([stdio_config("stubborn")], registry=hub.registry)
    again.start()
    try:
        return again.call_tool("mcp__stubborn__echo", {"text": "same name, new hub"}, timeout=20).text
    finally:
        again.close()


def main() -> None:
    events = EventLog(Path(sys.argv[1]) / "stubborn.jsonl")
    hub = MCPHub([stdio_config("stubborn", "--ignore-signals", events=events)])
    hub.start()
    pid = int(hub.call_tool("mcp__stubborn__pid", timeout=20).text)
    out: dict[str, Any] = {"server_pid": pid}
    print(f"PID {pid}", flush=True)
    print("CLOSING", flush=True)
    started = time.monotonic()
    try:
        hub.close()
    except KeyboardInterrupt:
        out["first_close"] = {"outcome": "KeyboardInterrupt"}
    except BaseException as exc:
        out["first_close"] = {"outcome": "raised", **describe_exception(exc)}
    else:
        out["first_close"] = {"outcome": "returned"}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a SIGINT that came after close() lands nowhere
    out["first_close"]["seconds"] = time.monotonic() - started
    out["second_close"] = bounded(hub.close, 30)
    out["after_second_close"] = {
        "server_alive": pid_alive(pid),
        "children": live_children(),
        "threads": mcp_threads(),
    }
    out["new_hub_on_same_registry"] = bounded(lambda: reuse(hub), 40)
    report(out)


if __name__ == "__main__":
    main()
