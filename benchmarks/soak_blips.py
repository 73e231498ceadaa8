"""Soak: calls from 4 threads through a proxy that resets the connection of every 25th request.

A Streamable HTTP fixture server (`--record-calls`: it records every `tools/call` it is asked to
run) behind the test suite's TCP fault proxy (`tests/fault_proxy.py`), which resets the connection
of every 25th HTTP request it sees, once the server has begun to answer it. Four threads call
through one hub: read-only calls (`echo`, which the server marks read-only, so a call whose
connection broke is sent again) and, every fifth call, a call of `sleep` (no hints: never sent
again) with an argument of its own, so the server's record shows whether any ran twice.

Printed: the errors callers saw for read-only calls (must be 0), non-idempotent calls the server
ran twice (must be 0, counted by the server), the `ToolCallMayHaveRunError`s callers got (each a
non-idempotent call whose answer was lost), other errors, the resets the proxy made, tools removed
or servers that left `ready` (must be 0), and the time. Not a timed test: the numbers say what
happened, not how fast.

    python benchmarks/soak_blips.py [--quick] [--era modern|legacy]
"""

from __future__ import annotations

import collections
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common

from mcp_sync import MCPHub, ToolCallMayHaveRunError
from tests.fault_proxy import Fault, FaultProxy
from tests.support import EventLog, HttpServer, http_config

THREADS = 4
RESET_EVERY = 25
NON_IDEMPOTENT_EVERY = 5
CALL_TIMEOUT = 30.0


def main() -> None:
    args = _common.parse_args(
        __doc__.splitlines()[0],
        lambda parser: parser.add_argument("--era", choices=["modern", "legacy"], default="modern"),
    )
    _common.print_header(
        f"soak: network blips (every {RESET_EVERY}th request reset, {args.era} era)", args.quick
    )
    _common.quiet_logs()
    read_only_calls = 100 if args.quick else 600
    per_thread = read_only_calls // THREADS
    results = _common.Results()
    with tempfile.TemporaryDirectory() as folder:
        events = EventLog(Path(folder) / "events.jsonl")
        with (
            HttpServer("--era", args.era, "--record-calls", events=events) as server,
            FaultProxy(server.port) as proxy,
        ):
            hub = MCPHub([http_config("srv", proxy.url(server.url))])
            hub.start()
            changes: list[str] = []
            hub.on_tool_removed(lambda tool: changes.append(f"removed {tool.name}"))
            hub.on_server_state(lambda name, state, error: changes.append(f"{name} {state}"))
            proxy.add(Fault(every=RESET_EVERY, times=None, response_bytes=0))
            outcomes: collections.Counter[str] = collections.Counter()
            errors: list[str] = []
            lock = threading.Lock()

            def worker(index: int) -> None:
                for i in range(per_thread):
                    call("echo", {"text": f"t{index}-{i}"})
                    if i % NON_IDEMPOTENT_EVERY == 0:
                        call("sleep", {"seconds": 0, "tag": f"t{index}-{i}"})

            def call(tool: str, arguments: dict[str, Any]) -> None:
                try:
                    hub.call_tool(f"mcp__srv__{tool}", arguments, timeout=CALL_TIMEOUT)
                    outcome = "ok"
                except ToolCallMayHaveRunError:
                    outcome = "may-have-run"
                except Exception as exc:
                    outcome = "error"
                    with lock:
                        errors.append(f"{tool}: {type(exc).__name__}: {exc}")
                with lock:
                    outcomes[f"{tool} {outcome}"] += 1

            started = time.perf_counter()
            threads = [threading.Thread(target=worker, args=(n,), name=f"soak-{n}") for n in range(THREADS)]
            for thread in threads:
                thread.start()
            _common.join_all(threads, timeout=600)
            elapsed = time.perf_counter() - started
            state = hub.servers["srv"].state
            changed = list(changes)  # closing the hub removes the tools: not a blip's doing
            hub.close()
            requests, resets = proxy.requests, proxy.resets
        called = collections.Counter(
            (
                event["tool"],
                (event.get("arguments") or {}).get("tag") or (event.get("arguments") or {}).get("text"),
            )
            for event in events.find("called")
        )
    echo_calls = sum(count for key, count in outcomes.items() if key.startswith("echo"))
    echo_failed = echo_calls - outcomes["echo ok"]
    sleep_calls = sum(count for key, count in outcomes.items() if key.startswith("sleep"))
    twice = sum(1 for (tool, _tag), count in called.items() if tool == "sleep" and count > 1)
    echo_replayed = sum(count - 1 for (tool, _text), count in called.items() if tool == "echo" and count > 1)
    _common.note(f"{echo_calls} read-only calls, {sleep_calls} non-idempotent calls from {THREADS} threads")
    _common.note(f"{requests} HTTP requests through the proxy, {resets} connections reset in {elapsed:.1f} s")
    _common.note(f"read-only calls the server ran twice (sent again after a reset): {echo_replayed}")
    _common.note(f"outcomes: {dict(sorted(outcomes.items()))}")
    _common.note(f"server state at the end: {state}; tool removals and state changes: {changed or 'none'}")
    for error in errors[:10]:
        _common.note(f"error: {error}")
    results.add(
        "read-only calls that failed for their caller", str(echo_failed), target="0", met=echo_failed == 0
    )
    results.add("non-idempotent calls the server ran twice", str(twice), target="0", met=twice == 0)
    results.add("non-idempotent calls answered ToolCallMayHaveRunError", str(outcomes["sleep may-have-run"]))
    results.add("other errors", str(len(errors)), target="0", met=not errors)
    results.add("connections reset by the proxy", str(resets))
    results.add("tools removed or server state changes", str(len(changed)), target="0", met=not changed)
    results.add("time", f"{elapsed:.1f} s")
    results.print()


if __name__ == "__main__":
    main()
