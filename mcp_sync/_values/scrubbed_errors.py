"""Scrubbing an error's whole chain where it leaves mcp_sync's control (`scrub_exception`).

An error is scrubbed where it leaves mcp_sync's control: a call's outcome, a connection's stored
error, a sign-in's result. Its whole chain is (causes, contexts, group members, notes): an SDK
exception that repeats a token a server echoed back is replaced by a `ScrubbedError` with its type's
name and its text scrubbed. It must happen then, on the loop thread, while the connection's secrets
are registered (`secrets.register`): an error outlives its connection, and once the connection ends
the registry no longer knows what to scrub.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Self, TypeVar, overload

from .errors import MCPSyncError
from .secrets import scrub

__all__ = ["ScrubbedError", "ScrubbedExceptionGroup", "scrub_exception"]

# How many exceptions deep an error's chain is followed; a link past that (or back into a loop) is cut.
_MAX_CHAIN_DEPTH = 64


E = TypeVar("E", bound=MCPSyncError)


class ScrubbedError(Exception):
    """Stands in, in an error's chain, for an exception whose text held a secret: the original's type
    name (`type_name`) and its text scrubbed (`text`); its traceback, links and notes stay, scrubbed."""

    def __init__(self, type_name: str, text: str) -> None:
        super().__init__(type_name, text)
        self.type_name = type_name
        self.text = text

    def __str__(self) -> str:
        return f"{self.type_name}: {self.text}" if self.text else self.type_name


class ScrubbedExceptionGroup(BaseExceptionGroup[BaseException]):
    """A `ScrubbedError` for an exception group whose message held a secret: its members stay, scrubbed."""

    type_name: str

    def __new__(cls, type_name: str, message: str, exceptions: Sequence[BaseException]) -> Self:
        group = super().__new__(cls, message, exceptions)
        group.type_name = type_name
        return group

    def __init__(self, type_name: str, message: str, exceptions: Sequence[BaseException]) -> None:
        super().__init__(message, exceptions)

    def __str__(self) -> str:
        return f"{self.type_name}: {super().__str__()}"

    def derive(self, excs: Sequence[BaseException]) -> ScrubbedExceptionGroup:  # type: ignore[override]
        return ScrubbedExceptionGroup(self.type_name, self.message, excs)


@overload
def scrub_exception(error: E) -> E: ...


@overload
def scrub_exception(error: BaseException) -> BaseException: ...


def scrub_exception(error: BaseException) -> BaseException:
    """`error` made safe to hand over: no secret in its text, its notes, nor anywhere in its chain.

    Call it where an error leaves mcp_sync's control, while the secrets it may repeat are still
    registered. An mcp_sync error is scrubbed in place (message, notes, links) and returned, so
    every holder of it is covered. Another exception whose `str` or `repr` holds a secret is
    replaced by a `ScrubbedError` (or `ScrubbedExceptionGroup`) with the same traceback; others
    stay, their links scrubbed. A context hidden by `raise ... from` is dropped: it is never
    printed, and it may hold what the registry has already forgotten.
    """
    return _ChainScrubber().clean(error, 0) or ScrubbedError(_type_name(error), "")


class _ChainScrubber:
    """One pass over an error's chain; each exception in it is handled once (a chain may share them)."""

    def __init__(self) -> None:
        self._done: dict[int, BaseException | None] = {}
        self._visiting: set[int] = set()

    def clean(self, exc: BaseException, depth: int) -> BaseException | None:
        """`exc` scrubbed, or its stand-in; None where the chain loops back or runs too deep (cut there)."""
        key = id(exc)
        if key in self._done:
            return self._done[key]
        if key in self._visiting or depth > _MAX_CHAIN_DEPTH:
            return None
        self._visiting.add(key)
        try:
            cleaned = self._clean(exc, depth + 1)
        finally:
            self._visiting.discard(key)
        self._done[key] = cleaned
        return cleaned

    def _link(self, exc: BaseException | None, depth: int) -> BaseException | None:
        return None if exc is None else self.clean(exc, depth)

    def _clean(self, exc: BaseException, depth: int) -> BaseException:
        own_secret = _holds_secret(exc)
        cause = self._link(exc.__cause__, depth)
        context = None if exc.__suppress_context__ else self._link(exc.__context__, depth)
        notes: list[Any] | None = None
        if isinstance(getattr(exc, "__notes__", None), list):
            notes = [scrub(note) if isinstance(note, str) else note for note in exc.__notes__]
        members: list[BaseException] | None = None
        if isinstance(exc, BaseExceptionGroup):
            kept = (self.clean(member, depth) for member in exc.exceptions)
            members = [member for member in kept if member is not None]
        if own_secret and not isinstance(exc, MCPSyncError):
            return _stand_in(exc, members, cause, context, notes)
        if own_secret:
            exc.args = tuple(scrub(arg) if isinstance(arg, str) else arg for arg in exc.args)
        if isinstance(exc, MCPSyncError):
            self._clean_attributes(exc, depth)
        if isinstance(exc, BaseExceptionGroup) and members != list(exc.exceptions):
            original = exc
            exc = exc.derive(members) if members else ScrubbedError(_type_name(exc), scrub(_text(exc, str)))
            exc.__traceback__ = original.__traceback__
            _relink(exc, cause, context, original.__suppress_context__, notes)
        else:
            _relink(exc, cause, context, exc.__suppress_context__, notes)
        return exc

    def _clean_attributes(self, exc: MCPSyncError, depth: int) -> None:
        """The errors an mcp_sync error holds besides its chain (`ServerStartError.failures`)."""
        for name, value in list(vars(exc).items()):
            if isinstance(value, dict) and any(isinstance(item, BaseException) for item in value.values()):
                setattr(exc, name, {key: self._attribute(item, depth) for key, item in value.items()})
            elif isinstance(value, BaseException):
                setattr(exc, name, self._attribute(value, depth))

    def _attribute(self, value: object, depth: int) -> object:
        if not isinstance(value, BaseException):
            return value
        return self.clean(value, depth) or ScrubbedError(_type_name(value), "")


def _stand_in(
    exc: BaseException,
    members: list[BaseException] | None,
    cause: BaseException | None,
    context: BaseException | None,
    notes: list[Any] | None,
) -> BaseException:
    """The `ScrubbedError` in place of `exc`, with its traceback, links and notes."""
    stand_in: BaseException
    if isinstance(exc, BaseExceptionGroup) and members:
        stand_in = ScrubbedExceptionGroup(_type_name(exc), scrub(exc.message), members)
    else:
        stand_in = ScrubbedError(_type_name(exc), scrub(_text(exc, str)))
    stand_in.__traceback__ = exc.__traceback__
    _relink(stand_in, cause, context, exc.__suppress_context__, notes)
    return stand_in


def _relink(
    exc: BaseException,
    cause: BaseException | None,
    context: BaseException | None,
    suppress_context: bool,
    notes: list[Any] | None,
) -> None:
    """Give `exc` these links (only those that changed: setting `__cause__` also sets
    `__suppress_context__`, which is put back) and these notes."""
    if exc.__cause__ is not cause:
        exc.__cause__ = cause
    if exc.__context__ is not context:
        exc.__context__ = context
    if exc.__suppress_context__ != suppress_context:
        exc.__suppress_context__ = suppress_context
    if notes is not None and getattr(exc, "__notes__", None) != notes:
        exc.__notes__ = notes


def _holds_secret(exc: BaseException) -> bool:
    """Whether the exception's own text (as `str` and `repr` show it) holds something to scrub; a
    group's own text is its message (its `repr` shows its members, which are checked one by one)."""
    renders: tuple[Callable[[BaseException], str], ...] = (
        (str,) if isinstance(exc, BaseExceptionGroup) else (str, repr)
    )
    for render in renders:
        text = _text(exc, render)
        if scrub(text) != text:
            return True
    return False


def _text(exc: BaseException, render: Callable[[BaseException], str]) -> str:
    try:
        return render(exc)
    except Exception:  # an exception that cannot be shown shows nothing (traceback prints a placeholder)
        return ""


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
