"""Scale: one server with 10,000 tools, and 50 servers in one hub.

Part 1 - a fixture server with `--tools 10000 --page-size 500` (10,000 extra tools plus the
fixture's own, in 21 pages):

- initial sync: from the server's "ready" event (its tools built, serving) to the hub having
  registered the whole listing (handshake, subscription, every page, registry); beside it the
  whole `MCPHub.start()` with that server and with a plain fixture server (one before, one after);
- re-sync: the server's `announce(1)` tool announces a change (nothing changes) -> the hub has
  re-listed every page and replaced the server's generation in the registry (timed by a
  `ToolRegistry` subclass passed to the hub, noting when `replace_server_tools` returns);
  baseline, alternating: a raw `mcp.Client` walking the same pages on an open session.
  Note: the fixture builds and serialises its whole tool list for every page request and then
  slices it, so each page costs the server O(all tools): a walk is dominated by the server;
- memory: growth of the hub process's RSS over that `start()`, and (untimed, `tracemalloc`) what
  the registry keeps for the listing - the SDK's `Tool` objects are dropped after a sync, their
  schemas kept - beside what the SDK's listing objects themselves take.

Part 2 - 50 fixture servers over stdio in one hub: `start()` time, threads (Python and OS),
RSS of this process and of the 50 server processes, and `close()` time; the same for a
one-server hub as the reference.

    python benchmarks/bench_scale.py [--quick]
"""

from __future__ import annotations

import gc
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common as c

BIG_FLAGS = ("--tools", "10000", "--page-size", "500")
MANY = 50


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    resync_rounds, many = (1, 5) if args.quick else (2, MANY)
    big_flags = ("--tools", "1000", "--page-size", "100") if args.quick else BIG_FLAGS
    n_extra = int(big_flags[1])
    c.print_header(f"scale: {n_extra} tools on one server; {many} servers in one hub", args.quick)

    from mcp_sync import MCPHub, ToolRegistry

    class TimedRegistry(ToolRegistry):
        """Notes when each replacement of a server's generation finished, and how long it took."""

        def __init__(self) -> None:
            super().__init__()
            self.replaced: list[tuple[str, float, float, int]] = []  # (server, wall end, seconds, n tools)
            self.replaced_event = threading.Event()

        def replace_server_tools(self, server_name: str, tools: Sequence[Any]) -> Any:
            t0 = time.perf_counter()
            try:
                return super().replace_server_tools(server_name, tools)
            finally:
                self.replaced.append((server_name, time.time(), time.perf_counter() - t0, len(tools)))
                self.replaced_event.set()

    load = c.LoadMeter()
    results = c.Results()
    connect_timeout: dict[str, Any] = {"connect_timeout_ms": 300_000}

    # -- part 1a: initial sync and the hub's memory ------------------------------------------------
    workdir = Path(tempfile.mkdtemp(prefix="mcp-sync-bench-"))
    plain_sync: list[float] = []

    def ready_to_registered(events: c.EventFile, registry: TimedRegistry) -> float:
        """Server's "ready" event (tools built, serving) -> the hub registered the listing."""
        ready, _ = events.wait_for(c.match("ready"))
        return registry.replaced[0][1] - float(ready["time"])

    def start_plain() -> float:
        events = c.EventFile(workdir / f"plain{len(plain_sync)}.jsonl")
        registry = TimedRegistry()
        hub = MCPHub([c.fixture_config("plain", events=events, **connect_timeout)], registry=registry)
        t0 = time.perf_counter()
        hub.start()
        elapsed = time.perf_counter() - t0
        assert hub.servers["plain"].state == "ready", hub.servers["plain"]
        plain_sync.append(ready_to_registered(events, registry))
        hub.close()
        registry.close()
        return elapsed

    c.note(f"initial sync: start() with {n_extra} extra tools, between two start()s of a plain fixture")
    start_plain()  # warm-up: imports, first spawn
    small_samples = [start_plain()]
    gc.collect()
    rss0 = c.rss_bytes()
    registry = TimedRegistry()
    big_events = c.EventFile(workdir / "big.jsonl")
    hub = MCPHub(
        [c.fixture_config("big", *big_flags, events=big_events, **connect_timeout)], registry=registry
    )
    t0 = time.perf_counter()
    hub.start()
    big_med = time.perf_counter() - t0
    gc.collect()
    rss_hub = c.rss_bytes() - rss0
    raw: c.RawSession | None = None
    try:
        assert hub.servers["big"].state == "ready", hub.servers["big"]
        n_tools = len(hub.tools())
        registry_seconds = registry.replaced[0][2]
        big_sync = ready_to_registered(big_events, registry)
        small_samples.append(start_plain())
        small_med = c.median(small_samples)
        plain_sync_med = c.median(plain_sync[1:])
        c.note(
            f"start() with {n_tools} tools: {big_med:.3f} s; "
            f"plain fixture: {c.summary(small_samples, 1e3, ' ms')}"
        )
        c.note(
            f"server ready -> tools registered: {big_sync * 1e3:.0f} ms with {n_tools} tools, "
            f"{plain_sync_med * 1e3:.0f} ms plain (handshake + one page)"
        )
        c.note(f"of which registry.replace_server_tools: {registry_seconds * 1e3:.1f} ms")

        # -- part 1b: re-sync, alternating with a raw Client's walk of the same pages -----------------
        raw = c.RawSession(c.fixture_params(*big_flags), cache=None).open()

        def resync() -> float:
            before = len(registry.replaced)
            t0 = time.time()
            hub.call_tool("mcp__big__announce", {"n": 1}, timeout=60)
            c.wait_until(lambda: len(registry.replaced) > before, timeout=120, interval=0.002)
            return registry.replaced[before][1] - t0

        listing: list[Any] = []

        async def walk() -> float:
            assert raw is not None
            t0 = time.perf_counter()
            cursor = None
            tools: list[Any] = []
            while True:
                page = await raw.client.list_tools(cursor=cursor)
                tools += page.tools
                cursor = page.next_cursor
                if cursor is None:
                    break
            elapsed = time.perf_counter() - t0
            assert len(tools) == n_tools, (len(tools), n_tools)
            listing[:] = tools
            return elapsed

        hub_resync = c.Side("hub resync", resync)
        raw_walk = c.Side("raw walk", lambda: raw.run(walk()))
        c.note(f"re-sync of {n_tools} tools: {resync_rounds} rounds vs a raw Client's page walk, alternating")
        c.alternate([hub_resync, raw_walk], resync_rounds, warmup=0)
    finally:
        hub.close()
        registry.close()
        if raw is not None:
            raw.close()
    resync_med, walk_med = c.median(hub_resync.samples), c.median(raw_walk.samples)
    c.note(f"hub re-sync (announce -> registry replaced): {c.summary(hub_resync.samples, 1e3, ' ms')}")
    c.note(f"raw Client walk of all pages: {c.summary(raw_walk.samples, 1e3, ' ms')}")

    # -- part 1c: memory, untimed: what the listing and the registry retain (tracemalloc) -------------
    import mcp_types as types

    from mcp_sync import Tool, public_tool_name

    dumps = [tool.model_dump(by_alias=True, exclude_none=True) for tool in listing]
    listing.clear()
    gc.collect()
    tracemalloc.start()
    traced0 = tracemalloc.get_traced_memory()[0]
    sdk_tools = [types.Tool.model_validate(d) for d in dumps]
    gc.collect()
    traced_raw = tracemalloc.get_traced_memory()[0] - traced0
    # What the hub keeps after a sync: its registry (the SDK's objects are dropped, their schemas kept).
    measured = ToolRegistry()
    measured.replace_server_tools(
        "big",
        [
            Tool(
                name=public_tool_name("big", t.name),
                description=t.description,
                input_schema=t.input_schema,
                server_name="big",
                raw_name=t.name,
                output_schema=t.output_schema,
            )
            for t in sdk_tools
        ],
    )
    del sdk_tools
    gc.collect()
    traced_registry = tracemalloc.get_traced_memory()[0] - traced0
    tracemalloc.stop()
    measured.close()
    del measured, dumps
    c.note(
        f"memory for {n_tools} tools: registry keeps {c.mib(traced_registry)} "
        f"({traced_registry / n_tools:.0f} B/tool, "
        f"schemas included); the SDK's listing objects take {c.mib(traced_raw)} "
        f"({traced_raw / n_tools:.0f} B/tool); hub process RSS grew {c.mib(rss_hub)} over start()"
    )

    results.add(
        f"initial sync of {n_tools} tools (server ready → registered)",
        f"{big_sync * 1e3:.0f} ms",
        f"{walk_med * 1e3:.0f} ms (raw Client page walk)",
        c.x(c.ratio(big_sync, walk_med), 2),
        "-",
    )
    results.add(
        f"start() with {n_tools} tools / plain",
        c.sec(big_med),
        c.sec(small_med),
        c.x(c.ratio(big_med, small_med), 2),
        "-",
    )
    results.add(
        f"re-sync of {n_tools} tools (announce → registry replaced)",
        f"{resync_med * 1e3:.0f} ms",
        f"{walk_med * 1e3:.0f} ms (raw Client page walk)",
        c.x(c.ratio(resync_med, walk_med), 2),
        "-",
    )
    results.add(
        f"memory for {n_tools} tools (registry, tracemalloc; hub RSS growth)",
        f"{c.mib(traced_registry)}; RSS +{c.mib(rss_hub)}",
        f"{c.mib(traced_raw)} (the SDK's listing objects)",
        c.x(c.ratio(traced_registry, traced_raw), 2),
        "-",
    )

    # -- part 2: many servers ------------------------------------------------------------------------
    def many_servers(n: int) -> dict[str, float]:
        gc.collect()
        threads0, os_threads0, rss0 = threading.active_count(), c.os_thread_count(), c.rss_bytes()
        hub = MCPHub([c.fixture_config(f"s{i:02d}", **connect_timeout) for i in range(n)])
        t0 = time.perf_counter()
        hub.start()
        started = time.perf_counter() - t0
        try:
            not_ready = [name for name, s in hub.servers.items() if s.state != "ready"]
            if not_ready:
                raise RuntimeError(f"servers not ready: {not_ready}")
            facts = {
                "start": started,
                "threads": threading.active_count() - threads0,
                "os_threads": c.os_thread_count() - os_threads0,
                "rss": c.rss_bytes() - rss0,
                "children": len(c.descendant_pids()),
                "children_rss": sum(c.rss_bytes(pid) for pid in c.descendant_pids()),
                "tools": len(hub.tools()),
            }
            names = Counter(t.name.rstrip("0123456789-").split(":")[0] for t in threading.enumerate())
            thread_kinds[n] = ", ".join(f"{count} {name}" for name, count in names.most_common())
        finally:
            t0 = time.perf_counter()
            hub.close()
            facts_close = time.perf_counter() - t0
        facts["close"] = facts_close
        facts["threads_after"] = threading.active_count() - threads0
        facts["children_after"] = len(c.descendant_pids())
        return facts

    thread_kinds: dict[int, str] = {}
    c.note(f"{many} servers in one hub (and 1 for reference)")
    one = many_servers(1)
    lots = many_servers(many)
    for label, facts in (("1 server", one), (f"{many} servers", lots)):
        c.note(
            f"{label}: start {facts['start']:.2f} s, close {facts['close']:.2f} s, "
            f"+{facts['threads']:.0f} Python threads (+{facts['os_threads']:.0f} OS threads), "
            f"hub RSS +{c.mib(facts['rss'])}, {facts['children']:.0f} child processes "
            f"with {c.mib(facts['children_rss'])} RSS, {facts['tools']:.0f} tools; after close: "
            f"+{facts['threads_after']:.0f} threads, {facts['children_after']:.0f} children"
        )
    for path in workdir.iterdir():
        path.unlink()
    workdir.rmdir()
    c.note(f"threads by name with {many} servers: {thread_kinds[many]}")
    c.note(load.report())

    results.add(
        f"{many} servers: start() time",
        c.sec(lots["start"]),
        f"{one['start']:.3f} s (1 server)",
        c.x(c.ratio(lots["start"], one["start"]), 1),
        "-",
    )
    results.add(
        f"{many} servers: threads added (Python / OS)",
        f"{lots['threads']:.0f} / {lots['os_threads']:.0f}",
        f"{one['threads']:.0f} / {one['os_threads']:.0f} (1 server)",
        "-",
        "-",
    )
    results.add(
        f"{many} servers: RSS of the hub process (added)",
        c.mib(lots["rss"]),
        f"{c.mib(one['rss'])} (1 server)",
        f"{(lots['rss'] - one['rss']) / max(many - 1, 1) / 2**20:.2f} MiB per extra server",
        "-",
    )
    results.add(
        f"{many} servers: RSS of the server processes",
        c.mib(lots["children_rss"]),
        f"{c.mib(one['children_rss'])} (1 server)",
        "-",
        "-",
    )
    results.add(
        f"{many} servers: close() time; left after close",
        f"{lots['close']:.2f} s; {lots['threads_after']:.0f} threads, {lots['children_after']:.0f} children",
        f"{one['close']:.2f} s (1 server)",
        "-",
        "-",
    )
    results.print()


if __name__ == "__main__":
    main()
