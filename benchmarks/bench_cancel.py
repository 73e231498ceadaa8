"""Cancellation latency: `cancel.set()` -> `call_tool` raises, and -> the server records the cancellation.

One thread blocks in `hub.call_tool("...sleep", {"seconds": 30, "tag": ...}, cancel=event)`.
Once the fixture server has written the call's "started" event, the benchmark waits a random
0-5 ms (so the set does not always fall at the same point of any polling period), notes the
time and sets the event. Two latencies per trial:

- caller: `event.set()` -> `ToolCallCancelledError` raised in the calling thread
  (`time.perf_counter()` in both threads);
- server: `event.set()` -> the server's `sleep` handler is cancelled and writes its "cancelled"
  event. The fixture stamps every event line with its own `time.time()`; the benchmark stamps
  the set with `time.time()` too (same machine, same clock), so this is measured from the
  server's own timestamp, not from when the benchmark happens to see the line.

Baseline, in alternating rounds: an async program on a raw `mcp.Client` (its own fixture
process) doing the same with `task.cancel()` on the task awaiting `call_tool`.
Targets: p99 at most 20 ms (caller) and at most 100 ms (server).

    python benchmarks/bench_cancel.py [--quick]
"""

from __future__ import annotations

import asyncio
import queue
import random
import tempfile
import threading
import time
from pathlib import Path

import _common as c

TARGET_CALLER_P99 = 0.020
TARGET_SERVER_P99 = 0.100
JITTER = 0.005


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    rounds, per_round = (2, 5) if args.quick else (20, 12)
    c.print_header("cancellation latency: cancel.set() -> call_tool raises / server records it", args.quick)

    from mcp_sync import MCPHub, ToolCallCancelledError

    load = c.LoadMeter()
    workdir = Path(tempfile.mkdtemp(prefix="mcp-sync-bench-"))
    hub_events = c.EventFile(workdir / "hub.jsonl")
    raw_events = c.EventFile(workdir / "raw.jsonl")
    hub = MCPHub([c.fixture_config("bench", events=hub_events)]).start()
    raw = c.RawSession(c.fixture_params(events=raw_events), cache=None).open()
    rng = random.Random(1234)
    counter = [0]
    seen_lag: list[float] = []  # server's timestamp -> the benchmark saw the line (polling)

    jobs: queue.SimpleQueue[tuple[str, threading.Event] | None] = queue.SimpleQueue()
    outcomes: queue.SimpleQueue[tuple[str, float, BaseException | None]] = queue.SimpleQueue()

    def caller() -> None:
        while (job := jobs.get()) is not None:
            tag, cancel = job
            error: BaseException | None = None
            try:
                hub.call_tool("mcp__bench__sleep", {"seconds": 30, "tag": tag}, timeout=60, cancel=cancel)
                error = RuntimeError("the call was not cancelled")
            except ToolCallCancelledError:
                pass
            except BaseException as exc:
                error = exc
            outcomes.put((tag, time.perf_counter(), error))

    worker = threading.Thread(target=caller, name="caller", daemon=True)
    worker.start()

    def server_latency(events: c.EventFile, tag: str, set_wall: float) -> float:
        event, seen = events.wait_for(c.match("cancelled", tag=tag), timeout=10)
        seen_lag.append(seen - float(event["time"]))
        return float(event["time"]) - set_wall

    def hub_round() -> list[tuple[float, float]]:
        out = []
        for _ in range(per_round):
            counter[0] += 1
            tag = f"h{counter[0]}"
            cancel = threading.Event()
            jobs.put((tag, cancel))
            hub_events.wait_for(c.match("started", tag=tag))
            time.sleep(rng.uniform(0, JITTER))
            set_wall = time.time()
            t_set = time.perf_counter()
            cancel.set()
            done_tag, t_raised, error = outcomes.get(timeout=10)
            if error is not None or done_tag != tag:
                raise RuntimeError(f"hub trial {tag}: {error!r}")
            out.append((t_raised - t_set, server_latency(hub_events, tag, set_wall)))
        return out

    async def raw_trials() -> list[tuple[float, float]]:
        out = []
        for _ in range(per_round):
            counter[0] += 1
            tag = f"r{counter[0]}"
            task = asyncio.ensure_future(raw.client.call_tool("sleep", {"seconds": 30, "tag": tag}))
            while not raw_events.seen(c.match("started", tag=tag)):
                await asyncio.sleep(0.0005)
            await asyncio.sleep(rng.uniform(0, JITTER))
            set_wall = time.time()
            t_set = time.perf_counter()
            task.cancel()
            try:
                await task
                raise RuntimeError("the raw call was not cancelled")
            except asyncio.CancelledError:
                t_raised = time.perf_counter()
            # Let the loop run (the transport sends the cancellation) while we watch the file.
            while not raw_events.seen(c.match("cancelled", tag=tag)):
                await asyncio.sleep(0.0005)
            out.append((t_raised - t_set, server_latency(raw_events, tag, set_wall)))
        return out

    caller_lat: dict[str, list[float]] = {"hub": [], "raw": []}
    server_lat: dict[str, list[float]] = {"hub": [], "raw": []}

    def record(name: str, pairs: list[tuple[float, float]]) -> list[float]:
        caller_lat[name].extend(a for a, _ in pairs)
        server_lat[name].extend(b for _, b in pairs)
        return [a for a, _ in pairs]

    try:
        assert hub.servers["bench"].state == "ready", hub.servers["bench"]
        raw.run(raw.client.list_tools())
        hub_side = c.Side("hub", lambda: record("hub", hub_round()))
        raw_side = c.Side("raw", lambda: record("raw", raw.run(raw_trials())))
        c.note(f"{rounds} rounds x {per_round} trials per side, alternating (+1 warm-up round)")
        c.alternate([hub_side, raw_side], rounds, warmup=1, progress="cancel")
    finally:
        jobs.put(None)
        worker.join(5)
        hub.close()
        raw.close()

    warm = per_round  # the warm-up round's trials are left out
    hub_caller, raw_caller = caller_lat["hub"][warm:], caller_lat["raw"][warm:]
    hub_server, raw_server = server_lat["hub"][warm:], server_lat["raw"][warm:]
    c.note(f"hub caller: {c.summary(hub_caller, 1e3, ' ms')}")
    c.note(f"raw caller: {c.summary(raw_caller, 1e3, ' ms')}")
    c.note(f"hub server: {c.summary(hub_server, 1e3, ' ms')}")
    c.note(f"raw server: {c.summary(raw_server, 1e3, ' ms')}")
    c.note(
        "the benchmark saw each 'cancelled' line "
        f"{c.median(seen_lag) * 1e3:.1f} ms (median) after its server timestamp (polling every 0.5 ms)"
    )
    c.note(load.report())
    for path in workdir.iterdir():
        path.unlink()
    workdir.rmdir()

    def p(values: list[float], q: float) -> float:
        return c.percentile(values, q)

    results = c.Results()
    for label, hub_v, raw_v, target in (
        ("cancel.set() → call_tool raises", hub_caller, raw_caller, TARGET_CALLER_P99),
        ("cancel.set() → server records cancellation", hub_server, raw_server, TARGET_SERVER_P99),
    ):
        for q in (50, 99):
            results.add(
                f"{label}, p{q}",
                c.ms(p(hub_v, q)),
                c.ms(p(raw_v, q)) + " (raw Client, task.cancel())",
                c.x(c.ratio(p(hub_v, q), p(raw_v, q)), 2),
                f"p99 ≤ {target * 1e3:.0f} ms" if q == 99 else "-",
                p(hub_v, q) <= target if q == 99 else None,
            )
    results.print()


if __name__ == "__main__":
    main()
