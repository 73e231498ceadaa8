"""Re-sync latency: the server announces a new tool -> the hub's `on_tool_added` listener runs.

Each trial calls the fixture's `add_tool(name)`, which registers a tool, writes a "tool_added"
event stamped with the server's `time.time()`, and announces the change the way the
negotiated era wants (2025 handshake era: `notifications/tools/list_changed`; 2026-07-28: the
`subscriptions/listen` stream). The latency is from that server timestamp to the moment the
hub's `on_tool_added` listener runs (its `time.time()`, same machine, same clock): the
notification's trip, the hub's re-list, the registry update and the hop to the callback thread.

Both protocol eras (`--era modern`, `--era legacy`). Baseline, in alternating rounds: an async
program on a raw `mcp.Client` doing the least it can - on each announcement (message handler;
on 2026-07-28 with a `listen(tools_list_changed=True)` stream open) re-list the tools, and note
the time the new name shows up.
Target: median at most 20 ms.

    python benchmarks/bench_resync.py [--quick]
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c

TARGET_MEDIAN = 0.020
ERAS = ("modern", "legacy")


class RawWatcher:
    """A raw Client that re-lists on every tools-changed announcement and records when names appear."""

    def __init__(self, era: str, events: c.EventFile) -> None:
        import mcp_types as types

        self._types = types
        self.seen_at: dict[str, float] = {}
        self._dirty: asyncio.Event | None = None
        self._waiters: dict[str, asyncio.Event] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self.session = c.RawSession(
            c.fixture_params("--era", era, events=events), cache=None, message_handler=self._on_message
        )

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, self._types.ToolListChangedNotification) and self._dirty is not None:
            self._dirty.set()

    async def _resync(self) -> None:
        assert self._dirty is not None
        client = self.session.client
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            cursor = None
            names = []
            while True:
                page = await client.list_tools(cursor=cursor)
                names += [tool.name for tool in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
            now = time.time()
            for name in names:
                if name not in self.seen_at:
                    self.seen_at[name] = now
                    if name in self._waiters:
                        self._waiters[name].set()

    async def _listen(self) -> None:
        from mcp.client.subscriptions import ListenNotSupportedError

        try:
            async with self.session.client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:  # also teed to the message handler
                    pass
        except ListenNotSupportedError:
            pass

    def open(self) -> RawWatcher:
        self.session.open()

        async def start() -> None:
            self._dirty = asyncio.Event()
            await self.session.client.list_tools()
            for name in [tool.name for tool in (await self.session.client.list_tools()).tools]:
                self.seen_at[name] = 0.0
            self._tasks.append(asyncio.ensure_future(self._listen()))
            self._tasks.append(asyncio.ensure_future(self._resync()))
            await asyncio.sleep(0.2)  # let the subscription open

        self.session.run(start())
        return self

    def trial(self, name: str, timeout: float = 10.0) -> float:
        async def run() -> float:
            waiter = self._waiters[name] = asyncio.Event()
            await self.session.client.call_tool("add_tool", {"name": name})
            await asyncio.wait_for(waiter.wait(), timeout)
            return self.seen_at[name]

        return self.session.run(run())

    def close(self) -> None:
        async def stop() -> None:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        self.session.run(stop())
        self.session.close()


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    rounds, per_round = (2, 3) if args.quick else (15, 8)
    c.print_header("re-sync latency: server announces a new tool -> on_tool_added runs", args.quick)

    from mcp_sync import MCPHub, Tool

    load = c.LoadMeter()
    workdir = Path(tempfile.mkdtemp(prefix="mcp-sync-bench-"))
    counter = [0]
    hubs: dict[str, MCPHub] = {}
    raws: dict[str, RawWatcher] = {}
    events: dict[str, c.EventFile] = {}
    added_at: dict[str, float] = {}
    added_events: dict[str, threading.Event] = {}
    lock = threading.Lock()

    def on_added(tool: Tool) -> None:
        now = time.time()
        with lock:
            added_at.setdefault(tool.name, now)
            waiter = added_events.get(tool.name)
        if waiter is not None:
            waiter.set()

    def server_time(events_file: c.EventFile, name: str) -> float:
        event, _ = events_file.wait_for(c.match("tool_added", name=name))
        return float(event["time"])

    def hub_trials(era: str) -> Callable[[], list[float]]:
        def run() -> list[float]:
            hub, ev = hubs[era], events[f"hub-{era}"]
            out = []
            for _ in range(per_round):
                counter[0] += 1
                raw_name = f"dyn{counter[0]}"
                public = f"mcp__{era}__{raw_name}"
                waiter = threading.Event()
                with lock:
                    added_events[public] = waiter
                hub.call_tool(f"mcp__{era}__add_tool", {"name": raw_name}, timeout=30)
                if not waiter.wait(10):
                    raise RuntimeError(f"on_tool_added never ran for {public}")
                out.append(added_at[public] - server_time(ev, raw_name))
            return out

        return run

    def raw_trials(era: str) -> Callable[[], list[float]]:
        def run() -> list[float]:
            watcher, ev = raws[era], events[f"raw-{era}"]
            out = []
            for _ in range(per_round):
                counter[0] += 1
                raw_name = f"dyn{counter[0]}"
                seen = watcher.trial(raw_name)
                out.append(seen - server_time(ev, raw_name))
            return out

        return run

    try:
        for era in ERAS:
            events[f"hub-{era}"] = c.EventFile(workdir / f"hub-{era}.jsonl")
            events[f"raw-{era}"] = c.EventFile(workdir / f"raw-{era}.jsonl")
            hub = MCPHub([c.fixture_config(era, "--era", era, events=events[f"hub-{era}"])]).start()
            hubs[era] = hub
            connection = hub.servers[era]
            assert connection.state == "ready", connection
            c.note(f"hub {era}: protocol {connection.protocol_version}")
            hub.on_tool_added(on_added)
            raws[era] = RawWatcher(era, events[f"raw-{era}"]).open()
            c.note(f"raw {era}: protocol {raws[era].session.client.protocol_version}")
        sides = []
        for era in ERAS:
            sides.append(c.Side(f"hub-{era}", hub_trials(era)))
            sides.append(c.Side(f"raw-{era}", raw_trials(era)))
        c.note(f"{rounds} rounds x {per_round} trials per side, alternating (+1 warm-up round)")
        c.alternate(sides, rounds, warmup=1, progress="resync")
    finally:
        for hub in hubs.values():
            hub.close()
        for watcher in raws.values():
            watcher.close()
        for path in workdir.iterdir():
            path.unlink()
        workdir.rmdir()

    by_name = {side.name: side.samples for side in sides}
    for side in sides:
        c.note(f"{side.name:13s}: {c.summary(side.samples, 1e3, ' ms')}")
    c.note(load.report())

    results = c.Results()
    for era in ERAS:
        hub_v, raw_v = by_name[f"hub-{era}"], by_name[f"raw-{era}"]
        hub_med, raw_med = c.median(hub_v), c.median(raw_v)
        results.add(
            f"announce → on_tool_added, {era} era, median",
            c.ms(hub_med),
            c.ms(raw_med) + " (raw Client re-list)",
            c.x(c.ratio(hub_med, raw_med), 2),
            f"≤ {TARGET_MEDIAN * 1e3:.0f} ms",
            hub_med <= TARGET_MEDIAN,
        )
        results.add(
            f"announce → on_tool_added, {era} era, p99",
            c.ms(c.percentile(hub_v, 99)),
            c.ms(c.percentile(raw_v, 99)) + " (raw Client re-list)",
            c.x(c.ratio(c.percentile(hub_v, 99), c.percentile(raw_v, 99)), 2),
            "-",
        )
    results.print()


if __name__ == "__main__":
    main()
