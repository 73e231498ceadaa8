"""One server's connection as the hub and its callers see it: state, tools, calls, stop.

A connection owns a loop thread (`mcp-sync:<server>`) on which its `Session` runs, and its
name's registry lease, through which every tool write is made. Callers' threads only read
its state and hand calls to the loop; they wait on `concurrent.futures.Future`s (see
`_runtime.calls`). Its states and their moves are in `_runtime.lifecycle`; `_set_state` is the one place
they change, on the loop thread: an end state ends the lease (the tools go, later writes
are refused) in the same step, so no thread sees the end state with the tools still there.

A connection belongs to the process that made it: in a forked child its loop thread does not
exist, so a call on it fails at once instead of waiting for an answer that cannot come.

Stopping is bounded: `close()` asks the session to stop, `join()` waits for the loop thread
and, past its timeout, kills the child's process tree and cancels the owner.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx2
import mcp_types as types

from .._auth.sign_in import AuthFactory
from .._config import ServerConfig
from .._config.secrets import secrets_of
from .._runtime.callbacks import CallbackDispatcher, ProgressCallback
from .._runtime.calls import NO_LIMIT, CallSlot, checked_arguments
from .._runtime.lifecycle import CONNECTION_TRANSITIONS, ConnectionState, StateMachine, fork_generation
from .._runtime.loop_thread import LoopThread
from .._server.features import ServerFeatures
from .._server.session import Session
from .._server.tasks.runner import StatusUpdates
from .._values.errors import MCPSyncError, ServerDisconnectedError
from .._values.naming import server_label
from .._values.results import ToolResult
from .._values.scrubbed_errors import scrub_exception
from .._values.secrets import register as register_secrets
from .._values.tasks import TaskInfo
from .._values.tool import Tool
from .handovers import HandOvers
from .registry import ServerLease, ToolRegistry

__all__ = ["CLOSE_TIMEOUT", "ServerConnection", "ServerState"]

logger = logging.getLogger("mcp_sync")

ServerState = ConnectionState
# A Literal alias cannot carry a docstring of its own: this one is what `help(ServerState)` shows.
ServerState.__doc__ = """A server connection's state, a string: "connecting" (starting, or waiting for its
first listing), "ready" (its tools are registered and calls go through), "reconnecting" (the connection
ended and `reconnect:` is trying again; its tools are unregistered), "failed" (it could not start:
`error` says why), "disconnected" (it was ready and ended: `error` says why) or "closed" (by the
hub's `close()`, or removed by `reload()`)."""

# A graceful stop takes at most ~2.5 s (stdin closed, 1 s, SIGTERM, 1 s, SIGKILL, flushes);
# past this the process tree is killed and the owner cancelled.
CLOSE_TIMEOUT = 4.0
# After killing the process tree, time for the loop thread to notice and finish.
_KILL_JOIN_TIMEOUT = 1.0


class ServerConnection:
    """A server's connection on its own loop thread; created and driven by `MCPHub`."""

    def __init__(
        self,
        config: ServerConfig,
        registry: ToolRegistry,
        on_state: Callable[[ServerConnection], None] | None = None,
        auth_factory: AuthFactory | None = None,
        features: ServerFeatures | None = None,
        hub_servers: Callable[[], Mapping[str, object]] | None = None,
        handovers: HandOvers | None = None,
    ) -> None:
        self.config = config
        self.handovers = handovers if handovers is not None else HandOvers()
        """The hub's tasks handed over between connections of one server (`_hub.handovers`)."""
        self._owned_tasks: set[str] = set()
        """The tasks calls follow here as their own (`cancel_on_close`): this connection's end cancels them,
        unless it hands them over."""
        self.hub_servers = hub_servers
        """The servers by name now of the hub that made this connection (None: made outside a hub): where
        a task of this server is followed across reconnects, whichever hub on a shared registry calls it."""
        self._auth_factory = auth_factory
        self.features = features
        """Resources, prompts and server requests of this connection, when the hub bridges them."""
        self.name = config.server_name
        self.original_name = config.original_name
        """The name the host's file gave the server, when `name` had to be made from it; else None."""
        self._registry = registry
        self._dispatcher: CallbackDispatcher = registry.dispatcher
        self._on_state = on_state
        self._machine: StateMachine[ConnectionState] = StateMachine("connecting", CONNECTION_TRANSITIONS)
        self._error: BaseException | None = None
        self.protocol_version: str | None = None
        self.server_info: types.Implementation | None = None
        self.ready = concurrent.futures.Future[None]()
        """Resolved once the connection is no longer connecting (ready, failed or closed)."""
        self.lease: ServerLease | None = None
        self.replaced = False
        """Closed by a reload or a sign-in, which launches its successor once it has ended (`ServerSet`)."""
        self.handing_over = False
        """Closed to be replaced by a connection to the same server, on which the tasks its calls
        follow go on (see `ServerSet`)."""
        self._fork_generation, self._pid = fork_generation(), os.getpid()
        self._session = Session(self, self._dispatcher)
        self._thread = LoopThread(f"mcp-sync:{self.name}", self._session.run)
        if features is not None:
            features.bind(self.call_soon)

    # -- status --------------------------------------------------------------------------------------

    @property
    def state(self) -> ServerState:
        """Where the connection is (`ServerState`): connecting, ready, reconnecting, failed,
        disconnected or closed."""
        return self._machine.state

    @property
    def error(self) -> BaseException | None:
        """Why the server failed or disconnected, if it did."""
        return self._error

    @property
    def tools(self) -> list[Tool]:
        """This server's tools in the registry now, sorted by public name."""
        return self._registry.server_tools(self.name)

    @property
    def transport(self) -> str:
        """The configured transport: "stdio", "streamable-http" or "sse"."""
        return self.config.transport

    @property
    def pid(self) -> int | None:
        """The stdio child's process id, once it has started."""
        return self._session.process.pid

    @property
    def session_id(self) -> str | None:
        """The MCP session id a Streamable HTTP server assigned, if it did (stdio has none)."""
        return self._session.http.session_id

    def __repr__(self) -> str:
        error = f" error={self._error!r}" if self._error else ""
        return f"<ServerConnection {self.name!r} state={self.state!r}{error}>"

    def _set_state(self, state: ServerState, error: BaseException | None = None) -> None:
        """Move to `state` (loop thread); moves the table refuses are ignored: the first end wins. The
        error is scrubbed now, while the secrets are known.

        An end state is one step as other threads see it: the resources, prompts and tools go first, and
        the state moves under the registry's lock before their removal is announced (the catalog's too),
        so a thread that reads the end state finds none of them, and a listener of the removal reads the
        end state or a later one."""
        if error is not None:
            error = scrub_exception(error)
        with self._machine.condition:
            if not self._machine.allows(state):
                return
            if error is not None:
                self._error = error
            final = not CONNECTION_TRANSITIONS[state]

            def move() -> None:
                self._machine.move(state)

            def end_tools() -> None:
                assert self.lease is not None
                # Closed frees the name at once (a hub nobody closed has no one else to do it); a failed
                # or disconnected server keeps it until the hub replaces or closes the connection.
                (self.lease.release if state == "closed" else self.lease.end)(move)

            step = end_tools if final and self.lease is not None else move
            if final and self.features is not None:
                self.features.end(then=step)  # the catalog's removals are posted after the move
            else:
                step()
        log = logger.warning if state in ("failed", "disconnected") else logger.info
        log("server %r is %s%s", self.name, state, f": {error}" if error else "")
        if self._on_state is not None:
            self._on_state(self)
        if not self.ready.done():
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                self.ready.set_result(None)

    def make_auth(self) -> httpx2.Auth | None:
        """The `httpx2.Auth` for this connection's HTTP requests (None: none); called on the loop thread."""
        return self._auth_factory(self.config) if self._auth_factory is not None else None

    def when_settled(self, callback: Callable[[], None]) -> None:
        """Call `callback()` (on any thread) once the connection is no longer connecting."""
        self.ready.add_done_callback(lambda _future: callback())

    def forked_error(self) -> MCPSyncError | None:
        """The error for a call in a process forked from the one this connection runs in; None here."""
        if self._fork_generation == fork_generation():
            return None
        return MCPSyncError(
            f"server {self.name!r} was connected in process {self._pid}, and this is process "
            f"{os.getpid()} (a fork): its connection belongs to the parent; create a new MCPHub in the child"
        )

    def not_ready_error(self, public_name: str) -> MCPSyncError:
        """The error a call to `public_name` gets while this server is not ready (it names the state)."""
        label = server_label(self.name, self.original_name)
        return ServerDisconnectedError(
            f"server {label} is {self.state}; cannot call {public_name}", tool=public_name
        )

    # -- lifecycle (caller threads) -------------------------------------------------------------------

    def reserve(self) -> None:
        """Claim the server's name in the registry; raises `ConfigError` if it is taken."""
        self.lease = self._registry.reserve_server(self.name, self)

    def start(self) -> None:
        """Start the loop thread; call after `reserve()`. The config's secrets stay registered (kept
        out of every error and log record) until the loop thread ends."""
        self._session.secrets = register_secrets(secrets_of(self.config), credential_name=True)
        self._thread.start()

    def fail_without_starting(self, error: BaseException) -> None:
        """Record a failure found before connecting (such as a name already in use)."""
        self._set_state("failed", error)

    def close(self, *, abort: bool = False, handing_over: bool | None = None) -> None:
        """Ask the session to stop (a no-op once the loop is gone); `abort` kills the child at once.
        `handing_over`: a new connection to the same server takes its place, and the calls following a
        task go on there (their tasks are not cancelled); False: they end here; None: as said before.
        `join()` waits for it."""
        if abort:
            self._session.process.kill()
        if handing_over is not None:
            self.handing_over = handing_over
            owned = frozenset(self._owned_tasks)
            if handing_over:
                self.handovers.add(self.name, owned, self.config)
            elif owned and self.state == "ready":
                self.handovers.cancel_sent(self.name, owned)  # the session's end sends them
        self.call_soon(self._session.request_stop, abort, handing_over)

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the loop thread to end; True if it did."""
        return self._thread.join(timeout)

    def join(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Wait for the loop thread to end; past `timeout`, kill the child's process tree and wait again."""
        if self._thread.join(timeout):
            return
        logger.warning("server %r did not stop within %.1f s; killing it", self.name, timeout)
        self._session.process.kill()
        self.call_soon(self._session.cancel_owner)
        if not self._thread.join(_KILL_JOIN_TIMEOUT):
            logger.error(
                "the loop thread of server %r is stuck; leaving it to die with the process", self.name
            )

    def kill(self) -> None:
        """Kill the stdio child's process tree now (last resort); a no-op once it is gone."""
        self._session.process.kill()

    def call_soon(self, callback: Callable[..., object], *args: Any) -> bool:
        """Run `callback(*args)` on the loop thread; False once the loop has closed."""
        return self._thread.call_soon(callback, *args)

    # -- calls (caller threads) -----------------------------------------------------------------------

    def submit(
        self,
        raw_name: str,
        arguments: Mapping[str, Any] | None,
        *,
        public_name: str,
        timeout: float,
        progress: ProgressCallback | None = None,
        task: bool = False,
        replay: bool | None = None,
    ) -> concurrent.futures.Future[ToolResult]:
        """Start a call on the loop; the Future stays cancellable while it runs (cancelling it cancels
        the request on the server). The loop keeps the call's time: nobody waits for it here. `task`:
        run it as a task (`Session.task_call`); `replay`: see `Session.call`."""
        args = checked_arguments(arguments, public_name)
        future = concurrent.futures.Future[ToolResult]()
        forked = self.forked_error()
        if forked is not None:
            future.set_exception(forked)
            return future
        # The Future stays pending while it runs, so that cancel() works; a cancelled Future must
        # then say so itself, or concurrent.futures.wait() and as_completed() never see it end.
        future.add_done_callback(_notify_waiters_if_cancelled)
        timer = None if timeout == NO_LIMIT else timeout
        work, extra = (self._session.task_call, ()) if task else (self._session.call, (replay,))
        if self._machine.is_final() or not self._session.calls.hand_over(
            future, public_name, work, raw_name, args, public_name, timer, progress, *extra
        ):
            future.set_exception(self.not_ready_error(public_name))
        return future

    def call(
        self,
        raw_name: str,
        arguments: Mapping[str, Any] | None,
        *,
        public_name: str,
        timeout: float,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
        replay: bool | None = None,
    ) -> ToolResult:
        """Call a tool and wait for its result; see `MCPHub.call_tool`. `timeout` is resolved seconds,
        kept by this thread: the call is abandoned (cancelled on the server) when it runs out. (A call
        run as a task goes through `_hub.tasks.call_as_task`.)"""
        forked = self.forked_error()
        if forked is not None:
            raise forked
        args = checked_arguments(arguments, public_name)
        slot: CallSlot[ToolResult] = CallSlot()
        calls = self._session.calls
        if self._machine.is_final() or not calls.hand_over(
            slot, public_name, self._session.call, raw_name, args, public_name, None, progress, replay
        ):
            raise self.not_ready_error(public_name)
        try:
            return calls.wait(slot, public_name, timeout, cancel)
        finally:
            if progress is not None and slot.done() and not slot.cancelled() and not self._dispatcher.flush():
                logger.warning(
                    "returning the result of %s before its progress callbacks ran: the callback thread is "
                    "blocked by a slow callback",
                    public_name,
                )

    # -- tasks (caller threads) -----------------------------------------------------------------------

    def start_task(
        self,
        raw_name: str,
        arguments: Mapping[str, Any] | None,
        *,
        public_name: str,
        ttl: float | None,
        timeout: float,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
        certain: bool = True,
    ) -> TaskInfo | ToolResult:
        """Ask the server for a task and wait (up to `timeout`, or `cancel`) until it is created; the
        result itself when the server answered at once. Stopped meanwhile, the task the server created
        is cancelled (on the loop, after this has raised); a call that only may become a task (not
        `certain`) is cancelled as a plain call is."""
        args = checked_arguments(arguments, public_name)
        started: TaskInfo | ToolResult = self._on_loop(
            public_name,
            timeout,
            cancel,
            self._session.start_task,
            raw_name,
            args,
            public_name,
            ttl,
            progress,
            certain,
        )
        if isinstance(started, ToolResult) and progress is not None and not self._dispatcher.flush():
            logger.warning(
                "returning the result of %s before its progress callbacks ran: the callback thread is "
                "blocked by a slow callback",
                public_name,
            )
        return started

    def follow_task(
        self,
        task_id: str,
        info: TaskInfo | None,
        *,
        label: str,
        timeout: float,
        cancel: threading.Event | None,
        progress: ProgressCallback | None,
        on_info: Callable[[TaskInfo], object] | None,
        updates: StatusUpdates | None = None,
        raw_name: str | None = None,
        cancel_on_close: bool = False,
    ) -> ToolResult:
        """Wait for an existing task to end and return its result; on timeout or cancel only the waiting
        stops (`ToolCallTimeoutError` / `ToolCallCancelledError`), the task runs on. Its status messages
        have reached `progress` when this returns (`updates`: those reported before, by this wait on
        an earlier connection; `raw_name`: the task's tool, whose output schema its result must meet;
        `cancel_on_close`: a call's own task, cancelled when the hub closes during the wait)."""
        if cancel_on_close and not self._machine.is_final():  # an ended one cannot follow it: no claim
            self._owned_tasks.add(task_id)
            self.handovers.claim(self.name, task_id)
        try:
            result: ToolResult = self._on_loop(
                label,
                timeout,
                cancel,
                self._session.follow_task,
                task_id,
                info,
                label,
                progress,
                on_info,
                updates,
                raw_name,
                cancel_on_close,
            )
        finally:
            self._owned_tasks.discard(task_id)
        if progress is not None and not self._dispatcher.flush():
            logger.warning(
                "returning the result of %s before its progress callbacks ran: the callback thread is "
                "blocked by a slow callback",
                label,
            )
        return result

    def task_request(self, kind: str, task_id: str, *, timeout: float) -> Any:
        """`tasks/get`, `tasks/cancel` or `tasks/list` (`kind` "get", "cancel", "list"); see
        `Session.task_request`."""
        label = (
            f"task {task_id!r} of server {self.name!r}" if kind != "list" else f"tasks/list of {self.name!r}"
        )
        return self._on_loop(label, timeout, None, self._session.task_request, kind, task_id)

    def cancel_task_soon(self, task_id: str, label: str) -> bool:
        """Have `tasks/cancel` sent for a task whose caller gave up, without waiting for the server's answer
        (its outcome is logged); False when this connection can no longer send it."""
        if self.forked_error() is not None or self._machine.is_final():
            return False
        self.handovers.claim(self.name, task_id)  # cancelled here: nothing more to do about it
        return self.call_soon(self._session.cancel_task_soon, task_id, label)

    def _on_loop(
        self,
        label: str,
        timeout: float,
        cancel: threading.Event | None,
        work: Callable[..., Awaitable[Any]],
        *args: Any,
    ) -> Any:
        """Run `work(*args)` on the loop as one of the session's calls and wait for it."""
        forked = self.forked_error()
        if forked is not None:
            raise forked
        slot: CallSlot[Any] = CallSlot()
        calls = self._session.calls
        if self._machine.is_final() or not calls.hand_over(slot, label, work, *args):
            raise self.not_ready_error(label)
        return calls.wait(slot, label, timeout, cancel)


def _notify_waiters_if_cancelled(future: concurrent.futures.Future[ToolResult]) -> None:
    if future.cancelled():
        future.set_running_or_notify_cancel()
