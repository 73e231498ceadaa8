"""The tool registry: one thread-safe map from public name to `Tool`, for MCP and native tools.

Each MCP server's tools form a generation that is replaced as a whole:

- a listing that repeats a name is rejected and the previous generation stays;
- a name already held by another owner rolls the new generation back
  completely: the server is left with zero tools, and the error is loud;
- tools whose definition did not change keep their registration;
- listeners hear exactly what was added, removed and changed, in order.

Every mutation and the queueing of its events happen under one lock, so events
reach listeners (on the dispatcher thread) in the order the changes were made.
Mutations build a new map and swap it in (copy on write): lookups take no lock,
and a reader sees one whole generation, never half of a replacement.

A server's tools are written only through the `ServerLease` that reserved its
name, on behalf of one connection. Once the lease has ended (the connection
closed, disconnected or was replaced) its writes are refused, so a re-sync that
was still running when its server went away cannot bring the tools back.

After `os.fork()` the servers belong to the parent: in the child every lease ends and every
server's tools and name go, with the native tools registered `per_process` (such as a hub's
resource tools; listeners hear of the removals), and the host's own tools stay. So a
registry made before the fork is used in the child as in any process: a hub of the child's own can
connect the same server names, and no name leads to a connection that only the parent runs.

The registry is data plus change events: it knows nothing of hubs, connections,
agent loops or notebooks, which read it.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, overload

from .._runtime.callbacks import CallbackDispatcher, ListenerSet
from .._runtime.lifecycle import on_fork_in_child
from .._values.errors import ConfigError, ToolListError
from .._values.html import tools_html
from .._values.tool import NativeFunction, Tool, ToolChanges, function_specs, same_tool, sorted_tools
from .native import accepts_cancel, native_tool_from_function

__all__ = ["NativeFunction", "NativeTool", "ServerLease", "Tool", "ToolChanges", "ToolRegistry"]

logger = logging.getLogger("mcp_sync")


class NativeTool:
    """A registered host function and whether it takes the call's cancel Event."""

    __slots__ = ("function", "takes_cancel")

    def __init__(self, function: NativeFunction) -> None:
        self.function = function
        self.takes_cancel = accepts_cancel(function)


class ServerLease:
    """The right to write one server's tools, held by one connection generation.

    Made by `ToolRegistry.reserve_server`; ended by `end()` (the tools go, the name stays
    reserved) and given back by `release()` (the name is free). Writes through an ended lease
    are refused.
    """

    __slots__ = ("_active", "_registry", "owner", "server_name")

    def __init__(self, registry: ToolRegistry, server_name: str, owner: object) -> None:
        self._registry = registry
        self.server_name = server_name
        self.owner = owner
        self._active = True

    @property
    def active(self) -> bool:
        return self._active

    def replace_tools(self, tools: Sequence[Tool]) -> ToolChanges | None:
        """Make `tools` this server's generation (see `ToolRegistry`); None if the lease has ended."""
        return self._registry._replace_server_tools(self, tools)

    def end(self, then: Callable[[], object] | None = None) -> ToolChanges:
        """Remove the server's tools and refuse later writes; the name stays reserved. Idempotent.

        `then()` runs once the tools are gone and before anyone hears of it, under the registry's lock:
        a change it makes (the connection's state) is seen together with the removal, as one step."""
        return self._registry._end_lease(self, then)

    def release(self, then: Callable[[], object] | None = None) -> None:
        """End the lease and free the server's name (`then` as for `end`). Idempotent."""
        self._registry._release_lease(self, then)

    def __repr__(self) -> str:
        return f"<ServerLease {self.server_name!r} {'active' if self._active else 'ended'}>"


class ToolRegistry:
    """Thread-safe public-name -> Tool map shared by every server of a hub (and the host's own tools)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._tools: dict[str, Tool] = {}
        self._view: tuple[dict[str, Tool], Mapping[str, Tool]] = (self._tools, MappingProxyType(self._tools))
        self._native: dict[str, NativeTool] = {}
        self._per_process: frozenset[str] = frozenset()  # native tools a forked child drops
        self._by_server: dict[str, dict[str, Tool]] = {}
        self._leases: dict[str, ServerLease] = {}
        self._dispatcher = CallbackDispatcher()
        self._added: ListenerSet[Tool] = ListenerSet()
        self._removed: ListenerSet[Tool] = ListenerSet()
        self._changed: ListenerSet[Tool] = ListenerSet()
        _registries.add(self)

    def _after_fork(self) -> None:
        """In a forked child: the servers' connections are the parent's (no thread runs them here), so
        their leases end and their tools and names go, with the native tools marked `per_process`; the
        host's own tools stay. The lock is renewed: a parent thread may have held it at the fork."""
        self._lock = threading.RLock()
        for lease in self._leases.values():
            lease._active = False
        stale = [tool for tools in self._by_server.values() for tool in tools.values()]
        stale += [self._tools[name] for name in self._per_process if name in self._tools]
        self._leases = {}
        self._by_server = {}
        dropped, self._per_process = self._per_process, frozenset()
        self._native = {name: native for name, native in self._native.items() if name not in dropped}
        self._tools = {name: tool for name, tool in self._tools.items() if name in self._native}
        if stale:
            self._announce(ToolChanges(removed=sorted_tools(stale)))

    # -- reading ---------------------------------------------------------------------------------------

    def get(self, name: str) -> Tool | None:
        """The tool of that public name, or None."""
        return self._tools.get(name)

    def native_tool(self, name: str) -> NativeTool | None:
        """The host function registered under `name`, if it is a native tool."""
        return self._native.get(name)

    def tools(self) -> list[Tool]:
        """A snapshot of every tool, sorted by public name."""
        return sorted(self._tools.values(), key=lambda tool: tool.name)

    def snapshot(self) -> Mapping[str, Tool]:
        """Every tool by public name, as of now, as a read-only view. A change replaces the registry's
        map rather than editing it, and the view is made once per map, so a snapshot that `is` the
        previous one means nothing changed in between."""
        tools, (seen, view) = self._tools, self._view
        if seen is tools:
            return view
        view = MappingProxyType(tools)
        self._view = (tools, view)
        return view

    def server_tools(self, server_name: str) -> list[Tool]:
        """The tools of one server, sorted by public name ([] for a server with none)."""
        return sorted(self._by_server.get(server_name, {}).values(), key=lambda tool: tool.name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools())

    def __repr__(self) -> str:
        return f"<ToolRegistry tools={len(self._tools)} servers={len(self._by_server)}>"

    # -- listeners -------------------------------------------------------------------------------------

    def on_tool_added(self, callback: Callable[[Tool], object]) -> Callable[[], None]:
        """Call `callback(tool)` for each tool added from now on; returns the unsubscribe function."""
        return self._added.subscribe(callback)

    def on_tool_removed(self, callback: Callable[[Tool], object]) -> Callable[[], None]:
        """Call `callback(tool)` for each tool removed from now on; returns the unsubscribe function."""
        return self._removed.subscribe(callback)

    def on_tool_changed(self, callback: Callable[[Tool], object]) -> Callable[[], None]:
        """Call `callback(new_tool)` when a tool keeps its name but its definition changed."""
        return self._changed.subscribe(callback)

    @property
    def dispatcher(self) -> CallbackDispatcher:
        """The thread that runs this registry's callbacks; the hub posts its own events there too."""
        return self._dispatcher

    def close(self) -> None:
        """Deliver pending callbacks and stop the callback thread (it restarts if used again)."""
        self._dispatcher.close()

    # -- native tools ----------------------------------------------------------------------------------

    def register_native(
        self,
        name: str,
        function: NativeFunction,
        *,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        per_process: bool = False,
    ) -> Tool:
        """Add a host tool; a name that is already taken raises `ValueError`. `per_process=True` marks a
        function that works only in this process (it calls a hub's servers, as a hub's resource tool
        does): a forked child drops it, as it drops the servers' tools."""
        tool = Tool(name, description, dict(input_schema or {"type": "object", "properties": {}}))
        with self._lock:
            if name in self._tools:
                raise ValueError(f"a tool named {name!r} is already registered")
            if per_process:
                self._per_process = self._per_process | {name}
            self._native = {**self._native, name: NativeTool(function)}
            self._tools = {**self._tools, name: tool}
            self._announce(ToolChanges(added=(tool,)))
        return tool

    def unregister_native(self, name: str) -> None:
        """Remove a native tool (announced to listeners); `KeyError` if there is no such native tool."""
        with self._lock:
            if name not in self._native:
                raise KeyError(name)
            self._native = {key: value for key, value in self._native.items() if key != name}
            self._per_process = self._per_process - {name}
            tools = dict(self._tools)
            tool = tools.pop(name)
            self._tools = tools
            self._announce(ToolChanges(removed=(tool,)))

    # -- server generations ----------------------------------------------------------------------------

    def reserve_server(self, server_name: str, owner: object) -> ServerLease:
        """Claim a server's namespace for `owner` (what runs its tools) and return the lease through
        which its tools are written; a second active server with that name is a configuration error."""
        with self._lock:
            if server_name in self._leases:
                raise ConfigError(
                    f"server {server_name!r} is already connected to this registry; "
                    "give each server a unique server_name"
                )
            for other in self._leases:
                if _namespaces_overlap(server_name, other):
                    raise ConfigError(
                        f"server names {other!r} and {server_name!r} overlap: a tool name such as "
                        f"{_overlap_example(other, server_name)!r} could belong to either; rename one"
                    )
            lease = ServerLease(self, server_name, owner)
            self._leases = {**self._leases, server_name: lease}
            return lease

    def server_owner(self, server_name: str) -> object | None:
        """What runs the tools of `server_name` (its connection): any hub on this registry can call them."""
        lease = self._leases.get(server_name)
        return lease.owner if lease is not None else None

    def _replace_server_tools(self, lease: ServerLease, tools: Sequence[Tool]) -> ToolChanges | None:
        server_name = lease.server_name
        new: dict[str, Tool] = {}
        raw_names: set[str] = set()
        for tool in tools:
            if tool.server_name != server_name or tool.raw_name is None:
                raise ValueError(f"tool {tool.name!r} does not belong to server {server_name!r}")
            if tool.raw_name in raw_names or tool.name in new:
                raise ToolListError(
                    f"server {server_name!r} listed tool {tool.raw_name!r} more than once; "
                    "keeping its previous tools"
                )
            raw_names.add(tool.raw_name)
            new[tool.name] = tool

        with self._lock:
            if not lease.active:
                logger.debug("ignoring a tool listing from an ended connection to server %r", server_name)
                return None
            old = self._by_server.get(server_name, {})
            taken = [name for name in new if name in self._tools and name not in old]
            if taken:
                self._drop_server_tools(server_name)
                raise ToolListError(
                    f"server {server_name!r} lists tools whose public names are already taken by "
                    f"another owner ({', '.join(sorted(taken)[:5])}); none of its tools are registered"
                )
            added = [tool for name, tool in new.items() if name not in old]
            removed = [tool for name, tool in old.items() if name not in new]
            changed = [tool for name, tool in new.items() if name in old and not same_tool(old[name], tool)]
            # An unchanged tool keeps the very object that was registered.
            kept = {name: old[name] if same_tool(old.get(name), tool) else tool for name, tool in new.items()}
            registry = dict(self._tools)
            for tool in removed:
                del registry[tool.name]
            for tool in (*changed, *added):
                registry[tool.name] = tool
            self._tools = registry
            self._by_server = {**self._by_server, server_name: kept}
            changes = ToolChanges(sorted_tools(added), sorted_tools(removed), sorted_tools(changed))
            self._announce(changes)
            return changes

    def _end_lease(self, lease: ServerLease, then: Callable[[], object] | None = None) -> ToolChanges:
        with self._lock:
            lease._active = False
            if self._leases.get(lease.server_name) is not lease:
                if then is not None:
                    then()
                return ToolChanges()
            return self._drop_server_tools(lease.server_name, then)

    def _release_lease(self, lease: ServerLease, then: Callable[[], object] | None = None) -> None:
        with self._lock:
            self._end_lease(lease, then)
            if self._leases.get(lease.server_name) is lease:
                name = lease.server_name
                self._leases = {key: value for key, value in self._leases.items() if key != name}
                self._by_server = {key: value for key, value in self._by_server.items() if key != name}

    def _drop_server_tools(self, server_name: str, then: Callable[[], object] | None = None) -> ToolChanges:
        """Remove the server's tools, run `then()`, and announce the removal (under the lock)."""
        old = self._by_server.get(server_name)
        if old:
            self._tools = {name: tool for name, tool in self._tools.items() if name not in old}
            self._by_server = {**self._by_server, server_name: {}}
        if then is not None:
            then()
        if not old:
            return ToolChanges()
        changes = ToolChanges(removed=sorted_tools(old.values()))
        self._announce(changes)
        return changes

    def _announce(self, changes: ToolChanges) -> None:
        """Queue the events for `changes`; called with the lock held so order matches the changes."""
        for listeners, tools in (
            (self._removed, changes.removed),
            (self._changed, changes.changed),
            (self._added, changes.added),
        ):
            callbacks = listeners.snapshot()
            for tool in tools:
                self._dispatcher.post(callbacks, tool)

    # -- agent-loop helpers and display ----

    def function_specs(self) -> list[dict[str, Any]]:
        """Every tool as an OpenAI-style function spec, sorted by name; descriptions and schemas
        pass through untouched (a missing description becomes "")."""
        return function_specs(self.tools())

    @overload
    def register_function(
        self, function: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> Tool: ...

    @overload
    def register_function(
        self, function: None = None, *, name: str | None = None, description: str | None = None
    ) -> Callable[[Callable[..., Any]], Tool]: ...

    def register_function(
        self,
        function: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> Tool | Callable[[Callable[..., Any]], Tool]:
        """Register a host function as a native tool and return its `Tool`; also a decorator, bare
        (`@registry.register_function`) or with arguments (`@registry.register_function(name=...)`),
        which binds the decorated name to the `Tool`.

        The input schema comes from the type hints (pydantic), the description from the docstring;
        arguments are validated before the call, and invalid ones give an error result naming them.
        The name defaults to the function's; a name that is taken raises `ValueError`.
        """

        def register(target: Callable[..., Any]) -> Tool:
            tool_name, wrapper, text, schema = native_tool_from_function(
                target, name=name, description=description
            )
            return self.register_native(tool_name, wrapper, description=text, input_schema=schema)

        return register if function is None else register(function)

    def _repr_html_(self) -> str:
        """The tools as an HTML table, for notebooks."""
        return tools_html(self.tools())


_registries: weakref.WeakSet[ToolRegistry] = weakref.WeakSet()
"""Every live registry, for the fork hook below."""


def _forget_parent_servers() -> None:
    # Runs after `_runtime.callbacks` renewed every dispatcher (it registered its hook first, on
    # import), so the removals go to the child's own callback thread.
    for registry in list(_registries):
        registry._after_fork()


on_fork_in_child(_forget_parent_servers)


def _namespaces_overlap(first: str, second: str) -> bool:
    """Whether `mcp__<first>__<x>` can spell the same name as `mcp__<second>__<y>`.

    Only when the longer name is the shorter plus "_", or plus "__" and more: with "a" and "a__b",
    `mcp__a__b__x` is tool "b__x" of one and tool "x" of the other. Such a pair is refused up front,
    so that which server gets a contested name never depends on which connected first.
    """
    short, long = sorted((first, second), key=len)
    return long == short + "_" or long.startswith(short + "__")


def _overlap_example(first: str, second: str) -> str:
    return f"mcp__{max(first, second, key=len)}__x"
