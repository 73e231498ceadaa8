"""A caller's blocking wait, which Ctrl-C interrupts: one wait, or on Windows before Python 3.14 (where
a lock wait holds Ctrl-C back until it returns) short slices."""

from __future__ import annotations

import concurrent.futures
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from . import IS_WINDOWS

__all__ = ["WAIT_SLICE", "interruptible_wait", "join_thread", "wait_future"]

WAIT_SLICE: float | None = 0.1 if IS_WINDOWS and sys.version_info < (3, 14) else None
"""The longest single wait of a caller's thread, or None for one wait. On Windows before Python 3.14 a
Ctrl-C does not interrupt a lock wait (the KeyboardInterrupt is raised when it returns), so a caller
there waits in slices this long and Ctrl-C takes effect within one."""


def interruptible_wait(
    wait: Callable[[float | None], bool], timeout: float | None, *, slice_: float | None = None
) -> bool:
    """`wait(timeout)` (True once what it waits for happened), made in slices of `slice_` (default
    `WAIT_SLICE`) where a single wait would hold Ctrl-C back until it ended."""
    step = WAIT_SLICE if slice_ is None else slice_
    if step is None:
        return wait(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        remaining = step if deadline is None else min(step, max(0.0, deadline - time.monotonic()))
        if wait(remaining):
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False


def wait_future(future: concurrent.futures.Future[Any], timeout: float | None) -> bool:
    """Wait until `future` is done, up to `timeout` seconds (None: no limit); True if it is. In slices
    where Ctrl-C needs them."""

    def done_within(seconds: float | None) -> bool:
        return not concurrent.futures.wait((future,), seconds).not_done

    return interruptible_wait(done_within, timeout)


def join_thread(thread: threading.Thread, timeout: float | None) -> bool:
    """`thread.join(timeout)`, in slices where Ctrl-C needs them; True if the thread has ended."""

    def ended_within(seconds: float | None) -> bool:
        thread.join(seconds)
        return not thread.is_alive()

    return interruptible_wait(ended_within, timeout)
