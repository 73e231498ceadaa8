"""Smoke test of an installed mcp-syncio: run with the interpreter of the environment it is installed in,
from a directory outside the source tree (so `mcp_sync` can only come from the installed package).

    python smoke.py DEMO_SERVER        # DEMO_SERVER: a copy of examples/demo_server.py

Checks that the package imports from this environment's site-packages with its `py.typed`, that its
metadata and `mcp_sync.__version__` agree, that `mcp-sync --version` says the same, and that a hub and
the command both call a tool of the demo server for real. Exits 1 at the first failure, saying which.
Uses only the standard library and the installed package.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import sysconfig
from pathlib import Path

DISTRIBUTION = "mcp-syncio"
COMMAND = "mcp-sync"
CALL = ("mcp__demo__calculate", {"expression": "2 * (3 + 4)"}, "14")
"""A tool of the demo server, its arguments and the text it answers."""
CALL_TIMEOUT = 30.0
"""Seconds for one call: the demo server answers in milliseconds; the rest is room for a busy machine."""
COMMAND_TIMEOUT = 60.0
"""Seconds for one run of the command, which starts the demo server and the SDK's imports first."""


def fail(message: str) -> None:
    print(f"smoke: FAILED: {message}", file=sys.stderr)
    raise SystemExit(1)


def run_command(*args: str) -> str:
    """`mcp-sync ARGS` from this environment's scripts; its stdout. A non-zero exit fails."""
    script = Path(sysconfig.get_paths()["scripts"]) / COMMAND
    if not script.is_file():
        fail(f"no {COMMAND} command at {script}")
    done = subprocess.run(
        [str(script), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=COMMAND_TIMEOUT,
    )
    if done.returncode != 0:
        fail(f"`{COMMAND} {' '.join(args)}` exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        fail(f"usage: {argv[0]} DEMO_SERVER")
    demo_server = Path(argv[1]).resolve()

    import mcp_sync
    from mcp_sync import MCPHub

    package = Path(mcp_sync.__file__).resolve().parent
    site_packages = Path(sysconfig.get_paths()["purelib"]).resolve()
    if package.parent != site_packages:
        fail(f"mcp_sync imported from {package}, not from this environment's {site_packages}")
    if not (package / "py.typed").is_file():
        fail("the installed package has no py.typed")
    installed = importlib.metadata.version(DISTRIBUTION)
    if installed != mcp_sync.__version__:
        fail(f"{DISTRIBUTION} {installed} is installed, but mcp_sync.__version__ is {mcp_sync.__version__}")
    print(f"smoke: {DISTRIBUTION} {installed} imports from {site_packages}, with py.typed")

    version = run_command("--version").strip()
    if not version.startswith(f"{COMMAND} {mcp_sync.__version__} (mcp 2."):
        fail(f"`{COMMAND} --version` says {version!r}")
    print(f"smoke: {version}")

    # The demo server runs on this environment's interpreter, as `python` does in an active virtualenv.
    config = Path("servers.json")
    server = {"command": sys.executable, "args": [str(demo_server)]}
    config.write_text(json.dumps({"mcpServers": {"demo": server}}), encoding="utf-8")
    name, arguments, expected = CALL
    with MCPHub.from_file(config) as hub:
        result = hub.call_tool(name, arguments, timeout=CALL_TIMEOUT)
    if result.is_error or result.text != expected:
        fail(f"{name} answered {result.text!r} (error: {result.is_error}), not {expected!r}")
    print(f"smoke: the hub called {name}: {result.text}")

    answer = run_command("call", str(config), name, json.dumps(arguments), "--timeout", str(CALL_TIMEOUT))
    if answer.strip() != expected:
        fail(f"`{COMMAND} call` answered {answer.strip()!r}, not {expected!r}")
    print(f"smoke: `{COMMAND} call` called {name}: {answer.strip()}")


if __name__ == "__main__":
    main(sys.argv)
