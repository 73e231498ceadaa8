"""`TaskHandle`: a long-running call's task as the caller holds it, on the hub's side.

A handle names a server (by its configured name) and a task id, and reaches the server through
whatever connection the hub has for that name when it is used: after a Streamable HTTP server
dropped and was reconnected (the hub's `reconnect` settings) a `wait` goes on polling the same task
on the new session, and never calls the tool again. A handle refers to the hub's set of servers,
never to the hub, so it does not keep a dropped hub alive. The task outlives the handle: dropping
one, or a `wait` that times out, leaves the task running on the server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from .._runtime.callbacks import ProgressCallback
from .._runtime.calls import NO_LIMIT, resolve_timeout
from .._values.errors import (
    ServerDisconnectedError,
    ToolCallCancelledError,
    ToolCallTimeoutError,
)
from .._values.results import ToolResult
from .._values.tasks import TaskInfo
from .connection import ServerConnection

__all__ = ["ServerLookup", "TaskHandle"]

ServerLookup = Callable[[], Mapping[str, object]]
"""The hub's servers by name now (`ServerSet.servers`): a connection, or what stands in for one."""

# While its server is reconnecting, how often a wait looks for the new connection.
_RECONNECT_POLL_INTERVAL = 0.05


class TaskHandle:
    """A task on a server: its id, its last known state, and blocking `wait`, `result`, `refresh`, `cancel`.

    Thread-safe. Its repr shows the server, the id and the last known status, never the arguments.
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
    ) -> None:
        self._servers = servers
        self.server = server
        self.task_id = task_id
        self.tool = tool
        """The public name of the tool, when this hub started the task; else None."""
        self._lock = threading.Lock()
        self._info = info
        self._result = result

    @property
    def info(self) -> TaskInfo | None:
        """The task as last seen (no request is sent); None before anything was heard of it."""
        return self._info

    def __repr__(self) -> str:
        status = self._info.status if self._info is not None else "unknown"
        tool = f" tool={self.tool!r}" if self.tool else ""
        return f"<TaskHandle server={self.server!r} task_id={self.task_id!r}{tool} status={status!r}>"

    # -- requests ---------------------------------------------------------------------------------------

    def refresh(self, timeout: float | None = None) -> TaskInfo:
        """The task's status now (`tasks/get`); `TaskNotFoundError` if the server does not know it."""
        return self._seen(self._request("get", timeout))

    def cancel(self, timeout: float | None = None) -> TaskInfo:
        """Ask the server to cancel the task (`tasks/cancel`); its status after (for a task that had
        already ended, that end)."""
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
        deadline = time.monotonic() + seconds
        if self._result is not None:
            return self._result
        while True:
            connection = self._connection(deadline, cancel, seconds)
            info = self._info or TaskInfo(server=self.server, task_id=self.task_id, status="working")
            try:
                result = connection.follow_task(
                    info,
                    label=self._label,
                    timeout=_remaining(deadline),
                    cancel=cancel,
                    progress=progress,
                    on_info=self._seen,
                )
            except ServerDisconnectedError:
                if connection.config.reconnect is None:
                    raise
                continue  # the hub reconnects it: wait on the new connection, with the same task
            except ToolCallTimeoutError:
                raise self._stopped_waiting(f"did not end within {seconds:g} s", cancelled=False) from None
            except ToolCallCancelledError:
                if cancel is not None and cancel.is_set():
                    raise self._stopped_waiting("was not waited for any longer", cancelled=True) from None
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
        connection = self._connection(time.monotonic(), None, 0.0)
        seconds = resolve_timeout(timeout, connection.config.tool_call_timeout)
        info: TaskInfo = connection.task_request(kind, self.task_id, timeout=seconds)
        return info

    def _connection(
        self, deadline: float, cancel: threading.Event | None, seconds: float
    ) -> ServerConnection:
        """The server's connection, once ready: while it is reconnecting (or connecting) this waits, up to
        `deadline`; a server that is not coming back raises `ServerDisconnectedError`."""
        while True:
            current = self._servers().get(self.server)
            if current is None:
                raise ServerDisconnectedError(f"server {self.server!r} is not in this hub (any more)")
            state = getattr(current, "state", None)
            if isinstance(current, ServerConnection) and state == "ready":
                return current
            if state not in ("reconnecting", "connecting"):
                error = getattr(current, "error", None)
                raise ServerDisconnectedError(
                    f"server {self.server!r} is {state}; cannot reach {self._label}"
                    + (f": {error}" if error is not None else "")
                )
            if cancel is not None and cancel.is_set():
                raise self._stopped_waiting("was not waited for any longer", cancelled=True)
            if time.monotonic() >= deadline:
                raise self._stopped_waiting(
                    f"could not be reached within {seconds:g} s (server {state})", cancelled=False
                )
            time.sleep(_RECONNECT_POLL_INTERVAL)

    def _stopped_waiting(self, why: str, *, cancelled: bool) -> ToolCallTimeoutError | ToolCallCancelledError:
        """The error of a wait that stopped (the task itself goes on)."""
        message = f"{self._label} {why}; it keeps running on the server (wait again, or cancel it)"
        if cancelled:
            return ToolCallCancelledError(message, tool=self.tool)
        return ToolCallTimeoutError(message, tool=self.tool)


def _remaining(deadline: float) -> float:
    if deadline == NO_LIMIT:
        return NO_LIMIT
    return max(deadline - time.monotonic(), 1e-3)
