"""Sign-ins in progress, so that nothing waits on one that can no longer finish: a hub's `close()` stops
its own, and interpreter exit stops every one before pool workers are joined (a `login()` on a worker
thread would otherwise hold the exit up for its whole timeout, five minutes by default)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from .._auth.sign_in import SignInStop
from .._runtime.lifecycle import ExitHook, fork_generation, on_fork_in_child

__all__ = ["SignIns"]

# Every sign-in in progress in this process, stopped at exit; guarded by `_in_progress_lock`.
_in_progress: set[SignInStop] = set()
_in_progress_lock = threading.Lock()


class SignIns:
    """One hub's sign-ins in progress."""

    def __init__(self) -> None:
        self._stops: dict[SignInStop, int] = {}  # each with the fork generation it runs in
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def tracking(self) -> Iterator[SignInStop]:
        """A stop for one sign-in, known to this hub and to the exit hook while the block runs."""
        stop = SignInStop()
        with self._lock:
            self._stops[stop] = fork_generation()
        with _in_progress_lock:
            _in_progress.add(stop)
        _EXIT_HOOK.arm()
        try:
            yield stop
        finally:
            with _in_progress_lock:
                _in_progress.discard(stop)
            with self._lock:
                self._stops.pop(stop, None)

    def stop_all(self, reason: str) -> None:
        """Stop this hub's sign-ins in this process (in a forked child, the parent's are the parent's)."""
        generation = fork_generation()
        with self._lock:
            stops = [stop for stop, started_in in self._stops.items() if started_in == generation]
        for stop in stops:
            stop.stop(reason)


def _stop_at_exit() -> None:
    """Stop every sign-in still waiting (for a browser that will not come): its caller gets `AuthError`."""
    with _in_progress_lock:
        stops = list(_in_progress)
    for stop in stops:
        stop.stop("the program is exiting")


def _forget_in_child() -> None:
    global _in_progress_lock
    _in_progress_lock = threading.Lock()  # a parent thread may have held it at the fork
    _in_progress.clear()  # the parent's sign-ins are the parent's


on_fork_in_child(_forget_in_child)
_EXIT_HOOK = ExitHook(_stop_at_exit)
"""Armed by the first sign-in (see `ExitHook`): it runs before pool workers are joined."""
