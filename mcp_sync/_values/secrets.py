"""Known secret values, kept out of every error message and every log record.

A configuration's header values, credential `env` values and URL credentials are secrets.
A hub registers them while its servers run (`register(secrets_of(config))`),
and `scrub(text)` replaces each with `***`. The first registration installs a
log-record factory, chained to the previous one, that scrubs every record at
creation, whatever the logger (the `mcp` SDK's, `httpx2`'s) and whatever the
handler. With nothing registered the factory only checks one global.

An error's whole chain is scrubbed where it leaves mcp_sync (`scrubbed_errors`);
which values of a configuration are secrets is `secrets_of` (beside the configuration).

Values shorter than `MIN_SECRET_LENGTH`, plain numbers and a few common setting
words (`true`, `debug`, `production`, ...) are never registered: scrubbing them
would mangle every log line, and no real secret looks like that. A variable
whose name looks like a credential (`API_KEY`, ...) is registered whatever its
value, if it has at least `MIN_SECRET_LENGTH` characters.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable
from types import TracebackType
from typing import Any

__all__ = [
    "BARE_USERINFO_TOKEN_LENGTH",
    "CREDENTIAL_NAME_RE",
    "MIN_SECRET_LENGTH",
    "SecretHandle",
    "plausible_secret",
    "register",
    "registered_count",
    "scrub",
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
CREDENTIAL_NAME_RE = re.compile(_CREDENTIAL_PARAM, re.IGNORECASE)
# scheme://user:password@host (the password masked) and scheme://token@host: a long bare user-info
# is a token (https://<token>@github.com), a short one a user name (ssh://git@github.com).
_USERINFO_RE = re.compile(
    r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,31}://)([^/@\s:\"'<>]{0,512})(?::([^/@\s\"'<>]{0,512}))?@"
)
BARE_USERINFO_TOKEN_LENGTH = 16


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


def register(values: Iterable[str], *, credential_name: bool = False) -> SecretHandle:
    """Treat `values` as secrets until the handle is released; installs the log scrubber once.

    Values too short or too common to be secrets (see the module docstring) are skipped; with
    `credential_name` (values a credential's name marked, as `secrets_of` gives them) only the short ones:
    `DB_PASSWORD=48213579` is a secret. Registering a value twice (two hubs, one token) keeps it until
    both handles are released.
    """
    kept = frozenset(value for value in values if plausible_secret(value, credential_name=credential_name))
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
    if len(user) >= BARE_USERINFO_TOKEN_LENGTH:
        return f"{scheme}{MASK}@"
    return match.group(0)


def plausible_secret(value: str, *, credential_name: bool = False) -> bool:
    """Whether scrubbing `value` from text is worth it (and does not mangle ordinary text)."""
    if len(value) < MIN_SECRET_LENGTH:
        return False
    if credential_name:
        return True
    stripped = value.strip()
    return not (stripped.lower() in _COMMON_WORDS or stripped.replace(".", "", 1).isdigit())


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
