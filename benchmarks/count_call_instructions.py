"""Instructions per blocking call (client process, all threads), counted by valgrind's callgrind.

Not a timing: an instruction count does not change with the machine's load, so two versions of the
call path can be compared on a busy machine. Run it under callgrind; it zeroes the counters just
before its measured calls and dumps them just after (with `callgrind_control`), then reads the dump:

    valgrind --tool=callgrind python benchmarks/count_call_instructions.py stdio   # or http, stub, floor

(callgrind writes `callgrind.out.<pid>` and the dump `callgrind.out.<pid>.1` in the current folder.)

Sides: `stdio` and `http` (`MCPHub.call_tool` of the fixture's `echo` over stdio, or Streamable HTTP
on 127.0.0.1); `stub` (the hub's own path, its session's client swapped for an in-process stub, as in
`bench_call_overhead.py`); `floor` (a raw `mcp.Client(cache=None)` behind a loop thread, each call
handed over with `run_coroutine_threadsafe(...).result()`: the design's floor). The fixture server
runs outside valgrind (its instructions are not counted). Expect a few minutes: callgrind runs the
client about 50 times slower.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _caller(side: str, stack: list[Callable[[], object]]) -> Callable[[], object]:
    """The call to count, for `side`; what closes it goes on `stack`."""
    arguments = {"text": "x"}
    if side == "floor":
        raw = c.RawSession(c.fixture_params(), cache=None).open()
        raw.run(raw.client.list_tools())
        thread = threading.Thread(target=raw.loop.run_forever, daemon=True)
        thread.start()

        def stop() -> None:
            raw.loop.call_soon_threadsafe(raw.loop.stop)
            thread.join()
            raw.close()

        stack.append(stop)
        return lambda: asyncio.run_coroutine_threadsafe(
            raw.client.call_tool("echo", arguments), raw.loop
        ).result()
    from mcp_sync import MCPHub

    config: dict[str, Any] = c.fixture_config("bench", connect_timeout_ms=600_000)
    if side == "http":
        port = _free_port()
        server = subprocess.Popen(
            [c.PYTHON, str(c.FIXTURE_SERVER), "--transport", "http", "--port", str(port)],
            stdout=subprocess.DEVNULL,
        )
        stack.append(lambda: (server.terminate(), server.wait()))
        c.wait_until(lambda: _listening(port), timeout=120.0, interval=0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        config = {
            "server_name": "bench",
            "transport": "streamable-http",
            "url": url,
            "connect_timeout_ms": 600_000,
        }
    hub = MCPHub([config]).start()
    stack.append(hub.close)
    assert hub.servers["bench"].state == "ready", hub.servers["bench"]
    if side == "stub":
        import mcp_types as types

        session: Any = hub.servers["bench"]._session
        fixed = types.CallToolResult(content=[types.TextContent(type="text", text="x")])
        real = session.client

        class StubClient:
            protocol_version = real.protocol_version
            server_capabilities = real.server_capabilities

            async def call_tool(self, name: str, arguments: Any = None, *args: Any, **kwargs: Any) -> Any:
                return fixed

        session.client = StubClient()
    return lambda: hub.call_tool("mcp__bench__echo", arguments)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
    except OSError:
        return False
    return True


def _callgrind(*args: str) -> None:
    subprocess.run(
        ["callgrind_control", *args, str(os.getpid())],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("side", choices=["stdio", "http", "stub", "floor"])
    parser.add_argument("--calls", type=int, default=None, help="counted calls (default 300; stub 1000)")
    parser.add_argument("--warm-up", type=int, default=50, help="calls made before counting")
    args = parser.parse_args()
    calls = args.calls or (1000 if args.side == "stub" else 300)
    c.quiet_logs()
    stack: list[Callable[[], object]] = []
    try:
        call = _caller(args.side, stack)
        for _ in range(args.warm_up):
            call()
        _callgrind("-z")
        for _ in range(calls):
            call()
        _callgrind("-d", "counted")
        time.sleep(0.5)
    finally:
        for close in reversed(stack):
            close()
    dump = Path(f"callgrind.out.{os.getpid()}.1")
    lines = dump.read_text().splitlines() if dump.exists() else []
    total = next((int(line.split()[1]) for line in lines if line.startswith("summary:")), None)
    if total is None:
        print(f"{args.side}: no callgrind dump found (run under valgrind --tool=callgrind)", file=sys.stderr)
        return
    print(f"{args.side}: {total / calls:,.0f} instructions per call ({calls} calls)")


if __name__ == "__main__":
    main()
