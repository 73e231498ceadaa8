"""A daemon thread that runs one asyncio event loop until its main coroutine returns.

Each server's `mcp` session lives on one of these, so nothing ever runs an
event loop in a caller's thread (a notebook cell's thread already has one).
The thread is a daemon: at interpreter exit non-daemon threads are joined
before `atexit` handlers run, and a loop thread waiting for its server would
hang the exit. It is always joined with a timeout, on its own "finished" event:
on CPython 3.11 a `KeyboardInterrupt` that interrupts `Thread.join()` can leave
the thread marked stopped while it still runs.

In a child forked from the process that made it, the thread does not exist: nothing can be handed to
its loop there (`call_soon` says False at once), so no call waits for an answer that cannot come.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from .._os.waits import interruptible_wait
from .lifecycle import fork_generation

__all__ = ["LoopThread"]

logger = logging.getLogger("mcp_sync")

# Time given to tasks still pending after the main coroutine ends (calls being failed) to finish.
_LEFTOVER_TASKS_TIMEOUT = 1.0


class LoopThread:
    """Runs `main()` on a fresh event loop in a daemon thread named `name`."""

    def __init__(self, name: str, main: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.loop = asyncio.new_event_loop()
        self._main = main
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._finished = threading.Event()
        self._fork_generation = fork_generation()

    @property
    def name(self) -> str:
        return self._thread.name

    def start(self) -> None:
        self._thread.start()

    def call_soon(self, callback: Callable[..., object], *args: Any) -> bool:
        """Schedule `callback(*args)` on the loop from any thread; False once the loop has closed, and in
        a forked child (the loop's thread is the parent's)."""
        if self._fork_generation != fork_generation():
            return False
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the loop is closed: its work is over
            return False
        return True

    def is_current(self) -> bool:
        return threading.current_thread() is self._thread

    def is_finished(self) -> bool:
        """True once the loop has closed (or was never started and is released)."""
        return self._finished.is_set()

    def join(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the thread to end; True if it did."""
        if self._thread.ident is None:  # never started: nothing runs, only the loop to release
            if not self.loop.is_closed():
                self.loop.close()
            self._finished.set()
            return True
        if self.is_current():
            return False
        if not interruptible_wait(self._finished.wait, timeout):
            return False
        # The loop is closed; what is left of the thread is returning from its target.
        self._thread.join(timeout)
        return True

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main())
            loop.run_until_complete(_finish_leftover_tasks())
            loop.run_until_complete(loop.shutdown_asyncgens())
            # Not shutdown_default_executor(): it starts a thread, which 3.12+ refuses at exit;
            # close() below shuts the executor down without waiting.
        except BaseException:
            logger.exception("event loop thread %s failed", self._thread.name)
        finally:
            asyncio.set_event_loop(None)
            loop.close()
            self._finished.set()


async def _finish_leftover_tasks() -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks, timeout=_LEFTOVER_TASKS_TIMEOUT)
