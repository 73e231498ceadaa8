"""The value types the models share: secret mappings, timeouts, roots, server names, redacted URLs,
approval settings."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from pydantic import BeforeValidator, ConfigDict, Field, GetCoreSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

SERVER_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"  # the RFC's serverName: it becomes part of public tool names
SERVER_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")
MAX_TIMEOUT_MS = 2**31 - 1  # the reference's setTimeout limit (~24.8 days); also fits threading's waits
MASK = "***"

# RFC 9110 token characters: a header name outside them is rejected by the HTTP client at connect time.
HEADER_NAME_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
HEADER_VALUE_RE = re.compile(r"[\t\x20-\x7e]*")


_V = TypeVar("_V")


class FrozenMapping(Mapping[str, _V]):
    """An immutable, hashable mapping of names (a config stays hashable for `reload()`'s diff)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, _V] | Iterable[tuple[str, _V]] = ()) -> None:
        self._data: dict[str, _V] = dict(data)

    def __getitem__(self, key: str) -> _V:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._data)


class RedactedMapping(FrozenMapping[str]):
    """An immutable, hashable `str -> str` mapping whose repr shows keys and masks values.

    The type of `env` and `headers`: the config stays hashable for `reload()`'s diff,
    and printing a config (or a traceback's locals) never shows a secret.
    Read it like a dict; `dict(mapping)` gives the real values.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(dict.fromkeys(self._data, MASK))


class _StoredAs:
    """Annotation marker: validate as the annotated mapping, store it as `kind` (immutable, hashable),
    dump a plain dict. The field stays typed as a `Mapping`, so callers pass an ordinary dict."""

    def __init__(self, kind: type[FrozenMapping[Any]]) -> None:
        self.kind = kind

    def __get_pydantic_core_schema__(self, source_type: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(
            self.kind,
            handler(source_type),
            serialization=core_schema.plain_serializer_function_ser_schema(dict),
        )


SecretMapping = Annotated[Mapping[str, str], _StoredAs(RedactedMapping)]


ApprovalMode = Literal["never", "always", "writes"]
"""Whether a person approves each call of a tool before it runs: never, always, or unless the server
says the tool is read-only (`writes`)."""


def _approval_mode(value: Any) -> Any:
    """`true` / `false` as `always` / `never`."""
    if value is True:
        return "always"
    if value is False:
        return "never"
    return value


Approval = Annotated[ApprovalMode, BeforeValidator(_approval_mode)]
ToolApprovals = Annotated[Mapping[str, Approval], _StoredAs(FrozenMapping)]


def _reject_bool(value: Any) -> Any:
    """`true` is an int to Python; as a timeout it is a mistake, not 1 ms."""
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


TimeoutMs = Annotated[int, Field(gt=0, le=MAX_TIMEOUT_MS), BeforeValidator(_reject_bool)]

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""The protocol's log levels, lowest first."""


def root_uri(root: str | os.PathLike[str]) -> str:
    """A root as the protocol wants it: a `file://` URI; a path (`~` expanded) becomes an absolute one."""
    text = os.fspath(root)
    if "://" in text:
        if not text.startswith("file://"):
            raise PydanticCustomError("config", "roots must be paths or file:// URIs")
        return text
    if not text.strip():
        raise PydanticCustomError("config", "a root must not be blank")
    return Path(os.path.expanduser(text)).absolute().as_uri()


NESTED_CONFIG = ConfigDict(
    frozen=True,
    extra="forbid",
    alias_generator=to_camel,
    validate_by_name=True,
    validate_by_alias=True,
    hide_input_in_errors=True,
)


def shorthand(kind: str) -> Any:
    """`reconnect: true` means the defaults, `false` means off; `auth: oauth` means `{type: oauth}`."""

    def expand(value: Any) -> Any:
        if kind == "reconnect" and value is True:
            return {}
        if kind == "reconnect" and value is False:
            return None
        if kind == "auth" and isinstance(value, str):
            return {"type": value}
        return value

    return expand


def scope_tuple(value: Any) -> Any:
    """Scopes as a list, or as one space-separated string (OAuth's own spelling)."""
    return value.split() if isinstance(value, str) else value


def redact_url(url: str) -> str:
    """The URL with its password and query values masked: both are common places for tokens."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:{MASK}@{netloc.rpartition('@')[2]}"
    query = "&".join(f"{key}={MASK}" for key, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, MASK if parts.fragment else ""))
