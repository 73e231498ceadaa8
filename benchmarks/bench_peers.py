"""mcp_sync vs a peer sync facade on one `mcp` SDK (mcp-haystack's `MCPTool`): per call ÷ its own raw client.

Four sides in one process, alternating rounds, each with its own fixture server over stdio:

- `hub`: a blocking `MCPHub.call_tool` of the fixture's `echo`;
- `raw`: the SDK object `mcp_sync` wraps, a `mcp.Client(cache=None)` awaited on its own loop;
- `haystack`: `MCPTool("echo", StdioServerInfo(...)).invoke(text=...)` of mcp-haystack
  (https://pypi.org/project/mcp-haystack/), which runs a `ClientSession` on a loop thread of its own
  (`AsyncExecutor`) and hands each call over with `run_coroutine_threadsafe`;
- `haystack raw`: what mcp-haystack wraps, `stdio_client` + `ClientSession` + `initialize()`, awaited on
  its own loop.

Each facade is compared with its own raw client, so that what is compared is what each facade adds on
top of the SDK (the protocol its SDK object speaks included): "per call ÷ raw" is the median over rounds
of (facade's median per call in the round) / (its raw client's, same round), and the same for the client
CPU per call (this process, all threads). `ClientSession.initialize()` speaks a 2025 protocol (2025-11-25
with `mcp` 2.3), `mcp.Client` 2026-07-28 with a server that offers it: `--era legacy` runs every fixture as
a 2025-era server, so that all four speak 2025-11-25.

mcp-haystack goes into a virtualenv of its own, pinned, without dependencies: what it needs (haystack-ai,
`mcp`) is this environment's (the project's `test` extra brings haystack-ai), so both sides run on the
same `mcp`. The script adds that virtualenv's site-packages after its own:

    python benchmarks/bench_peers.py --setup      # once: creates .bench-venvs/haystack
    python benchmarks/bench_peers.py [--quick] [--runs 5] [--era modern|legacy]

`--runs N` repeats the whole comparison N times (paired runs) and counts those in which the hub's
ratio is below mcp-haystack's.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import subprocess
import sys
import sysconfig
import time
import venv
from pathlib import Path
from typing import Any

import _common as c

PEER = "mcp-haystack==2.1.1"
PEER_VENV = c.REPO_ROOT / ".bench-venvs" / "haystack"


def setup() -> None:
    """Create the peer's virtualenv and install the pinned peer into it, without dependencies."""
    venv.EnvBuilder(with_pip=True, clear=True).create(PEER_VENV)
    python = PEER_VENV / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", PEER], check=True)
    print(f"installed {PEER} into {PEER_VENV.relative_to(c.REPO_ROOT)}")


def add_peer_venv() -> None:
    """Put the peer's site-packages on `sys.path`, after this environment's own."""
    scheme_vars = {"base": str(PEER_VENV), "platbase": str(PEER_VENV)}
    site_packages = Path(sysconfig.get_path("purelib", vars=scheme_vars))
    if not site_packages.is_dir():
        sys.exit(f"no {PEER_VENV}: run `python benchmarks/bench_peers.py --setup` first")
    sys.path.append(str(site_packages))


class RawClientSession:
    """`stdio_client` + `ClientSession` + `initialize()` on a private loop run in the caller's thread (what
    mcp-haystack wraps), entered and left by one owner task."""

    def __init__(self, params: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self._params = params
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self.session: Any = None

    def open(self) -> RawClientSession:
        ready: asyncio.Future[Any] = self.loop.create_future()

        async def own() -> None:
            from mcp import ClientSession
            from mcp.client.stdio import stdio_client

            self._stop = asyncio.Event()
            try:
                async with stdio_client(self._params) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    await session.list_tools()
                    ready.set_result(session)
                    await self._stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                raise

        async def start() -> Any:
            self._owner = asyncio.ensure_future(own())
            return await asyncio.wait_for(asyncio.shield(ready), 60.0)

        self.session = self.loop.run_until_complete(start())
        return self

    def close(self) -> None:
        if self._owner is not None and self._stop is not None:
            self._stop.set()
            try:
                self.loop.run_until_complete(asyncio.wait_for(self._owner, 10.0))
            except BaseException as exc:
                c.note(f"raw ClientSession close: {type(exc).__name__}: {exc}")
        self.loop.close()


def main() -> None:
    def extra(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--setup", action="store_true", help=f"create {PEER_VENV.name}'s virtualenv, then exit"
        )
        parser.add_argument("--runs", type=int, default=1, help="paired runs (each a full comparison)")
        parser.add_argument("--era", choices=["modern", "legacy"], default="modern", help="the fixtures' era")

    args = c.parse_args(__doc__.splitlines()[0], extra)
    if args.setup:
        setup()
        return
    add_peer_venv()
    c.quiet_logs()
    rounds, calls = (4, 20) if args.quick else (20, 100)  # 2,000 calls a side
    c.print_header(
        f"mcp_sync vs mcp-haystack, per call ÷ each side's raw client (stdio echo, {args.era})", args.quick
    )
    from haystack_integrations.tools.mcp import MCPTool, StdioServerInfo

    from mcp_sync import MCPHub

    c.note(
        f"mcp-haystack {c.package_version('mcp-haystack')}, haystack-ai {c.package_version('haystack-ai')}"
    )
    flags = ("--era", args.era)
    load = c.LoadMeter()
    hub = MCPHub([c.fixture_config("bench", *flags)]).start()
    raw = c.RawSession(c.fixture_params(*flags), cache=None).open()
    peer = MCPTool(name="echo", server_info=StdioServerInfo(command=c.PYTHON, args=c.fixture_args(*flags)))
    peer_raw = RawClientSession(c.fixture_params(*flags)).open()
    try:
        assert hub.servers["bench"].state == "ready", hub.servers["bench"]
        raw.run(raw.client.list_tools())
        c.note(f"protocol: hub {hub.servers['bench'].protocol_version}, raw {raw.client.protocol_version}")
        peer.invoke(text="x")  # connects on first use
        arguments = {"text": "x"}
        clock = time.perf_counter_ns
        call_tool, invoke = hub.call_tool, peer.invoke
        cpu: dict[str, list[float]] = {}

        timed = functools.partial(c.cpu_recorded, cpu)

        def hub_calls() -> list[int]:
            out = []
            for _ in range(calls):
                t0 = clock()
                call_tool("mcp__bench__echo", arguments)
                out.append(clock() - t0)
            return out

        async def raw_calls() -> list[int]:
            client, out = raw.client, []
            for _ in range(calls):
                t0 = clock()
                await client.call_tool("echo", arguments)
                out.append(clock() - t0)
            return out

        def peer_calls() -> list[int]:
            out = []
            for _ in range(calls):
                t0 = clock()
                invoke(text="x")
                out.append(clock() - t0)
            return out

        async def peer_raw_calls() -> list[int]:
            session, out = peer_raw.session, []
            for _ in range(calls):
                t0 = clock()
                await session.call_tool("echo", arguments)
                out.append(clock() - t0)
            return out

        ahead = ahead_cpu = 0
        for run in range(args.runs):
            cpu.clear()
            sides = [
                c.Side("hub", timed("hub", hub_calls)),
                c.Side("raw", timed("raw", lambda: raw.run(raw_calls()))),
                c.Side("haystack", timed("haystack", peer_calls)),
                c.Side(
                    "haystack raw",
                    timed("haystack raw", lambda: peer_raw.loop.run_until_complete(peer_raw_calls())),
                ),
            ]
            c.note(f"run {run + 1}/{args.runs}: {rounds} rounds x {calls} calls per side, alternating")
            c.alternate(sides, rounds, warmup=1)
            hub_side, raw_side, peer_side, peer_raw_side = sides

            def paired(a: c.Side, b: c.Side) -> float:
                return c.median(
                    [c.ratio(c.median(x), c.median(y)) for x, y in zip(a.rounds, b.rounds, strict=True)]
                )

            def cpu_ratio(a: str, b: str) -> float:
                return c.median([c.ratio(x, y) for x, y in zip(cpu[a][1:], cpu[b][1:], strict=True)])

            def cpu_us(name: str) -> float:
                return c.median(cpu[name][1:]) * 1e6

            hub_ratio, peer_ratio = paired(hub_side, raw_side), paired(peer_side, peer_raw_side)
            hub_cpu, peer_cpu = cpu_ratio("hub", "raw"), cpu_ratio("haystack", "haystack raw")
            ahead += hub_ratio < peer_ratio
            ahead_cpu += hub_cpu < peer_cpu
            for side in sides:
                per_call = c.summary(side.samples, 1e6, " µs")
                c.note(f"  {side.name:13s} per call: {per_call}; CPU {cpu_us(side.name):.0f} µs")
            c.note(
                f"  run {run + 1}: per call ÷ raw: hub {hub_ratio:.3f}, haystack {peer_ratio:.3f}; "
                f"client CPU per call ÷ raw: hub {hub_cpu:.3f}, haystack {peer_cpu:.3f}"
            )
        c.note(load.report())

        results = c.Results()
        results.add(
            "per call ÷ raw (median of per-round ratios; last run)",
            c.x(hub_ratio),
            c.x(peer_ratio) + " (mcp-haystack ÷ ClientSession)",
            c.x(c.ratio(hub_ratio, peer_ratio)),
            "< mcp-haystack's",
            hub_ratio < peer_ratio,
        )
        results.add(
            "client CPU per call ÷ raw (median of per-round ratios; last run)",
            f"{c.x(hub_cpu)} ({cpu_us('hub'):.0f} µs vs {cpu_us('raw'):.0f} µs)",
            f"{c.x(peer_cpu)} ({cpu_us('haystack'):.0f} µs vs {cpu_us('haystack raw'):.0f} µs)",
            c.x(c.ratio(hub_cpu, peer_cpu)),
            "-",
        )
        for what, count in (("per call", ahead), ("client CPU per call", ahead_cpu)):
            results.add(
                f"runs in which the hub's {what} ÷ raw is below mcp-haystack's",
                f"{count} of {args.runs}",
                "-",
                "-",
                "≥ 4 of 5" if args.runs == 5 else "-",
                count >= 4 if args.runs == 5 else None,
            )
        results.print()
    finally:
        hub.close()
        raw.close()
        peer.close()
        peer_raw.close()


if __name__ == "__main__":
    main()
