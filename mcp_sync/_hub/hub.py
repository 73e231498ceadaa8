"""`MCPHub`: the blocking facade over every configured server.

Thread model (the whole of it):

- each server runs on its own daemon loop thread, `mcp-sync:<server>`;
- callers block in their own thread on a `concurrent.futures.Future`; any
  number of threads may call at once, and calls to one server share its session;
- a native tool's call runs on a daemon thread of its own (`mcp-sync:native:<tool>`),
  so that timeouts, cancellation and `submit()` behave as they do for MCP tools;
- listeners (tool added/removed/changed, server state, progress) run on one
  callback thread, `mcp-sync:callbacks`, in the order things happened, never on
  a loop thread: a slow listener or one that calls back into the hub is safe.

The lifecycle (start, reload, close, fork, exit, garbage collection) lives in
`_hub.servers.ServerSet`, its states in `_runtime.lifecycle`. This class holds the set and
the configuration, and resolves public names to what runs them.

Why one file of over 400 lines: it is the public facade (constructors for every source of
configuration, calls, lifecycle), each method a few lines that resolve names and hand off; resources,
prompts and server requests are a mixin (`hub_features`), tracing is `tracing`, tasks (long-running
calls: handles, waiting across a reconnect) are `tasks`.
"""

from __future__ import annotations

import concurrent.futures
import functools
import inspect
import json
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx2
import pydantic_core
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._auth.sign_in import auth_factory, forget_tokens, sign_in
from .._auth.token_store import FileTokenStorage, TokenStorage
from .._config import (
    ConfigEntries,
    HttpServerConfig,
    Inputs,
    InvalidServerEntry,
    ServerEntries,
    SseServerConfig,
    load_config_entries,
    load_host_entries,
    parse_server_entries,
    remembered,
)
from .._runtime.callbacks import HeldCallbacks, ProgressCallback
from .._runtime.calls import (
    NO_LIMIT,
    checked_arguments,
    resolve_timeout,
    timed_out,
    wait_released,
    was_cancelled,
    watch,
)
from .._runtime.lifecycle import HubState
from .._server.server_requests import (
    DEFAULT_HANDLER_TIMEOUT,
    ElicitationHandler,
    SamplingHandler,
    decline_elicitation,
)
from .._values.errors import (
    ConfigError,
    MCPSyncError,
    ServerDisconnectedError,
    ToolApprovalDeniedError,
    ToolApprovalRequiredError,
    ToolCallCancelledError,
    ToolCallTimeoutError,
    ToolNotFoundError,
    UnsupportedFeatureError,
)
from .._values.html import hub_html
from .._values.results import ToolResult
from .._values.search import ToolSearch
from .._values.suggestions import public_name_hint
from .._values.tasks import TaskInfo
from .._values.tool import Tokenizer, count_tokens, function_spec_json, function_specs
from . import notebook
from .agent import call_tool_safe
from .connection import ServerConnection
from .discovery import (
    DEFAULT_SEARCH_LIMIT,
    DISCOVERY_TOOL_NAMES,
    SEARCH_TOOL_NAME,
    call_request,
    check_budget,
    check_discovery,
    check_search,
    discovery_tools,
    found_result,
    pinned_names,
    search_request,
)
from .hub_features import FeatureHub
from .native import start_native_call
from .reconnect import Reconnector
from .registry import NativeTool, Tool, ToolRegistry
from .reload import ReloadResult
from .servers import ServerSet
from .sign_ins import SignIns
from .tasks import ServerLookup, TaskHandle, call_as_task, submit_as_task

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from .tracing import Tracing

__all__ = ["ApproveCallback", "MCPHub", "ServerStateCallback"]

logger = logging.getLogger("mcp_sync")

ServerStateCallback = Callable[[str, str, BaseException | None], object]
"""Called as `callback(server_name, state, error)` when a server's state changes."""
ApproveCallback = Callable[[Tool, Mapping[str, Any]], object]
"""Called as `approve(tool, arguments)` before a tool that `requires_approval` runs; True runs it."""


class MCPHub(FeatureHub):
    """Connects to MCP servers and serves their tools, namespaced, from one registry.

    `elicitation` and `sampling` answer the servers' requests (a handler for every server, or a
    mapping of server name to handler): elicitation defaults to declining, sampling to none (not
    declared); `None` declares no such capability. Handlers run on worker threads, each answer
    bounded by `handler_timeout` seconds. `resource_tools=True` also offers each server's resources
    to the model as a tool `mcp__<server>__read_resource`. `tracing=True` makes each tool call,
    resource read and prompt get an OpenTelemetry span of the process-wide tracer provider (or pass a
    `TracerProvider`); see docs/tracing.md. Off by default: then nothing of it is imported.
    """

    def __init__(
        self,
        servers: ServerEntries | ConfigEntries = (),
        *,
        registry: ToolRegistry | None = None,
        token_storage: TokenStorage | None = None,
        auth: Mapping[str, httpx2.Auth] | None = None,
        elicitation: ElicitationHandler
        | Mapping[str, ElicitationHandler | None]
        | None = decline_elicitation,
        sampling: SamplingHandler | Mapping[str, SamplingHandler | None] | None = None,
        handler_timeout: float = DEFAULT_HANDLER_TIMEOUT,
        resource_tools: bool = False,
        tracing: bool | TracerProvider = False,
        approve: ApproveCallback | None = None,
    ) -> None:
        """`servers` is a list of entries (dicts or config models), a whole document of either file
        format (`json.load(f)` of a Claude Desktop file), or `load_config_entries(path)`. Each entry
        stands alone, as in `from_file`: one that cannot be used is shown in `servers` as `failed` with
        a `ConfigError` saying why, and the others start; `servers` of no known shape raises
        `ConfigError`. `parse_server_entries(servers, strict=True)` refuses any invalid entry instead.

        `token_storage` keeps the OAuth tokens of servers with `auth:` (default: files in the user's
        data directory, see `FileTokenStorage`); `auth` maps server names to an `httpx2.Auth` of the
        host's own, for Streamable HTTP servers whose sign-in the configuration cannot describe."""
        entries = servers if isinstance(servers, ConfigEntries) else parse_server_entries(servers)
        self._config_path: str | os.PathLike[str] | None = None
        self._config_loader: Callable[[], ConfigEntries] | None = None  # what reload() re-reads
        self.registry = registry if registry is not None else ToolRegistry()
        self.token_storage: TokenStorage = token_storage if token_storage is not None else FileTokenStorage()
        self._auth = dict(auth or {})
        self._check_custom_auth(entries)
        # The user's callbacks and handlers: held by the hub alone, so that one referring back to the hub
        # (a bound method of an object holding it) never keeps a dropped hub and its servers alive.
        self._held = HeldCallbacks()
        features = self._init_features(
            elicitation=elicitation, sampling=sampling, handler_timeout=handler_timeout
        )
        self._servers = ServerSet(
            self.registry,
            entries=entries,
            owns_registry=registry is None,
            auth_factory=auth_factory(self.token_storage, self._auth),
            features=features,
        )
        if resource_tools:
            self._offer_resource_tools()
        self._tracing = _tracing_of(tracing)
        if approve is not None and not callable(approve):
            raise TypeError(f"approve must be a callable or None, not {type(approve).__name__}")
        if approve is not None and _is_async(approve):  # its coroutine would be neither awaited nor a yes
            raise TypeError(
                "approve must be a plain function returning True to run the call; an async one cannot be "
                "awaited by a blocking call: wrap it, e.g. with asyncio.run_coroutine_threadsafe"
            )
        self._approve = approve
        self._reload_lock = threading.Lock()
        self._search = ToolSearch()
        self._full_cost: tuple[Mapping[str, Tool], int] | None = None  # all tools' tokens, per snapshot
        self._absent_pins: set[str] = set()  # pinned names left out of a listing, logged once each
        self._sign_ins = SignIns()
        # Closes the servers of a hub that is dropped while open (the set never refers back to the hub,
        # nor strongly to the user's callables, which may); quietly in a notebook, where rebinding a
        # variable is how a hub is replaced.
        in_notebook = notebook.adopt(self, MCPHub)
        weakref.finalize(
            self,
            self._servers.abandon,
            f"MCPHub with servers {[c.server_name for c in entries.configs]}",
            quiet=in_notebook,
        )
        # And takes this hub's stand-ins out of a registry that may outlive it (shared by other hubs).
        weakref.finalize(self, self._held.subscriptions.cancel)

    def _check_custom_auth(self, entries: ConfigEntries) -> None:
        http = {c.server_name for c in entries.configs if isinstance(c, HttpServerConfig | SseServerConfig)}
        invalid = {entry.server_name for entry in entries.invalid}  # failed already, with their own error
        for name, value in self._auth.items():
            if not isinstance(value, httpx2.Auth):
                raise TypeError(f"auth[{name!r}] must be an httpx2.Auth, not {type(value).__name__}")
            if name not in http and name not in invalid:
                raise ConfigError(
                    f"auth given for {name!r}, which is not a Streamable HTTP server "
                    "(or an SSE one) of this hub"
                )

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, registry: ToolRegistry | None = None, **options: Any
    ) -> MCPHub:
        """A hub for the servers in a file: our YAML `servers:` list, or an `mcpServers` JSON/YAML map.
        `options` are the constructor's (`elicitation=`, `sampling=`, ...).

        Each entry stands alone: one that cannot be used (a name with a space, `"type": "websocket"`, a
        misspelt key) is shown in `servers` as `failed` with a `ConfigError` saying why, and the
        others start. A file that cannot be read at all raises `ConfigError`.
        """
        hub = cls(load_config_entries(path), registry=registry, **options)
        hub._config_path = path
        return hub

    @classmethod
    def from_host(
        cls,
        host: str,
        project: str | os.PathLike[str] | None = None,
        *,
        inputs: Inputs = None,
        registry: ToolRegistry | None = None,
        **options: Any,
    ) -> MCPHub:
        """A hub for the servers a host application is configured with, read from that host's own files.

        `host` is "claude-desktop", "claude-code", "cursor", "vscode", "codex", "gemini" or "windsurf".
        The user's file is read (on Linux, macOS or Windows), then with `project=<dir>` the project's
        (`.mcp.json` and Claude Code's local scope in `~/.claude.json`, `.cursor/mcp.json`,
        `.vscode/mcp.json`, `.codex/config.toml`, `.gemini/settings.json`); a server named in several
        files is taken from the last (the project's over the user's). `inputs` gives VS Code's
        `${input:ID}` values: a mapping of id to value, or a handler called with each `HostInput`,
        once per input id for the hub's life (`reload()` keeps the answers). A name the host accepts
        that is not a valid server name (`io.github.upstash/context7`) is normalised as tool names
        are; `servers[name].original_name` shows the name as written. docs/hosts.md lists every
        file and how each key maps.

        Each entry stands alone, as in `from_file`, and so does each file: one that cannot be read
        is shown as a failed entry named by its path, and the other files' servers start. An unknown
        host, or no file found, raises a `ConfigError` naming what was looked for. `reload()` reads
        the files again.
        """
        # One handler for the hub's life: each input is asked once, and not again on reload().
        load = functools.partial(load_host_entries, host, project, inputs=remembered(inputs))
        hub = cls(load(), registry=registry, **options)
        hub._config_loader = load
        return hub

    # -- lifecycle -------------------------------------------------------------------------------------

    @property
    def state(self) -> HubState:
        """ "created", "starting", "running", "closing", "closed", or "forked" in a child process that
        inherited this hub (there it refuses every call; create a new hub in the child)."""
        return self._servers.state

    def start(self) -> MCPHub:
        """Connect every enabled server in parallel; return once each is ready or failed.

        Raises `ServerStartError` (after closing everything) if a `required` server failed, and
        `MCPSyncError` if `close()` was called meanwhile. Interrupted (Ctrl-C), it stops every
        server it started before the exception reaches the caller; the hub is then closed.
        """
        self._servers.start()
        return self

    def close(self) -> None:
        """Disconnect every server and stop every thread; bounded, idempotent, safe from any thread.

        It preempts a `start()` or `reload()` in progress, and after an interrupted `close()` it
        finishes the job. In a forked child it does nothing: the servers are the parent's.
        """
        self._sign_ins.stop_all("the hub was closed")
        self._servers.close()
        self._held.subscriptions.cancel()

    def __enter__(self) -> MCPHub:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def reload(
        self, servers: ServerEntries | ConfigEntries | None = None, *, strict: bool = False
    ) -> ReloadResult:
        """Apply a new configuration: re-read the file (or take `servers`) and change only what changed.

        Servers whose configuration is unchanged and that are ready stay connected, with the same tools
        and names; changed, failed or disconnected ones reconnect; removed ones close; new ones start.
        A configuration error never replaces a working server: an entry that cannot be used, for a
        server that is ready or connecting, leaves that server running as it was (a warning is logged
        and the error is in the result's `kept`); for any other server it shows as `failed`.
        `strict=True` raises `ConfigError` naming every entry that cannot be used, and changes nothing.
        A file that cannot be read raises `ConfigError` and changes nothing. Before `start()`, it only
        replaces the configuration `start()` will use.
        """
        entries = self._new_entries(servers)
        if strict and entries.invalid:
            count = len(entries.invalid)
            raise ConfigError(
                f"reload refused, nothing was changed: {count} "
                f"{'entry cannot' if count == 1 else 'entries cannot'} be used:\n"
                + "\n".join(str(entry.error) for entry in entries.invalid)
            )
        with self._reload_lock:
            return self._servers.reload(entries.configs, entries.invalid)

    def _new_entries(self, servers: ServerEntries | ConfigEntries | None) -> ConfigEntries:
        """The configuration a reload applies: `servers`, else the file re-read, else the current one."""
        if isinstance(servers, ConfigEntries):
            return servers
        if servers is not None:
            return parse_server_entries(servers)
        if self._config_loader is not None:
            return self._config_loader()
        if self._config_path is not None:
            return load_config_entries(self._config_path)
        configuration = self._servers.configuration
        return ConfigEntries((*configuration.configs, *configuration.invalid))

    # -- servers and tools -----------------------------------------------------------------------------

    @property
    def servers(self) -> Mapping[str, ServerConnection | InvalidServerEntry | Reconnector]:
        """The started servers by name, the configuration's unusable entries (`failed`), and servers
        between reconnection attempts (`reconnecting`); each has `.state`, `.error`, `.tools`."""
        return self._servers.servers

    # -- signing in ------------------------------------------------------------------------------------

    def login(
        self,
        server: str,
        *,
        open_url: Callable[[str], object] | None = None,
        read_redirect: Callable[[], str] | None = None,
        timeout: float = 300.0,
    ) -> None:
        """Sign in to a server configured with `auth: oauth`, in a browser, and store its tokens.

        Connects to the server and lists its tools, signing in wherever it asks (its first request or a
        later one), with the scopes a refused request asked for since the last sign-in.

        The authorization URL goes to `open_url(url)` (default: logged at WARNING, and opened in a
        browser when there is a display or `$BROWSER` names one); the browser's redirect, with this
        sign-in's `state`, is received on 127.0.0.1. When the browser runs on another machine, the
        address it ended on can be pasted back: with `read_redirect=input` standard input is read
        while the sign-in runs (and no longer: the program's next `input()` gets its own line); another
        callable is called on a background thread and may return it. Blocks until signed in, `timeout`
        seconds, or Ctrl-C; raises `AuthError` if the sign-in fails (at once if `open_url` raises, or
        when the hub is closed or the interpreter exits meanwhile), leaving the stored tokens as they
        were. After a sign-in a running hub reconnects that server.
        """
        config = self._http_config(server)
        with self._sign_ins.tracking() as stop:
            sign_in(
                config,
                self.token_storage,
                open_url=open_url,
                read_redirect=read_redirect,
                timeout=timeout,
                stop=stop,
            )
        self._servers.restart(server)

    def logout(self, server: str) -> bool:
        """Forget the stored tokens of a server configured with `auth:`; True if there were any. A running
        hub reconnects that server, which then needs a sign-in again (`auth: oauth`)."""
        removed = forget_tokens(self._http_config(server), self.token_storage)
        self._servers.restart(server)
        return removed

    def _http_config(self, server: str) -> HttpServerConfig:
        configs = self._servers.configuration.configs
        config = next((c for c in configs if c.server_name == server), None)
        if config is None:
            raise ConfigError(f"no server named {server!r} in this hub")
        if not isinstance(config, HttpServerConfig) or config.auth is None:
            raise ConfigError(f"server {server!r} is not configured with auth: oauth or client_credentials")
        return config

    def tools(self) -> list[Tool]:
        """Every tool in the registry (MCP and native), sorted by public name."""
        return self.registry.tools()

    def on_tool_added(self, callback: Callable[[Tool], object]) -> Callable[[], None]:
        """Call `callback(tool)` for each tool added from now on (no replay: read `tools()`) until the
        hub closes; returns the unsubscriber."""
        return self._held.subscribe(self.registry.on_tool_added, callback, until_close=True)

    def on_tool_removed(self, callback: Callable[[Tool], object]) -> Callable[[], None]:
        """Call `callback(tool)` for each tool removed from now on; returns the unsubscriber."""
        return self._held.subscribe(self.registry.on_tool_removed, callback, until_close=True)

    def on_tool_changed(self, callback: Callable[[Tool], object]) -> Callable[[], None]:
        """Call `callback(new_tool)` when a tool keeps its name but its definition changed; returns
        the unsubscriber."""
        return self._held.subscribe(self.registry.on_tool_changed, callback, until_close=True)

    def on_server_state(self, callback: ServerStateCallback) -> Callable[[], None]:
        """Call `callback(server_name, state, error)` on every state change from now on."""
        return self._held.subscribe(self._servers.state_listeners.subscribe, lambda event: callback(*event))

    # -- calls -----------------------------------------------------------------------------------------

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
        task: bool | None = None,
        replay: bool | None = None,
    ) -> ToolResult:
        """Call a tool by public name and block until its result.

        `task`: run the call as an MCP task (a long-running call the server polls for): None (default)
        does so for a tool whose `task_support` is "required"; True asks for one ("optional" tools), False
        refuses one. A task's timeout covers its whole run; timeout, cancel and Ctrl-C cancel the task
        on the server (`tasks/cancel`); its status messages reach `progress` as `message` (with
        `progress` counting the status updates), and its `input_required` is answered by the hub's
        elicitation handlers.

        `timeout` (seconds) defaults to the server's `tool_call_timeout_ms` (no limit for a native
        tool); for a call the server answers with a task that default bounds only the wait for the task,
        which is then waited for as long as it may live (its TTL plus a minute; an hour where the server
        gives no TTL), so that the default does not cut a long-running task off. `math.inf` means no
        limit; zero, negative or NaN is a `ValueError`. Setting `cancel` from any thread ends the call.
        On timeout, cancel or KeyboardInterrupt the request is cancelled on the server too.
        `progress(progress, total, message)` runs on the callback thread, before this returns.
        Raises `ToolNotFoundError`, `ToolCallTimeoutError`, `ToolCallCancelledError`,
        `ServerDisconnectedError` or `ToolCallError`, and `SignInRequiredError` when the server wants a
        sign-in (or a wider scope) first; a tool's own failure is a result with `is_error`. A task the
        server cancelled raises `ToolCallCancelledError`; one it lost (after a reconnect, say),
        `TaskNotFoundError`.

        `replay`: whether a call whose Streamable HTTP connection broke after it was sent is sent once
        more (True) or raises `ToolCallMayHaveRunError` (False); None (default) follows the server's
        `replay_calls`, by default the tool's hints (read-only or idempotent, and not destructive). A
        call run as a task follows its task instead; one whose task was not created yet when its
        connection broke raises `ToolCallMayHaveRunError`.

        The discovery tools (`function_specs(discovery=True)`) run here too: `mcp__search_tools` answers
        with the tools its query finds (never as a task: `task=True` is an `UnsupportedFeatureError`),
        `mcp__call_tool` calls the tool it names with its arguments and this call's options (`task`
        included); an argument a model got wrong is an error result, an unknown name a `ToolNotFoundError`
        that points the model to the search tool.
        """
        if name in DISCOVERY_TOOL_NAMES:
            if name == SEARCH_TOOL_NAME:
                _search_options(cancel, task)
            found = self._discovery_call(name, arguments, timeout)
            if isinstance(found, ToolResult):
                return found
            name, arguments = found
            return self.call_tool(
                name, arguments, timeout=timeout, cancel=cancel, progress=progress, task=task, replay=replay
            )
        tool, target = self._resolve(name)
        if isinstance(target, NativeTool):
            _as_task(tool, task)  # a native tool is never a task: task=True is refused, as `submit` does
            return self._call_native(name, target, arguments, timeout, cancel)
        raw_name = tool.raw_name
        assert raw_name is not None
        seconds = resolve_timeout(timeout, target.config.tool_call_timeout)
        if (
            task is None
            and tool.task_support == "forbidden"
            and not tool.requires_approval
            and self._tracing is None
        ):  # a plain call (the common case): nothing to decide, nothing to wrap
            return target.call(
                raw_name,
                arguments,
                public_name=name,
                timeout=seconds,
                cancel=cancel,
                progress=progress,
                replay=replay,
            )
        as_task = _as_task(tool, task)
        if tool.requires_approval:  # once the call is known to be valid: a person is not asked in vain
            arguments, seconds = self._approved(tool, arguments, seconds, cancel)
        if as_task or (task is None and _may_become_task(tool, target)):
            call = functools.partial(
                call_as_task,
                target,
                _servers_of(target),
                raw_name,
                arguments,
                public_name=name,
                certain=as_task,
                task_life=timeout is None,
            )
        else:
            call = functools.partial(target.call, raw_name, arguments, public_name=name, replay=replay)
        if self._tracing is not None:
            return self._tracing.tool_call(target, raw_name, name).run(
                lambda: call(timeout=seconds, cancel=cancel, progress=progress)
            )
        return call(timeout=seconds, cancel=cancel, progress=progress)

    def submit(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        task: bool | None = None,
        replay: bool | None = None,
    ) -> concurrent.futures.Future[ToolResult]:
        """Start a call and return at once; `future.cancel()` cancels the request on the server (for a
        call run as a task, `task` as in `call_tool`: the task, with `tasks/cancel`; `replay` and the
        default `timeout` of a task as in `call_tool`). The discovery tools run here too, as in `call_tool`.
        """
        return self._submit(name, arguments, timeout=timeout, progress=progress, task=task, replay=replay)

    def _submit(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        timeout: float | None,
        progress: ProgressCallback | None,
        task: bool | None,
        replay: bool | None = None,
        cancel: threading.Event | None = None,
    ) -> concurrent.futures.Future[ToolResult]:
        """`submit`; `cancel` set while a person is asked stops the call before it is sent (the async
        adapters' way to drop a call whose awaiting task is gone)."""
        if name in DISCOVERY_TOOL_NAMES:
            if name == SEARCH_TOOL_NAME:
                _search_options(cancel, task)
            found = self._discovery_call(name, arguments, timeout)
            if isinstance(found, ToolResult):
                done = concurrent.futures.Future[ToolResult]()
                done.set_result(found)
                return done
            name, arguments = found
            return self._submit(
                name, arguments, timeout=timeout, progress=progress, task=task, replay=replay, cancel=cancel
            )
        tool, target = self._resolve(name)
        if isinstance(target, NativeTool):
            _as_task(tool, task)
            return self._submit_native(name, target, arguments, timeout)
        raw_name = tool.raw_name
        assert raw_name is not None
        seconds = resolve_timeout(timeout, target.config.tool_call_timeout)
        as_task = _as_task(tool, task)
        if tool.requires_approval:
            arguments, seconds = self._approved(tool, arguments, seconds, cancel)
        followed = as_task or (task is None and _may_become_task(tool, target))
        # Followed as call_tool does: across a reconnect, and as long as its task lives if no timeout given.
        if followed and (target.config.reconnect is not None or timeout is None):
            submit = functools.partial(
                submit_as_task, target, _servers_of(target), certain=as_task, task_life=timeout is None
            )
        else:
            submit = functools.partial(target.submit, task=as_task, replay=replay)
        if self._tracing is not None:
            return self._tracing.tool_call(target, raw_name, name).follow(
                lambda: submit(raw_name, arguments, public_name=name, timeout=seconds, progress=progress)
            )
        return submit(raw_name, arguments, public_name=name, timeout=seconds, progress=progress)

    # -- tasks -----------------------------------------------------------------------------------------

    def start_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl: float | None = None,
        timeout: float | None = None,
    ) -> TaskHandle:
        """Start a tool as an MCP task and return its handle once the server created it; `timeout`
        (default: the server's `tool_call_timeout_ms`) bounds only that. `ttl` asks the server to keep
        the task that many seconds. The task outlives the handle and the hub; its result can be fetched
        later by id (`hub.task(server, task_id)`) where the server keeps it. A tool whose `task_support`
        is "forbidden" raises `UnsupportedFeatureError`. A server that answers at once with the result
        (no task) gives a handle that holds that result: its `task_id` is empty, its `info` completed, and
        it sends no request (`refresh()` and `cancel()` return `info`)."""
        tool, target = self._resolve(name)
        _as_task(tool, True)  # a native tool is never a task: its task_support is "forbidden"
        assert isinstance(target, ServerConnection)
        raw_name, server = tool.raw_name, tool.server_name
        assert raw_name is not None and server is not None
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < math.inf
        ):
            raise ValueError(f"ttl must be a positive, finite number of seconds or None, not {ttl!r}")
        seconds = resolve_timeout(timeout, target.config.tool_call_timeout)
        if tool.requires_approval:
            arguments, seconds = self._approved(tool, arguments, seconds, None)
        started = target.start_task(raw_name, arguments, public_name=name, ttl=ttl, timeout=seconds)
        servers = _servers_of(target)
        if isinstance(started, ToolResult):  # the server answered at once: a handle that has the result
            return TaskHandle(servers, server, "", tool=name, result=started)
        return TaskHandle(servers, server, started.task_id, tool=name, info=started, raw_name=raw_name)

    def task(self, server: str, task_id: str) -> TaskHandle:
        """A handle on an existing task of `server` (started by this hub, another hub or another process);
        sends nothing until used. `server` may be another hub's on this hub's (shared) registry."""
        if not isinstance(task_id, str) or not task_id:
            raise ValueError(f"task_id must be a non-empty string, not {task_id!r}")
        return TaskHandle(self._configured(server), server, task_id)

    def list_tasks(self, server: str, *, timeout: float | None = None) -> list[TaskInfo]:
        """The server's tasks (`tasks/list`, every page); `UnsupportedFeatureError` where the server or its
        protocol era lists none."""
        connection = self._configured(server)().get(server)
        if not isinstance(connection, ServerConnection):
            raise ServerDisconnectedError(f"server {server!r} is not connected; cannot list its tasks")
        seconds = resolve_timeout(timeout, connection.config.tool_call_timeout)
        tasks: list[TaskInfo] = connection.task_request("list", "", timeout=seconds)
        return tasks

    @property
    def _servers_now(self) -> ServerLookup:
        """The servers by name, read at each use, for a `TaskHandle`: through the set, never the hub,
        so that a handle does not keep the hub alive."""
        servers = self._servers
        return lambda: servers.servers

    def _configured(self, server: str) -> ServerLookup:
        """Where `server`'s tasks are reached: this hub's servers, or those of the hub whose server it is
        on a shared registry. Raises, saying why, for a server that cannot be reached."""
        self._servers.check_usable()
        state = self._servers.state
        if state in ("closing", "closed"):  # its servers are gone, not unknown
            raise MCPSyncError(f"this hub is closed; make a new one (to reach server {server!r})")
        owner = self.registry.server_owner(server)
        own = self._servers.servers.get(server)
        if own is not None and not (
            getattr(own, "state", None) == "failed"
            and isinstance(owner, ServerConnection)
            and owner is not own
        ):
            return self._servers_now
        if isinstance(owner, ServerConnection):  # another hub's, on the registry this one shares (this
            return _servers_of(owner)  # hub's own entry of that name, if any, failed: the name was taken)
        configured = {config.server_name: config for config in self._servers.configuration.configs}
        if server in configured and state == "created":
            raise MCPSyncError(
                f"server {server!r} is not started: the hub has not been started (call start(), or use "
                "`with hub:`)"
            )
        if server in configured and not configured[server].enabled:
            raise MCPSyncError(f"server {server!r} is disabled in the configuration (enabled: false)")
        raise ConfigError(f"no server named {server!r} in this hub")

    def _resolve(self, name: str) -> tuple[Tool, ServerConnection | NativeTool]:
        """The tool and what runs it: its server's connection (whichever hub owns it), or its function."""
        self._servers.check_usable()
        tool = self.registry.get(name)
        if tool is not None:
            if tool.server_name is None:
                target: object = self.registry.native_tool(name)
            else:
                target = self.registry.server_owner(tool.server_name)
            if isinstance(target, ServerConnection | NativeTool):
                return tool, target
        raise ToolNotFoundError(name, self._why_missing(name))

    def _approved(
        self,
        tool: Tool,
        arguments: Mapping[str, Any] | None,
        seconds: float,
        cancel: threading.Event | None,
    ) -> tuple[dict[str, Any], float]:
        """The arguments to send, once `approve` said yes to them, and what is left of the call's
        `seconds`; else the typed refusal. The arguments are checked as for any call first, then frozen:
        the approver sees a copy of exactly what is sent, and nobody can change it after the answer.
        They are shown to the approver only: neither the log nor the error holds them. No lock is held
        while the person is asked (an approver may call a tool that asks first, from any thread)."""
        approve = self._approve
        frozen = pydantic_core.to_json(checked_arguments(arguments, tool.name))
        if approve is None:
            raise ToolApprovalRequiredError(
                f"tool {tool.name} was not run: its server {tool.server_name!r} is configured to have a "
                "person approve each call of it first (require_approval / tool_approval, or the host's "
                "ask-first setting), and this hub has no approve callback to ask with; pass "
                "MCPHub(..., approve=terminal_approval()) or a function of your own",
                tool=tool.name,
            )
        started = time.monotonic()
        try:
            answer = approve(tool, json.loads(frozen))
        except Exception as exc:
            raise ToolApprovalDeniedError(
                f"tool {tool.name} was not run: its approve callback raised {type(exc).__name__}",
                tool=tool.name,
            ) from exc
        if inspect.isawaitable(answer):
            if inspect.iscoroutine(answer):
                answer.close()  # never awaited: no "never awaited" warning
            raise ToolApprovalDeniedError(
                f"tool {tool.name} was not run: its approve callback returned an awaitable, not True; "
                "an approve callback must answer without being awaited",
                tool=tool.name,
            )
        if answer is not True:
            logger.info("call to %s refused by the approve callback", tool.name)
            raise ToolApprovalDeniedError(
                f"tool {tool.name} was not run: the approve callback refused the call", tool=tool.name
            )
        if cancel is not None and cancel.is_set():
            raise ToolCallCancelledError(
                f"call to {tool.name} was cancelled while its approval was asked; it was not sent",
                tool=tool.name,
            )
        left = seconds - (time.monotonic() - started)
        if not left > 0:  # the timeout covers the whole call, the question too
            raise ToolCallTimeoutError(
                f"call to {tool.name} did not finish within {seconds:g} s: the time ran out while its "
                "approval was asked; it was not sent",
                tool=tool.name,
            )
        return json.loads(frozen), left

    def _why_missing(self, name: str) -> str | None:
        """Why no tool answers to `name`, in words that say what to do about it."""
        state = self._servers.state
        if state == "created" and not self.registry.tools():
            return "the hub has not been started: call start(), or use `with hub:`"
        if state in ("closing", "closed"):
            return "the hub is closed"
        for server_name, connection in self.servers.items():
            if name.startswith(f"mcp__{server_name}__") and connection.state != "ready":
                error = f": {connection.error}" if connection.error is not None else ""
                return f"its server {server_name!r} is {connection.state}{error}"
        return public_name_hint(name, "tool", ((tool.name, tool.raw_name) for tool in self.registry.tools()))

    def _call_native(
        self,
        name: str,
        native: NativeTool,
        arguments: Mapping[str, Any] | None,
        timeout: float | None,
        cancel: threading.Event | None,
    ) -> ToolResult:
        seconds = resolve_timeout(timeout, NO_LIMIT)
        future, stop = start_native_call(
            name, native.function, arguments or {}, pass_cancel=native.takes_cancel
        )
        try:  # from the start: a Ctrl-C that lands anywhere after it cancels the function
            finished = wait_released(watch(future), seconds, cancel)
        except BaseException:
            future.cancel()
            raise
        if not finished and future.cancel():
            stop.set()
            if cancel is not None and cancel.is_set():
                raise was_cancelled(name, "the function")
            raise timed_out(name, seconds, "the function")
        return future.result()

    def _submit_native(
        self, name: str, native: NativeTool, arguments: Mapping[str, Any] | None, timeout: float | None
    ) -> concurrent.futures.Future[ToolResult]:
        seconds = resolve_timeout(timeout, NO_LIMIT)
        future, stop = start_native_call(
            name, native.function, arguments or {}, pass_cancel=native.takes_cancel
        )
        if seconds != NO_LIMIT:
            timer = threading.Timer(seconds, _expire, (future, stop, name, seconds))
            timer.daemon = True
            try:  # `start()` waits for the timer's thread: a Ctrl-C may land there
                timer.start()
            except BaseException:
                future.cancel()
                raise
            future.add_done_callback(lambda _future: timer.cancel())
        return future

    def __repr__(self) -> str:
        states = ", ".join(f"{name}={c.state}" for name, c in self._servers.servers.items())
        state = "" if self.state == "running" else f" ({self.state})"
        return f"<MCPHub servers=[{states}] tools={len(self.registry)}{state}>"

    # -- agent-loop helpers and display ----

    def function_specs(
        self, *, discovery: bool | int = False, pinned: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        """The tools to offer a model, as OpenAI-style function specs: every tool in the registry, sorted
        by name, or with `discovery=True` the discovery set: `mcp__search_tools` and `mcp__call_tool`,
        which find and call any tool of the registry as it is at each call, then the `pinned` tools (public
        names; an unknown one raises `ToolNotFoundError`, one of a server that is not ready now is left
        out). `discovery=N` (an int) gives the discovery set only while every tool's definitions together
        cost more than N tokens and more than the discovery set itself (`context_tokens`, default
        estimate), so it never offers more than all tools; otherwise `pinned` has no effect. `call_tool`
        and `call_tool_safe` run the two discovery tools by name."""
        offered = self._discovery_set(discovery, pinned, strict=True)
        return self.registry.function_specs() if offered is None else function_specs(offered)

    def search_tools(self, query: str, *, limit: int = DEFAULT_SEARCH_LIMIT) -> list[Tool]:
        """The registry's tools that best match `query` (plain words: "create a github issue"), best
        first, at most `limit`; tools sharing no word with it are left out. Ranked with BM25 over each
        tool's name, title, description and arguments (weighted in that order), read from the registry
        as it is now. An empty query or a `limit` below 1 is a `ValueError`, a non-str query a `TypeError`."""
        check_search(query, limit)
        return self._search.search(self.registry.snapshot(), query, limit)

    def context_tokens(self, *, tokenizer: Tokenizer | None = None) -> dict[str, int]:
        """What the registry's tool definitions cost in a model's context, in tokens, per server name
        (the host's own tools under ""): each tool's `Tool.context_tokens(tokenizer)`, summed."""
        totals: dict[str, int] = {}
        for tool in self.registry.tools():
            server = tool.server_name or ""
            totals[server] = totals.get(server, 0) + tool.context_tokens(tokenizer)
        return totals

    def _discovery_set(
        self, discovery: bool | int, pinned: Iterable[str], *, strict: bool = False
    ) -> list[Tool] | None:
        """The discovery tools and the pinned ones when `discovery` asks for them now, else None (all
        tools). A pinned tool that is not in the registry is left out (logged once); with `strict`, one
        that is not there for a reason other than its server not being ready raises, as a typo should.
        The framework adapters offer the same."""
        check_discovery(discovery)
        names = pinned_names(pinned)
        if discovery is False:
            return None
        chosen = [tool for tool in map(self.registry.get, names) if tool is not None]
        offered = [*discovery_tools(), *chosen]
        if not check_budget(discovery, lambda: _cost(offered), self._all_tools_cost):
            return None
        if len(chosen) < len(names) or self._absent_pins:
            self._leave_out_absent(names, strict)
        return offered

    def _check_pins(self, pinned: Iterable[str]) -> tuple[str, ...]:
        """The pinned names, checked when an adapter is made: `ToolNotFoundError` for a name no tool has
        while its server (if any) is ready, a typo; a tool of a server not ready yet may be there later."""
        names = pinned_names(pinned)
        self._leave_out_absent(names, strict=True)
        return names

    def _leave_out_absent(self, names: tuple[str, ...], strict: bool) -> None:
        """Log (once per name while it stays away) the pinned names no tool has now; with `strict`, raise
        `ToolNotFoundError` for one whose server is not merely not ready."""
        for name in names:
            if self.registry.get(name) is not None:
                self._absent_pins.discard(name)
                continue
            if strict and not self._server_not_ready(name):
                raise ToolNotFoundError(name, self._why_missing(name) or "it cannot be pinned")
            if name not in self._absent_pins:
                self._absent_pins.add(name)
                logger.info(
                    "pinned tool %s is not in the registry now: it is left out until it is back", name
                )

    def _server_not_ready(self, name: str) -> bool:
        """Whether `name` may belong to a server that is not ready (not started, reconnecting, failed)."""
        if self._servers.state == "created":  # not started: its servers and their tools are not known yet
            return True
        return any(
            name.startswith(f"mcp__{server_name}__") and connection.state != "ready"
            for server_name, connection in self.servers.items()
        )

    def _all_tools_cost(self) -> int:
        """Every tool's estimated tokens, summed; counted once per registry snapshot."""
        snapshot, known = self.registry.snapshot(), self._full_cost
        if known is not None and known[0] is snapshot:
            return known[1]
        cost = _cost(snapshot.values())
        self._full_cost = (snapshot, cost)
        return cost

    def _discovery_call(
        self, name: str, arguments: Mapping[str, Any] | str | None, timeout: float | None
    ) -> ToolResult | tuple[str, dict[str, Any]]:
        """A discovery tool's answer (the search's result, or an error result for a model's bad arguments),
        or the tool and arguments the call tool names (`ToolNotFoundError` for a name no tool has)."""
        self._servers.check_usable()
        resolve_timeout(timeout, NO_LIMIT)  # an invalid timeout is the caller's error, as for any tool
        if name != SEARCH_TOOL_NAME:
            called = call_request(arguments)
            if not isinstance(called, ToolResult):
                self._check_called(called[0])
            return called
        request = search_request(arguments)
        if isinstance(request, ToolResult):
            return request
        query, limit = request
        return found_result(self.search_tools(query, limit=limit))

    def _check_called(self, name: str) -> None:
        """`ToolNotFoundError` for a name the call tool got that no tool has, pointing to the search tool."""
        if name in DISCOVERY_TOOL_NAMES or name in self.registry:
            return
        why = self._why_missing(name)
        raise ToolNotFoundError(name, (f"{why}; " if why else "") + f"find tools with {SEARCH_TOOL_NAME}")

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
        An invalid `timeout` is the caller's mistake, not the model's: a `ValueError`, as for `call_tool`.
        """
        return call_tool_safe(
            self.call_tool, name, arguments, timeout=timeout, cancel=cancel, progress=progress
        )

    def _repr_html_(self) -> str:
        """The servers (state, tool count, error) and the tools as HTML tables, for notebooks."""
        return hub_html(list(self._servers.servers.values()), self.tools(), self.resources(), self.prompts())


def _is_async(function: Callable[..., Any]) -> bool:
    """Whether calling `function` makes a coroutine: an `async def`, or an object whose `__call__` is one."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        type(function).__call__  # an instance whose class defines `async def __call__`
    )


def _as_task(tool: Tool, task: bool | None) -> bool:
    """Whether to call `tool` as a task: `task` None follows its `task_support`; a request the tool's
    `task_support` cannot meet is an `UnsupportedFeatureError` naming the tool."""
    support = tool.task_support
    if task is None:
        return support == "required"
    if task and support == "forbidden":
        raise UnsupportedFeatureError(
            f"tool {tool.name} cannot run as a task (its server lists taskSupport 'forbidden' or none)"
        )
    if not task and support == "required":
        raise UnsupportedFeatureError(
            f"tool {tool.name} runs only as a task (taskSupport 'required'): pass task=True or None"
        )
    return bool(task)


def _servers_of(connection: ServerConnection) -> ServerLookup:
    """Where the tasks of `connection`'s server are followed: the servers of the hub that made it, which
    on a shared registry may be another hub than the caller's."""
    servers = connection.hub_servers
    if servers is None:  # a connection made outside a hub: its name alone
        return lambda: {connection.name: connection}
    return servers


def _cost(tools: Iterable[Tool]) -> int:
    """The tools' definitions' estimated tokens, summed."""
    return sum(count_tokens(function_spec_json(tool), None) for tool in tools)


def _search_options(cancel: threading.Event | None, task: bool | None) -> None:
    """The search tool's options, checked as any call's: a `cancel` set already, or `task=True` (a search
    never runs as a task), raise."""
    if task:
        raise UnsupportedFeatureError(f"tool {SEARCH_TOOL_NAME} cannot run as a task: it runs in the hub")
    if cancel is not None and cancel.is_set():
        raise ToolCallCancelledError(f"call to {SEARCH_TOOL_NAME} cancelled", tool=SEARCH_TOOL_NAME)


def _may_become_task(tool: Tool, target: ServerConnection) -> bool:
    """Whether the server may answer a plain call of `tool` with a task (the 2026-07-28 tasks extension
    lets it, for a tool it lists as one): such a call is followed as `task=True` is, across reconnects."""
    return tool.task_support != "forbidden" and target.protocol_version in MODERN_PROTOCOL_VERSIONS


def _expire(
    future: concurrent.futures.Future[ToolResult], stop: threading.Event, name: str, seconds: float
) -> None:
    """A submitted native call's timeout: fail its Future and tell the function to stop."""
    if future.done():
        return
    try:
        future.set_exception(timed_out(name, seconds, "the function"))
    except concurrent.futures.InvalidStateError:  # it finished at the same moment
        return
    stop.set()


def _tracing_of(tracing: bool | TracerProvider) -> Tracing | None:
    """The hub's `Tracing`, or None when off (and then `tracing`, and what it imports, stays unimported)."""
    if tracing is False:
        return None
    from opentelemetry.trace import TracerProvider

    from .tracing import Tracing

    if tracing is True:
        return Tracing(None)
    if not isinstance(tracing, TracerProvider):
        raise TypeError(f"tracing must be True, False or a TracerProvider, not {type(tracing).__name__}")
    return Tracing(tracing)
