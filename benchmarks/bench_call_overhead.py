"""Per-call overhead: blocking `MCPHub.call_tool` vs the raw async `mcp.Client.call_tool`.

Both sides call the fixture server's `echo` tool over stdio (each side its own fixture process,
started the same way), the same number of calls per round, in alternating rounds. The raw side
is an async program: a `mcp.Client(cache=None)` on its own asyncio loop, timed from inside that
loop. The hub side is a plain thread calling `hub.call_tool`, whose session lives on the
server's loop thread.

Also measured, beside them, the floor of the thread-per-server design:

- the bare round trip caller thread -> asyncio loop on another thread -> caller thread, two
  ways: `loop.call_soon_threadsafe` + `concurrent.futures.Future` (the path `mcp_sync` takes)
  and `asyncio.run_coroutine_threadsafe` of a trivial coroutine;
- "SDK behind a loop thread": the same raw `mcp.Client`, but on a loop thread of its own, each
  call handed over with `asyncio.run_coroutine_threadsafe(...).result()` - the least any
  thread-per-server facade can do. `mcp_sync` minus this is what `mcp_sync` itself adds.

Besides wall time, each side's CPU time in this process (all threads) per call is printed: it does
not depend on how fast the server answers, so it shows the client-side cost even when the
machine is busy.

Last, without any server I/O (a stable number on a noisy machine): the hub's own per-call cost.
A second hub connection has its session's client swapped for an in-process stub whose
`call_tool` returns a fixed result at once (this reaches into a private attribute,
`ServerConnection._session.client`, and is skipped with a note if that is gone); compared, in
alternating rounds, with `run_coroutine_threadsafe` of the same stub call on a loop thread and
with the bare round trip. Here the loop thread never goes idle between calls for long, so the
thread hop costs what it costs on a hot cache.

    python benchmarks/bench_call_overhead.py [--quick]
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
import time
from typing import Any

import _common as c

FLOOR_TARGET_RATIO = 1.02  # call_tool vs the raw Client behind a loop thread (the design's floor)
FLOOR_TARGET_CPU_US = 25.0  # client CPU per call above that floor


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    rounds, calls = (4, 20) if args.quick else (50, 100)
    c.print_header(
        "per-call overhead: MCPHub.call_tool vs raw async mcp.Client.call_tool (stdio, echo)", args.quick
    )

    from mcp_sync import MCPHub

    load = c.LoadMeter()
    hub = MCPHub([c.fixture_config("bench"), c.fixture_config("stub")]).start()
    raw = c.RawSession(c.fixture_params(), cache=None).open()
    # The same raw client, moved onto a loop thread of its own once connected.
    threaded = c.RawSession(c.fixture_params(), cache=None).open()
    floor_loop = asyncio.new_event_loop()
    loops = [floor_loop, threaded.loop]
    loop_threads = [
        threading.Thread(target=loop.run_forever, name=f"loop-{i}", daemon=True)
        for i, loop in enumerate(loops)
    ]
    cpu: dict[str, list[float]] = {}  # per side: CPU seconds per call, one value per round
    try:
        assert hub.servers["bench"].state == "ready", hub.servers["bench"]
        raw.run(raw.client.list_tools())  # each raw session has listed its tools, as the hub has
        threaded.run(threaded.client.list_tools())
        for thread in loop_threads:
            thread.start()
        arguments = {"text": "x"}
        call_tool = hub.call_tool
        clock = time.perf_counter_ns

        timed = functools.partial(c.cpu_recorded, cpu)

        def hub_calls() -> list[int]:
            out = []
            for _ in range(calls):
                t0 = clock()
                call_tool("mcp__bench__echo", arguments)
                out.append(clock() - t0)
            return out

        async def raw_calls() -> list[int]:
            client = raw.client
            out = []
            for _ in range(calls):
                t0 = clock()
                await client.call_tool("echo", arguments)
                out.append(clock() - t0)
            return out

        def threaded_calls() -> list[int]:
            client, loop = threaded.client, threaded.loop
            out = []
            for _ in range(calls):
                t0 = clock()
                asyncio.run_coroutine_threadsafe(client.call_tool("echo", arguments), loop).result()
                out.append(clock() - t0)
            return out

        def set_none(future: concurrent.futures.Future[None]) -> None:
            future.set_result(None)

        def floor_calls() -> list[int]:
            out = []
            call_soon = floor_loop.call_soon_threadsafe
            wait = concurrent.futures.wait
            for _ in range(calls):
                t0 = clock()
                future: concurrent.futures.Future[None] = concurrent.futures.Future()
                call_soon(set_none, future)
                wait([future])
                out.append(clock() - t0)
            return out

        async def trivial() -> None:
            return None

        def floor_coro_calls() -> list[int]:
            out = []
            for _ in range(calls):
                t0 = clock()
                asyncio.run_coroutine_threadsafe(trivial(), floor_loop).result()
                out.append(clock() - t0)
            return out

        hub_side = c.Side("hub", timed("hub", hub_calls))
        raw_side = c.Side("raw", timed("raw", lambda: raw.run(raw_calls())))
        threaded_side = c.Side("threaded", timed("threaded", threaded_calls))
        floor_side = c.Side("floor", timed("floor", floor_calls))
        floor_coro_side = c.Side("floor-coro", timed("floor-coro", floor_coro_calls))
        c.note(f"{rounds} rounds x {calls} calls per side, alternating (plus 2 warm-up rounds)")
        c.alternate(
            [hub_side, raw_side, threaded_side, floor_side, floor_coro_side],
            rounds,
            warmup=2,
            progress="overhead",
        )

        hub_med = c.median(hub_side.samples)
        raw_med = c.median(raw_side.samples)
        threaded_med = c.median(threaded_side.samples)
        floor_med = c.median(floor_side.samples)
        floor_coro_med = c.median(floor_coro_side.samples)
        r = c.ratio(hub_med, raw_med)
        per_round = sorted(
            c.ratio(c.median(h), c.median(w)) for h, w in zip(hub_side.rounds, raw_side.rounds, strict=True)
        )

        def cpu_us(name: str) -> float:
            """Median over the measured rounds (not the warm-up) of the round's CPU per call: one round
            with a collection or a preemption in it does not decide the figure."""
            return c.median(cpu[name][2:]) * 1e6

        c.note(f"hub      per call: {c.summary(hub_side.samples, 1e6, ' µs')}")
        c.note(f"raw      per call: {c.summary(raw_side.samples, 1e6, ' µs')}")
        c.note(f"threaded per call: {c.summary(threaded_side.samples, 1e6, ' µs')}")
        c.note(f"floor call_soon_threadsafe+Future: {c.summary(floor_side.samples, 1e6, ' µs')}")
        c.note(f"floor run_coroutine_threadsafe:    {c.summary(floor_coro_side.samples, 1e6, ' µs')}")
        c.note(
            "hub/raw ratio of per-round medians: "
            f"min {per_round[0]:.3f} p50 {c.median(per_round):.3f} max {per_round[-1]:.3f}"
        )
        c.note(
            "CPU of this process per call (all threads, median of rounds): "
            f"hub {cpu_us('hub'):.0f} µs, SDK behind a loop thread {cpu_us('threaded'):.0f} µs, "
            f"raw {cpu_us('raw'):.0f} µs"
        )
        per_round_floor = sorted(
            c.ratio(c.median(h), c.median(t))
            for h, t in zip(hub_side.rounds, threaded_side.rounds, strict=True)
        )
        c.note(
            "hub/SDK-behind-a-loop-thread ratio of per-round medians: "
            f"min {per_round_floor[0]:.3f} p50 {c.median(per_round_floor):.3f} max {per_round_floor[-1]:.3f}"
        )
        c.note(load.report())

        results = c.Results()
        results.add(
            "call_tool median per call (stdio echo)",
            c.us(hub_med),
            c.us(raw_med) + " (raw async Client)",
            c.x(r),
            "-",
        )
        results.add(
            "µs added per call (median hub - median raw)",
            f"{(hub_med - raw_med) * 1e6:.0f} µs",
            f"{floor_med * 1e6:.0f} µs (bare thread→loop→thread)",
            c.x(c.ratio(hub_med - raw_med, floor_med), 2),
            "-",
        )
        results.add(
            "design floor: bare thread→loop→thread round trip",
            f"{floor_med * 1e6:.0f} µs (call_soon_threadsafe + Future)",
            f"{floor_coro_med * 1e6:.0f} µs (run_coroutine_threadsafe)",
            "-",
            "-",
        )
        results.add(
            "design floor with the SDK: raw Client behind a loop thread",
            c.us(threaded_med),
            c.us(raw_med) + " (raw async Client)",
            c.x(c.ratio(threaded_med, raw_med)),
            "-",
        )
        # Against the floor, each round is compared with the floor's round beside it (paired), and
        # the median taken of those: drift of the machine between rounds cancels out.
        floor_ratio = c.median(per_round_floor)
        results.add(
            "call_tool vs SDK behind a loop thread (median of per-round ratios)",
            c.us(hub_med),
            c.us(threaded_med),
            c.x(floor_ratio),
            f"≤ {FLOOR_TARGET_RATIO}",
            floor_ratio <= FLOOR_TARGET_RATIO,
        )
        cpu_over_floor = c.median(
            [(h - t) * 1e6 for h, t in zip(cpu["hub"][2:], cpu["threaded"][2:], strict=True)]
        )
        results.add(
            "client CPU per call over the SDK behind a loop thread (median of per-round differences)",
            f"{cpu_us('hub'):.0f} µs",
            f"{cpu_us('threaded'):.0f} µs (behind a loop thread); {cpu_us('raw'):.0f} µs (raw)",
            f"{cpu_over_floor:+.0f} µs",
            f"≤ +{FLOOR_TARGET_CPU_US:.0f} µs",
            cpu_over_floor <= FLOOR_TARGET_CPU_US,
        )
        stub_rows(hub, rounds, results)
        results.print()
    finally:
        hub.close()
        raw.close()
        for loop in loops:
            loop.call_soon_threadsafe(loop.stop)
        c.join_all(loop_threads, 2.0)
        threaded.close()


def stub_rows(hub: Any, rounds: int, results: c.Results) -> None:
    """The hub's own cost per call with no server I/O: see the module docstring."""
    import mcp_types as types

    connection = hub.servers["stub"]
    session = getattr(connection, "_session", None)
    if getattr(session, "client", None) is None or connection.state != "ready":
        c.note("no-I/O comparison skipped: the connection has no session client to stand in for")
        return
    fixed = types.CallToolResult(content=[types.TextContent(type="text", text="x")])

    class StubClient:
        protocol_version = "2025-11-25"  # no tasks extension: the call goes straight to call_tool

        async def call_tool(self, name: str, arguments: Any = None, *args: Any, **kwargs: Any) -> Any:
            return fixed

    stub = StubClient()
    session.client = stub  # the session stays open underneath; nothing else uses it
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="stub-loop", daemon=True)
    thread.start()
    calls = 500
    clock = time.perf_counter_ns
    arguments = {"text": "x"}

    def hub_calls() -> list[float]:
        out = []
        for _ in range(calls):
            t0 = clock()
            hub.call_tool("mcp__stub__echo", arguments)
            out.append((clock() - t0) / 1e9)
        return out

    def rcts_calls() -> list[float]:
        out = []
        for _ in range(calls):
            t0 = clock()
            asyncio.run_coroutine_threadsafe(stub.call_tool("echo", arguments), loop).result()
            out.append((clock() - t0) / 1e9)
        return out

    def hop_calls() -> list[float]:
        out = []
        for _ in range(calls):
            t0 = clock()
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            loop.call_soon_threadsafe(future.set_result, None)
            concurrent.futures.wait([future])
            out.append((clock() - t0) / 1e9)
        return out

    try:
        sides = [c.Side("hub", hub_calls), c.Side("rcts", rcts_calls), c.Side("hop", hop_calls)]
        c.alternate(sides, max(4, rounds // 5), warmup=1)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(2.0)
    hub_med, rcts_med, hop_med = (c.median(side.samples) for side in sides)
    c.note(f"no I/O, hub.call_tool:               {c.summary(sides[0].samples, 1e6, ' µs')}")
    c.note(f"no I/O, run_coroutine_threadsafe:    {c.summary(sides[1].samples, 1e6, ' µs')}")
    c.note(f"no I/O, bare thread->loop->thread:   {c.summary(sides[2].samples, 1e6, ' µs')}")
    results.add(
        "no server I/O: call_tool on a stub client",
        c.us(hub_med),
        f"{c.us(rcts_med)} (run_coroutine_threadsafe of the stub); {c.us(hop_med)} (bare hop)",
        f"{(hub_med - rcts_med) * 1e6:+.0f} µs",
        "-",
    )


if __name__ == "__main__":
    main()
