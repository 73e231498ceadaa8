"""Who hears what a call's task is doing: the caller's side sets a watcher in its `contextvars` context,
and the loop side, which runs the call in a copy of that context (`calls`), tells it each `TaskInfo` it
learns (the task created, each status it polls, the last). Tracing uses it to give a task call's one span
the task's id and its status at the end, without a span per poll and without the loop side knowing
about tracing.

A watcher runs on the server's loop thread: it must be quick and must not block (setting an attribute).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable

from .._values.tasks import TaskInfo

__all__ = ["TASK_WATCHER", "TaskWatcher", "tell_watcher"]

logger = logging.getLogger("mcp_sync")

TaskWatcher = Callable[[TaskInfo], None]

TASK_WATCHER: contextvars.ContextVar[TaskWatcher | None] = contextvars.ContextVar(
    "mcp_sync_task_watcher", default=None
)
"""The watcher of the call running in this context, if any (a value per context: no process state)."""


def tell_watcher(info: TaskInfo) -> None:
    """Give `info` to this context's watcher; a watcher that raises is logged, never the call's failure."""
    watcher = TASK_WATCHER.get()
    if watcher is None:
        return
    try:
        watcher(info)
    except Exception:
        logger.exception("a task watcher failed")
