"""Host model: the program ends while thread-pool workers are blocked in calls, and the pool module
was first imported after mcp_sync (the usual order: nothing imports it before the first start).

    python -m tests.hosts.exit_pool_imported_late WORKDIR

Imports `mcp_sync` with ``concurrent.futures.thread`` not yet imported (it checks and reports
``sys.modules``), starts a hub on ``fixture_server.py --ignore-signals`` (``s``), prints
``PID <server pid>``, then makes a ``ThreadPoolExecutor`` whose two workers call
``mcp__s__sleep`` (600 s) with ``timeout=60`` and with ``timeout=math.inf``, waits until the server
recorded both as started, prints ``REPORT <json>`` and ``RETURNING``, and ends the script: no
close, no shutdown. Each worker writes what its call did to WORKDIR/worker-<tag>.json.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

POOL_MODULE = "concurrent.futures.thread"
imported: dict[str, bool] = {"before_mcp_sync": POOL_MODULE in sys.modules}

from mcp_sync import MCPHub  # noqa: E402  (the import order is the scenario)

imported["after_mcp_sync"] = POOL_MODULE in sys.modules

from tests.hosts._common import describe_exception, report  # noqa: E402
from tests.support import EventLog, stdio_config  # noqa: E402

CALLS = {"long": 60.0, "inf": math.inf}
"""The tag of each worker's call and its timeout: both far longer than the exit may take."""

workdir = Path(sys.argv[1])
events = EventLog(workdir / "server.jsonl")
hub = MCPHub([stdio_config("s", "--ignore-signals", events=events)])
hub.start()
imported["after_start"] = POOL_MODULE in sys.modules
print(f"PID {hub.call_tool('mcp__s__pid', timeout=20).text}", flush=True)


def work(tag: str, timeout: float) -> None:
    outcome: dict[str, Any]
    try:
        result = hub.call_tool("mcp__s__sleep", {"seconds": 600, "tag": tag}, timeout=timeout)
    except BaseException as exc:
        outcome = {"outcome": "raised", **describe_exception(exc)}
    else:
        outcome = {"outcome": "returned", "text": result.text}
    with open(workdir / f"worker-{tag}.json", "w") as file:
        json.dump(outcome, file)
        file.flush()
        os.fsync(file.fileno())


from concurrent.futures import ThreadPoolExecutor  # noqa: E402

pool = ThreadPoolExecutor(max_workers=len(CALLS))
for tag, timeout in CALLS.items():
    pool.submit(work, tag, timeout)
for tag in CALLS:
    events.wait_for("started", tag=tag, timeout=20)
report({"imported": imported})
print("RETURNING", flush=True)
