"""A real 2025-era MCP server on the 1.x `mcp` SDK (FastMCP), for the mcp_sync tests.

It runs from its own virtualenv (tests/servers/requirements-v1.txt; tests/conftest.py
builds it under ``.test-venvs/mcp1-py<version>``), never the 2.x one the library uses. It speaks only
the ``initialize`` handshake; a ``mode="auto"`` client's ``server/discover`` probe gets an
error (stdio) or an HTTP 400 (Streamable HTTP, no session id) and falls back.

Flags
-----
--transport stdio|http   stdio (default), or Streamable HTTP on 127.0.0.1 at ``/mcp``.
--port N                 HTTP port, 0 (default) picks one; prints ``LISTENING <port>`` once up.
--events PATH            JSON lines as the 2.x fixture writes them: ready, started /
                         cancelled / finished (``sleep``), tool_added, tool_removed, announced.

Tools
-----
echo(text), add(a, b), sleep(seconds, tag=""), progress(steps, delay=0.0), add_tool(name) /
remove_tool(name) (announce ``notifications/tools/list_changed``), announce(n), pid(),
get_env(name).
"""

import argparse
import asyncio
import json
import os
import socket
import sys
import time
from typing import Any

import anyio
import uvicorn
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.lowlevel import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server


class EventSink:
    """Appends one JSON object per line to the events file (no-op without one)."""

    def __init__(self, path: str | None) -> None:
        self._path = path

    def write(self, event: str, **fields: Any) -> None:
        if self._path is None:
            return
        with open(self._path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"event": event, "time": time.time(), **fields}) + "\n")


def build_server(events: EventSink) -> FastMCP:
    mcp = FastMCP(
        "mcp-sync-legacy-v1", instructions="1.x SDK server for the mcp_sync tests.", log_level="WARNING"
    )

    # FastMCP's handshake advertises tools.listChanged=false; this server does announce changes.
    lowlevel = mcp._mcp_server
    original_options = lowlevel.create_initialization_options

    def options_with_list_changed(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return original_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities
        )

    lowlevel.create_initialization_options = options_with_list_changed  # type: ignore[method-assign]

    async def announce_tools_changed(ctx: Context) -> None:
        await ctx.session.send_tool_list_changed()
        events.write("announced", era="legacy")

    @mcp.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    async def sleep(seconds: float, tag: str = "") -> str:
        """Sleep for the given seconds; records started / cancelled / finished events."""
        events.write("started", tool="sleep", tag=tag, seconds=seconds)
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            events.write("cancelled", tool="sleep", tag=tag)
            raise
        events.write("finished", tool="sleep", tag=tag)
        return f"slept {seconds}"

    @mcp.tool()
    async def progress(steps: int, ctx: Context, delay: float = 0.0) -> str:
        """Send `steps` progress notifications, then return "done"."""
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
            if delay > 0:
                await anyio.sleep(delay)
        return "done"

    @mcp.tool()
    async def add_tool(name: str, ctx: Context) -> str:
        """Register a new tool `name` (it echoes its `text` argument) and announce the change."""

        def dynamic(text: str = "") -> str:
            return text

        mcp.add_tool(dynamic, name=name, description=f"Tool {name}, added at run time.")
        events.write("tool_added", name=name)
        await announce_tools_changed(ctx)
        return f"added {name}"

    @mcp.tool()
    async def remove_tool(name: str, ctx: Context) -> str:
        """Remove tool `name` and announce the change."""
        mcp.remove_tool(name)
        events.write("tool_removed", name=name)
        await announce_tools_changed(ctx)
        return f"removed {name}"

    @mcp.tool()
    async def announce(n: int, ctx: Context) -> str:
        """Announce a tools change n times in a burst without changing anything."""
        for _ in range(n):
            await announce_tools_changed(ctx)
        return f"announced {n}"

    @mcp.tool()
    def pid() -> int:
        """Return the server's process id."""
        return os.getpid()

    @mcp.tool()
    def get_env(name: str) -> str:
        """Return the environment variable's value, or "<unset>"."""
        return os.environ.get(name, "<unset>")

    return mcp


async def serve_stdio(mcp: FastMCP, events: EventSink) -> None:
    lowlevel = mcp._mcp_server
    async with stdio_server() as (read_stream, write_stream):
        events.write("ready", pid=os.getpid(), transport="stdio", era="legacy")
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    events.write("stdin_closed")


async def serve_http(mcp: FastMCP, port: int, events: EventSink) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        mcp.streamable_http_app(),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=2,
        lifespan="on",
    )
    web = uvicorn.Server(config)
    task = asyncio.create_task(web.serve(sockets=[sock]))
    while not web.started:
        if task.done():
            await task
            raise SystemExit("uvicorn stopped before it started listening")
        await asyncio.sleep(0.01)
    events.write("ready", pid=os.getpid(), transport="http", era="legacy", port=port)
    sys.stdout.write(f"LISTENING {port}\n")
    sys.stdout.flush()
    await task


def main() -> None:
    parser = argparse.ArgumentParser(description="mcp_sync legacy test server (mcp 1.x SDK)")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--events", default=None)
    args = parser.parse_args()
    events = EventSink(args.events)
    mcp = build_server(events)
    if args.transport == "http":
        asyncio.run(serve_http(mcp, args.port, events))
    else:
        anyio.run(serve_stdio, mcp, events)


if __name__ == "__main__":
    main()
