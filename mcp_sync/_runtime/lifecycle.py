"""The states of a hub and of a server connection, the moves between them, and the host hooks.

Hub (`MCPHub.state`):

    state       moved by                          next states
    ----------  --------------------------------  -------------------------------------------
    created     MCPHub()                          starting (start), closed (close)
    starting    start()                           running (start finished),
                                                  created (start interrupted: undone first),
                                                  closing (close from any thread, or a
                                                  `required` server failed)
    running     start()                           closing (close, exit, garbage collection)
    closing     close(), exit hook, finalizer     closed (every connection ended);
                                                  an interrupted close stays here, and the
                                                  next close() finishes the job
    closed      close()                           (final)
    forked      seen, never stored: the hub was   (final in that process) calls fail at once,
                started in another process        close() touches nothing

Connection (`hub.servers[name].state`):

    state         moved by (on its loop thread)         next states
    ------------  ------------------------------------  ---------------------------------
    connecting    ServerConnection()                    ready, failed, closed
    ready         first listing registered              disconnected, closed
    failed        connect error or deadline             (final)
    disconnected  the transport ended by itself         (final; reload() replaces it)
    closed        close(), or the hub went away         (final)

Reconnection (opt-in, `reconnect:` in a server's config; `_hub.reconnect`) never moves a
connection out of an end state: each attempt is a new connection that replaces the old one,
as `reload()` does. Between attempts the hub shows the server in one more state, held by its
`Reconnector` rather than by a connection:

    state         moved by                              next states
    ------------  ------------------------------------  ---------------------------------
    reconnecting  a ready connection became             connecting (the next attempt, a new
                  disconnected, or an attempt failed    connection), closed (close(), exit,
                  with attempts left                    finalizer, reload()); after the last
                                                        attempt the server stays failed

A reconnector's wait ends at once when the hub closes; each attempt is bounded as any
connection is.

Every wait a move involves is bounded: a connection's connect by `connect_timeout_ms`, its
close by `CLOSE_TIMEOUT` (then its process tree is killed), a hub's close by the slowest
of its connections' closes.

Host hooks live here too: a fork makes every hub the parent started "forked" in the child (one
created and not started is the child's to start; callback threads start afresh there, and each
registry forgets the parent's servers), and
hubs close before the interpreter joins non-daemon threads (as `concurrent.futures` does),
so a thread-pool worker blocked in a call is released instead of holding the exit up.
And the process's one-time work (`OncePerProcess`): it runs on a thread of its own, so no
connection's loop, failure or cancellation can leave it pending or cancel it for the others.
The README's "Process-wide state" lists every module-level object and its fate.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Generic, Literal, TypeVar

from .._os.fork import register_at_fork

__all__ = [
    "CONNECTION_TRANSITIONS",
    "HUB_TRANSITIONS",
    "RECONNECT_TRANSITIONS",
    "ConnectionState",
    "ExitHook",
    "HubState",
    "OncePerProcess",
    "StateMachine",
    "before_fork",
    "fork_generation",
    "on_fork_in_child",
]

logger = logging.getLogger("mcp_sync")

HubState = Literal["created", "starting", "running", "closing", "closed", "forked"]
ConnectionState = Literal["connecting", "ready", "failed", "disconnected", "closed", "reconnecting"]

HUB_TRANSITIONS: Mapping[str, frozenset[str]] = MappingProxyType({
    "created": frozenset({"starting", "closing", "closed"}),
    "starting": frozenset({"running", "created", "closing"}),
    "running": frozenset({"closing"}),
    "closing": frozenset({"closed"}),
    "closed": frozenset(),
})
CONNECTION_TRANSITIONS: Mapping[str, frozenset[str]] = MappingProxyType({
    "connecting": frozenset({"ready", "failed", "closed"}),
    "ready": frozenset({"disconnected", "closed"}),
    "failed": frozenset(),
    "disconnected": frozenset(),
    "closed": frozenset(),
})
RECONNECT_TRANSITIONS: Mapping[str, frozenset[str]] = MappingProxyType({
    "disconnected": frozenset({"reconnecting"}),
    "reconnecting": frozenset({"connecting", "closed"}),
    "connecting": frozenset({"ready", "failed", "closed"}),
    "failed": frozenset({"reconnecting"}),  # while attempts are left
})
"""The states a server shows while it is reconnected (the server as the hub shows it, not one connection)."""

S = TypeVar("S", bound=str)


class StateMachine(Generic[S]):
    """A state guarded by one condition variable; `move` follows the table or refuses."""

    def __init__(self, initial: S, transitions: Mapping[str, frozenset[str]]) -> None:
        self._state: S = initial
        self._transitions = transitions
        self.condition = threading.Condition(threading.RLock())

    @property
    def state(self) -> S:
        return self._state

    def allows(self, to: S) -> bool:
        """Whether the table allows a move to `to` from the current state."""
        return to in self._transitions[self._state]

    def move(self, to: S) -> bool:
        """Move to `to` if the table allows it from the current state; False (and no change) if not."""
        with self.condition:
            if to not in self._transitions[self._state]:
                return False
            self._state = to
            self.condition.notify_all()
            return True

    def is_final(self) -> bool:
        return not self._transitions[self._state]


# -- fork --------------------------------------------------------------------------------------------

_fork_generation = 0


def fork_generation() -> int:
    """A number that changes in a child after `os.fork()`: a hub compares it with the one it started in."""
    return _fork_generation


def _after_fork_in_child() -> None:
    global _fork_generation
    _fork_generation += 1
    for callback in _fork_callbacks:
        callback()


def _before_fork() -> None:
    for callback in _before_fork_callbacks:
        callback()


_fork_callbacks: list[Callable[[], None]] = []
_before_fork_callbacks: list[Callable[[], None]] = []


def on_fork_in_child(callback: Callable[[], None]) -> None:
    """Run `callback()` in the child after a fork (to forget what belongs to the parent)."""
    _fork_callbacks.append(callback)


def before_fork(callback: Callable[[], None]) -> None:
    """Run `callback()` in the forking thread just before a fork; it must be bounded."""
    _before_fork_callbacks.append(callback)


register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


# -- interpreter exit --------------------------------------------------------------------------------


class ExitHook:
    """A callback run at interpreter exit before pool workers and other non-daemon threads are joined.

    Plain `atexit` handlers run only after every non-daemon thread has been joined, so a thread-pool
    worker blocked in a call would hold the exit up for the whole call. `threading._register_atexit`
    (what `concurrent.futures` uses) runs its hooks before that join, last registered first; and
    `concurrent.futures.thread` registers the hook that joins every pool worker when it is first
    imported, which is usually after `mcp_sync` (the first hub's start imports it). So the hook is
    registered by `arm()`, at the first hub's start, after importing `concurrent.futures.thread`:
    it then runs before that join whatever the import order, and before every hook registered
    earlier. `atexit` stays as the fallback; the callback must be safe to run twice.
    """

    def __init__(self, callback: Callable[[], None]) -> None:
        self._callback = callback
        self._lock = threading.Lock()
        self._armed = False
        on_fork_in_child(self._after_fork)

    def arm(self) -> None:
        """Register the callback, once per process (it stays registered in a forked child)."""
        if self._armed:
            return
        with self._lock:
            if self._armed:
                return
            import concurrent.futures.thread  # noqa: F401  (its worker-joining hook must come first)

            register = getattr(threading, "_register_atexit", None)
            if register is not None:
                with contextlib.suppress(RuntimeError):  # exit has begun: the atexit fallback runs
                    register(self._callback)
            atexit.register(self._callback)
            self._armed = True

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # a parent thread may have held it at the fork


# -- one-time work ---------------------------------------------------------------------------------

# How long a fork or the interpreter's exit waits for one-time work in flight to finish (imports take
# well under a second).
_FORK_WAIT_TIMEOUT = 5.0


class OncePerProcess:
    """Work done once per process, on a daemon thread of its own, that callers may wait for.

    Nothing a caller does can leave it pending or cancel it: `start()` only starts the thread,
    and `wait()` waits on a future of the caller's own loop, woken from the thread, so a waiter
    that is cancelled, or whose loop ends, harms nobody else. Every wait is bounded, from the
    moment the work started: once the work has run that long, waiters stop waiting for it
    (without it, its users do the same work later, slower). A failure of the work is logged and
    counts as done.

    A fork waits for the work in flight, at most `_FORK_WAIT_TIMEOUT`: work that imports, forked
    half way, leaves the child half-initialised modules that fail or block every later import
    of them. In a child forked while the work was still running, its thread does not exist: the
    child forgets it, and its next `start()` runs the work again there. The interpreter's exit
    waits for it too, as long (an `atexit` handler, after the hubs have closed; a Ctrl-C ends the
    wait): a daemon thread still inside an extension module's code when the interpreter finalizes
    can abort the process (pydantic-core's, for one).
    """

    def __init__(self, name: str, work: Callable[[], None]) -> None:
        self._name = name
        self._work = work
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._started_at: float | None = None
        self._thread: threading.Thread | None = None
        self._wakers: list[Callable[[], None]] = []  # under the lock
        self._exit_wait_registered = False
        before_fork(self._hold_fork)
        on_fork_in_child(self._after_fork)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def start(self) -> None:
        """Start the work on its thread, unless it was started in this process before."""
        with self._lock:
            if self._started_at is not None:
                return
            self._started_at = time.monotonic()
        if not self._exit_wait_registered:
            # Plain `atexit`: it runs once, after the hubs have closed and non-daemon threads joined.
            atexit.register(self._wait_at_exit)
            self._exit_wait_registered = True
        # Not "mcp-sync:", which names the threads of hubs and connections: this one is the process's.
        name = f"mcp-sync-once:{self._name}"
        thread = self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        try:
            thread.start()
        except RuntimeError:  # the interpreter is shutting down: nobody needs the work any more
            self._finish()

    async def wait(self, limit: float) -> bool:
        """Wait until the work is done, or until `limit` seconds after it started; True if done."""
        if self._done.is_set():
            return True
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # that loop has closed: nobody waits there
                loop.call_soon_threadsafe(_resolve, woken)

        with self._lock:
            if self._done.is_set() or self._started_at is None:
                return self._done.is_set()
            remaining = self._started_at + limit - time.monotonic()
            self._wakers.append(wake)
        try:
            if remaining > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await woken
        finally:
            with self._lock, contextlib.suppress(ValueError):
                self._wakers.remove(wake)
        return self._done.is_set()

    def _run(self) -> None:
        try:
            self._work()
        except BaseException as exc:  # its users do the work themselves later, as without it
            logger.warning("one-time %s failed: %s", self._name, exc, exc_info=exc)
        finally:
            self._finish()

    def _finish(self) -> None:
        with self._lock:
            self._done.set()
            wakers, self._wakers = self._wakers, []
        for wake in wakers:
            wake()

    def _hold_fork(self) -> None:
        if self._thread is not None and threading.current_thread() is not self._thread:
            self._done.wait(_FORK_WAIT_TIMEOUT)

    def _wait_at_exit(self) -> None:
        with contextlib.suppress(KeyboardInterrupt):  # a Ctrl-C at exit ends the wait, nothing else
            self._hold_fork()

    def _after_fork(self) -> None:
        # A parent thread may have held the locks at the fork; the wakers' loops ran on the parent's
        # threads, and so did the work if it was not done: the next start() runs it here.
        done = self._done.is_set()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._wakers = []
        if done:
            self._done.set()
        else:
            self._started_at = self._thread = None


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
