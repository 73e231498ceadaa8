"""Host model: the main thread ends while a non-daemon worker thread is blocked in a call.

    python -m tests.hosts.exit_in_flight WORKDIR

Starts a hub on ``fixture_server.py --ignore-signals`` (``s``), prints ``PID <server pid>``,
submits ``call_tool("mcp__s__sleep", {"seconds": 60, "tag": "x"})`` to a
``ThreadPoolExecutor`` (its workers are joined at interpreter exit), waits until the server
recorded ``started``, prints ``RETURNING`` and ends the script: no close, no shutdown. The
worker writes what the call did to WORKDIR/worker.json before it returns.
"""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mcp_sync import MCPHub
from tests.hosts._common import describe_exception
from tests.support import EventLog, stdio_config

workdir = Path(sys.argv[1])
events = EventLog(workdir / "server.jsonl")
hub = MCPHub([stdio_config("s", "--ignore-signals", events=events)])
hub.start()
print(f"PID {hub.call_tool('mcp__s__pid', timeout=20).text}", flush=True)


def work() -> None:
    outcome: dict[str, Any]
    try:
        result = hub.call_tool("mcp__s__sleep", {"seconds": 60, "tag": "x"})
    except BaseException as exc:
        outcome = {"outcome": "raised", **describe_exception(exc)}
    else:
        outcome = {"outcome": "returned", "text": result.text}
    with open(workdir / "worker.json", "w") as file:
        json.dump(outcome, file)
        file.flush()
        os.fsync(file.fileno())


pool = ThreadPoolExecutor(max_workers=1)
pool.submit(work)
events.wait_for("started", tag="x", timeout=20)
print("RETURNING", flush=True)
