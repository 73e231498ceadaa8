"""Concurrency: 32 threads x 10 calls of `sleep(0.05)` on one server through `MCPHub.call_tool`.

Each thread makes its 10 calls one after the other; all 32 threads run at once over the one
session of one stdio fixture server. If calls are multiplexed (not serialised), the whole batch
takes about 10 x 0.05 s = 0.5 s: that is the ideal. Target: at most 1.3 x 0.5 s.

Baseline, in alternating rounds: the same load from an async program, 32 tasks x 10 sequential
`await client.call_tool("sleep", ...)` on a raw `mcp.Client` (its own fixture process), which
shows what the server and the SDK themselves cost at this concurrency. The CPU time of the
client process and of the (single-threaded) server process per batch is printed too: the
share of the batch the server spent busy says how much of the excess over 0.5 s is the server
queueing requests rather than the client.

    python benchmarks/bench_concurrency.py [--quick]
"""

from __future__ import annotations

import _common as c

THREADS = 32
CALLS = 10
SLEEP = 0.05
IDEAL = CALLS * SLEEP
TARGET = 1.3 * IDEAL


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    rounds = 2 if args.quick else 12
    c.print_header(
        f"concurrency: {THREADS} threads x {CALLS} calls of sleep({SLEEP}) on one server (ideal {IDEAL} s)",
        args.quick,
    )

    from mcp_sync import MCPHub

    load = c.LoadMeter()
    hub = MCPHub([c.fixture_config("bench")]).start()
    hub_server = set(c.descendant_pids())
    raw = c.RawSession(c.fixture_params(), cache=None).open()
    raw_server = set(c.descendant_pids()) - hub_server
    hub_latencies: list[list[float]] = []  # per round; the first is the warm-up round
    raw_latencies: list[list[float]] = []
    try:
        assert hub.servers["bench"].state == "ready", hub.servers["bench"]
        raw.run(raw.client.list_tools())
        arguments = {"seconds": SLEEP}

        def hub_round() -> float:
            wall, latencies = c.thread_batch(
                THREADS, CALLS, lambda: hub.call_tool("mcp__bench__sleep", arguments, timeout=30), 120
            )
            hub_latencies.append(latencies)
            return wall

        async def raw_load() -> float:
            wall, latencies = await c.task_batch(
                THREADS, CALLS, lambda: raw.client.call_tool("sleep", arguments), 120
            )
            raw_latencies.append(latencies)
            return wall

        # Per round: (CPU of this process, CPU of that side's server process, wall).
        cpu: dict[str, list[tuple[float, float, float]]] = {"hub": [], "raw": []}

        hub_side = c.Side("hub", c.with_cpu(cpu["hub"], hub_server, hub_round))
        raw_side = c.Side("raw", c.with_cpu(cpu["raw"], raw_server, lambda: raw.run(raw_load())))
        c.note(f"{rounds} rounds per side, alternating (+1 warm-up)")
        c.alternate([hub_side, raw_side], rounds, warmup=1, progress="concurrency")
    finally:
        hub.close()
        raw.close()

    hub_med = c.median(hub_side.samples)
    raw_med = c.median(raw_side.samples)
    c.note(f"hub wall per batch: {c.summary(hub_side.samples, 1e3, ' ms')}")
    c.note(f"raw wall per batch: {c.summary(raw_side.samples, 1e3, ' ms')}")
    hub_calls = [v for batch in hub_latencies[1:] for v in batch]
    raw_calls = [v for batch in raw_latencies[1:] for v in batch]
    c.note(f"hub per-call latency: {c.summary(hub_calls, 1e3, ' ms')}")
    c.note(f"raw per-call latency: {c.summary(raw_calls, 1e3, ' ms')}")
    n_calls = THREADS * CALLS
    for name in ("hub", "raw"):
        rows = cpu[name][1:]  # the first round was the warm-up
        own = c.median([r[0] for r in rows])
        server = c.median([r[1] for r in rows])
        busy = c.median([r[1] / r[2] for r in rows])
        c.note(
            f"{name} CPU per batch: client process {own:.2f} s ({own / n_calls * 1e6:.0f} µs/call), "
            f"server process {server:.2f} s ({server / n_calls * 1e6:.0f} µs/call) - "
            f"the single-threaded server was busy {busy:.0%} of the batch's wall time"
        )
    c.note(load.report())

    results = c.Results()
    results.add(
        f"{THREADS} threads x {CALLS} sleep({SLEEP}) calls, wall (median of {len(hub_side.samples)})",
        c.sec(hub_med),
        f"{IDEAL:.3f} s ideal; {raw_med:.3f} s raw async Client",
        c.x(c.ratio(hub_med, IDEAL)) + " of ideal",
        f"≤ {TARGET:.2f} s (1.3x ideal)",
        hub_med <= TARGET,
    )
    results.add(
        "same load, mcp_sync vs raw async Client",
        c.sec(hub_med),
        c.sec(raw_med),
        c.x(c.ratio(hub_med, raw_med)),
        "-",
    )
    results.print()


if __name__ == "__main__":
    main()
