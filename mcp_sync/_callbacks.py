"""One thread that runs user callbacks, in the order their events happened.

Callbacks never run on a server's loop thread (a slow one would stall the
server) nor on the thread that changed the registry (one that calls back into
the hub could deadlock). Events are queued in order by whoever makes the
change, while it still holds its lock, and one daemon thread delivers them.
An exception in a callback is logged and contained.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["CallbackDispatcher", "ListenerSet", "ProgressCallback"]

logger = logging.getLogger("mcp_sync")

T = TypeVar("T")

ProgressCallback = Callable[[float, float | None, str | None], object]
"""Receives a call's progress notifications: `progress(progress, total, message)`."""

# How long close() waits for queued callbacks to finish before leaving the thread to die with the process.
DISPATCHER_JOIN_TIMEOUT = 5.0

_STOP = object()


class CallbackDispatcher:
    """Delivers queued callbacks on one daemon thread, started on first use."""

    def __init__(self, name: str = "mcp-sync:callbacks") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def post(self, callbacks: Sequence[Callable[..., object]], *args: Any) -> None:
        """Queue `callback(*args)` for each callback; never blocks, never runs them here."""
        if not callbacks:
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._queue.put((tuple(callbacks), args))

    def is_dispatcher_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def flush(self, timeout: float = DISPATCHER_JOIN_TIMEOUT) -> None:
        """Wait until everything queued so far has run (not from a callback: that would wait on itself)."""
        if self._thread is None or self.is_dispatcher_thread():
            return
        drained = threading.Event()
        self.post((drained.set,))
        drained.wait(timeout)

    def close(self, timeout: float = DISPATCHER_JOIN_TIMEOUT) -> None:
        """Deliver what is queued, then stop the thread (joined with `timeout`)."""
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is None:
                return
            self._queue.put(_STOP)
        if thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                logger.warning("a callback is still running after %.1f s; leaving it behind", timeout)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            callbacks, args = item
            for callback in callbacks:
                try:
                    callback(*args)
                except Exception:
                    logger.exception("callback %r raised; continuing", callback)


class ListenerSet(Generic[T]):
    """Callbacks subscribed to one kind of event; subscribing returns the unsubscribe function."""

    def __init__(self) -> None:
        self._listeners: tuple[Callable[[T], object], ...] = ()
        self._lock = threading.Lock()

    def subscribe(self, callback: Callable[[T], object]) -> Callable[[], None]:
        with self._lock:
            self._listeners = (*self._listeners, callback)

        def unsubscribe() -> None:
            with self._lock:
                listeners = list(self._listeners)
                if callback in listeners:
                    listeners.remove(callback)
                    self._listeners = tuple(listeners)

        return unsubscribe

    def snapshot(self) -> tuple[Callable[[T], object], ...]:
        """The listeners subscribed now: an event posted with them reaches no later subscriber."""
        return self._listeners
