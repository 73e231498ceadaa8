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

Every wait a move involves is bounded: a connection's connect by `connect_timeout_ms`, its
close by `CLOSE_TIMEOUT` (then its process group is killed), a hub's close by the slowest
of its connections' closes.

Host hooks live here too: a fork makes every hub of the parent "forked" in the child, and
hubs close before the interpreter joins non-daemon threads (as `concurrent.futures` does),
so a thread-pool worker blocked in a call is released instead of holding the exit up.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable
from typing import Generic, Literal, TypeVar

__all__ = [
    "CONNECTION_TRANSITIONS",
    "HUB_TRANSITIONS",
    "ConnectionState",
    "HubState",
    "StateMachine",
    "at_interpreter_exit",
    "fork_generation",
]

HubState = Literal["created", "starting", "running", "closing", "closed", "forked"]
ConnectionState = Literal["connecting", "ready", "failed", "disconnected", "closed"]

HUB_TRANSITIONS: dict[str, frozenset[str]] = {
    "created": frozenset({"starting", "closing", "closed"}),
    "starting": frozenset({"running", "created", "closing"}),
    "running": frozenset({"closing"}),
    "closing": frozenset({"closed"}),
    "closed": frozenset(),
}
CONNECTION_TRANSITIONS: dict[str, frozenset[str]] = {
    "connecting": frozenset({"ready", "failed", "closed"}),
    "ready": frozenset({"disconnected", "closed"}),
    "failed": frozenset(),
    "disconnected": frozenset(),
    "closed": frozenset(),
}

S = TypeVar("S", bound=str)


class StateMachine(Generic[S]):
    """A state guarded by one condition variable; `move` follows the table or refuses."""

    def __init__(self, initial: S, transitions: dict[str, frozenset[str]]) -> None:
        self._state: S = initial
        self._transitions = transitions
        self.condition = threading.Condition(threading.RLock())

    @property
    def state(self) -> S:
        return self._state

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


_fork_callbacks: list[Callable[[], None]] = []


def on_fork_in_child(callback: Callable[[], None]) -> None:
    """Run `callback()` in the child after a fork (to forget what belongs to the parent)."""
    _fork_callbacks.append(callback)


os.register_at_fork(after_in_child=_after_fork_in_child)


# -- interpreter exit --------------------------------------------------------------------------------


def at_interpreter_exit(callback: Callable[[], None]) -> None:
    """Run `callback()` at exit before non-daemon threads are joined, where the runtime allows it.

    `threading._register_atexit` is what `concurrent.futures` uses for the same reason: plain
    `atexit` handlers run only after every non-daemon thread has been joined, so a thread-pool
    worker blocked in a call would hold the exit up for the whole call. `atexit` stays as the
    fallback, and the callback must be safe to run twice.
    """
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        register(callback)
    atexit.register(callback)
