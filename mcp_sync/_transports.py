"""Transports for one server: the SDK's stdio and Streamable HTTP clients, observed.

Three things the SDK does not expose are needed here:

- when the transport's read stream ends (a stdio server that dies while idle
  fires nothing public): `_ObservedReadStream` reports the end;
- when an HTTP server stops accepting connections: the SDK retries its GET
  stream quietly and gives up without a word, so `_ObservedHTTPTransport`
  reports the refused connection;
- the stdio child's pid (the SDK keeps the process to itself): a context-local
  hook around the SDK's spawn function reports the process, so closing can
  kill the child's process group when the SDK's own shutdown runs out of time,
  and interpreter exit can leave no server behind.

The child's stderr goes through a pipe into the `mcp_sync.server.<name>` logger
at DEBUG, not to the user's terminal (and a notebook's `sys.stderr` has no
file descriptor to give a child anyway).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp.client.stdio as sdk_stdio
from mcp import StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from ._child_env import child_environment
from ._config import HttpServerConfig, StdioServerConfig

__all__ = ["open_transport"]

logger = logging.getLogger("mcp_sync")

# The longest stderr line kept in one log record; a server printing megabytes on one line is cut.
_STDERR_LINE_LIMIT = 64 * 1024
# How long closing waits for the last stderr lines of a child that has exited.
_STDERR_DRAIN_TIMEOUT = 0.5

_spawn_observer: contextvars.ContextVar[Callable[[Any], None] | None] = contextvars.ContextVar(
    "mcp_sync_spawn_observer", default=None
)
_sdk_spawn = sdk_stdio._create_platform_compatible_process


async def _observed_spawn(*args: Any, **kwargs: Any) -> Any:
    """The SDK's spawn, reporting the process to whoever set the observer in this context."""
    process = await _sdk_spawn(*args, **kwargs)
    observer = _spawn_observer.get()
    if observer is not None:
        observer(process)
    return process


# Without an observer set (anyone else's stdio_client) this behaves exactly like the SDK's function.
sdk_stdio._create_platform_compatible_process = _observed_spawn


class _ObservedReadStream:
    """Delegates to the transport's read stream and calls `on_end` once when it ends."""

    def __init__(self, inner: Any, on_end: Callable[[BaseException | None], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            self._on_end(exc)
            raise

    def __aiter__(self) -> _ObservedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _ObservedReadStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


class _ObservedHTTPTransport(httpx2.AsyncHTTPTransport):
    """The default HTTP transport, calling `on_refused` when a connection to the server cannot be made."""

    def __init__(self, on_refused: Callable[[], None]) -> None:
        # No cap on connections: every call in flight holds one (its response stream), and a capped
        # pool would queue the 101st call, and the session's DELETE at close, behind the others.
        super().__init__(limits=httpx2.Limits(max_connections=None, max_keepalive_connections=20))
        self._on_refused = on_refused

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await super().handle_async_request(request)
        except httpx2.ConnectError:
            self._on_refused()
            raise


@asynccontextmanager
async def open_transport(
    config: StdioServerConfig | HttpServerConfig,
    *,
    on_end: Callable[[BaseException | None], None],
    on_spawn: Callable[[int], None],
    on_refused: Callable[[], None],
) -> AsyncIterator[TransportStreams]:
    """Open the server's transport; `on_end` fires when its read stream ends, `on_spawn` gets a child pid,
    `on_refused` fires when an HTTP server refuses a connection."""
    async with AsyncExitStack() as stack:
        if isinstance(config, StdioServerConfig):
            streams = await _enter_stdio(stack, config, on_spawn)
        else:
            # The SDK's own client settings (create_mcp_http_client), with the observing transport.
            http_client = httpx2.AsyncClient(
                headers=dict(config.headers),
                timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
                transport=_ObservedHTTPTransport(on_refused),
            )
            await stack.enter_async_context(http_client)
            streams = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=http_client)
            )
        read_stream, write_stream = streams
        yield _ObservedReadStream(read_stream, on_end), write_stream


async def _enter_stdio(
    stack: AsyncExitStack, config: StdioServerConfig, on_spawn: Callable[[int], None]
) -> TransportStreams:
    params = StdioServerParameters(
        command=config.command,
        args=list(config.args),
        env=child_environment(config.env),
        cwd=config.cwd,
    )
    read_fd, write_fd = os.pipe()
    errlog = os.fdopen(write_fd, "w")
    stack.push_async_callback(_forward_stderr(read_fd, config.server_name))

    def report(process: Any) -> None:
        on_spawn(process.pid)
        # The child holds its own copy now; ours would keep the pipe open after the child exits.
        errlog.close()

    token = _spawn_observer.set(report)
    try:
        streams: TransportStreams = await stack.enter_async_context(
            sdk_stdio.stdio_client(params, errlog=errlog)
        )
    finally:
        _spawn_observer.reset(token)
        if not errlog.closed:
            errlog.close()
    return streams


def _forward_stderr(read_fd: int, server_name: str) -> Callable[[], Awaitable[None]]:
    """Start forwarding the child's stderr lines to the logger; returns the closer for the exit stack."""
    server_logger = logging.getLogger(f"mcp_sync.server.{server_name}")
    task = asyncio.get_running_loop().create_task(_forward_lines(read_fd, server_logger))

    async def close() -> None:
        # The child is gone by now, so the pipe is at EOF or about to be; never wait long for it.
        with anyio.move_on_after(_STDERR_DRAIN_TIMEOUT):
            await asyncio.shield(task)
        task.cancel()

    return close


async def _forward_lines(read_fd: int, server_logger: logging.Logger) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_STDERR_LINE_LIMIT)
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    try:
        while True:
            try:
                line = await reader.readline()
            except ValueError:  # longer than the limit: the reader has dropped it
                server_logger.debug("(a stderr line over %d bytes was dropped)", _STDERR_LINE_LIMIT)
                continue
            if not line:
                return
            server_logger.debug("%s", line.decode(errors="replace").rstrip())
    finally:
        transport.close()
