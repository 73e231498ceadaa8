"""Many threads, one server: 64 threads calling `echo` in a loop on one hub, vs 64 asyncio tasks.

The mcp_sync side: 64 threads, released together, each makes the same fixed number of blocking
`hub.call_tool("mcp__bench__echo", ...)` calls one after the other, all over the one session of
one stdio fixture server. Throughput is all calls / the batch's wall time (from the release to the
last thread done).

The baseline, in alternating rounds: an async program with a raw `mcp.Client(cache=None)` (its
own fixture process, started the same way) on its own loop, 64 asyncio tasks each awaiting
`client.call_tool("echo", ...)` the same number of times. Target: raw throughput / mcp_sync
throughput ≤ 1.1.

Also printed: this process's CPU per call (all threads; median over rounds), the per-call latency
each thread / task saw (median and p99), and the CPU the fixture server used: the one
single-threaded server process is a shared bottleneck, and on a 2-core machine the client and
the server compete for the same cores.

    python benchmarks/bench_threads.py [--quick]
"""

from __future__ import annotations

import _common as c

WORKERS = 64
TARGET = 1.1  # raw throughput / mcp_sync throughput
CALL_TIMEOUT = 60.0


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    rounds, calls, warmup = (1, 3, 0) if args.quick else (12, 20, 1)
    n_calls = WORKERS * calls
    c.print_header(
        f"many threads, one server: {WORKERS} threads x {calls} echo calls on one hub vs "
        f"{WORKERS} asyncio tasks on a raw mcp.Client",
        args.quick,
    )

    from mcp_sync import MCPHub

    load = c.LoadMeter()
    hub = raw = None
    latencies: dict[str, list[list[float]]] = {"hub": [], "raw": []}
    # per round: (CPU of this process, CPU of that side's server process, wall)
    cpu: dict[str, list[tuple[float, float, float]]] = {"hub": [], "raw": []}
    try:
        hub = MCPHub([c.fixture_config("bench")]).start()
        hub_server = set(c.descendant_pids())
        raw = c.RawSession(c.fixture_params(), cache=None).open()
        raw_server = set(c.descendant_pids()) - hub_server
        assert hub.servers["bench"].state == "ready", hub.servers["bench"]
        raw.run(raw.client.list_tools())  # listed, as the hub's session has
        arguments = {"text": "x"}

        def hub_round() -> float:
            def call() -> object:
                return hub.call_tool("mcp__bench__echo", arguments, timeout=CALL_TIMEOUT)

            wall, seen = c.thread_batch(WORKERS, calls, call, 300)
            latencies["hub"].append(seen)
            return wall

        async def raw_load() -> float:
            wall, seen = await c.task_batch(
                WORKERS, calls, lambda: raw.client.call_tool("echo", arguments), 300
            )
            latencies["raw"].append(seen)
            return wall

        hub_side = c.Side("hub", c.with_cpu(cpu["hub"], hub_server, hub_round))
        raw_side = c.Side("raw", c.with_cpu(cpu["raw"], raw_server, lambda: raw.run(raw_load())))
        c.note(
            f"{rounds} rounds per side of {WORKERS} x {calls} = {n_calls} calls, "
            f"alternating (+{warmup} warm-up)"
        )
        c.alternate([hub_side, raw_side], rounds, warmup=warmup, progress="threads")
    finally:
        if hub is not None:
            hub.close()
        if raw is not None:
            raw.close()

    # throughput per round, then the median over rounds
    hub_tput = c.median([n_calls / wall for wall in hub_side.samples])
    raw_tput = c.median([n_calls / wall for wall in raw_side.samples])
    stats: dict[str, tuple[float, float, float]] = {}
    for name, label in (("hub", "mcp_sync"), ("raw", "raw     ")):
        side = hub_side if name == "hub" else raw_side
        seen = [v for batch in latencies[name][warmup:] for v in batch]
        rows = cpu[name][warmup:]
        own = [r[0] / n_calls for r in rows]
        server = [r[1] / n_calls for r in rows]
        busy = c.median([r[1] / r[2] for r in rows])
        stats[name] = (c.median(own), c.percentile(seen, 50), c.percentile(seen, 99))
        c.note(f"{label} wall per batch: {c.summary(side.samples, 1e3, ' ms')}")
        c.note(
            f"{label} throughput per round: {c.summary([n_calls / w for w in side.samples], 1.0, ' calls/s')}"
        )
        c.note(f"{label} per-call latency: {c.summary(seen, 1e3, ' ms')}")
        c.note(
            f"{label} CPU per call, median of rounds: client {c.median(own) * 1e6:.0f} µs, "
            f"server {c.median(server) * 1e6:.0f} µs; the single-threaded server was busy {busy:.0%} "
            "of the batch's wall time"
        )
    per_round = sorted(c.ratio(h, r) for h, r in zip(hub_side.samples, raw_side.samples, strict=True))
    c.note(
        "raw/mcp_sync throughput ratio per round (= mcp_sync/raw wall): "
        f"min {per_round[0]:.3f} p50 {c.median(per_round):.3f} max {per_round[-1]:.3f}"
    )
    c.note(load.report())

    # Each round is compared with the other side's round beside it (paired), and the median taken of
    # those ratios: drift of the machine between rounds cancels out.
    ratio = c.median(per_round)
    results = c.Results()
    results.add(
        f"{WORKERS} threads x {calls} echo calls, one server: throughput (median of "
        f"{len(hub_side.samples)}; ratio: median of per-round ratios)",
        f"{hub_tput:.0f} calls/s",
        f"{raw_tput:.0f} calls/s ({WORKERS} tasks, raw async Client)",
        c.x(ratio) + " raw/mcp_sync",
        f"≤ {TARGET}",
        ratio <= TARGET,
    )
    results.add(
        "client CPU per call (this process, median of rounds)",
        c.us(stats["hub"][0]),
        c.us(stats["raw"][0]),
        c.x(c.ratio(stats["hub"][0], stats["raw"][0])),
        "-",
    )
    (_, hub_p50, hub_p99), (_, raw_p50, raw_p99) = stats["hub"], stats["raw"]
    results.add(
        "per-call latency seen by the threads / tasks, p50 / p99",
        f"{c.ms(hub_p50)} / {c.ms(hub_p99)}",
        f"{c.ms(raw_p50)} / {c.ms(raw_p99)}",
        f"{c.x(c.ratio(hub_p50, raw_p50))} / {c.x(c.ratio(hub_p99, raw_p99))}",
        "-",
    )
    results.print()


if __name__ == "__main__":
    main()
