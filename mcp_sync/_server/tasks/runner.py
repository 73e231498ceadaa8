"""Drives a task on the server's loop: from its creation to its result, over the era's `TaskWire`.

The runner polls `tasks/get` at the server's `pollInterval` (clamped to `_MIN_POLL_INTERVAL` ..
`_MAX_POLL_INTERVAL`), posts each new status message to the caller's progress callback, lets the
wire answer an `input_required` task with the hub's handlers while it keeps polling, and returns
the task's result. A runner that is cancelled (the caller's timeout, cancel Event, Ctrl-C,
`future.cancel()`) has `tasks/cancel` sent when it drives a call (`cancel_when_stopped`), and a
task still being created is cancelled once the server gives its id; both are left to the session's
`Aftercare` (bounded, logged), so the caller is answered at once. One that only waits on a task
leaves it running.
The SDK's errors become this package's: an unknown task id is `TaskNotFoundError`.

The wire follows the session's negotiated protocol (`wire_for`): `legacy.LegacyTaskWire` up to
2025-11-25; on 2026-07-28 the module `extension`, whose `wire(server_name)` makes its `TaskWire`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..._runtime.task_watch import tell_watcher
from ..._values.errors import TaskNotFoundError, ToolCallCancelledError, UnsupportedFeatureError
from ..._values.secrets import scrub
from ..._values.tasks import TaskInfo
from .legacy import LegacyTaskWire
from .wire import ProgressSink, TaskFailure, TaskWire

__all__ = [
    "CANCEL_TIMEOUT",
    "MAY_BECOME_TASK_GRACE",
    "Aftercare",
    "StatusUpdates",
    "cancel_task",
    "follow_task",
    "not_found",
    "run_task",
    "start_task",
    "wire_for",
]

logger = logging.getLogger("mcp_sync")

# Never poll faster than this, whatever the server asks: a server asking for 0 ms must not make us spin.
# Low, so that a server's own short interval is what it costs: the runner adds no wait of its own.
_MIN_POLL_INTERVAL = 0.01
# Never poll slower than this: a status message or the end is seen within it, however long the server asks.
_MAX_POLL_INTERVAL = 5.0
# The poll interval when the server suggests none.
_DEFAULT_POLL_INTERVAL = 0.5
CANCEL_TIMEOUT = 2.0
"""How long a stopped runner waits for the server to answer its `tasks/cancel` before it gives up."""
MAY_BECOME_TASK_GRACE = 1.0
"""How long a stopped call that only may become a task waits for the server's answer (a task on its way
is then cancelled with `tasks/cancel`) before the call itself is cancelled, as a plain call is."""
# How long `Aftercare.flush` waits for the jobs it cancelled to end (they only log).
_CANCELLED_JOB_TIMEOUT = 0.5
# JSON-RPC "invalid params": what a 2025-11-25 server answers for a task id it does not know.
_INVALID_PARAMS = types.INVALID_PARAMS
_EXTENSION_MODULE = "mcp_sync._server.tasks.extension"


def wire_for(server: str, protocol_version: str | None) -> TaskWire:
    """The task wire of the session's negotiated protocol: 2025-11-25 tasks, or the 2026-07-28 tasks
    extension (`UnsupportedFeatureError` while this build has none)."""
    if protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return LegacyTaskWire(server)
    try:
        extension = importlib.import_module(_EXTENSION_MODULE)
    except ModuleNotFoundError as missing:
        if missing.name != _EXTENSION_MODULE:
            raise
        raise UnsupportedFeatureError(
            f"server {server!r} speaks MCP {protocol_version}, where tasks are an extension this "
            "version of mcp_sync does not support"
        ) from None
    wire: TaskWire = extension.wire(server)
    return wire


def not_found(
    exc: BaseException, server: str, task_id: str, label: str | None = None
) -> TaskNotFoundError | None:
    """`TaskNotFoundError` when `exc` is the server saying it does not know the task; else None. Only
    for `tasks/get`'s answer: "invalid params" there can only be about the id, whatever the message
    says. `tasks/result`, `tasks/update` and `tasks/cancel` may refuse so for reasons of their own (a
    task that failed so, input that does not match, a task that ended): a `tasks/get` tells which. A
    task's own failure (`TaskFailure`) is never "not found"."""
    if not isinstance(exc, MCPError) or isinstance(exc, TaskFailure) or exc.code != _INVALID_PARAMS:
        return None
    return TaskNotFoundError(
        f"server {server!r} does not know task {task_id!r} (it never existed, expired or was dropped)",
        server=server,
        task_id=task_id,
        tool=label,
    )


@dataclass
class StatusUpdates:
    """What one wait has done so far: the status messages it reported (the last, and how many) and the
    input it gave (by request key). Kept by the caller across the connections a wait goes through, so a
    resumed wait neither repeats nor recounts, and gives again, without asking, an answer a dropped
    connection may have lost."""

    last: str | None = None
    count: int = 0
    answers: dict[str, Any] = field(default_factory=dict)


class Aftercare:
    """What stopped calls leave to do on a session's loop once their callers were answered: a
    `tasks/cancel` to send, or a task still being created to cancel once the server gives its id.
    Each job is a task of its own, bounded by its own waits and logging its outcome; `flush` gives
    the jobs left at the session's end a bound before the transport closes, then cancels them."""

    def __init__(self) -> None:
        self._jobs: set[asyncio.Task[None]] = set()

    def spawn(self, job: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(job)
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)

    async def flush(self, timeout: float) -> None:
        """Wait up to `timeout` for the jobs to finish; cancel those that did not (each logs it)."""
        if not self._jobs:
            return
        _done, pending = await asyncio.wait(set(self._jobs), timeout=timeout)
        for job in pending:
            job.cancel()
        if pending:  # a cancelled job only logs and ends
            await asyncio.wait(pending, timeout=_CANCELLED_JOB_TIMEOUT)


async def run_task(
    wire: TaskWire,
    client: Client,
    raw_name: str,
    arguments: dict[str, Any],
    *,
    label: str,
    progress: ProgressSink | None,
    ttl: float | None = None,
    certain: bool = True,
    aftercare: Aftercare | None = None,
    on_created: Callable[[str], object] | None = None,
) -> types.CallToolResult:
    """Call a tool as a task and wait for its result; cancelled, it cancels the task on the server.
    `certain` and `aftercare`: as `start_task`'s; `on_created(task_id)` once the server made the task
    (so that the caller's error can name it)."""
    started = await start_task(
        wire, client, raw_name, arguments, ttl=ttl, progress=progress, certain=certain, aftercare=aftercare
    )
    if isinstance(started, types.CallToolResult):
        return started
    if on_created is not None:
        on_created(started.task_id)
    return await follow_task(
        wire,
        client,
        started,
        tool=label,
        progress=progress,
        cancel_when_stopped=True,
        aftercare=aftercare,
    )


async def start_task(
    wire: TaskWire,
    client: Client,
    raw_name: str,
    arguments: dict[str, Any],
    *,
    ttl: float | None,
    progress: ProgressSink | None,
    certain: bool = True,
    aftercare: Aftercare | None = None,
) -> TaskInfo | types.CallToolResult:
    """`wire.start`. A cancelled caller never cuts the start short: once `tools/call` may have reached
    the server a task may exist, so the start goes on and the task it created is cancelled
    (`tasks/cancel`) when the server gives its id, however late, while the connection lives. When a
    task is `certain` (the caller asked for one) the call is never cancelled itself; one that only
    may become a task is given `MAY_BECOME_TASK_GRACE` to answer, then cancelled as a plain call is
    (the SDK's `notifications/cancelled`). With an `aftercare`, that is left to it and the
    cancellation goes on at once; without one it is awaited here (bounded by `CANCEL_TIMEOUT`)."""
    stopped = False
    forward = progress

    async def until_stopped(progress: float, total: float | None, message: str | None) -> None:
        if not stopped and forward is not None:  # a caller that was answered hears no more
            await forward(progress, total, message)

    sink: ProgressSink | None = until_stopped if forward is not None else None
    starting = asyncio.ensure_future(wire.start(client, raw_name, arguments, ttl=ttl, progress=sink))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        stopped = True
        if aftercare is not None:
            aftercare.spawn(_cancel_once_started(wire, client, starting, raw_name, certain))
        else:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(
                    _cancel_once_started(wire, client, starting, raw_name, certain), CANCEL_TIMEOUT
                )
        raise


async def _cancel_once_started(
    wire: TaskWire,
    client: Client,
    starting: asyncio.Future[TaskInfo | types.CallToolResult],
    raw_name: str,
    certain: bool,
) -> None:
    """The rest of a stopped caller's start: wait for the server's answer and cancel the task it created.
    A call that only may become a task is cancelled itself once `MAY_BECOME_TASK_GRACE` is over; one
    cut short here (the connection ends) is cancelled too, and the log says a task may be left."""
    try:
        await asyncio.wait({starting}, timeout=None if certain else MAY_BECOME_TASK_GRACE)
    except asyncio.CancelledError:
        if not starting.done():
            logger.warning(
                "%s: the stopped call was given up before the server said whether it made it a task; "
                "if it did, that task is not cancelled",
                raw_name,
            )
        raise
    finally:
        if not starting.done():
            starting.cancel()  # the SDK tells the server to stop the call itself
    if not starting.done() or starting.cancelled():
        logger.debug(
            "%s: the stopped call was not answered within %g s; cancelled", raw_name, MAY_BECOME_TASK_GRACE
        )
        return
    if starting.exception() is not None:
        logger.debug("a stopped call's tools/call failed: %s", starting.exception())
        return
    started = starting.result()
    if isinstance(started, TaskInfo):
        if isinstance(wire, LegacyTaskWire):
            wire.ended(started.task_id)
        if not started.done:
            await cancel_task(wire, client, started.task_id)


async def follow_task(
    wire: TaskWire,
    client: Client,
    info: TaskInfo,
    *,
    tool: str | None,
    progress: ProgressSink | None,
    cancel_when_stopped: bool,
    on_info: Callable[[TaskInfo], object] | None = None,
    updates: StatusUpdates | None = None,
    aftercare: Aftercare | None = None,
) -> types.CallToolResult:
    """Poll a task until it ends and return its result (`ToolCallCancelledError` if it was cancelled).
    Each new status message (the status itself where the server gives none) goes to
    `progress(updates_so_far, None, message)`, counted in `updates` (a wait resumed on a new
    connection passes the one it had), each status seen to `on_info`; an unknown task id is
    `TaskNotFoundError`. `tool`: the tool's public name, where known, for the errors raised here.
    Stopped with `cancel_when_stopped`, its `tasks/cancel` is left to `aftercare` (the stop goes on
    at once), or awaited here without one."""
    task_id = info.task_id
    updates = updates if updates is not None else StatusUpdates()
    answering: asyncio.Task[types.CallToolResult | None] | None = None
    input_error: BaseException | None = None  # giving the input failed (the task is known: just polled)
    try:
        while True:
            if on_info is not None:
                on_info(info)
            tell_watcher(info)  # a traced call's span (`_runtime.task_watch`)
            message = info.status_message or info.status  # a task without messages: its status changes
            if message != updates.last:
                updates.last = message
                updates.count += 1
                if progress is not None:
                    await progress(float(updates.count), None, message)
            if info.status == "cancelled":
                of = f" of {tool}" if tool else ""
                raise ToolCallCancelledError(
                    f"task {task_id!r}{of} was cancelled on server {info.server!r}",
                    tool=tool,
                    task_id=task_id,
                )
            if info.done:
                if answering is not None and wire.input_brings_result:  # already asking for the result
                    try:
                        answered = await answering
                    except MCPError as failed:
                        if failed.code == types.CONNECTION_CLOSED:
                            raise
                        # The task is known (just polled) and ended: its tasks/result's error is its own
                        # end, whatever the code ("invalid params" included), never "not found".
                        raise TaskFailure.of(failed, task_id) from failed
                    if answered is not None:
                        return answered
                elif answering is not None:  # the task ended without the answer: it is not needed
                    answering.cancel()
                    answering = None
                return await _outcome(wire, client, task_id, info)
            if info.status == "input_required" and answering is None:
                answering = asyncio.ensure_future(wire.answer_input(client, task_id, info, updates.answers))
            delay = _poll_delay(info)
            if answering is None:
                await asyncio.sleep(delay)
            else:
                done, _pending = await asyncio.wait({answering}, timeout=delay)
                if done:
                    finished, answering = answering, None
                    error = finished.exception()
                    if error is not None:  # the task may have been cancelled meanwhile: that says more
                        info = await wire.get(client, task_id)
                        if info.status != "cancelled":
                            if wire.input_brings_result and isinstance(error, MCPError):
                                error = TaskFailure.of(error, task_id)  # its tasks/result: its own end
                            input_error = error
                            raise error
                        continue
                    answered = finished.result()
                    if answered is not None:
                        return answered
            info = await wire.get(client, task_id)
    except asyncio.CancelledError:
        if cancel_when_stopped and not info.done:
            if aftercare is not None:
                aftercare.spawn(cancel_task(wire, client, task_id))
            else:
                await cancel_task(wire, client, task_id)
        raise
    except Exception as exc:
        missing = not_found(exc, info.server, task_id, tool) if exc is not input_error else None
        if missing is not None:
            raise missing from exc
        if cancel_when_stopped and not info.done:
            # The call fails (its input could not be given, a poll failed): nobody will fetch this task.
            if aftercare is not None:
                aftercare.spawn(cancel_task(wire, client, task_id))
            else:
                await cancel_task(wire, client, task_id)
        raise
    finally:
        if answering is not None:
            # Its failure is moot once the wait itself ended (the connection went, say): taken here,
            # so that asyncio does not log it as an exception never retrieved.
            answering.add_done_callback(_discard_outcome)
            answering.cancel()
        if isinstance(wire, LegacyTaskWire):
            wire.ended(task_id)


def _discard_outcome(done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()


async def cancel_task(wire: TaskWire, client: Client, task_id: str) -> None:
    """Send `tasks/cancel` for a call the caller gave up on: shielded from the caller's cancellation,
    bounded by `CANCEL_TIMEOUT`, and quiet (the caller's own error is what it raises)."""
    sending = asyncio.ensure_future(wire.cancel(client, task_id))
    # A 2025-11-25 server answers "invalid params" also for a task that ended meanwhile: not a refusal.
    ended_reads_as_refusal = isinstance(wire, LegacyTaskWire)
    sending.add_done_callback(functools.partial(_log_cancel_failure, task_id, ended_reads_as_refusal))
    try:
        done, _pending = await asyncio.wait({sending}, timeout=CANCEL_TIMEOUT)
    except asyncio.CancelledError:  # the session's end cut it off (`Aftercare.flush`)
        done = set()
        why = "the session ended before the server answered tasks/cancel"
    else:
        why = f"the server did not answer tasks/cancel within {CANCEL_TIMEOUT:g} s"
    if not done:
        logger.warning("task %r: %s; that task may be left running", task_id, why)
        sending.cancel()


def _log_cancel_failure(
    task_id: str, ended_reads_as_refusal: bool, sending: asyncio.Future[TaskInfo]
) -> None:
    """Log a failed `tasks/cancel` of a stopped call (its caller's error said it was sent): a refusal by
    the server as a warning, since the task may still be running."""
    failure = None if sending.cancelled() else sending.exception()
    if failure is None:
        return
    ambiguous = ended_reads_as_refusal and isinstance(failure, MCPError) and failure.code == _INVALID_PARAMS
    if isinstance(failure, MCPError) and failure.code != types.CONNECTION_CLOSED and not ambiguous:
        logger.warning(
            "task %r: the server refused tasks/cancel: %s (code %s); the task may still be running",
            task_id,
            scrub(failure.message),
            failure.code,
        )
    else:
        logger.info("task %r: tasks/cancel failed: %s", task_id, scrub(str(failure)))


async def _outcome(wire: TaskWire, client: Client, task_id: str, info: TaskInfo) -> types.CallToolResult:
    """The ended task's result; an error here is the task's own failure (`TaskFailure`), unless a
    `tasks/get` says the server no longer knows the task (its -32602 is then "not found")."""
    try:
        return await wire.outcome(client, task_id, info)
    except MCPError as failed:
        if failed.code == _INVALID_PARAMS and not isinstance(failed, TaskFailure):
            await wire.get(client, task_id)  # raises the server's "unknown task" if it is gone
        raise TaskFailure.of(failed, task_id) from failed


def _poll_delay(info: TaskInfo) -> float:
    """The pause before the next `tasks/get`: the server's interval, within our floor and ceiling."""
    asked = info.poll_interval if info.poll_interval is not None else _DEFAULT_POLL_INTERVAL
    return min(max(asked, _MIN_POLL_INTERVAL), _MAX_POLL_INTERVAL)
