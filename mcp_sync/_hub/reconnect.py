"""Opt-in reconnection of a server that dropped: attempts with exponential backoff and jitter.

Each attempt is a new connection that replaces the old one, as `reload()` does, so every
guarantee of a connection (bounded connect and close, fork, exit, garbage collection) holds
for it unchanged. Between attempts the hub shows the server as `reconnecting` (this object
stands in for it in `hub.servers`); its tools stay unregistered, so calls fail at once. A
`Reconnector` never refers to the hub: it is driven through two callables, and `stop()`
(from `close()`, the exit hook, the finalizer, `reload()`) ends its wait at once.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from .._config import ReconnectConfig, ServerConfig
from .._os.waits import join_thread
from .._runtime.lifecycle import ConnectionState

__all__ = ["Attempt", "Reconnector", "backoff_delays"]

logger = logging.getLogger("mcp_sync")


class Attempt(Protocol):
    """What a reconnection attempt is to the reconnector: a connection that ends up ready or not."""

    @property
    def state(self) -> ConnectionState: ...

    @property
    def error(self) -> BaseException | None: ...

    def when_settled(self, callback: Callable[[], None]) -> None: ...


def backoff_delays(policy: ReconnectConfig, rng: random.Random | None = None) -> Iterator[float]:
    """The wait before each attempt, in seconds: doubling from `initial_delay_ms` up to `max_delay_ms`,
    each drawn between half and all of that ("equal jitter"), so that many clients do not retry in step."""
    rng = rng or random.Random()
    ceiling = policy.initial_delay
    for _ in range(policy.max_attempts):
        yield rng.uniform(ceiling / 2, ceiling)
        ceiling = min(ceiling * 2, policy.max_delay)


class Reconnector:
    """Reconnects one server on a daemon thread of its own until an attempt is ready, the attempts run
    out (the last attempt's `failed` stays), or `stop()`.

    `connect()` starts one attempt (None: the hub no longer wants it: closing, reloaded); `announce(self)`
    tells the hub's listeners that the server is reconnecting.
    """

    transport: str
    pid = None
    server_info = None
    protocol_version = None

    def __init__(
        self,
        config: ServerConfig,
        error: BaseException | None,
        *,
        connect: Callable[[Reconnector], Attempt | None],
        announce: Callable[[Reconnector], None],
        finished: Callable[[Reconnector], None],
    ) -> None:
        assert config.reconnect is not None
        self.config = config
        self.name = config.server_name
        self.original_name = config.original_name  # the host file's name, when `name` was made from it
        self.transport = config.transport
        self.error = error
        self.attempt = 0
        self._policy = config.reconnect
        self._connect = connect
        self._announce = announce
        self._finished = finished
        self._stopped = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"mcp-sync:reconnect:{self.name}", daemon=True)

    @property
    def state(self) -> ConnectionState:
        return "reconnecting"

    @property
    def tools(self) -> list[Any]:
        return []

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def __repr__(self) -> str:
        return (
            f"<Reconnector {self.name!r} attempt {self.attempt} of {self._policy.max_attempts}"
            f" error={self.error!r}>"
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the attempts now (any thread); an attempt already connecting is the hub's to close."""
        self._stopped.set()
        self._wake.set()

    def join(self, timeout: float) -> bool:
        if self._thread is threading.current_thread() or not self._thread.is_alive():
            return True
        return join_thread(self._thread, timeout)

    def _run(self) -> None:
        try:
            self._attempts()
        except Exception:
            logger.exception("reconnecting server %r failed unexpectedly", self.name)
        finally:
            self._finished(self)

    def _attempts(self) -> None:
        for number, delay in enumerate(backoff_delays(self._policy), start=1):
            self.attempt = number
            logger.warning(
                "server %r: reconnecting in %.2f s (attempt %d of %d)",
                self.name,
                delay,
                self.attempt,
                self._policy.max_attempts,
            )
            self._announce(self)
            if self._stopped.wait(delay):
                return
            attempt = self._connect(self)
            if attempt is None:
                return
            self._wake.clear()
            attempt.when_settled(self._wake.set)
            self._wake.wait()  # set once the attempt is ready, failed or closed, or by stop()
            if self._stopped.is_set() or attempt.state != "failed":
                return  # ready (its tools are back under the same names), or closed by the hub
            self.error = attempt.error
        logger.warning(
            "server %r: gave up reconnecting after %d attempts", self.name, self._policy.max_attempts
        )
