"""`TaskHandle`: a long-running call's task as the caller holds it, on the hub's side.

A handle names a server (by its configured name) and a task id, and reaches the server through
whatever connection the hub has for that name when it is used: after a Streamable HTTP server
dropped and was reconnected (the hub's `reconnect` settings) a `wait` goes on polling the same task
on the new session, and never calls the tool again. A handle refers to the hub's set of servers,
never to the hub, so it does not keep a dropped hub alive. The task outlives the handle: dropping
one, or a `wait` that times out, leaves the task running on the server.

A handle belongs to the process that made it: in a forked child each of its methods refuses at once, as
an inherited hub does, rather than wait on the parent's connection. A call a server answered at once,
without a task, gives a handle that holds its result: `task_id` empty, `info` completed, no request sent.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .._config import ServerConfig
from .._runtime.callbacks import ProgressCallback
from .._runtime.calls import NO_LIMIT, resolve_timeout
from .._runtime.lifecycle import fork_generation
from .._server.tasks.runner import StatusUpdates
from .._values.errors import (
    MCPSyncError,
    ServerDisconnectedError,
    SignInRequiredError,
    TaskNotFoundError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
)
from .._values.results import ToolResult
from .._values.tasks import TaskInfo
from .connection import ServerConnection
from .reload import same_identity

__all__ = ["ServerLookup", "TaskHandle", "call_as_task", "submit_as_task", "task_wait_limit"]

logger = logging.getLogger("mcp_sync")

ServerLookup = Callable[[], Mapping[str, object]]
"""The hub's servers by name now (`ServerSet.servers`): a connection, or what stands in for one."""

# While its server is reconnecting, how often a wait looks for the new connection.
_RECONNECT_POLL_INTERVAL = 0.05
# How long a connection that dropped may show `disconnected` before its reconnector stands in for it.
_RECONNECT_HANDOVER_TIMEOUT = 2.0
# A call whose timeout was the server's default waits for its task as long as the task may live: its TTL
# plus this margin (the server's clock, its last poll and its reaping of expired tasks lag behind ours).
TASK_TTL_MARGIN = 60.0
# ...or, for a task whose server keeps it for ever (no TTL), this long; a caller wanting more says so
# with its own timeout (`math.inf`: no limit).
TASK_WAIT_WITHOUT_TTL = 3600.0


class TaskHandle:
    """A task on a server: its id, its last known state, and blocking `wait`, `result`, `refresh`, `cancel`.

    Thread-safe. Its repr shows the server, the id and the last known status, never the arguments. For a
    call the server answered at once (no task), `task_id` is empty, `info` is completed, `wait` and
    `result` return the result, and `refresh` and `cancel` return `info` without asking the server.
    """

    def __init__(
        self,
        servers: ServerLookup,
        server: str,
        task_id: str,
        *,
        tool: str | None = None,
        info: TaskInfo | None = None,
        result: ToolResult | None = None,
        raw_name: str | None = None,
        owned_by_call: bool = False,
    ) -> None:
        self._servers = servers
        self._owned_by_call = owned_by_call  # a call's own task: cancelled if the hub closes meanwhile
        self._raw_name = raw_name  # the tool's name on its server: its result meets its output schema
        self.server = server
        self.task_id = task_id
        self.tool = tool
        """The public name of the tool, when this hub started the task; else None."""
        self._lock = threading.Lock()
        if info is None and result is not None and not task_id:  # answered at once: it has ended
            info = TaskInfo(server=server, task_id="", status="completed")
        self._info = info
        self._result = result
        self._fork_generation, self._pid = fork_generation(), os.getpid()
        current = servers().get(server)
        self._origin: ServerConfig | None = current.config if isinstance(current, ServerConnection) else None
        """The entry of the connection the task was made or found through: its server is where the task is."""

    @property
    def info(self) -> TaskInfo | None:
        """The task as last seen (no request is sent); None before anything was heard of it."""
        return self._info

    def __repr__(self) -> str:
        status = self._info.status if self._info is not None else "unknown"
        tool = f" tool={self.tool!r}" if self.tool else ""
        task = f" task_id={self.task_id!r}" if self.task_id else " answered at once (no task)"
        return f"<TaskHandle server={self.server!r}{task}{tool} status={status!r}>"

    # -- requests ---------------------------------------------------------------------------------------

    def refresh(self, timeout: float | None = None) -> TaskInfo:
        """The task's status now (`tasks/get`); `TaskNotFoundError` if the server does not know it."""
        return self._seen(self._request("get", timeout))

    def cancel(self, timeout: float | None = None) -> TaskInfo:
        """Ask the server to cancel the task (`tasks/cancel`); its status after (for a task that had
        already ended, that end). `TaskCancelRefusedError` if the server refused, the task running on."""
        return self._seen(self._request("cancel", timeout))

    def result(self, timeout: float | None = None) -> ToolResult:
        """The task's result, waiting for its end if it has not ended; see `wait`."""
        return self.wait(timeout)

    def wait(
        self,
        timeout: float | None = None,
        *,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
    ) -> ToolResult:
        """Wait until the task ends and return its result, polling at the server's interval and answering
        `input_required` with the hub's handlers; each new status message goes to `progress`.

        `timeout` (seconds, default no limit) and `cancel` stop only the waiting: `ToolCallTimeoutError` /
        `ToolCallCancelledError`, and the task keeps running. A task the server cancelled raises
        `ToolCallCancelledError`; one it does not know, `TaskNotFoundError`. When the server's connection
        drops and the hub reconnects it, the wait goes on with the same task on the new session.
        """
        seconds = resolve_timeout(timeout, NO_LIMIT)
        try:
            return self._follow(time.monotonic() + seconds, cancel, progress)
        except _WaitStopped as stopped:
            why = (
                "was not waited for any longer" if stopped.cancelled else f"did not end within {seconds:g} s"
            )
            message = f"{self._label} {why}; it keeps running on the server (wait again, or cancel it)"
            if stopped.cancelled:
                raise ToolCallCancelledError(message, tool=self.tool, task_id=self.task_id) from None
            raise ToolCallTimeoutError(message, tool=self.tool, task_id=self.task_id) from None

    def _follow(
        self, deadline: float, cancel: threading.Event | None, progress: ProgressCallback | None
    ) -> ToolResult:
        """`wait` up to `deadline` (monotonic); `_WaitStopped` when the deadline or `cancel` stops it."""
        self._check_process()
        if self._result is not None:
            return self._result
        try:
            return self._poll(deadline, cancel, progress)
        except ToolCallError as error:
            self._name_in(error)
            raise

    def _poll(
        self, deadline: float, cancel: threading.Event | None, progress: ProgressCallback | None
    ) -> ToolResult:
        """Follow the task on whichever connection the server has, up to `deadline`."""
        updates = StatusUpdates()  # one count of status messages across the connections of this wait
        while True:
            connection = self._connection(deadline, cancel)
            try:
                result = connection.follow_task(
                    self.task_id,
                    self._info,
                    label=self._label,
                    timeout=_remaining(deadline),
                    cancel=cancel,
                    progress=progress,
                    on_info=self._seen,
                    updates=updates,
                    raw_name=self._raw_name,
                    cancel_on_close=self._owned_by_call,
                )
            except ServerDisconnectedError:
                if connection.config.reconnect is None:
                    raise
                continue  # the hub reconnects it: wait on the new connection, with the same task
            except ToolCallTimeoutError:
                raise _WaitStopped(cancelled=False) from None
            except ToolCallCancelledError:
                if cancel is not None and cancel.is_set():
                    raise _WaitStopped(cancelled=True) from None
                raise
            with self._lock:
                self._result = result
            return result

    # -- helpers ----------------------------------------------------------------------------------------

    @property
    def _label(self) -> str:
        return f"task {self.task_id!r}" + (f" of {self.tool}" if self.tool else f" on server {self.server!r}")

    def _seen(self, info: TaskInfo) -> TaskInfo:
        with self._lock:
            self._info = info
        return info

    def _request(self, kind: str, timeout: float | None) -> TaskInfo:
        self._check_process()
        if not self.task_id and self._info is not None:  # answered at once: no task to ask about
            return self._info
        try:
            try:
                connection = self._connection(time.monotonic(), None)
            except _WaitStopped:
                raise ServerDisconnectedError(
                    f"server {self.server!r} is reconnecting; cannot reach {self._label} now",
                    tool=self.tool,
                    task_id=self.task_id,
                ) from None
            seconds = resolve_timeout(timeout, connection.config.tool_call_timeout)
            info: TaskInfo = connection.task_request(kind, self.task_id, timeout=seconds)
        except ToolCallError as error:
            self._name_in(error)
            raise
        return info

    def _name_in(self, error: ToolCallError) -> None:
        """Make `error`, raised for this handle's task, name it as a call's error does: `tool` the tool's
        public name (the layers below know the task by a label) and `task_id` the task's. An error that
        names no tool and no task is left as it is: it may be the one every call of an ended session
        gets."""
        if error.tool is not None or error.task_id is not None:
            error.tool = self.tool
            error.task_id = self.task_id

    def _check_process(self) -> None:
        """Refuse at once in a process forked from the one that made this handle: the connection it
        would wait on is the parent's (as an inherited hub refuses its calls)."""
        if self._fork_generation == fork_generation():
            return
        what = f"task {self.task_id!r}" if self.task_id else "a call's result"
        follow = (
            f"; follow the task there with hub.task({self.server!r}, {self.task_id!r})"
            if self.task_id
            else ""
        )
        raise MCPSyncError(
            f"this handle on {what} of server {self.server!r} was made in process {self._pid}, and this "
            f"is process {os.getpid()} (a fork): it belongs to the parent; create a new MCPHub in the "
            f"child{follow}"
        )

    def _check_same_server(self, connection: ServerConnection) -> None:
        """A task is on the server it was made on: once a reload made the name another server (another
        address, transport or command), no request about it goes there (a `ServerDisconnectedError` says
        where the task is)."""
        origin = self._origin
        if origin is None or same_identity(origin, connection.config):
            return
        if not self._owned_by_call:
            fate = "it keeps running there"
        elif connection.handovers.was_cancelled(self.server, self.task_id):
            fate = "the hub had tasks/cancel sent for it there"
        else:
            fate = "the hub could not send tasks/cancel for it there: it may still run"
        raise ServerDisconnectedError(
            f"server {self.server!r} was reloaded as another server; {self._label} is on the server of its "
            f"previous entry, which this hub no longer reaches ({fate})",
            tool=self.tool,
            task_id=self.task_id,
        )

    def _connection(self, deadline: float, cancel: threading.Event | None) -> ServerConnection:
        """The server's connection, once ready: while it is reconnecting (or connecting) this waits, up to
        `deadline` or `cancel` (`_WaitStopped`); a server that is not coming back raises
        `ServerDisconnectedError`."""
        dropped_at: float | None = None
        while True:
            current = self._servers().get(self.server)
            if current is None:
                raise ServerDisconnectedError(
                    f"server {self.server!r} is not connected (its hub was closed, or reloaded without it); "
                    f"cannot reach {self._label}",
                    tool=self.tool,
                    task_id=self.task_id,
                )
            state = getattr(current, "state", None)
            if isinstance(current, ServerConnection) and state == "ready":
                self._check_same_server(current)
                return current
            if (
                state in ("disconnected", "closed")
                and isinstance(current, ServerConnection)
                and _hands_over(current)
            ):
                # It has just dropped, or a reload or sign-in replaced it: its successor takes its place in
                # a moment (installed after the state this thread may read in between was announced).
                dropped_at = dropped_at if dropped_at is not None else time.monotonic()
                if time.monotonic() - dropped_at < _RECONNECT_HANDOVER_TIMEOUT:
                    state = "reconnecting"
            if state not in ("reconnecting", "connecting"):
                if self._servers().get(self.server) is not current:
                    # It changed after the map was read: an attempt to reconnect that failed gives way to
                    # its reconnector (the map shows an attempt while it connects). Look again.
                    continue
                error = getattr(current, "error", None)
                raise ServerDisconnectedError(
                    f"server {self.server!r} is {state}; cannot reach {self._label}"
                    + (f": {error}" if error is not None else ""),
                    tool=self.tool,
                    task_id=self.task_id,
                )
            if cancel is not None and cancel.is_set():
                raise _WaitStopped(cancelled=True)
            if time.monotonic() >= deadline:
                raise _WaitStopped(cancelled=False)
            time.sleep(_RECONNECT_POLL_INTERVAL)


def _hands_over(connection: ServerConnection) -> bool:
    """Whether an ended connection is about to be replaced: a reconnector after a drop, or the new
    connection of a reload or a sign-in (see `ServerSet`; `_check_same_server` then says whether the
    task can be reached there)."""
    if connection.state == "closed":
        return connection.replaced
    return connection.config.reconnect is not None and not isinstance(connection.error, SignInRequiredError)


class _WaitStopped(Exception):
    """A wait on a task that stopped (deadline or cancel); the task itself goes on."""

    def __init__(self, *, cancelled: bool) -> None:
        super().__init__()
        self.cancelled = cancelled


def call_as_task(
    connection: ServerConnection,
    servers: ServerLookup,
    raw_name: str,
    arguments: Mapping[str, Any] | None,
    *,
    public_name: str,
    timeout: float,
    cancel: threading.Event | None,
    progress: ProgressCallback | None,
    certain: bool = True,
    task_life: bool = False,
) -> ToolResult:
    """`call_tool` of a task on a server the hub reconnects: the task is started, then waited for as a
    handle waits, so the wait goes on across a reconnect with the same task (the tool is never called
    again). `timeout` covers it all, unless `task_life` (the caller gave none: it is the server's
    default): it then bounds the start, and once the server answered with a task the wait lasts as long
    as the task may (`task_wait_limit`), if longer. When the caller gives up (timeout, `cancel`, Ctrl-C)
    the task is cancelled on the server, and the call raises as any call does."""
    begun = time.monotonic()
    deadline = begun + timeout
    started = connection.start_task(
        raw_name,
        arguments,
        public_name=public_name,
        ttl=None,
        timeout=timeout,
        cancel=cancel,
        progress=progress,
        certain=certain,
    )
    if isinstance(started, ToolResult):
        return started
    if task_life:
        deadline = max(deadline, time.monotonic() + task_wait_limit(started))
        timeout = deadline - begun
    handle = TaskHandle(
        servers,
        connection.name,
        started.task_id,
        tool=public_name,
        info=started,
        raw_name=raw_name,
        owned_by_call=True,
    )
    try:
        return handle._follow(deadline, cancel, progress)
    except _WaitStopped as stopped:
        told = _cancel_quietly(handle)
        if not told:  # stopped before it could reach its task (a hand-over, a reconnect): the hub cancels
            connection.handovers.abandon(  # it once a connection to its server is ready
                connection.name, handle.task_id, handle._origin or connection.config
            )
        raise _stopped_error(public_name, timeout, handle, cancelled=stopped.cancelled, told=told) from None
    except (TaskNotFoundError, ToolCallCancelledError):
        raise  # the task is gone or cancelled already: nothing to cancel
    except BaseException as failed:  # Ctrl-C in the waiting thread, or the wait failed (its input
        # could not be given, say): nobody will fetch the task, so it is cancelled too, unless it was
        # seen to end; where no connection can send that now, the hub sends it once one can.
        if (handle.info is None or not handle.info.done) and not _cancel_quietly(handle):
            connection.handovers.abandon(connection.name, handle.task_id, handle._origin or connection.config)
            told_by_hub = connection.handovers.was_cancelled(connection.name, handle.task_id)
            if isinstance(failed, ServerDisconnectedError) and failed.args and not told_by_hub:
                failed.args = (
                    f"{failed.args[0]}; the server could not be told to cancel {handle._label}, "
                    "which may still run there",
                    *failed.args[1:],
                )
        raise


def submit_as_task(
    connection: ServerConnection,
    servers: ServerLookup,
    raw_name: str,
    arguments: Mapping[str, Any] | None,
    *,
    public_name: str,
    timeout: float,
    progress: ProgressCallback | None,
    certain: bool = True,
    task_life: bool = False,
) -> concurrent.futures.Future[ToolResult]:
    """`submit` of a task on a server the hub reconnects: `call_as_task` on a thread of its own, so the
    call goes on across a reconnect as a blocking one does; `future.cancel()` cancels the task."""
    future = concurrent.futures.Future[ToolResult]()
    stop = threading.Event()

    def stopped(done: concurrent.futures.Future[ToolResult]) -> None:
        if done.cancelled():  # the Future stays pending while it runs, so that cancel() works
            stop.set()
            done.set_running_or_notify_cancel()  # wakes wait() and as_completed()

    future.add_done_callback(stopped)

    def run() -> None:
        try:
            result = call_as_task(
                connection,
                servers,
                raw_name,
                arguments,
                public_name=public_name,
                timeout=timeout,
                cancel=stop,
                progress=progress,
                certain=certain,
                task_life=task_life,
            )
        except BaseException as exc:
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                future.set_exception(exc)
        else:
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                future.set_result(result)

    context = contextvars.copy_context()  # the caller's (a tracing span and its task watcher)
    threading.Thread(
        target=context.run, args=(run,), name=f"mcp-sync:task:{connection.name}", daemon=True
    ).start()
    return future


def task_wait_limit(info: TaskInfo) -> float:
    """How long a call with the default timeout waits for a task the server just created: its TTL plus
    `TASK_TTL_MARGIN`, or `TASK_WAIT_WITHOUT_TTL` where the server gave none."""
    if info.ttl is None:
        return TASK_WAIT_WITHOUT_TTL
    return info.ttl + TASK_TTL_MARGIN


def _cancel_quietly(handle: TaskHandle) -> bool:
    """Have `tasks/cancel` sent for a task whose caller gave up, without waiting for the server's answer
    (the connection logs its outcome), so the caller's own error is raised at once; False, logged, when
    no connection to the task's server can send it now."""
    try:
        connection = handle._connection(time.monotonic(), None)
    except _WaitStopped:
        logger.info("could not cancel %s: server %r is reconnecting", handle._label, handle.server)
        return False
    except MCPSyncError as exc:
        logger.info("could not cancel %s: %s", handle._label, exc)
        return False
    if connection.cancel_task_soon(handle.task_id, handle._label):
        return True
    logger.info("could not cancel %s: server %r is %s", handle._label, handle.server, connection.state)
    return False


def _stopped_error(
    public_name: str, timeout: float, handle: TaskHandle, *, cancelled: bool, told: bool
) -> ToolCallCancelledError | ToolCallTimeoutError:
    """The error of a task call its caller stopped, naming the task (`task_id`); it says whether the
    server could be told."""
    what = "was cancelled" if cancelled else f"did not finish within {timeout:g} s"
    task = f"task {handle.task_id!r}"
    if told:  # sent in the background, so that the caller is answered at once: its answer is not known
        message = f"call to {public_name} {what}; tasks/cancel was sent for {task} (its outcome is logged)"
    else:
        message = (
            f"call to {public_name} {what}; the server could not be told to cancel {task}, which may "
            "still run there"
        )
    if cancelled:
        return ToolCallCancelledError(message, tool=public_name, task_id=handle.task_id)
    return ToolCallTimeoutError(message, tool=public_name, task_id=handle.task_id)


def _remaining(deadline: float) -> float:
    if deadline == NO_LIMIT:
        return NO_LIMIT
    return max(deadline - time.monotonic(), 1e-3)
