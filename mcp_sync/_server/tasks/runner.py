"""Drives a task on the server's loop: from its creation to its result, over the era's `TaskWire`.

The runner polls `tasks/get` at the server's `pollInterval` (clamped to `_MIN_POLL_INTERVAL` ..
`_MAX_POLL_INTERVAL`), posts each new status message to the caller's progress callback, lets the
wire answer an `input_required` task with the hub's handlers while it keeps polling, and returns
the task's result. A runner that is cancelled (the caller's timeout, cancel Event, Ctrl-C,
`future.cancel()`) sends `tasks/cancel` first when it drives a call (`cancel_when_stopped`),
shielded and bounded by `_CANCEL_TIMEOUT`; one that only waits on a task leaves it running.
The SDK's errors become this package's: an unknown task id is `TaskNotFoundError`.

The wire follows the session's negotiated protocol (`wire_for`): `legacy.LegacyTaskWire` up to
2025-11-25; on 2026-07-28 the module `extension`, whose `wire(server_name)` makes its `TaskWire`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..._runtime.task_watch import tell_watcher
from ..._values.errors import TaskNotFoundError, ToolCallCancelledError, UnsupportedFeatureError
from ..._values.tasks import TaskInfo
from .legacy import LegacyTaskWire
from .wire import ProgressSink, TaskFailure, TaskWire

__all__ = [
    "CANCEL_TIMEOUT",
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
    """The status messages one wait has reported so far: the last, and how many. Kept by the caller
    across the connections a wait goes through, so a resumed wait neither repeats nor recounts."""

    last: str | None = None
    count: int = 0


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
) -> types.CallToolResult:
    """Call a tool as a task and wait for its result; cancelled, it cancels the task on the server.
    `certain`: as `start_task`'s."""
    started = await start_task(wire, client, raw_name, arguments, ttl=ttl, progress=progress, certain=certain)
    if isinstance(started, types.CallToolResult):
        return started
    return await follow_task(wire, client, started, label=label, progress=progress, cancel_when_stopped=True)


async def start_task(
    wire: TaskWire,
    client: Client,
    raw_name: str,
    arguments: dict[str, Any],
    *,
    ttl: float | None,
    progress: ProgressSink | None,
    certain: bool = True,
) -> TaskInfo | types.CallToolResult:
    """`wire.start`. When a task is `certain` (the caller asked for one), a cancelled caller never cuts
    it short: once `tools/call` may have reached the server a task may exist, so the start is let
    finish (bounded by `CANCEL_TIMEOUT`) and the task it created is cancelled before the cancellation
    goes on. A call that only may become a task is cancelled at once, as a plain call is (the SDK's
    `notifications/cancelled`)."""
    if not certain:
        return await wire.start(client, raw_name, arguments, ttl=ttl, progress=progress)
    starting = asyncio.ensure_future(wire.start(client, raw_name, arguments, ttl=ttl, progress=progress))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({starting}, timeout=CANCEL_TIMEOUT)
        if not starting.done():
            logger.warning(
                "%s: the server did not create the task within %g s of the call being stopped; "
                "if it creates one later, it is not cancelled",
                raw_name,
                CANCEL_TIMEOUT,
            )
            starting.cancel()
        elif not starting.cancelled() and starting.exception() is None:
            started = starting.result()
            if isinstance(started, TaskInfo):
                if isinstance(wire, LegacyTaskWire):
                    wire.ended(started.task_id)
                if not started.done:
                    await cancel_task(wire, client, started.task_id)
        else:
            _log_start_failure(starting)
        raise


def _log_start_failure(starting: asyncio.Future[TaskInfo | types.CallToolResult]) -> None:
    if not starting.cancelled() and starting.exception() is not None:
        logger.debug("a stopped call's tools/call failed: %s", starting.exception())


async def follow_task(
    wire: TaskWire,
    client: Client,
    info: TaskInfo,
    *,
    label: str,
    progress: ProgressSink | None,
    cancel_when_stopped: bool,
    on_info: Callable[[TaskInfo], object] | None = None,
    updates: StatusUpdates | None = None,
) -> types.CallToolResult:
    """Poll a task until it ends and return its result (`ToolCallCancelledError` if it was cancelled).
    Each new status message (the status itself where the server gives none) goes to
    `progress(updates_so_far, None, message)`, counted in `updates` (a wait resumed on a new
    connection passes the one it had), each status seen to `on_info`; an unknown task id is
    `TaskNotFoundError`."""
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
                raise ToolCallCancelledError(
                    f"task {task_id!r} of {label} was cancelled on server {info.server!r}", tool=label
                )
            if info.done:
                if answering is not None and wire.input_brings_result:  # already asking for the result
                    answered = await answering
                    if answered is not None:
                        return answered
                elif answering is not None:  # the task ended without the answer: it is not needed
                    answering.cancel()
                    answering = None
                return await _outcome(wire, client, task_id, info)
            if info.status == "input_required" and answering is None:
                answering = asyncio.ensure_future(wire.answer_input(client, task_id, info))
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
                                error = TaskFailure.of(error)  # its tasks/result: the task's own end
                            input_error = error
                            raise error
                        continue
                    answered = finished.result()
                    if answered is not None:
                        return answered
            info = await wire.get(client, task_id)
    except asyncio.CancelledError:
        if cancel_when_stopped and not info.done:
            await cancel_task(wire, client, task_id)
        raise
    except Exception as exc:
        missing = not_found(exc, info.server, task_id, label) if exc is not input_error else None
        if missing is not None:
            raise missing from exc
        if cancel_when_stopped and not info.done:
            # The call fails (its input could not be given, a poll failed): nobody will fetch this task.
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
    sending.add_done_callback(_log_cancel_failure)
    with contextlib.suppress(asyncio.CancelledError):
        done, _pending = await asyncio.wait({sending}, timeout=CANCEL_TIMEOUT)
        if not done:
            logger.warning(
                "task %r: the server did not answer tasks/cancel within %g s", task_id, CANCEL_TIMEOUT
            )
            sending.cancel()


def _log_cancel_failure(sending: asyncio.Future[TaskInfo]) -> None:
    if not sending.cancelled() and sending.exception() is not None:
        logger.info("tasks/cancel failed: %s", sending.exception())


async def _outcome(wire: TaskWire, client: Client, task_id: str, info: TaskInfo) -> types.CallToolResult:
    """The ended task's result; an error here is the task's own failure (`TaskFailure`), unless a
    `tasks/get` says the server no longer knows the task (its -32602 is then "not found")."""
    try:
        return await wire.outcome(client, task_id, info)
    except MCPError as failed:
        if failed.code == _INVALID_PARAMS and not isinstance(failed, TaskFailure):
            await wire.get(client, task_id)  # raises the server's "unknown task" if it is gone
        raise TaskFailure.of(failed) from failed


def _poll_delay(info: TaskInfo) -> float:
    """The pause before the next `tasks/get`: the server's interval, within our floor and ceiling."""
    asked = info.poll_interval if info.poll_interval is not None else _DEFAULT_POLL_INTERVAL
    return min(max(asked, _MIN_POLL_INTERVAL), _MAX_POLL_INTERVAL)
