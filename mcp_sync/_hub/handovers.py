"""The tasks a hub's calls follow across a hand-over, by server name, until their callers re-attach.

A connection replaced by one to the same server (`_hub.reload.hands_over`) does not cancel the tasks
its calls follow: each call goes on with its task on the successor. Between the old connection's end
and the call's first wait on the successor, nobody else would cancel that task, so it is recorded here:
the call claims it when it re-attaches (from then on the successor's own end cancels it); a caller
that gives up in between leaves it abandoned, and the hub cancels it through the successor once that
is ready; a `close()`, or a reload that gives the name another server, cancels every task still
recorded through the successor before closing it. Thread-safe: connections, callers and the hub's
state machine use it from their own threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .._config import ServerConfig

__all__ = ["HandOvers"]


@dataclass
class _HandedOver:
    origin: ServerConfig
    """The entry of the connection that handed the task over: the task is on its server."""
    abandoned: bool = False


class HandOvers:
    """Handed-over tasks nobody re-attached to yet, and the tasks the hub had cancelled; see the module."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, dict[str, _HandedOver]] = {}
        self._cancelled: set[tuple[str, str]] = set()

    def add(self, name: str, task_ids: Iterable[str], origin: ServerConfig) -> None:
        """Record the tasks a connection of server `name` (made from `origin`) hands over to its successor."""
        with self._lock:
            pending = self._pending.setdefault(name, {})
            for task_id in task_ids:
                pending.setdefault(task_id, _HandedOver(origin))
            if not pending:
                del self._pending[name]

    def claim(self, name: str, task_id: str) -> None:
        """The call re-attached to its task on a connection of `name`: that connection's end cancels it."""
        with self._lock:
            self._pending.get(name, {}).pop(task_id, None)

    def abandon(self, name: str, task_id: str, origin: ServerConfig | None = None) -> bool:
        """The call gave up before it could reach its task (before it re-attached after a hand-over, or
        while its server reconnects): the task is to be cancelled once a connection of `name` to the
        task's server is ready (or by `close()`). A task not handed over is recorded too when its
        `origin` is given. True if the task is now left to the hub."""
        with self._lock:
            pending = self._pending.setdefault(name, {})
            handed = pending.get(task_id)
            if handed is None and origin is not None:
                handed = pending[task_id] = _HandedOver(origin)
            if handed is not None:
                handed.abandoned = True
            elif not pending:
                del self._pending[name]
            return handed is not None

    def waiting(self, name: str) -> bool:
        """Whether tasks of server `name` wait to be re-attached to or cancelled."""
        with self._lock:
            return bool(self._pending.get(name))

    def origins(self, name: str) -> list[ServerConfig]:
        """The entries whose servers hold tasks of `name` waiting to be re-attached to or cancelled."""
        with self._lock:
            found: list[ServerConfig] = []
            for handed in self._pending.get(name, {}).values():
                if handed.origin not in found:
                    found.append(handed.origin)
            return found

    def names(self) -> list[str]:
        with self._lock:
            return list(self._pending)

    def take(
        self, name: str, on: Callable[[ServerConfig], bool], *, abandoned_only: bool = False
    ) -> list[str]:
        """Remove and return the tasks of `name` to cancel now, among those whose origin `on` accepts (the
        server a connection reaches): the abandoned ones, or all of them."""
        with self._lock:
            pending = self._pending.get(name, {})
            taken = [
                task_id
                for task_id, handed in pending.items()
                if on(handed.origin) and (handed.abandoned or not abandoned_only)
            ]
            for task_id in taken:
                del pending[task_id]
            if not pending:
                self._pending.pop(name, None)
            return taken

    def cancel_sent(self, name: str, task_ids: Iterable[str]) -> None:
        """The hub had `tasks/cancel` sent for these tasks of `name` (its outcome is logged)."""
        with self._lock:
            self._cancelled |= {(name, task_id) for task_id in task_ids}

    def was_cancelled(self, name: str, task_id: str) -> bool:
        """Whether the hub had `tasks/cancel` sent for this task of `name`."""
        with self._lock:
            return (name, task_id) in self._cancelled
