"""Naive baseline: `asyncio.run()` of a fresh connect-and-call per call vs `mcp_sync` keeping the session.

What many synchronous scripts do today to call one MCP tool: wrap "start the server, connect,
call, disconnect" in `asyncio.run()` every time. Each call then pays for a process start, the
`mcp` handshake and the shutdown. `mcp_sync` pays those once and keeps the session.

Both sides call the fixture server's `echo` over stdio, in alternating rounds: one naive call,
then a batch of hub calls (the hub side is cheap, so it gets more calls per round; medians are
per call).

    python benchmarks/bench_naive.py [--quick]
"""

from __future__ import annotations

import asyncio
import time

import _common as c

EXPECTED_MIN_RATIO = 100.0  # "orders of magnitude"


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    rounds, hub_calls_per_round = (3, 10) if args.quick else (30, 20)
    c.print_header(
        "naive baseline: asyncio.run(connect + call) per call vs MCPHub keeping the session", args.quick
    )

    from mcp import Client

    from mcp_sync import MCPHub

    load = c.LoadMeter()
    params = c.fixture_params()
    arguments = {"text": "x"}
    connect_s: list[float] = []

    async def connect_and_call() -> None:
        t0 = time.perf_counter()
        async with Client(params, cache=None) as client:
            connect_s.append(time.perf_counter() - t0)
            await client.call_tool("echo", arguments)

    def naive_round() -> float:
        t0 = time.perf_counter()
        asyncio.run(connect_and_call())
        return time.perf_counter() - t0

    hub = MCPHub([c.fixture_config("bench")]).start()
    try:
        assert hub.servers["bench"].state == "ready", hub.servers["bench"]

        def hub_round() -> list[float]:
            out = []
            for _ in range(hub_calls_per_round):
                t0 = time.perf_counter()
                hub.call_tool("mcp__bench__echo", arguments)
                out.append(time.perf_counter() - t0)
            return out

        naive = c.Side("naive", naive_round)
        kept = c.Side("mcp_sync", hub_round)
        c.note(
            f"{rounds} rounds: 1 naive call and {hub_calls_per_round} hub calls each, "
            "alternating (+1 warm-up)"
        )
        c.alternate([naive, kept], rounds, warmup=1, progress="naive")
    finally:
        hub.close()

    naive_med = c.median(naive.samples)
    hub_med = c.median(kept.samples)
    r = c.ratio(naive_med, hub_med)
    c.note(f"naive per call:    {c.summary(naive.samples, 1e3, ' ms')}")
    c.note(f"  of which connect (spawn + handshake): p50 {c.median(connect_s[1:]) * 1e3:.1f} ms")
    c.note(f"mcp_sync per call: {c.summary(kept.samples, 1e6, ' µs')}")
    c.note(load.report())

    results = c.Results()
    results.add(
        "one call, session kept vs asyncio.run(connect+call) each time",
        c.us(hub_med),
        c.ms(naive_med) + " (naive)",
        f"{r:.0f}x faster",
        f"orders of magnitude (≥ {EXPECTED_MIN_RATIO:.0f}x)",
        r >= EXPECTED_MIN_RATIO,
    )
    results.print()


if __name__ == "__main__":
    main()
