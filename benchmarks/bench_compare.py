"""mcp_sync vs the sync wrapper people usually write: one shared asyncio loop thread + ClientSession.

The baseline is written here, in the benchmark, in the shape most hand-made sync facades over the
SDK take (`SharedLoopClient` below): ONE background asyncio event loop in a daemon thread, shared
by every server; per server, one owner task on that loop opens `stdio_client(params)` and a
`ClientSession` over its streams (entered and left in that task, as the SDK requires), runs
`initialize()` and `list_tools()`, and then waits to be told to close. Its blocking call is
`asyncio.run_coroutine_threadsafe(session.call_tool(name, args), loop).result(timeout)`.
Nothing more: no cancellation reaching the server on timeout, no reconnect, no tool registry.

Both sides use the same `mcp`, the same fixture server (`tests/servers/fixture_server.py`, one
process per side, started the same way) and run in this one process, in alternating rounds:

a. per call: wall time of a blocking `echo` call (many calls per round) and this process's CPU
   per call (median over rounds of each round's CPU / calls);
b. 32 threads x 10 sequential `sleep(seconds=0.05)` calls over one session: wall per batch
   (ideal 0.5 s);
c. first call after connect: each round a fresh connect (a new `MCPHub(...).start()`, a new
   wrapper on the shared loop), then the first `echo` call, then 15 more: the first call's wall
   time, and its ratio to the median of the 15 that follow in the same session (that side's own
   steady state, measured alongside); the same for this process's CPU; and the connect itself.
   `echo` has an output schema: the SDK compiles its validator on the session's first result.
   The rounds alternate which side connects first. By then this process has long imported what
   result validation needs (`jsonschema`), so this is the first call of a session, not of a
   process.

Protocol era: `ClientSession.initialize()` speaks a 2025 (handshake) protocol, while `mcp_sync`
(an `mcp.Client` in "auto" mode) gets 2026-07-28 from a server that offers it, and a 2026-07-28
call costs more on both ends (each request carries the client's identity and capabilities, which
the server checks). So the two compare on equal terms: (a), (b) and (c) run the fixture as a
2025-era server (`--era legacy`), where both sides speak 2025-11-25. (a) also compares on
2026-07-28: `mcp_sync` against the same shared-loop wrapper over `mcp.Client(params, cache=None)`,
both on the fixture's default era; and shows what the newer protocol itself costs (`mcp_sync` on
2026-07-28 against the `ClientSession` wrapper on 2025).

    python benchmarks/bench_compare.py [--quick]
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import _common as c

# (b)
THREADS = 32
CALLS = 10
SLEEP = 0.05
IDEAL = CALLS * SLEEP
# (c)
STEADY_AFTER_FIRST = 15
FIRST_CALL_TARGET = 2.0  # first call <= 2x the same session's steady state
TARGET = 1.00  # mcp_sync not slower than the shared-loop wrapper
LEGACY = ("--era", "legacy")  # the fixture as a 2025-era server: both sides speak 2025-11-25
CALL_TIMEOUT = 60.0  # both sides: every call bounded (mcp_sync's default tool_call_timeout_ms too)


# ---------------------------------------------------------------------------------------------------
# the baseline: a hand-written sync wrapper on one shared loop thread


class SharedLoop:
    """One asyncio loop running forever in a daemon thread, shared by every `SharedLoopClient`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="shared-loop", daemon=True)
        self.thread.start()

    def close(self, timeout: float = 5.0) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
        if not self.thread.is_alive():
            self.loop.close()


class SharedLoopClient:
    """A blocking client for one stdio server, its session living on the shared loop.

    `use_client=False` (the baseline): `stdio_client` + `ClientSession` + `initialize()`.
    `use_client=True` (the era control): `mcp.Client(params, cache=None)`, which negotiates the
    protocol the way `mcp_sync` does.
    """

    def __init__(self, params: Any, shared: SharedLoop, *, use_client: bool = False) -> None:
        self._params = params
        self._loop = shared.loop
        self._use_client = use_client
        self._ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._stop = asyncio.Event()
        self._owner: concurrent.futures.Future[None] | None = None
        self.session: Any = None
        self.tools: list[Any] = []
        self.protocol_version: str | None = None

    async def _own(self) -> None:
        try:
            if self._use_client:
                from mcp import Client

                async with Client(self._params, cache=None) as client:
                    self.tools = (await client.list_tools()).tools
                    self.protocol_version = client.protocol_version
                    self._ready.set_result(client)
                    await self._stop.wait()
            else:
                from mcp import ClientSession
                from mcp.client.stdio import stdio_client

                async with stdio_client(self._params) as (read, write), ClientSession(read, write) as session:
                    result = await session.initialize()
                    self.tools = (await session.list_tools()).tools
                    self.protocol_version = result.protocol_version
                    self._ready.set_result(session)
                    await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def connect(self, timeout: float = 60.0) -> SharedLoopClient:
        self._owner = asyncio.run_coroutine_threadsafe(self._own(), self._loop)
        done, _ = concurrent.futures.wait([self._ready], timeout)
        if not done:
            self._owner.cancel()
            raise TimeoutError(f"no session within {timeout} s")
        self.session = self._ready.result()
        return self

    def call_tool(self, name: str, arguments: dict[str, Any], timeout: float = CALL_TIMEOUT) -> Any:
        future = asyncio.run_coroutine_threadsafe(self.session.call_tool(name, arguments), self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def close(self, timeout: float = 10.0) -> None:
        if self._owner is None:
            return
        self._loop.call_soon_threadsafe(self._stop.set)
        done, _ = concurrent.futures.wait([self._owner], timeout)
        if not done:
            self._owner.cancel()
            c.note(f"wrapper close: not closed within {timeout} s, owner cancelled")
        elif (exc := self._owner.exception()) is not None:
            c.note(f"wrapper close: {type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------------------------------------


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    quick = args.quick
    a_rounds, a_calls = (3, 10) if quick else (24, 50)
    b_rounds = 1 if quick else 10
    c_rounds = 1 if quick else 6
    warmup = 0 if quick else 1  # (b) and (c): a smoke run skips their warm-up rounds
    c.print_header(
        "mcp_sync vs a shared-loop sync wrapper (one asyncio loop thread + ClientSession), stdio fixture, "
        "same protocol on both sides",
        quick,
    )

    from mcp_sync import MCPHub

    load = c.LoadMeter()
    results = c.Results()
    shared = SharedLoop()
    hub = modern_hub = None
    wrapper = control = None
    try:
        hub = MCPHub([c.fixture_config("bench", *LEGACY)]).start()
        hub_server = set(c.descendant_pids())
        wrapper = SharedLoopClient(c.fixture_params(*LEGACY), shared).connect()
        wrapper_server = set(c.descendant_pids()) - hub_server
        modern_hub = MCPHub([c.fixture_config("modern")]).start()
        control = SharedLoopClient(c.fixture_params(), shared, use_client=True).connect()
        for name, each in (("bench", hub), ("modern", modern_hub)):
            assert each.servers[name].state == "ready", each.servers[name]
            assert each.call_tool(f"mcp__{name}__echo", {"text": "ok"}).text == "ok"
        assert wrapper.call_tool("echo", {"text": "ok"}).content[0].text == "ok"
        assert control.call_tool("echo", {"text": "ok"}).content[0].text == "ok"
        legacy_version = hub.servers["bench"].protocol_version
        assert legacy_version == wrapper.protocol_version, (legacy_version, wrapper.protocol_version)
        c.note(
            f"protocol: mcp_sync {legacy_version} and wrapper (ClientSession) {wrapper.protocol_version} "
            f"on the 2025-era fixture; mcp_sync {modern_hub.servers['modern'].protocol_version} and "
            f"wrapper over mcp.Client {control.protocol_version} on the default one; "
            f"tools listed: {len(hub.tools())} / {len(wrapper.tools)} / {len(control.tools)}"
        )
        per_call(hub, wrapper, modern_hub, control, a_rounds, a_calls, results)
        concurrency(hub, wrapper, hub_server, wrapper_server, b_rounds, warmup, results)
        first_call(MCPHub, shared, c_rounds, warmup, results)
    finally:
        for client in (control, wrapper):
            if client is not None:
                client.close()
        for each in (hub, modern_hub):
            if each is not None:
                each.close()
        shared.close()
    c.note(load.report())
    results.print()


def per_call(
    hub: Any,
    wrapper: SharedLoopClient,
    modern_hub: Any,
    control: SharedLoopClient,
    rounds: int,
    calls: int,
    results: c.Results,
) -> None:
    """(a) wall and CPU per blocking echo call, on 2025-11-25 and on 2026-07-28."""
    arguments = {"text": "x"}
    clock = time.perf_counter_ns
    names = ("hub", "wrapper", "modern", "control")
    cpu: dict[str, list[float]] = {name: [] for name in names}

    def timed(name: str, call: Callable[[], Any]) -> Callable[[], list[float]]:
        def run() -> list[float]:
            out = []
            cpu0 = time.process_time()
            for _ in range(calls):
                t0 = clock()
                call()
                out.append((clock() - t0) / 1e9)
            cpu[name].append((time.process_time() - cpu0) / calls)
            return out

        return run

    sides = {
        "hub": c.Side("hub", timed("hub", lambda: hub.call_tool("mcp__bench__echo", arguments))),
        "wrapper": c.Side("wrapper", timed("wrapper", lambda: wrapper.call_tool("echo", arguments))),
        "modern": c.Side(
            "modern", timed("modern", lambda: modern_hub.call_tool("mcp__modern__echo", arguments))
        ),
        "control": c.Side("control", timed("control", lambda: control.call_tool("echo", arguments))),
    }
    c.note(f"(a) {rounds} rounds x {calls} echo calls per side, alternating (+1 warm-up round)")
    c.alternate(list(sides.values()), rounds, warmup=1, progress="(a) per call")
    for values in cpu.values():
        del values[0]  # the warm-up round

    wall = {name: c.median(side.samples) for name, side in sides.items()}
    cpu_med = {name: c.median(cpu[name]) for name in names}
    labels = {
        "hub": "mcp_sync, 2025      ",
        "wrapper": "wrapper (ClientSession), 2025",
        "modern": "mcp_sync, 2026      ",
        "control": "wrapper (mcp.Client), 2026",
    }
    for name, label in labels.items():
        c.note(
            f"(a) {label} per call: {c.summary(sides[name].samples, 1e6, ' µs')}; "
            f"CPU per call, per round: {c.summary(cpu[name], 1e6, ' µs')}"
        )
    for ours, theirs, era in (("hub", "wrapper", "2025-11-25"), ("modern", "control", "2026-07-28")):
        # Each round is compared with the other side's round beside it (paired), and the median taken
        # of those ratios: drift of the machine between rounds cancels out.
        per_round = sorted(
            c.ratio(c.median(h), c.median(w))
            for h, w in zip(sides[ours].rounds, sides[theirs].rounds, strict=True)
        )
        cpu_ratio = c.median([c.ratio(h, w) for h, w in zip(cpu[ours], cpu[theirs], strict=True)])
        wall_ratio = c.median(per_round)
        c.note(
            f"(a) {era}: mcp_sync/wrapper ratio of per-round medians: "
            f"min {per_round[0]:.3f} p50 {wall_ratio:.3f} max {per_round[-1]:.3f}"
        )
        results.add(
            f"(a) blocking echo call, {era} (median wall; ratio: median of per-round ratios)",
            c.us(wall[ours]),
            c.us(wall[theirs]),
            c.x(wall_ratio),
            f"≤ {TARGET:.2f}x",
            wall_ratio <= TARGET,
        )
        results.add(
            f"(a) client CPU per echo call, {era} (median of rounds; ratio: median of per-round ratios)",
            c.us(cpu_med[ours]),
            c.us(cpu_med[theirs]),
            c.x(cpu_ratio),
            f"≤ {TARGET:.2f}x",
            cpu_ratio <= TARGET,
        )
    results.add(
        "(a) what 2026-07-28 costs: mcp_sync on it vs the ClientSession wrapper on 2025, wall / CPU",
        f"{c.us(wall['modern'])} / {c.us(cpu_med['modern'])}",
        f"{c.us(wall['wrapper'])} / {c.us(cpu_med['wrapper'])}",
        f"{c.x(c.ratio(wall['modern'], wall['wrapper']))} / "
        f"{c.x(c.ratio(cpu_med['modern'], cpu_med['wrapper']))}",
        "-",
    )


def concurrency(
    hub: Any,
    wrapper: SharedLoopClient,
    hub_server: set[int],
    wrapper_server: set[int],
    rounds: int,
    warmup: int,
    results: c.Results,
) -> None:
    """(b) 32 threads x 10 sequential sleep(0.05) calls, wall per batch."""
    arguments = {"seconds": SLEEP}
    latencies: dict[str, list[list[float]]] = {"hub": [], "wrapper": []}
    cpu: dict[str, list[tuple[float, float, float]]] = {"hub": [], "wrapper": []}

    def batch(name: str, call: Callable[[], Any], server: set[int]) -> Callable[[], float]:
        def run() -> float:
            counters: list[tuple[float, float]] = []
            wall, seen = c.thread_batch(
                THREADS,
                CALLS,
                call,
                120,
                on_start=lambda: counters.append((time.process_time(), c.pids_cpu_seconds(server))),
            )
            own0, server0 = counters[0]
            cpu[name].append((time.process_time() - own0, c.pids_cpu_seconds(server) - server0, wall))
            latencies[name].append(seen)
            return wall

        return run

    hub_side = c.Side(
        "hub",
        batch("hub", lambda: hub.call_tool("mcp__bench__sleep", arguments, timeout=CALL_TIMEOUT), hub_server),
    )
    wrapper_side = c.Side(
        "wrapper", batch("wrapper", lambda: wrapper.call_tool("sleep", arguments), wrapper_server)
    )
    c.note(
        f"(b) {rounds} rounds of {THREADS} threads x {CALLS} sleep({SLEEP}) per side, "
        f"alternating (+{warmup} warm-up)"
    )
    c.alternate([hub_side, wrapper_side], rounds, warmup=warmup, progress="(b) concurrency")

    hub_med, wrapper_med = c.median(hub_side.samples), c.median(wrapper_side.samples)
    n_calls = THREADS * CALLS
    for name, label, side in (("hub", "mcp_sync", hub_side), ("wrapper", "wrapper ", wrapper_side)):
        calls = [v for batch_ in latencies[name][warmup:] for v in batch_]
        rows = cpu[name][warmup:]
        own = c.median([r[0] for r in rows])
        server = c.median([r[1] for r in rows])
        busy = c.median([r[1] / r[2] for r in rows])
        c.note(f"(b) {label} wall per batch: {c.summary(side.samples, 1e3, ' ms')}")
        c.note(f"(b) {label} per-call latency: {c.summary(calls, 1e3, ' ms')}")
        c.note(
            f"(b) {label} CPU per batch: client {own:.2f} s ({own / n_calls * 1e6:.0f} µs/call), "
            f"server {server:.2f} s ({server / n_calls * 1e6:.0f} µs/call), "
            f"server busy {busy:.0%} of the wall"
        )
    paired = sorted(c.ratio(h, w) for h, w in zip(hub_side.samples, wrapper_side.samples, strict=True))
    c.note(
        "(b) mcp_sync/wrapper ratio per round (paired): "
        f"min {paired[0]:.3f} p50 {c.median(paired):.3f} max {paired[-1]:.3f}"
    )
    results.add(
        f"(b) {THREADS} threads x {CALLS} sleep({SLEEP}), wall per batch (ideal {IDEAL:.1f} s; "
        "ratio: median of per-round ratios)",
        c.sec(hub_med),
        c.sec(wrapper_med),
        c.x(c.median(paired)),
        f"≤ {TARGET:.2f}x",
        c.median(paired) <= TARGET,
    )


@dataclass
class FirstCallRound:
    connect: float  # wall of start() / connect()
    first: float  # wall of the first call
    steady: float  # median wall of the calls after it, same session
    first_cpu: float  # this process's CPU during the first call
    steady_cpu: float  # ... per call, over the calls after it
    close: float  # wall of close()


def first_call(hub_class: Any, shared: SharedLoop, rounds: int, warmup: int, results: c.Results) -> None:
    """(c) a fresh connect each round; the first echo call, and the ones after it."""
    arguments = {"text": "x"}
    data: dict[str, list[FirstCallRound]] = {"hub": [], "wrapper": []}

    def measure(
        name: str, connect: Callable[[], Any], call: Callable[[Any], Any], close: Callable[[Any], None]
    ) -> Callable[[], float]:
        def run() -> float:
            t0 = time.perf_counter()
            handle = connect()
            try:
                connected = time.perf_counter() - t0
                cpu0, t0 = time.process_time(), time.perf_counter()
                call(handle)
                first, first_cpu = time.perf_counter() - t0, time.process_time() - cpu0
                later = []
                cpu0 = time.process_time()
                for _ in range(STEADY_AFTER_FIRST):
                    t0 = time.perf_counter()
                    call(handle)
                    later.append(time.perf_counter() - t0)
                steady_cpu = (time.process_time() - cpu0) / STEADY_AFTER_FIRST
            finally:
                t0 = time.perf_counter()
                close(handle)
                closed = time.perf_counter() - t0
            data[name].append(
                FirstCallRound(connected, first, c.median(later), first_cpu, steady_cpu, closed)
            )
            return first

        return run

    hub_side = c.Side(
        "hub",
        measure(
            "hub",
            lambda: hub_class([c.fixture_config("first", *LEGACY)]).start(),
            lambda hub: hub.call_tool("mcp__first__echo", arguments),
            lambda hub: hub.close(),
        ),
    )
    wrapper_side = c.Side(
        "wrapper",
        measure(
            "wrapper",
            lambda: SharedLoopClient(c.fixture_params(*LEGACY), shared).connect(),
            lambda wrapper: wrapper.call_tool("echo", arguments),
            lambda wrapper: wrapper.close(),
        ),
    )
    c.note(
        f"(c) {rounds} rounds of connect + first call + {STEADY_AFTER_FIRST} more per side "
        f"(+{warmup} warm-up)"
    )
    c.alternate([hub_side, wrapper_side], rounds, warmup=warmup, progress="(c) first call")

    medians: dict[str, dict[str, float]] = {}
    for name, label in (("hub", "mcp_sync"), ("wrapper", "wrapper ")):
        rows = data[name][warmup:]
        ratios = [r.first / r.steady for r in rows]
        cpu_ratios = [r.first_cpu / r.steady_cpu for r in rows]
        medians[name] = {
            "first": c.median([r.first for r in rows]),
            "steady": c.median([r.steady for r in rows]),
            "ratio": c.median(ratios),
            "first_cpu": c.median([r.first_cpu for r in rows]),
            "steady_cpu": c.median([r.steady_cpu for r in rows]),
            "connect": c.median([r.connect for r in rows]),
        }
        c.note(f"(c) {label} connect (start -> ready): {c.summary([r.connect for r in rows], 1e3, ' ms')}")
        c.note(f"(c) {label} first call: {c.summary([r.first for r in rows], 1e3, ' ms')}")
        c.note(
            f"(c) {label} next {STEADY_AFTER_FIRST} calls, median per session: "
            f"{c.summary([r.steady for r in rows], 1e3, ' ms')}"
        )
        c.note(f"(c) {label} first / steady wall, per round: {c.summary(ratios, 1.0, 'x')}")
        c.note(
            f"(c) {label} client CPU: first call {c.summary([r.first_cpu for r in rows], 1e3, ' ms')}; "
            f"later calls {c.summary([r.steady_cpu for r in rows], 1e3, ' ms')}; "
            f"ratio per round {c.summary(cpu_ratios, 1.0, 'x')}"
        )
        c.note(f"(c) {label} close: {c.summary([r.close for r in rows], 1e3, ' ms')}")
    hub, wrapper = medians["hub"], medians["wrapper"]
    results.add(
        "(c) first echo call after a fresh connect, wall",
        c.ms(hub["first"]),
        c.ms(wrapper["first"]),
        c.x(c.ratio(hub["first"], wrapper["first"])),
        f"≤ {TARGET:.2f}x",
        hub["first"] <= TARGET * wrapper["first"],
    )
    results.add(
        "(c) first call ÷ own steady state, wall (median of per-round ratios)",
        f"{hub['ratio']:.2f}x (steady {c.ms(hub['steady'])})",
        f"{wrapper['ratio']:.2f}x (steady {c.ms(wrapper['steady'])})",
        "-",
        f"≤ {FIRST_CALL_TARGET:g}x steady",
        hub["ratio"] <= FIRST_CALL_TARGET,
    )
    results.add(
        "(c) client CPU of the first call / of a later call",
        f"{c.ms(hub['first_cpu'])} / {c.ms(hub['steady_cpu'])}",
        f"{c.ms(wrapper['first_cpu'])} / {c.ms(wrapper['steady_cpu'])}",
        c.x(c.ratio(hub["first_cpu"], wrapper["first_cpu"])) + " (first calls)",
        "-",
    )
    results.add(
        "(c) connect: start() / wrapper connect (spawn, handshake, list tools)",
        c.ms(hub["connect"]),
        c.ms(wrapper["connect"]),
        c.x(c.ratio(hub["connect"], wrapper["connect"])),
        "-",
    )


if __name__ == "__main__":
    main()
