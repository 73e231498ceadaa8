"""A daemon thread that runs one asyncio event loop until its main coroutine returns.

Each server's `mcp` session lives on one of these, so nothing ever runs an
event loop in a caller's thread (a notebook cell's thread already has one).
The thread is a daemon: at interpreter exit non-daemon threads are joined
before `atexit` handlers run, and a loop thread waiting for its server would
hang the exit. It is always joined with a timeout.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any

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

    def start(self) -> None:
        self._thread.start()

    def call_soon(self, callback: Callable[..., object], *args: Any) -> bool:
        """Schedule `callback(*args)` on the loop from any thread; False once the loop has closed."""
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the loop is closed: its work is over
            return False
        return True

    def is_current(self) -> bool:
        return threading.current_thread() is self._thread

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the thread to end; True if it did."""
        if self._thread.ident is None:  # never started: nothing runs, only the loop to release
            if not self.loop.is_closed():
                self.loop.close()
            return True
        if not self.is_current():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main())
            loop.run_until_complete(_finish_leftover_tasks())
            loop.run_until_complete(loop.shutdown_asyncgens())
        except BaseException:
            logger.exception("event loop thread %s failed", self._thread.name)
        finally:
            asyncio.set_event_loop(None)
            loop.close()


async def _finish_leftover_tasks() -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks, timeout=_LEFTOVER_TASKS_TIMEOUT)
