"""A call that crosses threads: a caller's thread hands it to a server's loop and waits for it.

Both halves are here, shared by tool calls and by the other requests (resources, prompts,
completions). On the loop (`LoopCalls`) each call is one task, and its outcome, the result or
its typed error, is delivered from inside that task: the caller wakes in the same loop turn
the answer arrived in. A blocking caller waits on a `CallSlot`, a held lock the outcome
releases (the cheapest wake-up there is, and no `Future.result(timeout)`, whose `TimeoutError`
could not be told apart from the call's own); `submit()` gets a `concurrent.futures.Future`.
A caller that stops waiting (timeout, cancel Event, Ctrl-C) abandons the call: its task is
cancelled where it runs, which makes the SDK tell the server. A call's task runs in a copy of
its caller's `contextvars` context, taken when it was handed over (as `asyncio.to_thread` does
the other way): the caller's current trace span is the parent of the SDK's request span and of
the `traceparent` it sends, whichever caller's hand-over woke the loop.

Why one file of a little over 400 lines: both halves of a call that crosses threads (the caller's
slot and the loop's in-flight set) share one cancellation protocol; apart, it would be read in two.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import math
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar, cast

import anyio
import mcp_types as types
import pydantic_core
from mcp.shared.exceptions import MCPError

from .._os import waits
from .._os.waits import interruptible_wait
from .._values.errors import (
    ServerDisconnectedError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
)
from .._values.scrubbed_errors import scrub_exception
from .._values.secrets import scrub

__all__ = [
    "NO_LIMIT",
    "CallSlot",
    "CallSoon",
    "LoopCalls",
    "Outcome",
    "checked_arguments",
    "request_failure",
    "resolve_timeout",
    "timed_out",
    "wait_released",
    "was_cancelled",
    "watch",
]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)
CallSoon = Callable[..., bool]
"""Run a callable on a loop thread from any thread; False once that loop has closed."""

NO_LIMIT = math.inf
"""A timeout of `math.inf`: wait as long as the call takes (cancellation still works)."""

# How often a caller waiting on a call checks its `threading.Event`: bounds cancellation latency.
_CANCEL_POLL_INTERVAL = 0.005
# How long a caller that gives up on a call waits for its cancellation to be sent.
_CANCEL_SETTLE_TIMEOUT = 1.0


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


def checked_arguments(arguments: Mapping[str, Any] | None, public_name: str) -> dict[str, Any]:
    """A copy of a call's arguments, refused here if the SDK could not send them.

    Non-string names are a `TypeError`. What pydantic cannot serialise (a lone surrogate, which
    `json.loads` can produce; an unknown type; a loop) is a `ToolCallError` now: in the transport
    it would fail the whole connection with this one call. pydantic is the SDK's own serialiser,
    so what passes here the SDK can send.
    """
    if arguments is None:
        return {}
    if type(arguments) is not dict and not isinstance(arguments, Mapping):  # a dict skips the ABC check
        raise TypeError(f"arguments for {public_name} must be a mapping, not {type(arguments).__name__}")
    args = dict(arguments)
    for key in args:
        if not isinstance(key, str):
            raise TypeError(
                f"argument names for {public_name} must be strings; got {key!r} ({type(key).__name__})"
            )
    try:
        pydantic_core.to_json(args)
    except pydantic_core.PydanticSerializationError as exc:
        raise ToolCallError(
            f"the arguments for {public_name} cannot be sent as JSON: {exc}", tool=public_name
        ) from None
    return args


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
        if waits.WAIT_SLICE is None:  # one wait, which Ctrl-C interrupts (read at each call)
            return done.acquire() if seconds >= threading.TIMEOUT_MAX else done.acquire(timeout=seconds)
        return interruptible_wait(
            lambda timeout: done.acquire(timeout=-1 if timeout is None else timeout),
            None if seconds >= threading.TIMEOUT_MAX else seconds,
        )
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


def request_failure(
    exc: Exception, server: str, label: str, *, tool: str, http_problem: str | None = None
) -> ToolCallError | None:
    """The typed error for a request to `server` that the SDK or the transport failed (`label` says
    what it was: "the call to mcp__a__b", "read file:///x"), or None if `exc` is no such failure."""
    if isinstance(exc, MCPError):
        if exc.code == types.CONNECTION_CLOSED:
            return ServerDisconnectedError(
                f"server {server!r} disconnected during {label}", tool=tool, code=exc.code
            )
        http = f"; {http_problem}" if http_problem and exc.code < 0 else ""
        return ToolCallError(
            scrub(f"server {server!r} refused {label}: {exc.message} (code {exc.code}){http}"),
            tool=tool,
            code=exc.code,
        )
    if isinstance(exc, pydantic_core.PydanticSerializationError):
        return ToolCallError(f"the arguments for {label} cannot be sent as JSON: {exc}", tool=tool)
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | OSError):
        return ServerDisconnectedError(f"server {server!r} disconnected during {label}", tool=tool)
    return None


class Outcome(Protocol[T_contra]):
    """Where a call's outcome goes: a `CallSlot` or a `concurrent.futures.Future`."""

    def done(self) -> bool: ...

    def cancelled(self) -> bool: ...

    def cancel(self) -> bool: ...

    def set_result(self, result: T_contra, /) -> None: ...

    def set_exception(self, exception: BaseException | None, /) -> None: ...


class CallSlot(Generic[T]):
    """What a blocking caller waits on: a held lock that the call's outcome releases.

    It has one waiter and no callbacks, so it is a lock and three fields where a
    `concurrent.futures.Future` is a Condition, a callback list and a state machine. Its
    outcome is set (or the slot cancelled) on the loop thread only.
    """

    __slots__ = ("_cancelled", "_error", "_finished", "_released", "_result")

    def __init__(self) -> None:
        self._released = threading.Lock()
        self._released.acquire()
        self._finished = False
        self._cancelled = False
        self._result: T | None = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._finished

    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> bool:
        """Stop waiting for the outcome (the caller gave up); False if it is already there."""
        if self._finished:
            return False
        self._finished = self._cancelled = True
        return True

    def set_result(self, result: T, /) -> None:
        self._settle()
        self._result = result
        self._released.release()

    def set_exception(self, exception: BaseException | None, /) -> None:
        self._settle()
        self._error = exception
        self._released.release()

    def _settle(self) -> None:
        if self._finished:
            raise concurrent.futures.InvalidStateError("the call's outcome is already set")
        self._finished = True

    def wait(self, seconds: float, cancel: threading.Event | None) -> bool:
        """Wait up to `seconds` (inf: no limit) for the outcome, or until `cancel` is set; True if it came."""
        return wait_released(self._released, seconds, cancel)

    def result(self) -> T:
        """The result, or the call's error raised; only once the outcome is there."""
        if self._error is not None:
            raise self._error
        return cast(T, self._result)


_HandedOver = tuple[Outcome[Any], str, Callable[..., Awaitable[Any]], tuple[Any, ...], contextvars.Context]


class LoopCalls:
    """The calls in flight on one server's loop.

    `start`, `cancel` and `end` run on the loop thread; `hand_over`, `wait` and `abandon` on
    callers' threads. `abandoned(label)` is the error of a call its server's end cut short.
    """

    def __init__(self, call_soon: CallSoon, abandoned: Callable[[str], BaseException]) -> None:
        self._call_soon = call_soon
        self._abandoned = abandoned
        self._tasks: dict[Outcome[Any], tuple[asyncio.Task[None], str]] = {}
        # Calls handed over and not yet started. One wake-up of the loop starts all that came in
        # since the last: with many callers, most calls then cost the loop no wake-up of their own.
        self._lock = threading.Lock()
        self._handed_over: list[_HandedOver] = []
        self._wake_up_pending = False
        self._closed = False

    # -- callers' threads ---------------------------------------------------------------------------------

    def hand_over(
        self, outcome: Outcome[T], label: str, work: Callable[..., Awaitable[T]], *args: Any
    ) -> bool:
        """Start `work(*args)` on the loop, its outcome going to `outcome`; False if the calls have ended
        (the session is over) or the loop is gone."""
        item = (outcome, label, work, args, contextvars.copy_context())
        with self._lock:
            if self._closed:
                return False
            self._handed_over.append(item)
            if self._wake_up_pending:
                return True
            self._wake_up_pending = True
        if self._call_soon(self._start_handed_over):
            return True
        with self._lock:  # the loop has closed: nothing will start these
            self._wake_up_pending = False
            self._handed_over.remove(item)
        return False

    def wait(self, slot: CallSlot[T], label: str, seconds: float, cancel: threading.Event | None) -> T:
        """Wait for a handed-over call; on timeout, `cancel` or Ctrl-C it is abandoned (cancelled on
        the server) and `ToolCallTimeoutError` / `ToolCallCancelledError` raised, unless its outcome
        came first after all."""
        try:
            finished = slot.wait(seconds, cancel)
        except BaseException:  # KeyboardInterrupt in the waiting thread: cancel on the server too
            self.abandon(slot)
            raise
        if not finished and not self.abandon(slot):
            if cancel is not None and cancel.is_set():
                raise was_cancelled(label, "the server")
            raise timed_out(label, seconds, "the server")
        return slot.result()

    def abandon(self, outcome: Outcome[Any]) -> bool:
        """Cancel a call the caller stopped waiting for, and wait (bounded) until the loop has sent the
        cancellation. True if the call finished first after all: its result stands."""
        settled = threading.Event()
        if self._call_soon(self.cancel, outcome, settled.set):
            interruptible_wait(settled.wait, _CANCEL_SETTLE_TIMEOUT)
        return outcome.done() and not outcome.cancelled()

    # -- the loop thread ----------------------------------------------------------------------------------

    def _start_handed_over(self) -> None:
        with self._lock:
            self._wake_up_pending = False
            items, self._handed_over = self._handed_over, []
        for outcome, label, work, args, context in items:
            self.start(outcome, label, work, args, context)

    def start(
        self,
        outcome: Outcome[T],
        label: str,
        work: Callable[..., Awaitable[T]],
        args: tuple[Any, ...],
        context: contextvars.Context | None = None,
    ) -> None:
        if outcome.cancelled():
            return
        task = asyncio.get_running_loop().create_task(self._deliver(outcome, work, args), context=context)
        self._tasks[outcome] = (task, label)
        if isinstance(outcome, concurrent.futures.Future):
            # submit(): the caller cancels the Future on its own thread; that must reach the server too.
            outcome.add_done_callback(self._stop_if_cancelled)

    def _stop_if_cancelled(self, future: concurrent.futures.Future[Any]) -> None:
        if future.cancelled():
            self._call_soon(self._stop, future)

    async def _deliver(
        self, outcome: Outcome[T], work: Callable[..., Awaitable[T]], args: tuple[Any, ...]
    ) -> None:
        try:
            result = await work(*args)
        except asyncio.CancelledError:
            self._forget(outcome)
            raise
        except BaseException as exc:
            if not outcome.done():
                _fail(outcome, exc)
            if not isinstance(exc, Exception):
                raise
        else:
            if not outcome.done():
                outcome.set_result(result)
        finally:
            self._tasks.pop(outcome, None)

    def _forget(self, outcome: Outcome[Any], _task: object = None) -> None:
        """A call's task was cancelled: drop it, and fail its outcome if nobody gave up on it first."""
        entry = self._tasks.pop(outcome, None)
        if not outcome.done():
            _fail(outcome, self._abandoned(entry[1] if entry is not None else ""))

    def _stop(self, outcome: Outcome[Any]) -> asyncio.Task[None] | None:
        """Cancel the call's task, if it is still running. A task cancelled before its first step never
        runs `_deliver`, so its end is also watched from outside."""
        entry = self._tasks.get(outcome)
        if entry is None or entry[0].done():
            return None
        task = entry[0]
        task.add_done_callback(functools.partial(self._forget, outcome))
        task.cancel()
        return task

    def cancel(self, outcome: Outcome[Any], settled: Callable[[], None]) -> None:
        """Cancel the call's task (the SDK sends the protocol's cancellation); `settled()` once it is over."""
        outcome.cancel()
        task = self._stop(outcome)
        if task is None:
            settled()
        else:
            task.add_done_callback(lambda _task: settled())

    def end(self) -> None:
        """Refuse new calls and cancel every call; each fails with the abandoned error, even one whose
        task never started."""
        with self._lock:
            self._closed = True
            items, self._handed_over = self._handed_over, []
        for outcome, label, _work, _args, _context in items:
            if not outcome.done():
                _fail(outcome, self._abandoned(label))
        for outcome in list(self._tasks):
            self._stop(outcome)

    @property
    def closed(self) -> bool:
        """Whether `end` was called: the session is ending, and its calls are cut short."""
        return self._closed

    def tasks(self) -> list[asyncio.Task[None]]:
        return [task for task, _label in self._tasks.values()]


def _fail(outcome: Outcome[Any], error: BaseException) -> None:
    """Give a call its error, scrubbed now: once the session ends, its secrets are no longer known."""
    outcome.set_exception(scrub_exception(error))
