"""Start-up: `MCPHub(...).start()` for 8 stdio fixture servers vs for one alone.

`start()` connects every server in parallel (one loop thread each) and returns once each is
ready: connected, handshake done, tools listed. Ideally 8 servers take about as long as one.
Target: ratio of medians at most 1.3. Rounds alternate (8, 1, 1, 8, ...); each hub is closed
outside the timing.

Baseline, in the same alternating rounds: an async program's parallel start, 8 (vs 1) raw
`mcp.Client`s connecting and listing tools as tasks of one asyncio loop.

Also measured, to tell the library from the machine: the same 8-vs-1 for bare server processes
(`subprocess.Popen` of the fixture until it writes its "ready" event: interpreter start, imports,
building the server - no MCP traffic at all), and the CPU time each side burns per server, split
into this process (the client side) and the server process. And 8 vs 1 hub starts of a tiny
standard-library server whose start is 0.5 s of waiting, not CPU (`_slow_start_server.py`): the
case where parallel connecting pays off in full. When 8 starts need more CPU than
the machine's cores can give in the time one start takes, no client can reach the target; the
lower bound printed is max(one start, 8 x CPU per start / cores).

    python benchmarks/bench_startup.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as c

MANY = 8
TARGET_RATIO = 1.3
# Servers whose start waits on I/O, not CPU: the part of start-up a client can overlap.
SLOW_START_SERVER = Path(__file__).with_name("_slow_start_server.py")
SLOW_START_DELAY = 0.5


def _cpu_now() -> tuple[float, float]:
    """CPU seconds of (this process, its reaped children)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


class CpuTally:
    """CPU per server start, split into this process (the client side) and the server processes."""

    def __init__(self) -> None:
        self.own: dict[str, float] = {}
        self.children: dict[str, float] = {}

    def add(self, key: str, before: tuple[float, float], n: int) -> None:
        own, children = _cpu_now()
        self.own[key] = self.own.get(key, 0.0) + (own - before[0]) / n
        self.children[key] = self.children.get(key, 0.0) + (children - before[1]) / n

    def per_start(self, key: str, rounds: int) -> tuple[float, float]:
        return self.own[key] / rounds, self.children[key] / rounds


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    rounds = 1 if args.quick else 5
    c.print_header(f"start-up: MCPHub.start() with {MANY} stdio servers vs 1", args.quick)

    from mcp import Client

    from mcp_sync import MCPHub

    load = c.LoadMeter()
    cpu = CpuTally()
    workdir = Path(tempfile.mkdtemp(prefix="mcp-sync-bench-"))
    counter = [0]

    def slow_start_config(name: str) -> dict[str, Any]:
        args = [str(SLOW_START_SERVER), "--delay", str(SLOW_START_DELAY)]
        return {"server_name": name, "transport": "stdio", "command": c.PYTHON, "args": args}

    def hub_start(n: int, light: bool = False) -> float:
        if light:
            configs = [slow_start_config(f"s{i}") for i in range(n)]
        else:
            configs = [c.fixture_config(f"s{i}", connect_timeout_ms=120_000) for i in range(n)]
        cpu0 = _cpu_now()
        hub = MCPHub(configs)
        t0 = time.perf_counter()
        hub.start()
        elapsed = time.perf_counter() - t0
        try:
            bad = {name: s.state for name, s in hub.servers.items() if s.state != "ready"}
            if bad:
                raise RuntimeError(f"servers not ready: {bad}")
        finally:
            hub.close()
        cpu.add(f"{'light' if light else 'hub'}{n}", cpu0, n)
        return elapsed

    def bare_start(n: int) -> float:
        counter[0] += 1
        events = [c.EventFile(workdir / f"r{counter[0]}-{i}.jsonl") for i in range(n)]
        cpu0 = _cpu_now()
        t0 = time.perf_counter()
        procs = [
            subprocess.Popen(
                [c.PYTHON, *c.fixture_args(events=ev)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
            for ev in events
        ]
        try:
            for ev in events:
                ev.wait_for(c.match("ready"), timeout=120, interval=0.002)
            elapsed = time.perf_counter() - t0
        finally:
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.close()
            for proc in procs:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        cpu.add(f"bare{n}", cpu0, n)
        return elapsed

    def raw_start(n: int) -> float:
        """An async program's parallel start: n raw Clients connecting and listing in one loop."""

        async def run() -> float:
            stop = asyncio.Event()
            ready = [asyncio.Event() for _ in range(n)]

            async def one(i: int) -> None:
                async with Client(c.fixture_params(), cache=None) as client:
                    await client.list_tools()
                    ready[i].set()
                    await stop.wait()

            t0 = time.perf_counter()
            tasks = [asyncio.ensure_future(one(i)) for i in range(n)]
            pending: set[asyncio.Future[Any]] = {*tasks, *(asyncio.ensure_future(e.wait()) for e in ready)}
            deadline = time.monotonic() + 120
            # Until every client is ready, or one of them ended (failed) first.
            while not all(event.is_set() for event in ready) and not any(task.done() for task in tasks):
                _, pending = await asyncio.wait(
                    pending,
                    timeout=max(0.0, deadline - time.monotonic()),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if time.monotonic() > deadline:
                    break
            elapsed = time.perf_counter() - t0
            failed = [task for task in tasks if task.done() and task.exception() is not None]
            stop.set()
            for waiter in pending - set(tasks):
                waiter.cancel()
            await asyncio.gather(*tasks, *pending, return_exceptions=True)
            if failed or not all(event.is_set() for event in ready):
                raise RuntimeError(f"raw clients did not all connect: {failed[:1]!r}")
            return elapsed

        cpu0 = _cpu_now()
        elapsed = asyncio.run(run())
        cpu.add(f"raw{n}", cpu0, n)
        return elapsed

    sides = [
        c.Side(f"hub x{MANY}", lambda: hub_start(MANY)),
        c.Side("hub x1", lambda: hub_start(1)),
        c.Side(f"bare x{MANY}", lambda: bare_start(MANY)),
        c.Side("bare x1", lambda: bare_start(1)),
        c.Side(f"raw x{MANY}", lambda: raw_start(MANY)),
        c.Side("raw x1", lambda: raw_start(1)),
        c.Side(f"light x{MANY}", lambda: hub_start(MANY, light=True)),
        c.Side("light x1", lambda: hub_start(1, light=True)),
    ]
    c.note(f"{rounds} rounds per side, alternating (+1 warm-up)")
    c.alternate(sides, rounds, warmup=1, progress="startup")
    for path in workdir.iterdir():
        path.unlink()
    workdir.rmdir()

    hub_many, hub_one, bare_many, bare_one, raw_many, raw_one, light_many, light_one = (
        c.median(side.samples) for side in sides
    )
    total_rounds = rounds + 1
    cores = os.cpu_count() or 1
    for side in sides:
        c.note(f"{side.name:8s} start: {c.summary(side.samples, 1e3, ' ms')}")
    for key in ("hub1", f"hub{MANY}", "raw1", f"raw{MANY}", "bare1", f"bare{MANY}"):
        own, children = cpu.per_start(key, total_rounds)
        c.note(
            f"CPU per server start, {key:6s}: this process {own * 1e3:4.0f} ms + server process "
            f"{children * 1e3:4.0f} ms (incl. its shutdown)"
        )
    own1, children1 = cpu.per_start("hub1", total_rounds)
    per_start = own1 + children1
    bound = max(hub_one, MANY * per_start / cores)
    c.note(
        f"CPU-bound lower bound for {MANY} hub starts on {cores} cores: "
        f"max({hub_one:.2f} s, {MANY} x {per_start:.2f} s / {cores}) = {bound:.2f} s "
        f"-> best possible ratio ~{bound / hub_one:.2f}"
    )
    c.note(load.report())

    r = c.ratio(hub_many, hub_one)
    results = c.Results()
    results.add(
        f"start() of {MANY} stdio servers vs 1 (median)",
        f"{hub_many:.3f} s ({MANY}) / {hub_one:.3f} s (1)",
        f"raw Clients in one loop: {raw_many:.3f} s ({MANY}) / {raw_one:.3f} s (1) "
        f"= {c.ratio(raw_many, raw_one):.2f}x",
        c.x(r, 2),
        f"≤ {TARGET_RATIO}",
        r <= TARGET_RATIO,
    )
    results.add(
        f"start() of {MANY} vs CPU-bound lower bound on this machine",
        c.sec(hub_many),
        f"{bound:.3f} s (max(1 start, {MANY}xCPU/cores))",
        c.x(c.ratio(hub_many, bound), 2),
        "-",
    )
    results.add(
        f"bare server processes, {MANY} vs 1 (no MCP at all)",
        "-",
        f"{bare_many:.3f} s ({MANY}) / {bare_one:.3f} s (1)",
        c.x(c.ratio(bare_many, bare_one), 2),
        "-",
    )
    light = c.ratio(light_many, light_one)
    results.add(
        f"start() of {MANY} servers vs 1, each start {SLOW_START_DELAY:g} s of I/O, little CPU",
        f"{light_many:.3f} s ({MANY}) / {light_one:.3f} s (1)",
        "-",
        c.x(light, 2),
        f"≤ {TARGET_RATIO}",
        light <= TARGET_RATIO,
    )
    results.print()


if __name__ == "__main__":
    main()
