"""Per-request overhead of resources and prompts: blocking `MCPHub.read_resource` and `get_prompt`
vs the raw async `mcp.Client`, beside `call_tool` for reference.

Both sides talk to the fixture server over stdio (each side its own process, started the same
way), the same number of requests per round, in alternating rounds in one process. The raw side
is an async program on its own loop, timed inside that loop; the hub side is a plain thread
making blocking calls. Requests: read `fixture://text/readme`, get prompt `greet(name="x")`,
call tool `echo(text="x")`.

    python benchmarks/bench_resource_prompt_overhead.py [--quick]
"""

from __future__ import annotations

import time
from collections.abc import Callable

import _common as c

TARGET_RATIO = 1.05


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    rounds, calls = (4, 20) if args.quick else (30, 100)
    c.print_header(
        "per-request overhead: read_resource, get_prompt, call_tool vs raw async mcp.Client", args.quick
    )

    from mcp_sync import MCPHub

    load = c.LoadMeter()
    hub = MCPHub([c.fixture_config("bench")]).start()
    raw = c.RawSession(c.fixture_params(), cache=None).open()
    clock = time.perf_counter_ns
    try:
        assert hub.servers["bench"].state == "ready", hub.servers["bench"]
        raw.run(raw.client.list_tools())

        def hub_loop(request: Callable[[], object]) -> Callable[[], list[float]]:
            def run() -> list[float]:
                out = []
                for _ in range(calls):
                    t0 = clock()
                    request()
                    out.append((clock() - t0) / 1e9)
                return out

            return run

        def raw_loop(make: Callable[[], object]) -> Callable[[], list[float]]:
            async def body() -> list[float]:
                out = []
                for _ in range(calls):
                    t0 = clock()
                    await make()  # type: ignore[misc]
                    out.append((clock() - t0) / 1e9)
                return out

            return lambda: raw.run(body())

        client = raw.client
        kinds = {
            "read_resource": (
                hub_loop(lambda: hub.read_resource("fixture://text/readme")),
                raw_loop(lambda: client.read_resource("fixture://text/readme")),
            ),
            "get_prompt": (
                hub_loop(lambda: hub.get_prompt("mcp__bench__greet", {"name": "x"})),
                raw_loop(lambda: client.get_prompt("greet", {"name": "x"})),
            ),
            "call_tool": (
                hub_loop(lambda: hub.call_tool("mcp__bench__echo", {"text": "x"})),
                raw_loop(lambda: client.call_tool("echo", {"text": "x"})),
            ),
        }
        sides = {kind: (c.Side(f"hub {kind}", h), c.Side(f"raw {kind}", r)) for kind, (h, r) in kinds.items()}
        c.note(f"{rounds} rounds x {calls} requests per side, alternating (plus 2 warm-up rounds)")
        c.alternate([side for pair in sides.values() for side in pair], rounds, warmup=2, progress="overhead")

        results = c.Results()
        for kind, (hub_side, raw_side) in sides.items():
            hub_med, raw_med = c.median(hub_side.samples), c.median(raw_side.samples)
            ratio = c.ratio(hub_med, raw_med)
            c.note(f"hub {kind}: {c.summary(hub_side.samples, 1e6, ' µs')}")
            c.note(f"raw {kind}: {c.summary(raw_side.samples, 1e6, ' µs')}")
            results.add(
                f"{kind} median per request (stdio)",
                c.us(hub_med),
                c.us(raw_med) + " (raw async Client)",
                c.x(ratio),
                f"≤ {TARGET_RATIO}",
                ratio <= TARGET_RATIO,
            )
        c.note(load.report())
        results.print()
    finally:
        raw.close()
        hub.close()


if __name__ == "__main__":
    main()
