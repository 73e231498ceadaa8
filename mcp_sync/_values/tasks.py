"""A long-running call's task as the caller sees it: its id, where it stands, and what the server said.

Plain data shared by both protocol eras (the 2025-11-25 tasks and the 2026-07-28 tasks extension);
nothing here knows a session or a thread.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["TERMINAL_STATUSES", "TaskInfo", "TaskStatus"]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TaskStatus.__doc__ = """A task's status, a string, as both protocol eras name it: "working", "input_required"
(the server waits for an answer of the client's handlers), or one of the ends, "completed", "failed" and
"cancelled" (`TERMINAL_STATUSES`)."""

TERMINAL_STATUSES: Final[frozenset[TaskStatus]] = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """One task as the server last described it; `server` is the configured server name."""

    server: str
    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: datetime.datetime | None = None
    last_updated_at: datetime.datetime | None = None
    ttl: float | None = None
    """Seconds the server keeps the task after it was created (None: the server did not say)."""
    poll_interval: float | None = None
    """Seconds between polls the server asked for (None: the server did not say)."""

    @property
    def done(self) -> bool:
        """Whether the task reached a status it never leaves."""
        return self.status in TERMINAL_STATUSES
