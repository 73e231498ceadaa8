"""One server's connection: its loop thread, its `mcp.Client`, its tools, its calls.

Thread model. Everything async runs on the connection's loop thread
(`mcp-sync:<server>`): the owner task enters the `Client`, keeps the tools in
sync and leaves the `Client` in the same task, as the SDK requires. Callers'
threads only schedule work onto that loop and wait on
`concurrent.futures.Future`s. Calls are separate tasks, so many caller threads
share one session without being serialised.

Lifecycle. `connecting` -> `ready` -> `disconnected` (the transport ended) or
`closed` (we closed it); `connecting` -> `failed`. On any end the server's
tools are unregistered, calls in flight fail with `ServerDisconnectedError`,
and the child process is gone: the SDK stops it, and if its bounded shutdown
is not over in time the child's process group is killed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, Literal

import anyio
import mcp_types as types
import pydantic_core
from mcp import Client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._callbacks import CallbackDispatcher, ProgressCallback
from ._config import ServerConfig
from ._errors import (
    MCPSyncError,
    ServerDisconnectedError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
    ToolListError,
)
from ._loop_thread import LoopThread
from ._naming import public_tool_name
from ._registry import Tool, ToolRegistry
from ._results import ToolResult, from_call_tool_result
from ._transports import open_transport

__all__ = ["ServerConnection", "ServerState"]

logger = logging.getLogger("mcp_sync")

ServerState = Literal["connecting", "ready", "failed", "disconnected", "closed"]

# A server whose tools/list cursor never ends must not hang a sync.
MAX_LIST_PAGES = 1000
# After the transport or the hub says stop, the SDK needs up to ~4 s to stop a stdio child
# that ignores stdin closing and SIGTERM (2 s grace, SIGTERM, 2 s, SIGKILL).
CLOSE_TIMEOUT = 6.0
# After killing the process group, time for the loop thread to notice and finish.
_KILL_JOIN_TIMEOUT = 2.0
# How long a cancelled or timed-out call waits for its cancellation to be sent before raising.
_CANCEL_SETTLE_TIMEOUT = 1.0
# How often a caller waiting on a call checks its `threading.Event`: bounds cancellation latency.
_CANCEL_POLL_INTERVAL = 0.005
# Pause before renewing a tools subscription the server ended; doubles while renewals end at once.
_RELISTEN_MIN_DELAY = 0.1
_RELISTEN_MAX_DELAY = 5.0
# After a list-changed notification, a moment for the rest of its burst before re-listing.
_RESYNC_SETTLE = 0.005
# Extra time a caller waits beyond the call's own timeout, which the loop enforces, before giving up.
_CALLER_GRACE = 5.0


class ServerConnection:
    """A server's connection on its own loop thread; created and driven by `MCPHub`."""

    def __init__(
        self,
        config: ServerConfig,
        registry: ToolRegistry,
        on_state: Callable[[ServerConnection], None] | None = None,
    ) -> None:
        self.config = config
        self.name = config.server_name
        self._registry = registry
        self._on_state = on_state
        self._state: ServerState = "connecting"
        self._error: BaseException | None = None
        self._state_lock = threading.Lock()
        self.protocol_version: str | None = None
        self.server_info: types.Implementation | None = None
        self.ready = concurrent.futures.Future[None]()
        self._child_pid: int | None = None
        self._client: Client | None = None
        self._thread = LoopThread(f"mcp-sync:{self.name}", self._own_session)
        # Loop-side state, touched only on the loop thread.
        self._wake: asyncio.Event | None = None
        self._tools_dirty: asyncio.Event | None = None
        self._stopping = False
        self._end_cause: BaseException | None = None
        self._calls: dict[concurrent.futures.Future[ToolResult], asyncio.Task[ToolResult]] = {}
        self._owner: asyncio.Task[None] | None = None

    # -- status ----------------------------------------------------------------------------------------

    @property
    def state(self) -> ServerState:
        return self._state

    @property
    def error(self) -> BaseException | None:
        """Why the server failed or disconnected, if it did."""
        return self._error

    @property
    def tools(self) -> list[Tool]:
        return self._registry.server_tools(self.name)

    def __repr__(self) -> str:
        error = f" error={self._error!r}" if self._error else ""
        return f"<ServerConnection {self.name!r} state={self._state!r}{error}>"

    def _set_state(self, state: ServerState, error: BaseException | None = None) -> None:
        with self._state_lock:
            if self._state == state or self._state in ("closed", "failed", "disconnected"):
                return
            self._state = state
            if error is not None:
                self._error = error
        if state in ("closed", "failed", "disconnected") and self._registry.server_owner(self.name) is self:
            self._registry.clear_server(self.name)
        log = logger.warning if state in ("failed", "disconnected") else logger.info
        log("server %r is %s%s", self.name, state, f": {error}" if error else "")
        if self._on_state is not None:
            self._on_state(self)

    # -- lifecycle (caller threads) --------------------------------------------------------------------

    def start(self) -> None:
        """Start the loop thread; call after reserving the server's name in the registry."""
        self._thread.start()

    def fail_without_starting(self, error: BaseException) -> None:
        """Record a failure found before connecting (such as a name already in use)."""
        self._set_state("failed", error)
        self.ready.set_result(None)

    def wait_ready(self, timeout: float) -> None:
        """Wait until connected and listed, or failed; raises nothing (read `state`)."""
        concurrent.futures.wait([self.ready], timeout)

    def close(self) -> None:
        """Ask the owner task to stop (a no-op once the loop is gone); `join()` waits for it."""
        self._thread.call_soon(self._request_stop)

    def join(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Wait for the loop thread to end; past `timeout`, kill the child's process group and wait again."""
        if self._thread.join(timeout):
            return
        logger.warning("server %r did not stop within %.1f s; killing it", self.name, timeout)
        self._kill_child()
        self._thread.call_soon(self._cancel_owner)
        if not self._thread.join(_KILL_JOIN_TIMEOUT):
            logger.error(
                "the loop thread of server %r is stuck; leaving it to die with the process", self.name
            )

    def _kill_child(self) -> None:
        """SIGKILL the stdio child's process group (it has its own session); a no-op once it is gone."""
        pid = self._child_pid
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)

    # -- calls (caller threads) ------------------------------------------------------------------------

    def submit(
        self,
        raw_name: str,
        arguments: Mapping[str, Any] | None,
        *,
        public_name: str,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> concurrent.futures.Future[ToolResult]:
        """Start a call on the loop; the Future stays cancellable while it runs (cancelling it cancels
        the request on the server)."""
        return self._schedule(raw_name, arguments, public_name, timeout, progress, cancel_follows_future=True)

    def call(
        self,
        raw_name: str,
        arguments: Mapping[str, Any] | None,
        *,
        public_name: str,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Call a tool and wait for its result; see `MCPHub.call_tool`."""
        seconds = self.config.tool_call_timeout if timeout is None else timeout
        # The caller blocks on a plain lock that the Future's completion releases: the cheapest
        # wake-up there is, and no `result(timeout)`, whose TimeoutError would be ambiguous.
        done = threading.Lock()
        done.acquire()
        future = self._schedule(
            raw_name, arguments, public_name, seconds, progress, cancel_follows_future=False
        )
        future.add_done_callback(lambda _future: done.release())
        try:
            finished = _wait(done, seconds + _CALLER_GRACE, cancel)
        except BaseException:  # KeyboardInterrupt in the waiting thread: cancel on the server too
            self._abandon(future)
            raise
        if not finished and not self._abandon(future):
            if cancel is not None and cancel.is_set():
                raise ToolCallCancelledError(
                    f"call to {public_name} was cancelled; the server was told", tool=public_name
                )
            raise ToolCallTimeoutError(
                f"call to {public_name} did not finish within {seconds:g} s; cancelled on the server",
                tool=public_name,
            )
        if progress is not None:
            self._registry.dispatcher.flush()  # progress callbacks run before the result is returned
        return future.result()

    def _schedule(
        self,
        raw_name: str,
        arguments: Mapping[str, Any] | None,
        public_name: str,
        timeout: float | None,
        progress: ProgressCallback | None,
        *,
        cancel_follows_future: bool,
    ) -> concurrent.futures.Future[ToolResult]:
        """Hand the call to the loop; the Future resolves with its result or its typed error."""
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError(f"arguments for {public_name} must be a mapping, not {type(arguments).__name__}")
        args = dict(arguments) if arguments is not None else {}
        _check_encodable(args, public_name)
        future = concurrent.futures.Future[ToolResult]()
        if cancel_follows_future:
            # The Future stays pending while it runs, so that cancel() works; a cancelled Future must
            # then say so itself, or concurrent.futures.wait() and as_completed() never see it end.
            future.add_done_callback(_notify_waiters_if_cancelled)
        seconds = self.config.tool_call_timeout if timeout is None else timeout
        if self._state != "ready" or not self._thread.call_soon(
            self._start_call, future, raw_name, args, public_name, seconds, progress, cancel_follows_future
        ):
            future.set_exception(self._not_ready_error(public_name))
        return future

    def _abandon(self, future: concurrent.futures.Future[ToolResult]) -> bool:
        """Cancel a call the caller stopped waiting for, and wait (bounded) until the loop has sent the
        cancellation. True if the call finished first after all: its result stands."""
        settled = threading.Event()
        if not self._thread.call_soon(self._cancel_call, future, settled):
            return future.done()
        settled.wait(_CANCEL_SETTLE_TIMEOUT)
        return future.done() and not future.cancelled()

    def _not_ready_error(self, public_name: str) -> MCPSyncError:
        return ServerDisconnectedError(
            f"server {self.name!r} is {self._state}; cannot call {public_name}", tool=public_name
        )

    # -- the owner task (loop thread) ------------------------------------------------------------------

    async def _own_session(self) -> None:
        """Connect, list, keep in sync until told to stop or the transport ends; then tear down."""
        self._owner = asyncio.current_task()
        self._wake = asyncio.Event()
        self._tools_dirty = asyncio.Event()
        try:
            if self._stopping:  # closed before the loop even started
                return
            async with AsyncExitStack() as stack:
                try:
                    async with asyncio.timeout(self.config.connect_timeout):
                        await self._connect(stack)
                except TimeoutError:
                    raise TimeoutError(
                        f"server {self.name!r} did not connect and list its tools within "
                        f"{self.config.connect_timeout:g} s (connect_timeout_ms)"
                    ) from None
                self._set_state("ready")
                self.ready.set_result(None)
                await self._wake.wait()
                self._end(self._end_cause)
        except BaseException as exc:
            self._end(self._end_cause or _unwrap(exc))
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
        finally:
            self._end(None)
            if self._child_pid is not None:
                _live_children.discard(self._child_pid)
            if not self.ready.done():
                self.ready.set_result(None)

    async def _connect(self, stack: AsyncExitStack) -> None:
        transport = open_transport(
            self.config, on_end=self._transport_ended, on_spawn=self._spawned, on_refused=self._check_alive
        )
        client = Client(transport, cache=None, message_handler=self._on_message)
        await stack.enter_async_context(client)
        self._client = client
        self.protocol_version = client.protocol_version
        self.server_info = client.server_info
        task_group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(task_group.cancel_scope.cancel)
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # Subscribe before the first listing, so no change falls between the two.
            await task_group.start(self._listen, client)
        await self._sync_tools(client, initial=True)
        task_group.start_soon(self._resync_when_dirty, client)

    def _spawned(self, pid: int) -> None:
        self._child_pid = pid
        _live_children.add(pid)

    def _transport_ended(self, cause: BaseException | None) -> None:
        self._lose_connection("closed its connection" + (" (process exited)" if self._child_pid else ""))

    def _check_alive(self) -> None:
        """Something suggests the server is gone: re-list, which fails and ends the session if it is."""
        if self._tools_dirty is not None and not self._stopping:
            self._tools_dirty.set()

    def _request_stop(self) -> None:
        self._stopping = True
        if self._wake is not None:
            self._wake.set()

    def _cancel_owner(self) -> None:
        if self._owner is not None:
            self._owner.cancel()

    def _end(self, cause: BaseException | None) -> None:
        """Reach the end state once: closed if we stopped it, disconnected otherwise; calls in flight
        fail now, not after the transport's (possibly slow) shutdown. No call starts after this."""
        if self._state in ("closed", "failed", "disconnected"):
            return
        if self._stopping:
            self._set_state("closed")
        elif self._state == "connecting":
            self._set_state("failed", _describe_failure(self.name, cause))
        else:
            self._set_state("disconnected", _describe_loss(self.name, cause))
        for task in list(self._calls.values()):
            task.cancel()

    # -- tool listings (loop thread) -------------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        # Spawned off the read loop by the SDK: only mark dirty; the resync task does the work.
        if isinstance(message, types.ToolListChangedNotification) and self._tools_dirty is not None:
            self._tools_dirty.set()

    async def _listen(self, client: Client, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Hold the 2026-07-28 tools subscription open, subscribing again whenever it ends.

        Its events reach `_on_message` too. The SDK does not replay, so every renewal re-lists. A
        renewal that fails means the server is gone: over HTTP this stream is the only sign of that.
        """
        subscribed_once = False
        delay = _RELISTEN_MIN_DELAY
        while True:
            opened_at: float | None = None
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    opened_at = time.monotonic()
                    if subscribed_once:
                        self._check_alive()  # re-list: changes while unsubscribed are not replayed
                    else:
                        subscribed_once = True
                        task_status.started()
                    async for _event in subscription:
                        if self._tools_dirty is not None:
                            self._tools_dirty.set()
            except ListenNotSupportedError:
                break
            except Exception as exc:
                if opened_at is None:  # could not subscribe
                    self._subscription_refused(exc, renewal=subscribed_once)
                    break
            logger.info("server %r ended its tools subscription; subscribing again", self.name)
            # A server that ends every subscription at once is not hammered: the pause grows.
            quick = time.monotonic() - opened_at < _RELISTEN_MAX_DELAY
            delay = min(delay * 2, _RELISTEN_MAX_DELAY) if quick else _RELISTEN_MIN_DELAY
            await asyncio.sleep(delay)
        if not subscribed_once:
            task_status.started()

    def _subscription_refused(self, exc: Exception, *, renewal: bool) -> None:
        if not renewal:
            logger.warning("server %r refused the tools subscription: %s", self.name, _describe(exc))
        else:  # over HTTP the subscription is the only sign that the server is gone
            self._lose_connection(f"could not renew its tools subscription: {_describe(exc)}")

    def _lose_connection(self, problem: str) -> None:
        """End the session as disconnected (from the loop thread), with `problem` as the cause."""
        if not self._stopping:
            self._end_cause = self._end_cause or ServerDisconnectedError(f"server {self.name!r} {problem}")
        if self._wake is not None:
            self._wake.set()

    async def _resync_when_dirty(self, client: Client) -> None:
        assert self._tools_dirty is not None
        while True:
            await self._tools_dirty.wait()
            await asyncio.sleep(_RESYNC_SETTLE)  # let the rest of a burst arrive: one listing serves it all
            self._tools_dirty.clear()  # changes announced during the sync mark it dirty again
            try:
                async with asyncio.timeout(self.config.connect_timeout):
                    await self._sync_tools(client, initial=False)
            except ToolListError:
                pass  # logged by _sync_tools; the previous generation stays
            except Exception as exc:
                logger.error("re-listing the tools of server %r failed: %s", self.name, _describe(exc))

    async def _sync_tools(self, client: Client, *, initial: bool) -> None:
        listed: list[types.Tool] = []
        cursor: str | None = None
        seen_cursors: set[str] = set()
        for _page in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
            if cursor in seen_cursors:
                raise self._listing_error(f"its tools/list cursor {cursor!r} repeats", initial)
            seen_cursors.add(cursor)
        else:
            raise self._listing_error(f"its tools/list did not end within {MAX_LIST_PAGES} pages", initial)
        tools = [self._tool_from(tool) for tool in listed if self.config.allows_tool(tool.name)]
        try:
            changes = self._registry.replace_server_tools(self.name, tools)
        except ToolListError as exc:
            logger.error("%s", exc)
            raise
        if changes:
            logger.info(
                "server %r tools: +%d -%d ~%d",
                self.name,
                len(changes.added),
                len(changes.removed),
                len(changes.changed),
            )

    def _listing_error(self, problem: str, initial: bool) -> ToolListError:
        error = ToolListError(
            f"server {self.name!r}: {problem}; "
            + ("no tools registered" if initial else "keeping its previous tools")
        )
        logger.error("%s", error)
        return error

    def _tool_from(self, tool: types.Tool) -> Tool:
        return Tool(
            name=public_tool_name(self.name, tool.name),
            description=tool.description,
            input_schema=tool.input_schema,
            server_name=self.name,
            raw_name=tool.name,
            output_schema=tool.output_schema,
        )

    # -- calls (loop thread) ---------------------------------------------------------------------------

    def _start_call(
        self,
        future: concurrent.futures.Future[ToolResult],
        raw_name: str,
        arguments: dict[str, Any],
        public_name: str,
        timeout: float,
        progress: ProgressCallback | None,
        cancel_follows_future: bool,
    ) -> None:
        if future.cancelled():
            return
        if self._state != "ready" or self._client is None:
            future.set_exception(self._not_ready_error(public_name))
            return
        task = self._thread.loop.create_task(
            self._call(self._client, raw_name, arguments, public_name, timeout, progress)
        )
        self._calls[future] = task
        task.add_done_callback(lambda done: self._finish_call(done, future))
        if cancel_follows_future:  # submit(): the caller's future.cancel() must reach the server
            future.add_done_callback(lambda f: f.cancelled() and self._thread.call_soon(task.cancel))

    def _cancel_call(self, future: concurrent.futures.Future[ToolResult], settled: threading.Event) -> None:
        """Cancel the call's task (the SDK sends the protocol's cancellation); `settled` once it is over."""
        task = self._calls.get(future)
        future.cancel()
        if task is None or task.done():
            settled.set()
            return
        task.add_done_callback(lambda _task: settled.set())
        task.cancel()

    def _finish_call(
        self, task: asyncio.Task[ToolResult], future: concurrent.futures.Future[ToolResult]
    ) -> None:
        """Resolve the caller's Future from the task; runs even for a task cancelled before its first step."""
        self._calls.pop(future, None)
        if future.done():  # the caller cancelled it
            return
        if task.cancelled():
            error: BaseException = self._end_cause or ServerDisconnectedError(
                f"server {self.name!r} is {self._state if self._state != 'ready' else 'closing'}; "
                "the call was abandoned"
            )
            if not isinstance(error, ToolCallError):
                error = ServerDisconnectedError(str(error))
            future.set_exception(error)
            return
        exc = task.exception()
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(task.result())

    async def _call(
        self,
        client: Client,
        raw_name: str,
        arguments: dict[str, Any],
        public_name: str,
        timeout: float,
        progress: ProgressCallback | None,
    ) -> ToolResult:
        on_progress = self._progress_forwarder(progress) if progress is not None else None
        try:
            async with asyncio.timeout(timeout):
                result = await client.call_tool(raw_name, arguments, progress_callback=on_progress)
        except TimeoutError:
            raise ToolCallTimeoutError(
                f"call to {public_name} did not finish within {timeout:g} s; cancelled on the server",
                tool=public_name,
            ) from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                # Over HTTP one stream's end proves little; the re-list that this triggers does: if the
                # server is gone its request fails and takes the transport, and so this connection, down.
                self._check_alive()
                raise ServerDisconnectedError(
                    f"server {self.name!r} disconnected during the call to {public_name}",
                    tool=public_name,
                    code=exc.code,
                ) from exc
            raise ToolCallError(
                f"server {self.name!r} refused the call to {public_name}: {exc.message} (code {exc.code})",
                tool=public_name,
                code=exc.code,
            ) from exc
        except pydantic_core.PydanticSerializationError as exc:
            raise ToolCallError(
                f"the arguments for {public_name} cannot be sent as JSON: {exc}", tool=public_name
            ) from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            raise ServerDisconnectedError(
                f"server {self.name!r} disconnected during the call to {public_name}", tool=public_name
            ) from exc
        except Exception as exc:  # invalid server output (schema or protocol validation)
            raise ToolCallError(
                f"server {self.name!r} sent an invalid result for {public_name}: {_describe(exc)}",
                tool=public_name,
            ) from exc
        return from_call_tool_result(result, public_name)

    def _progress_forwarder(self, progress: ProgressCallback) -> Any:
        dispatcher: CallbackDispatcher = self._registry.dispatcher

        async def forward(value: float, total: float | None, message: str | None) -> None:
            dispatcher.post((progress,), value, total, message)

        return forward


# Pids of live stdio children of every connection, for the exit handler to kill.
_live_children: set[int] = set()


def kill_live_children() -> None:
    """SIGKILL every stdio child still alive; the last resort at interpreter exit."""
    for pid in list(_live_children):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    _live_children.clear()


def _notify_waiters_if_cancelled(future: concurrent.futures.Future[ToolResult]) -> None:
    if future.cancelled():
        future.set_running_or_notify_cancel()


def _check_encodable(arguments: dict[str, Any], public_name: str) -> None:
    """Refuse text that cannot be written as UTF-8 (a lone surrogate, which `json.loads` can produce):
    the transport would fail on it and take the whole connection down with this one call."""
    try:
        json.dumps(arguments, ensure_ascii=False, default=str).encode()
    except UnicodeEncodeError as exc:
        raise ToolCallError(
            f"the arguments for {public_name} contain text that is not valid Unicode "
            f"(a lone surrogate at position {exc.start} of the JSON)",
            tool=public_name,
        ) from None
    except (TypeError, ValueError) as exc:  # circular or otherwise unserialisable
        raise ToolCallError(
            f"the arguments for {public_name} cannot be sent as JSON: {exc}", tool=public_name
        ) from None


def _wait(done: threading.Lock, timeout: float, cancel: threading.Event | None) -> bool:
    """Wait until `done` is released, up to `timeout`, or until `cancel` is set; True if released."""
    if cancel is None:
        return done.acquire(timeout=timeout)
    deadline = time.monotonic() + timeout
    while not cancel.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        if done.acquire(timeout=min(_CANCEL_POLL_INTERVAL, remaining)):
            return True
    return False


def _unwrap(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio wraps what escapes a Client)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _describe_loss(name: str, cause: BaseException | None) -> BaseException:
    """Why a ready server ended, as a `ServerDisconnectedError` (the transport's own error as its cause)."""
    if isinstance(cause, MCPSyncError):
        return cause
    loss = ServerDisconnectedError(
        f"server {name!r} connection lost" + (f": {_describe(cause)}" if cause is not None else "")
    )
    loss.__cause__ = cause
    return loss


def _describe_failure(name: str, cause: BaseException | None) -> BaseException:
    """Why a server never became ready: its own typed error, or a `ServerDisconnectedError`."""
    if cause is None:
        return ServerDisconnectedError(f"server {name!r} went away while connecting")
    if isinstance(cause, MCPSyncError | TimeoutError):
        return cause
    if isinstance(cause, asyncio.CancelledError):
        return ServerDisconnectedError(f"server {name!r} was stopped while connecting")
    if isinstance(cause, FileNotFoundError):
        return ServerDisconnectedError(f"server {name!r} could not start: {cause}")
    failure = ServerDisconnectedError(f"server {name!r} failed to connect: {_describe(cause)}")
    failure.__cause__ = cause
    return failure
