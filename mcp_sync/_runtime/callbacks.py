"""One thread that runs user callbacks, in the order their events happened.

Callbacks never run on a server's loop thread (a slow one would stall the
server) nor on the thread that changed the registry (one that calls back into
the hub could deadlock). Events are queued in order by whoever makes the
change, while it still holds its lock, and one daemon thread delivers them.
An exception in a callback is logged and contained.

After `os.fork()` the child has no callback thread, whatever the parent's was doing: every
dispatcher forgets the parent's thread, queue and lock there, and the child's first event starts a
thread of its own (a registry made before the fork, as a pre-fork server's app module makes it, is
then used in the child as in any process; the registry forgets the parent's servers there, see
`_hub.registry`). The locks that subscribing takes are renewed there too: a parent thread may
have held one at the fork.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from .._os.waits import interruptible_wait, join_thread
from .lifecycle import on_fork_in_child

__all__ = ["CallbackDispatcher", "HeldCallbacks", "ListenerSet", "ProgressCallback"]

logger = logging.getLogger("mcp_sync")

T = TypeVar("T")

ProgressCallback = Callable[[float, float | None, str | None], object]
"""Receives a call's progress notifications: `progress(progress, total, message)`."""

# How long close() waits for queued callbacks to finish before leaving the thread to finish them alone.
DISPATCHER_JOIN_TIMEOUT = 5.0
# An idle callback thread ends after this long; the next event starts a new one. A registry that is
# never closed (one the host made and forgot) then leaves no thread behind.
_IDLE_EXIT = 5.0
# A callback running longer than this is reported in the log (once), naming it.
SLOW_CALLBACK_WARNING = 5.0

_STOP = object()


class CallbackDispatcher:
    """Delivers queued callbacks on one daemon thread, started on first use.

    There is never more than one delivering thread: only the thread itself gives up its
    place (under the lock, when it has nothing left to deliver), so a `close()` that gives
    up on a stuck callback leaves that thread in charge of whatever is posted later.
    """

    def __init__(self, name: str = "mcp-sync:callbacks") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # The callback being run and since when (monotonic), for the slow-callback report.
        self._running: tuple[Callable[..., object], float] | None = None
        self._reported: Callable[..., object] | None = None
        _dispatchers.add(self)

    def _after_fork(self) -> None:
        """In a forked child: the parent's thread does not exist here, and its queue holds the parent's
        events; start afresh (the lock too: a parent thread may have held it at the fork)."""
        self._queue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread = None
        self._running = self._reported = None

    def post(self, callbacks: Sequence[Callable[..., object]], *args: Any) -> None:
        """Queue `callback(*args)` for each callback; never blocks, never runs them here."""
        if not callbacks:
            return
        with self._lock:
            self._queue.put((tuple(callbacks), args))
            if self._thread is None:
                thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # interpreter shutdown (3.12+ refuses new threads): nobody listens
                    return
                self._thread = thread
        self.report_if_stuck()

    def is_dispatcher_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def flush(self, timeout: float = DISPATCHER_JOIN_TIMEOUT) -> bool:
        """Wait until everything queued so far has run; False if that took longer than `timeout`
        (a stuck callback: it is reported). Not from a callback: that would wait on itself."""
        if self._thread is None or self.is_dispatcher_thread():
            return True
        drained = threading.Event()
        self.post((drained.set,))
        if interruptible_wait(drained.wait, timeout):
            return True
        self.report_if_stuck(threshold=0.0)
        return False

    def close(self, timeout: float = DISPATCHER_JOIN_TIMEOUT) -> None:
        """Deliver what is queued, then let the thread end (waited for up to `timeout`)."""
        with self._lock:
            thread = self._thread
            if thread is None:
                return
            self._queue.put(_STOP)
        if thread is threading.current_thread():
            return
        join_thread(thread, timeout)
        if thread.is_alive() and self._running is not None:
            self.report_if_stuck(threshold=0.0)
            logger.warning(
                "callbacks are still running after %.1f s; the callback thread will deliver the rest "
                "when the stuck one returns",
                timeout,
            )

    def report_if_stuck(self, threshold: float = SLOW_CALLBACK_WARNING) -> None:
        """Log (once per callback) a callback that has been running longer than `threshold` seconds."""
        running = self._running
        if running is None:
            return
        callback, since = running
        elapsed = time.monotonic() - since
        if elapsed >= threshold and self._reported is not callback:
            self._reported = callback
            logger.warning(
                "callback %r has been running for %.1f s; later callbacks wait behind it", callback, elapsed
            )

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=_IDLE_EXIT)
            except queue.Empty:
                item = _STOP
            if item is _STOP:
                with self._lock:
                    if self._queue.empty():
                        self._thread = None
                        return
                continue  # posted after close(): deliver those; the idle timeout ends the thread later
            callbacks, args = item
            for callback in callbacks:
                self._running = (callback, time.monotonic())
                try:
                    callback(*args)
                except Exception:
                    logger.exception("callback %r raised; continuing", callback)
                finally:
                    self._running = None


_dispatchers: weakref.WeakSet[CallbackDispatcher] = weakref.WeakSet()
"""Every live dispatcher, for the fork hook below."""


def _forget_parent_threads() -> None:
    for dispatcher in list(_dispatchers):
        dispatcher._after_fork()
    for holder in list(_locked):
        holder._lock = threading.Lock()


on_fork_in_child(_forget_parent_threads)


class ListenerSet(Generic[T]):
    """Callbacks subscribed to one kind of event; subscribing returns the unsubscribe function."""

    def __init__(self) -> None:
        self._listeners: tuple[Callable[[T], object], ...] = ()
        self._lock = threading.Lock()
        _locked.add(self)

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


class HeldCallbacks:
    """A hub's user callbacks and handlers, held strongly here and reached only weakly from below.

    The server set, the registry and the connections' loop threads outlive the hub object until its
    finalizer closes them; were they to hold a user's callable (often a bound method of an object that
    holds the hub), the hub could never be collected. So they hold a `weak()` stand-in, and only the
    hub holds this: once the hub is gone, the stand-in does nothing (or answers with `fallback`).
    Stand-ins subscribed `until_close` (to a registry other hubs may share) are unsubscribed by
    `subscriptions` when the hub closes or is dropped, so that a long-lived registry does not gather them.
    """

    def __init__(self) -> None:
        self._held: set[_Held] = set()
        self._lock = threading.Lock()
        self.subscriptions = _Subscriptions()
        _locked.add(self)

    def weak(
        self, callback: Callable[..., T], fallback: Callable[..., T] | None = None
    ) -> tuple[Callable[..., T | None], Callable[[], None]]:
        """A stand-in calling `callback` while this holder lives, and the function that lets it go."""
        held = _Held(callback)
        with self._lock:
            self._held.add(held)

        def release() -> None:
            with self._lock:
                self._held.discard(held)

        return _WeakCall(weakref.ref(held), fallback), release

    def subscribe(
        self,
        subscribe: Callable[[Callable[..., object]], Callable[[], None]],
        callback: Callable[..., object],
        *,
        until_close: bool = False,
    ) -> Callable[[], None]:
        """Subscribe `callback` through its stand-in; the returned unsubscriber lets both go."""
        stand_in, release = self.weak(callback)
        unsubscribe = subscribe(stand_in)
        if until_close:
            unsubscribe = self.subscriptions.add(unsubscribe)

        def both() -> None:
            unsubscribe()
            release()

        return both


class _Subscriptions:
    """The unsubscribers of a hub's stand-ins on a shared registry. Holds no user callable (nor the
    hub), so the hub's finalizer may hold it and run `cancel()` once the hub is gone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[int, Callable[[], None]] = {}
        _locked.add(self)

    def add(self, unsubscribe: Callable[[], None]) -> Callable[[], None]:
        """Keep `unsubscribe` for `cancel()`; the returned function runs it and forgets it."""
        key = id(unsubscribe)
        with self._lock:
            self._pending[key] = unsubscribe

        def once() -> None:
            with self._lock:
                self._pending.pop(key, None)
            unsubscribe()

        return once

    def cancel(self) -> None:
        """Unsubscribe every stand-in still subscribed (the hub closed, or was dropped)."""
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for unsubscribe in pending:
            unsubscribe()


_locked: weakref.WeakSet[ListenerSet[Any] | HeldCallbacks | _Subscriptions] = weakref.WeakSet()
"""Every live holder of a lock that subscribing takes, for the fork hook above: a parent thread may
have held one at the fork, and the child must not wait for it forever."""


class _Held:
    __slots__ = ("__weakref__", "callback")

    def __init__(self, callback: Callable[..., Any]) -> None:
        self.callback = callback


class _WeakCall:
    """Calls the held callback while its holder lives; shows as the callback (in logs)."""

    __slots__ = ("_fallback", "_held")

    def __init__(self, held: weakref.ReferenceType[_Held], fallback: Callable[..., Any] | None) -> None:
        self._held = held
        self._fallback = fallback

    def __call__(self, *args: Any) -> Any:
        held = self._held()
        if held is not None:
            return held.callback(*args)
        return self._fallback(*args) if self._fallback is not None else None

    def __repr__(self) -> str:
        held = self._held()
        return repr(held.callback) if held is not None else "<callback of a dropped hub>"
