"""Start-up of the command line: `mcp-sync --help` and `--version`, each a fresh process.

A command that only answers from its parser should cost about as much as starting Python, not as
much as importing the `mcp` SDK. Side by side, in alternating rounds, each a fresh subprocess:
`python -c pass` (the floor), `python -c "import mcp"` (what importing the SDK up front costs),
`python -m mcp_sync --help`, `python -m mcp_sync --version`, `python -m mcp_sync call --help`, and the
console script `mcp-sync --help` (its code, run by this Python) when it is installed. Best of N runs
each (start-up noise only ever adds time), with the median beside it.
Target: `--help` and `--version` at most 0.15 s, and well under the cost of `import mcp`.

    python benchmarks/bench_cli_startup.py [--quick]
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import _common as c

TARGET_SECONDS = 0.15
# A bound on one run: a start-up that takes longer than this is broken, not slow.
RUN_TIMEOUT = 60.0


def timed_run(argv: list[str]) -> float:
    """Wall time of one fresh process running `argv` to its end (output discarded)."""
    start = time.perf_counter()
    subprocess.run(
        argv,
        cwd=c.REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=RUN_TIMEOUT,
    )
    return time.perf_counter() - start


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    rounds = 3 if args.quick else 20
    c.print_header("bench_cli_startup: mcp-sync --help / --version vs python and import mcp", args.quick)
    commands: dict[str, list[str]] = {
        "python -c pass": [c.PYTHON, "-c", "pass"],
        "python -c 'import mcp'": [c.PYTHON, "-c", "import mcp"],
        "mcp-sync --help": [c.PYTHON, "-m", "mcp_sync", "--help"],
        "mcp-sync --version": [c.PYTHON, "-m", "mcp_sync", "--version"],
        "mcp-sync call --help": [c.PYTHON, "-m", "mcp_sync", "call", "--help"],
    }
    script = shutil.which("mcp-sync", path=str(Path(c.PYTHON).parent))
    if script is not None:
        # Through this interpreter: the script's own shebang may name another environment's Python.
        commands["console script mcp-sync --help"] = [c.PYTHON, script, "--help"]
    sides = [c.Side(name, lambda argv=argv: timed_run(argv)) for name, argv in commands.items()]
    load = c.LoadMeter()
    c.alternate(sides, rounds=rounds, warmup=1, progress="runs")
    best = {side.name: min(side.samples) for side in sides}
    for side in sides:
        c.note(f"{side.name:<32} best {c.ms(best[side.name])}  median {c.ms(c.median(side.samples))}")
    c.note(load.report())
    floor, sdk = best["python -c pass"], best["python -c 'import mcp'"]
    results = c.Results()
    for name in commands:
        if not name.startswith(("mcp-sync", "console")):
            continue
        value = best[name]
        results.add(
            f"{name} (best of {rounds})",
            c.ms(value),
            baseline=f"python -c pass {c.ms(floor)}; import mcp {c.ms(sdk)}",
            ratio=f"{c.x(c.ratio(value, floor), 2)} of pass; {c.x(c.ratio(value, sdk), 2)} of import mcp",
            target=f"≤ {TARGET_SECONDS:.2f} s",
            met=value <= TARGET_SECONDS,
        )
    results.print()


if __name__ == "__main__":
    main()
