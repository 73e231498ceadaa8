"""The caller's side of a tool call: the timeout checked in one place, the wait, giving up.

A caller's thread hands its call to someone else's thread (a server's loop, or a native
tool's thread) and blocks on a plain lock that the call's Future releases: the cheapest
wake-up there is, and no `Future.result(timeout)`, whose `TimeoutError` could not be told
apart from the call's own. While it waits it watches its cancel Event. When it stops
waiting (timeout, cancel, Ctrl-C), the code that started the call cancels it where it runs.
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import threading
import time
from typing import Any, TypeVar

from ._errors import ToolCallCancelledError, ToolCallError, ToolCallTimeoutError

__all__ = [
    "NO_LIMIT",
    "check_encodable",
    "resolve_timeout",
    "timed_out",
    "wait_released",
    "was_cancelled",
    "watch",
]

T = TypeVar("T")

NO_LIMIT = math.inf
"""A timeout of `math.inf`: wait as long as the call takes (cancellation still works)."""

# How often a caller waiting on a call checks its `threading.Event`: bounds cancellation latency.
_CANCEL_POLL_INTERVAL = 0.005


def resolve_timeout(timeout: float | None, default: float) -> float:
    """The seconds a call may take: `default` for None, `math.inf` for no limit.

    The one check of every `timeout` argument (call_tool, submit, call_tool_safe, native tools):
    zero, negative and NaN are a `ValueError`, a non-number a `TypeError`, before anything is sent.
    """
    if timeout is None:
        return default
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout must be a number of seconds or None, not {type(timeout).__name__}")
    seconds = float(timeout)
    if not seconds > 0:  # also catches NaN
        raise ValueError(
            f"timeout must be a positive number of seconds (math.inf for no limit), not {timeout!r}"
        )
    return seconds


def watch(future: concurrent.futures.Future[T]) -> threading.Lock:
    """A lock, held now, that the Future releases when it is done."""
    done = threading.Lock()
    done.acquire()
    future.add_done_callback(lambda _future: done.release())
    return done


def wait_released(done: threading.Lock, seconds: float, cancel: threading.Event | None) -> bool:
    """Wait until `done` is released, up to `seconds` (inf: no limit), or until `cancel` is set;
    True if released."""
    if cancel is None:
        if seconds >= threading.TIMEOUT_MAX:
            return done.acquire()
        return done.acquire(timeout=seconds)
    deadline = time.monotonic() + seconds
    while not cancel.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        if done.acquire(timeout=min(_CANCEL_POLL_INTERVAL, remaining)):
            return True
    return False


def timed_out(public_name: str, seconds: float, where: str) -> ToolCallTimeoutError:
    """The timeout error; `where` says who was told ("the server", "the function")."""
    return ToolCallTimeoutError(
        f"call to {public_name} did not finish within {seconds:g} s; {where} was told to cancel it",
        tool=public_name,
    )


def was_cancelled(public_name: str, where: str) -> ToolCallCancelledError:
    return ToolCallCancelledError(f"call to {public_name} was cancelled; {where} was told", tool=public_name)


def check_encodable(arguments: dict[str, Any], public_name: str) -> None:
    """Refuse text that cannot be written as UTF-8 (a lone surrogate, which `json.loads` can produce):
    the transport would fail on it and take the whole connection down with this one call."""
    try:
        json.dumps(arguments, ensure_ascii=False, default=str).encode()
    except UnicodeEncodeError as exc:
        raise ToolCallError(
            f"the arguments for {public_name} contain text that is not valid Unicode "
            f"(a lone surrogate at position {exc.start} of the JSON)",
            tool=public_name,
        ) from None
    except (TypeError, ValueError) as exc:  # circular or otherwise unserialisable
        raise ToolCallError(
            f"the arguments for {public_name} cannot be sent as JSON: {exc}", tool=public_name
        ) from None
