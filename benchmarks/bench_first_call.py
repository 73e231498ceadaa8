"""The first call in a fresh process vs a steady one: `MCPHub.call_tool` and the raw `mcp.Client`.

Each round starts a fresh Python process per side (alternating which goes first). The process makes
its client (`MCPHub([...]).start()`, or a raw `mcp.Client(cache=None)` connected and listed on its own
loop), then calls the fixture's `echo` once (the first call: wall time and client CPU), then 30 more
times (steady: the median). What the first call pays beyond a steady one is what the process had
left to do lazily: imports, pydantic building a model or a check on first use, a tool's output-schema
validator, and the fresh server's own first call (which both sides pay alike).

    python benchmarks/bench_first_call.py [--quick]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import _common as c

TARGET = 2.0  # the first call at most twice a steady one
STEADY_CALLS = 30


def child(side: str) -> None:
    """One fresh process: the first call and the steady ones, as JSON on stdout."""
    c.quiet_logs()
    arguments = {"text": "x"}
    if side == "hub":
        from mcp_sync import MCPHub

        hub = MCPHub([c.fixture_config("bench")]).start()

        def call() -> object:
            return hub.call_tool("mcp__bench__echo", arguments)

        close = hub.close
    else:
        raw = c.RawSession(c.fixture_params(), cache=None).open()
        raw.run(raw.client.list_tools())

        def call() -> object:
            return raw.run(raw.client.call_tool("echo", arguments))

        close = raw.close
    try:
        walls, cpus = [], []
        for _ in range(1 + STEADY_CALLS):
            t0, cpu0 = time.perf_counter(), time.process_time()
            call()
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - cpu0)
    finally:
        close()
    print(json.dumps({"walls": walls, "cpus": cpus}))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    args = c.parse_args(__doc__.splitlines()[0])
    rounds = 2 if args.quick else 10
    c.print_header("first call in a fresh process vs a steady one (stdio echo)", args.quick)
    ratios: dict[str, list[float]] = {"hub": [], "raw": []}
    cpu_ratios: dict[str, list[float]] = {"hub": [], "raw": []}
    firsts: dict[str, list[float]] = {"hub": [], "raw": []}
    load = c.LoadMeter()
    for index in range(rounds):
        for side in ("hub", "raw") if index % 2 == 0 else ("raw", "hub"):
            out = subprocess.run(
                [c.PYTHON, __file__, "--child", side], capture_output=True, text=True, check=True, timeout=120
            )
            data = json.loads(out.stdout.strip().splitlines()[-1])
            steady = statistics.median(data["walls"][1:])
            steady_cpu = statistics.median(data["cpus"][1:])
            ratios[side].append(data["walls"][0] / steady)
            cpu_ratios[side].append(data["cpus"][0] / steady_cpu if steady_cpu else float("nan"))
            firsts[side].append(data["walls"][0])
    for side in ("hub", "raw"):
        c.note(
            f"{side}: first ÷ steady per process: {' '.join(f'{r:.2f}' for r in sorted(ratios[side]))}; "
            f"client CPU first ÷ steady, median {c.median(cpu_ratios[side]):.2f}; "
            f"first call median {c.median(firsts[side]) * 1e3:.2f} ms"
        )
    c.note(load.report())
    hub_ratio, raw_ratio = c.median(ratios["hub"]), c.median(ratios["raw"])
    results = c.Results()
    results.add(
        "first call in a fresh process ÷ steady call (median of processes)",
        c.x(hub_ratio, 2),
        c.x(raw_ratio, 2) + " (raw Client)",
        "-",
        f"≤ {TARGET:g}x",
        hub_ratio <= TARGET,
    )
    results.add(
        "client CPU of the first call ÷ a steady call's (median of processes)",
        c.x(c.median(cpu_ratios["hub"]), 2),
        c.x(c.median(cpu_ratios["raw"]), 2) + " (raw Client)",
        "-",
        "-",
    )
    results.print()


if __name__ == "__main__":
    main()
