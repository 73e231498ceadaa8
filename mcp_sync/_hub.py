"""`MCPHub`: the blocking facade over every configured server.

Thread model (the whole of it):

- each server runs on its own daemon loop thread, `mcp-sync:<server>`;
- callers block in their own thread on a `concurrent.futures.Future`; any
  number of threads may call at once, and calls to one server share its session;
- listeners (tool added/removed/changed, server state, progress) run on one
  callback thread, `mcp-sync:callbacks`, in the order things happened, never on
  a loop thread: a slow listener or one that calls back into the hub is safe.

A server that fails to start is isolated (its state says why) unless it is
`required`. Closing is bounded even for servers that ignore every signal, and
an interpreter that exits without `close()` still leaves no server behind.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType, TracebackType
from typing import Any

from ._agent import call_tool_safe
from ._callbacks import ListenerSet, ProgressCallback
from ._config import HttpServerConfig, ServerConfig, StdioServerConfig, load_config_file, parse_server_configs
from ._connection import CLOSE_TIMEOUT, ServerConnection, kill_live_children
from ._display import hub_html
from ._errors import ConfigError, ServerStartError, ToolNotFoundError
from ._registry import Tool, ToolRegistry
from ._results import ToolResult, error_result, from_native_value

__all__ = ["MCPHub", "ServerStateCallback"]

logger = logging.getLogger("mcp_sync")

ServerStateCallback = Callable[[str, str, BaseException | None], object]
"""Called as `callback(server_name, state, error)` when a server's state changes."""

ConfigEntries = Iterable[Mapping[str, Any] | StdioServerConfig | HttpServerConfig]

# Beyond a server's own connect deadline, time start() allows for its thread to report back.
_START_GRACE = 5.0
# At interpreter exit, how long open hubs get to close before their children are killed.
_EXIT_CLOSE_TIMEOUT = 3.0


class MCPHub:
    """Connects to MCP servers and serves their tools, namespaced, from one registry."""

    def __init__(
        self,
        servers: ConfigEntries = (),
        *,
        registry: ToolRegistry | None = None,
    ) -> None:
        self._configs = parse_server_configs(servers)
        self._config_path: str | os.PathLike[str] | None = None
        self._owns_registry = registry is None
        self.registry = registry if registry is not None else ToolRegistry()
        self._connections: dict[str, ServerConnection] = {}
        self._state_listeners: ListenerSet[tuple[str, str, BaseException | None]] = ListenerSet()
        self._lock = threading.RLock()
        self._started = False
        self._closed = False

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, registry: ToolRegistry | None = None) -> MCPHub:
        """A hub for the servers in a file: our YAML `servers:` list, or an `mcpServers` JSON/YAML map."""
        hub = cls(load_config_file(path), registry=registry)
        hub._config_path = path
        return hub

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> MCPHub:
        """Connect every enabled server in parallel; return once each is ready or failed.

        Raises `ServerStartError` (after closing everything) if a `required` server failed.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("this hub is closed; make a new one")
            if self._started:
                return self
            self._started = True
            _open_hubs.add(self)
            started = self._start_servers(self._configs)
        failures = {
            name: connection.error or RuntimeError(connection.state)
            for name, connection in started.items()
            if connection.config.required and connection.state != "ready"
        }
        if failures:
            self.close()
            details = "; ".join(f"{name}: {error}" for name, error in failures.items())
            raise ServerStartError(f"required server(s) failed to start: {details}", failures)
        return self

    def close(self) -> None:
        """Disconnect every server and stop every thread; bounded, idempotent, safe from any thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            connections = list(self._connections.values())
        self._stop_servers(connections)
        if self._owns_registry:
            self.registry.close()
        _open_hubs.discard(self)

    def __enter__(self) -> MCPHub:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def reload(self, servers: ConfigEntries | None = None) -> None:
        """Apply a new configuration: re-read the file (or take `servers`) and change only what changed.

        Servers whose configuration is unchanged and that are ready stay connected, with the same tools
        and names; changed, failed or disconnected ones reconnect; removed ones close; new ones start.
        """
        if servers is not None:
            configs = parse_server_configs(servers)
        elif self._config_path is not None:
            configs = load_config_file(self._config_path)
        else:
            configs = list(self._configs)
        with self._lock:
            if self._closed:
                raise RuntimeError("this hub is closed; make a new one")
            self._configs = configs
            if not self._started:
                return
            wanted = {config.server_name: config for config in configs if config.enabled}
            outdated = [
                connection
                for name, connection in self._connections.items()
                if wanted.get(name) != connection.config or connection.state != "ready"
            ]
            self._stop_servers(outdated)
            self._start_servers([config for name, config in wanted.items() if name not in self._connections])

    def _start_servers(self, configs: Iterable[ServerConfig]) -> dict[str, ServerConnection]:
        started: dict[str, ServerConnection] = {}
        for config in configs:
            if not config.enabled:
                continue
            connection = ServerConnection(config, self.registry, on_state=self._announce_state)
            try:
                self.registry.reserve_server(config.server_name, connection)
            except ConfigError as exc:
                logger.error("%s", exc)
                connection.fail_without_starting(exc)
            else:
                connection.start()
            self._connections[config.server_name] = connection
            started[config.server_name] = connection
        for connection in started.values():
            connection.wait_ready(connection.config.connect_timeout + _START_GRACE)
        return started

    def _stop_servers(self, connections: list[ServerConnection]) -> None:
        for connection in connections:
            connection.close()
        deadline = time.monotonic() + CLOSE_TIMEOUT
        for connection in connections:
            connection.join(max(0.0, deadline - time.monotonic()))
            if self.registry.server_owner(connection.name) is connection:
                self.registry.release_server(connection.name)
            if self._connections.get(connection.name) is connection:
                del self._connections[connection.name]

    # -- servers and tools -----------------------------------------------------------------------------

    @property
    def servers(self) -> Mapping[str, ServerConnection]:
        """The started servers by name; each has `.state`, `.error`, `.tools`."""
        return MappingProxyType(dict(self._connections))

    def tools(self) -> list[Tool]:
        """Every tool in the registry (MCP and native), sorted by public name."""
        return self.registry.tools()

    def on_tool_added(self, callback: Callable[[Tool], object]) -> Callable[[], None]:
        return self.registry.on_tool_added(callback)

    def on_tool_removed(self, callback: Callable[[Tool], object]) -> Callable[[], None]:
        return self.registry.on_tool_removed(callback)

    def on_tool_changed(self, callback: Callable[[Tool], object]) -> Callable[[], None]:
        return self.registry.on_tool_changed(callback)

    def on_server_state(self, callback: ServerStateCallback) -> Callable[[], None]:
        """Call `callback(server_name, state, error)` on every state change from now on."""
        return self._state_listeners.subscribe(lambda event: callback(*event))

    def _announce_state(self, connection: ServerConnection) -> None:
        event = (connection.name, connection.state, connection.error)
        self.registry.dispatcher.post(self._state_listeners.snapshot(), event)

    # -- calls -----------------------------------------------------------------------------------------

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Call a tool by public name and block until its result.

        `timeout` (seconds) defaults to the server's `tool_call_timeout_ms`; setting `cancel` from any
        thread ends the call. On timeout, cancel or KeyboardInterrupt the request is cancelled on the
        server too. `progress(progress, total, message)` runs on the callback thread, before this returns.
        Raises `ToolNotFoundError`, `ToolCallTimeoutError`, `ToolCallCancelledError`,
        `ServerDisconnectedError` or `ToolCallError`; a tool's own failure is a result with `is_error`.
        """
        tool, connection = self._resolve(name)
        if connection is None:
            return self._call_native(name, arguments)
        assert tool.raw_name is not None
        return connection.call(
            tool.raw_name, arguments, public_name=name, timeout=timeout, cancel=cancel, progress=progress
        )

    def submit(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> concurrent.futures.Future[ToolResult]:
        """Start a call and return at once; `future.cancel()` cancels the request on the server."""
        tool, connection = self._resolve(name)
        if connection is None:
            future = concurrent.futures.Future[ToolResult]()
            future.set_result(self._call_native(name, arguments))
            return future
        assert tool.raw_name is not None
        return connection.submit(
            tool.raw_name, arguments, public_name=name, timeout=timeout, progress=progress
        )

    def _resolve(self, name: str) -> tuple[Tool, ServerConnection | None]:
        """The tool and the connection that runs it (None for a native tool), whichever hub owns it."""
        tool = self.registry.get(name)
        if tool is None:
            raise ToolNotFoundError(name)
        if tool.server_name is None:
            return tool, None
        connection = self.registry.server_owner(tool.server_name)
        if not isinstance(connection, ServerConnection):
            raise ToolNotFoundError(name)
        return tool, connection

    def _call_native(self, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        function = self.registry.native_function(name)
        if function is None:
            raise ToolNotFoundError(name)
        try:
            return from_native_value(function(**dict(arguments or {})))
        except Exception as exc:
            logger.warning("native tool %s raised", name, exc_info=True)
            return error_result(f"{name} failed: {type(exc).__name__}: {exc}")

    def __repr__(self) -> str:
        states = ", ".join(f"{name}={c.state}" for name, c in self._connections.items())
        return f"<MCPHub servers=[{states}] tools={len(self.registry)}>"

    # -- agent-loop helpers and display ----

    def function_specs(self) -> list[dict[str, Any]]:
        """Every tool in the registry as an OpenAI-style function spec, sorted by name."""
        return self.registry.function_specs()

    def call_tool_safe(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """`call_tool` for agent loops: always a result, never an `MCPSyncError`.

        An unknown tool, a timeout, a cancellation, a lost server or a protocol error becomes a
        `ToolResult` with `is_error=True` and a message for the model. `arguments` may be the JSON
        string a model emitted; invalid JSON, or JSON that is not an object, is an error result too.
        """
        return call_tool_safe(self, name, arguments, timeout=timeout, cancel=cancel, progress=progress)

    def _repr_html_(self) -> str:
        """The servers (state, tool count, error) and the tools as HTML tables, for notebooks."""
        return hub_html(self)


_open_hubs: weakref.WeakSet[MCPHub] = weakref.WeakSet()


def _close_at_exit() -> None:
    """Close hubs the program left open, then kill any server child that is still alive."""
    hubs = list(_open_hubs)
    closers = [threading.Thread(target=hub.close, name="mcp-sync:exit", daemon=True) for hub in hubs]
    for closer in closers:
        closer.start()
    deadline = time.monotonic() + _EXIT_CLOSE_TIMEOUT
    for closer in closers:
        closer.join(max(0.0, deadline - time.monotonic()))
    kill_live_children()


atexit.register(_close_at_exit)
