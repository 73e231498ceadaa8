"""Known secret values, kept out of every error message and every log record.

A configuration's header values, `env` values and URL credentials are secrets.
A hub registers them while its servers run (`register(secrets_of(config))`),
and `scrub(text)` replaces each with `***`. The first registration installs a
log-record factory, chained to the previous one, that scrubs every record at
creation, whatever the logger (the `mcp` SDK's, `httpx2`'s) and whatever the
handler. With nothing registered the factory only checks one global.

An error is scrubbed where it leaves mcp_sync's control (`scrub_exception`): a
call's outcome, a connection's stored error, a sign-in's result. Its whole chain
is (causes, contexts, group members, notes): an SDK exception that repeats a
token a server echoed back is replaced by a `ScrubbedError` with its type's name
and its text scrubbed. It must happen then, on the loop thread, while the
connection's secrets are registered: an error outlives its connection, and once
the connection ends the registry no longer knows what to scrub.

Values shorter than `MIN_SECRET_LENGTH`, plain numbers and a few common setting
words (`true`, `debug`, `production`, ...) are never registered: scrubbing them
would mangle every log line, and no real secret looks like that. A variable
whose name looks like a credential (`API_KEY`, ...) is registered whatever its
value, if it has at least `MIN_SECRET_LENGTH` characters.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar, overload
from urllib.parse import quote, unquote, urlsplit

from ._child_env import is_credential_name
from ._config import HttpServerConfig, SseServerConfig, StdioServerConfig
from ._errors import MCPSyncError

__all__ = [
    "MIN_SECRET_LENGTH",
    "ScrubbedError",
    "ScrubbedExceptionGroup",
    "SecretHandle",
    "register",
    "registered_count",
    "scrub",
    "scrub_exception",
    "secrets_of",
]

MIN_SECRET_LENGTH = 4
MASK = "***"

# Setting values that are never secrets; matched case-insensitively.
_COMMON_WORDS = frozenset(
    {
        "true",
        "false",
        "yes",
        "none",
        "null",
        "debug",
        "info",
        "warn",
        "warning",
        "error",
        "critical",
        "trace",
        "verbose",
        "production",
        "development",
        "staging",
        "test",
        "enabled",
        "disabled",
    }
)

# Query parameters and names whose value is a credential: api_key, access_token, X-Amz-Signature, ...
# Lengths are bounded so that scrubbing a long line without separators stays linear.
_CREDENTIAL_PARAM = (
    r"[^=&\s#?/\"'<>]{0,64}?(?:key|token|secret|passw|pwd|auth|sig|credential|session|jwt)[^=&\s#\"'<>]{0,64}"
)
_QUERY_CREDENTIAL_RE = re.compile(rf"([?&;]{_CREDENTIAL_PARAM}=)([^&\s#\"'<>]+)", re.IGNORECASE)
_CREDENTIAL_NAME_RE = re.compile(_CREDENTIAL_PARAM, re.IGNORECASE)
# scheme://user:password@host (the password masked) and scheme://token@host: a long bare user-info
# is a token (https://<token>@github.com), a short one a user name (ssh://git@github.com).
_USERINFO_RE = re.compile(
    r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,31}://)([^/@\s:\"'<>]{0,512})(?::([^/@\s\"'<>]{0,512}))?@"
)
_BARE_USERINFO_TOKEN_LENGTH = 16
# How many exceptions deep an error's chain is followed; a link past that (or back into a loop) is cut.
_MAX_CHAIN_DEPTH = 64
_AUTH_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\s+(\S.*)")  # "Bearer <token>", "Basic <b64>"


# --------------------------------------------------------------------------- the registry


class _Registry:
    """Reference-counted secret values and the pattern that finds them (rebuilt on change)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        # Read without the lock by every log record: replaced whole, never mutated.
        self.pattern: re.Pattern[str] | None = None

    def add(self, values: Iterable[str]) -> None:
        with self._lock:
            self._counts.update(values)
            self._rebuild()

    def remove(self, values: Iterable[str]) -> None:
        with self._lock:
            self._counts.subtract(values)
            self._counts = +self._counts  # drop the values no handle holds any more
            self._rebuild()

    def __len__(self) -> int:
        return len(self._counts)

    def _rebuild(self) -> None:
        # Longest first: where one secret contains another, the whole of the longer one goes.
        values = sorted(self._counts, key=len, reverse=True)
        self.pattern = re.compile("|".join(map(re.escape, values))) if values else None


_registry = _Registry()


class SecretHandle:
    """Keeps its values registered until `release()` (idempotent) or the end of a `with` block."""

    def __init__(self, values: frozenset[str]) -> None:
        self._values: frozenset[str] | None = values
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            values, self._values = self._values, None
        if values:
            _registry.remove(values)

    def __enter__(self) -> SecretHandle:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        held = len(self._values) if self._values is not None else 0
        return f"<SecretHandle holding {held} value(s)>"


def register(values: Iterable[str]) -> SecretHandle:
    """Treat `values` as secrets until the handle is released; installs the log scrubber once.

    Values too short or too common to be secrets (see the module docstring) are skipped.
    Registering a value twice (two hubs, one token) keeps it until both handles are released.
    """
    kept = frozenset(value for value in values if _plausible_secret(value))
    install_log_scrubber()
    if kept:
        _registry.add(kept)
    return SecretHandle(kept)


def registered_count() -> int:
    """How many distinct values are registered now (for tests and diagnostics)."""
    return len(_registry)


def scrub(text: str) -> str:
    """`text` with every registered secret, URL password and credential-like query value as `***`."""
    pattern = _registry.pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    if "@" in text:
        text = _USERINFO_RE.sub(_mask_userinfo, text)
    if "=" in text:
        text = _QUERY_CREDENTIAL_RE.sub(rf"\g<1>{MASK}", text)
    return text


def _mask_userinfo(match: re.Match[str]) -> str:
    scheme, user, password = match.group(1), match.group(2), match.group(3)
    if password is not None:
        return f"{scheme}{user}:{MASK}@"
    if len(user) >= _BARE_USERINFO_TOKEN_LENGTH:
        return f"{scheme}{MASK}@"
    return match.group(0)


# --------------------------------------------------------------------------- errors and their chains

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


# --------------------------------------------------------------------------- what a config holds


def _plausible_secret(value: str, *, credential_name: bool = False) -> bool:
    """Whether scrubbing `value` from text is worth it (and does not mangle ordinary text)."""
    if len(value) < MIN_SECRET_LENGTH:
        return False
    if credential_name:
        return True
    stripped = value.strip()
    return not (stripped.lower() in _COMMON_WORDS or stripped.replace(".", "", 1).isdigit())


def _with_encodings(value: str) -> Iterator[str]:
    """The value as written, and as it appears in a URL or a log line once percent-encoded."""
    yield value
    yield quote(value, safe="")
    yield quote(value, safe="/:")


def _url_secrets(url: str) -> Iterator[str]:
    """The password (or a bare user-info token) and the credential-like query values of a URL."""
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return
    if password:
        yield password
        yield from _with_encodings(unquote(password))
        user_pass = f"{unquote(username or '')}:{unquote(password)}"
        yield base64.b64encode(user_pass.encode()).decode()  # what Basic auth sends
    elif username and len(username) >= _BARE_USERINFO_TOKEN_LENGTH:
        yield username
        yield from _with_encodings(unquote(username))
    for pair in re.split("[&;]", parts.query):
        name, sep, value = pair.partition("=")
        if sep and value and _CREDENTIAL_NAME_RE.fullmatch(unquote(name)):
            yield value
            yield from _with_encodings(unquote(value))


def _header_secrets(value: str) -> Iterator[str]:
    """A header value, and its credential alone when it starts with a scheme ("Bearer <token>")."""
    yield value
    scheme = _AUTH_SCHEME_RE.fullmatch(value.strip())
    if scheme is not None:
        yield scheme.group(1)


def secrets_of(config: StdioServerConfig | HttpServerConfig | SseServerConfig) -> set[str]:
    """Every secret value in one server's configuration, ready for `register`.

    Header values (and the token after "Bearer "), `env` values, and URL credentials: the
    password or bare user-info, and query values with credential-like names (`api_key`,
    `token`, `sig`, ...), also percent-encoded. Values `register` would skip are left out.
    """
    found: set[str] = set()

    def add(values: Iterable[str], *, credential_name: bool = False) -> None:
        found.update(v for v in values if _plausible_secret(v, credential_name=credential_name))

    if isinstance(config, HttpServerConfig | SseServerConfig):
        for name, value in config.headers.items():
            credential = is_credential_name(name) or name.lower() in ("authorization", "proxy-authorization")
            add(_header_secrets(value), credential_name=credential)
        add(_url_secrets(config.url), credential_name=True)
    if isinstance(config, HttpServerConfig):
        if config.auth is not None and config.auth.client_secret is not None:
            add([config.auth.client_secret], credential_name=True)
        if config.auth is not None:
            auth = config.auth
            add(
                [v for v in (auth.private_key, auth.assertion, auth.idp_client_secret) if v],
                credential_name=True,
            )
    elif isinstance(config, StdioServerConfig):
        for name, value in config.env.items():
            add([value], credential_name=is_credential_name(name))
        for arg in config.args:
            if "://" in arg:
                add(_url_secrets(arg), credential_name=True)
    return found


# --------------------------------------------------------------------------- the logging hook

_install_lock = threading.Lock()
_installed = False


def install_log_scrubber() -> None:
    """Wrap the log-record factory (once, chaining the current one) so every record is scrubbed.

    `register` calls it; calling it again does nothing. A factory set later that does not
    chain to the current one would bypass it.
    """
    global _installed
    with _install_lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if _registry.pattern is not None:
                scrub_record(record)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True


def scrub_record(record: logging.LogRecord) -> None:
    """Rewrite a record in place so that neither its message nor its traceback holds a secret.

    The message is rendered with its arguments and replaced only when it held something
    to scrub (otherwise the record is left lazy, as it was). A traceback is rendered now,
    scrubbed into `exc_text` (which formatters print instead of rendering `exc_info`),
    and `exc_info` dropped when it held a secret: an exception's text is only made later.
    """
    try:
        message = record.getMessage()
    except Exception:  # arguments that do not fit the format: keep both, as text, scrubbed
        message = f"{record.msg!s} {record.args!r}"
        record.msg, record.args = scrub(message), ()
    else:
        scrubbed = scrub(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, ()
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        text = logging.Formatter().formatException(record.exc_info)
        scrubbed = scrub(text)
        record.exc_text = scrubbed
        if scrubbed != text:
            record.exc_info = None
    elif record.exc_text:
        record.exc_text = scrub(record.exc_text)
    if record.stack_info:
        record.stack_info = scrub(record.stack_info)
