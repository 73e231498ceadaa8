"""Host model: Ctrl-C while `MCPHub.start()` waits for a server that never answers.

    python -m tests.hosts.interrupt_start WORKDIR

Starts a hub with a normal fixture server (``normal``) and a ``hanging_server.py
--ignore-signals`` (``hang``, connect_timeout_ms 60000), printing ``STARTING`` just before
``start()``; the test sends SIGINT once both servers' ``--events`` files show ``ready``.
Catches the KeyboardInterrupt and reports, after polling up to 2 s, which server processes
and ``mcp-sync:`` threads remain: ``REPORT <json>``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from mcp_sync import MCPHub
from tests.hosts._common import describe_exception, live_children, mcp_threads, poll, report
from tests.support import HANGING_SERVER, EventLog, pid_alive, stdio_config

SETTLE = 2.0  # the contract: within 2 s of the interrupt nothing of the hub remains


def main() -> None:
    workdir = Path(sys.argv[1])
    normal, hang = EventLog(workdir / "normal.jsonl"), EventLog(workdir / "hang.jsonl")
    hub = MCPHub(
        [
            stdio_config("normal", events=normal),
            stdio_config(
                "hang", "--ignore-signals", script=HANGING_SERVER, events=hang, connect_timeout_ms=60000
            ),
        ]
    )
    out: dict[str, Any] = {}
    print("STARTING", flush=True)
    started = time.monotonic()
    try:
        hub.start()
    except KeyboardInterrupt:
        out["start"] = {"outcome": "KeyboardInterrupt"}
    except BaseException as exc:
        out["start"] = {"outcome": "raised", **describe_exception(exc)}
    else:
        out["start"] = {"outcome": "returned"}
    caught = time.monotonic()
    out["start"]["seconds"] = caught - started
    server_pids = [int(event["pid"]) for log in (normal, hang) for event in log.find("ready")]

    def leftovers() -> dict[str, list[Any]]:
        return {
            "servers": [pid for pid in server_pids if pid_alive(pid)],
            "children": live_children(),
            "threads": mcp_threads(),
        }

    out["clean_within_2s"] = poll(lambda: not any(leftovers().values()), SETTLE)
    out["settle_seconds"] = time.monotonic() - caught
    out["server_pids"] = server_pids
    out["after"] = leftovers()
    report(out)


if __name__ == "__main__":
    main()
