"""Server configuration: the models, environment interpolation, and loading files.

An entry describes one MCP server, over stdio (`command`), Streamable HTTP
(`url`), or legacy SSE (`transport: sse`, opt-in: never inferred). Entries come
from Python (dicts or models), from our own file format (a `servers:` list), or
from the `mcpServers` map that Claude Desktop, Claude Code, Cursor and Gemini
CLI write, so users can point us at the file they already have. Models are
frozen and compare by value: `reload()` diffs old and new configurations with
`==`.

Every failure is a `ConfigError` that names the file, the entry and the field.
Header and env values are secrets: they never appear in a repr, a log line or
an error message, so errors are built from pydantic's error list without its
inputs, and never chained to the `ValidationError` (whose text echoes them).
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from ._errors import ConfigError

__all__ = [
    "AuthConfig",
    "ConfigEntries",
    "HttpServerConfig",
    "InheritEnv",
    "InvalidServerEntry",
    "ReconnectConfig",
    "RedactedMapping",
    "ServerConfig",
    "SseServerConfig",
    "StdioServerConfig",
    "load_config_entries",
    "load_config_file",
    "parse_server_configs",
    "parse_server_entries",
    "root_uri",
    "suggest_server_name",
    "unmatched_tool_filters",
    "warn_unmatched_tool_filters",
]

_log = logging.getLogger("mcp_sync.config")

SERVER_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"  # the RFC's serverName: it becomes part of public tool names
_SERVER_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")
_MAX_TIMEOUT_MS = 2**31 - 1  # the reference's setTimeout limit (~24.8 days); also fits threading's waits
_MASK = "***"
_TRANSPORTS = ("stdio", "streamable-http", "sse")

# RFC 9110 token characters: a header name outside them is rejected by the HTTP client at connect time.
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE_RE = re.compile(r"[\t\x20-\x7e]*")


class RedactedMapping(Mapping[str, str]):
    """An immutable, hashable `str -> str` mapping whose repr shows keys and masks values.

    The type of `env` and `headers`: the config stays hashable for `reload()`'s diff,
    and printing a config (or a traceback's locals) never shows a secret.
    Read it like a dict; `dict(mapping)` gives the real values.
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        self._data: dict[str, str] = dict(data)

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RedactedMapping):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return repr(dict.fromkeys(self._data, _MASK))


class _Redacted:
    """Annotation marker: validate as a `str -> str` mapping, store a `RedactedMapping`, dump a dict.

    The field stays typed `Mapping[str, str]`, so callers pass an ordinary dict.
    """

    def __get_pydantic_core_schema__(self, source_type: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(
            RedactedMapping,
            handler(source_type),
            serialization=core_schema.plain_serializer_function_ser_schema(dict),
        )


_SecretMapping = Annotated[Mapping[str, str], _Redacted()]


def _reject_bool(value: Any) -> Any:
    """`true` is an int to Python; as a timeout it is a mistake, not 1 ms."""
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


_TimeoutMs = Annotated[int, Field(gt=0, le=_MAX_TIMEOUT_MS), BeforeValidator(_reject_bool)]

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


_NESTED_CONFIG = ConfigDict(
    frozen=True,
    extra="forbid",
    alias_generator=to_camel,
    validate_by_name=True,
    validate_by_alias=True,
    hide_input_in_errors=True,
)


def _shorthand(kind: str) -> Any:
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


def _scopes(value: Any) -> Any:
    """Scopes as a list, or as one space-separated string (OAuth's own spelling)."""
    return value.split() if isinstance(value, str) else value


class AuthConfig(BaseModel):
    """How a Streamable HTTP server is signed in to: `oauth` (a user signs in once, in a browser;
    authorization code with PKCE), `client_credentials` (a service account, no user present, with a
    client secret), `private_key_jwt` (the same, the client proving itself with a JWT signed by its
    private key: `private_key_file`, or `private_key` given as a `${VAR}` reference, never inline),
    `jwt_bearer` (workload identity: a JWT the platform issued to the workload, `assertion_file` or
    `assertion`, is the grant) or `identity_assertion` (enterprise-managed: the user's ID token is
    exchanged at the identity provider's `idp_token_endpoint` for an identity assertion grant, which the
    authorization server `issuer` takes with the client's id and secret).

    `client_id` is optional for `oauth` (the client registers itself when the server allows it, or
    names itself by `client_metadata_url` when the authorization server reads client metadata documents);
    `client_secret` is a secret (never shown in a repr, a log line or an error).
    `token_endpoint_auth_method` forces how the client authenticates at the token endpoint (default: the
    one the authorization server advertises). `dpop: true` asks for proof-of-possession tokens (DPoP).
    """

    model_config = _NESTED_CONFIG

    type: Literal["oauth", "client_credentials", "private_key_jwt", "jwt_bearer", "identity_assertion"]
    client_id: str | None = Field(default=None, min_length=1)
    client_secret: str | None = Field(default=None, min_length=1, repr=False)
    scopes: Annotated[tuple[str, ...], BeforeValidator(_scopes)] = ()
    redirect_port: int | None = Field(default=None, ge=1, le=65535)
    issuer: str | None = Field(default=None, min_length=1)
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post", "none"] | None = None
    client_metadata_url: str | None = Field(default=None, min_length=1)
    private_key: str | None = Field(default=None, min_length=1, repr=False)
    private_key_file: str | None = Field(default=None, min_length=1)
    signing_algorithm: str | None = Field(default=None, min_length=1)
    assertion: str | None = Field(default=None, min_length=1, repr=False)
    assertion_file: str | None = Field(default=None, min_length=1)
    idp_token_endpoint: str | None = Field(default=None, min_length=1)
    idp_client_id: str | None = Field(default=None, min_length=1)
    idp_client_secret: str | None = Field(default=None, min_length=1, repr=False)
    dpop: bool = False

    @field_validator("client_metadata_url")
    @classmethod
    def _metadata_url_is_https(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme != "https" or parts.path in ("", "/"):
                raise PydanticCustomError("config", "client_metadata_url must be an https:// URL with a path")
        return value

    @field_validator("client_secret")
    @classmethod
    def _secret_needs_id(cls, value: str | None, info: Any) -> str | None:
        if value is not None and info.data.get("client_id") is None:
            raise PydanticCustomError("config", "a client_secret needs its client_id")
        return value

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        yield from super().__repr_args__()
        if self.client_secret is not None:
            yield "client_secret", _MASK
        for name in ("private_key", "assertion", "idp_client_secret"):
            if getattr(self, name) is not None:
                yield name, _MASK


class ReconnectConfig(BaseModel):
    """Opt-in reconnection after a ready server drops: attempts with exponential backoff and jitter."""

    model_config = _NESTED_CONFIG

    max_attempts: int = Field(default=5, ge=1, le=1000)
    initial_delay_ms: _TimeoutMs = 500
    max_delay_ms: _TimeoutMs = 30_000

    @property
    def initial_delay(self) -> float:
        return self.initial_delay_ms / 1000

    @property
    def max_delay(self) -> float:
        return max(self.max_delay_ms, self.initial_delay_ms) / 1000


class _ServerConfigBase(BaseModel):
    """Fields and helpers shared by both transports."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,  # serverName, toolCallTimeoutMs, ...: the RFC's spelling
        validate_by_name=True,
        validate_by_alias=True,
        hide_input_in_errors=True,  # a model built directly raises pydantic's error: keep secrets out of it
    )

    transport: str
    server_name: str = Field(pattern=SERVER_NAME_PATTERN)
    tool_call_timeout_ms: _TimeoutMs = 60_000
    connect_timeout_ms: _TimeoutMs = 30_000
    enabled: bool = True
    required: bool = False
    include_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    reconnect: Annotated[ReconnectConfig | None, BeforeValidator(_shorthand("reconnect"))] = None
    resources: bool = True
    prompts: bool = True
    roots: tuple[str, ...] | None = None
    log_level: LogLevel | None = None

    @field_validator("roots")
    @classmethod
    def _roots_as_uris(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(root_uri(root) for root in value)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        """Transport and name first, then the transport's own fields, then the common ones."""
        args = list(super().__repr_args__())
        common = set(_ServerConfigBase.model_fields) - {"transport", "server_name"}
        yield from (arg for arg in args if arg[0] not in common)
        yield from (arg for arg in args if arg[0] in common)

    @property
    def tool_call_timeout(self) -> float:
        """The default per-call timeout, in seconds."""
        return self.tool_call_timeout_ms / 1000

    @property
    def connect_timeout(self) -> float:
        """The bound on connecting plus the first tool listing, in seconds."""
        return self.connect_timeout_ms / 1000

    def allows_tool(self, raw_name: str) -> bool:
        """Whether to register the tool with this raw (server-side) name: include list, then exclude wins."""
        if self.include_tools is not None and raw_name not in self.include_tools:
            return False
        return raw_name not in self.exclude_tools


InheritEnv: TypeAlias = Literal["filtered", "minimal"]
"""How a stdio child inherits the host's environment (see `child_environment`)."""


class StdioServerConfig(_ServerConfigBase):
    """A server started as a child process, spoken to over its stdin and stdout."""

    transport: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: _SecretMapping = RedactedMapping()
    cwd: str | None = Field(default=None, min_length=1)
    inherit_env: InheritEnv = "filtered"

    @field_validator("command")
    @classmethod
    def _command_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise PydanticCustomError("config", "must not be blank")
        return os.path.expanduser(value) if value.startswith("~") else value

    @field_validator("cwd")
    @classmethod
    def _cwd_expanded(cls, value: str | None) -> str | None:
        return os.path.expanduser(value) if value is not None and value.startswith("~") else value

    @field_validator("env")
    @classmethod
    def _env_names_valid(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        for name, val in value.items():
            if not name or "=" in name or "\0" in name:
                raise PydanticCustomError("config", "variable names must be non-empty, without '=' or NUL")
            if "\0" in val:  # the OS refuses it when starting the process
                raise PydanticCustomError(
                    "config", "the value of {name} contains a NUL character", {"name": name}
                )
        return value


class HttpServerConfig(_ServerConfigBase):
    """A server reached over Streamable HTTP."""

    transport: Literal["streamable-http"] = "streamable-http"
    url: str
    headers: _SecretMapping = RedactedMapping()
    auth: Annotated[AuthConfig | None, BeforeValidator(_shorthand("auth"))] = None

    @field_validator("auth")
    @classmethod
    def _auth_complete(cls, value: AuthConfig | None) -> AuthConfig | None:
        if value is not None and value.type == "client_credentials" and value.client_secret is None:
            raise PydanticCustomError(
                "config", "client_credentials needs client_id and client_secret (write ${VAR} for the secret)"
            )
        if value is not None and value.type == "private_key_jwt":
            if value.client_id is None or (value.private_key is None) == (value.private_key_file is None):
                raise PydanticCustomError(
                    "config",
                    "private_key_jwt needs client_id and one of private_key_file or private_key "
                    "(write ${VAR} for the key)",
                )
        elif value is not None and (value.private_key or value.private_key_file or value.signing_algorithm):
            raise PydanticCustomError("config", "a private key is only for auth type private_key_jwt")
        if value is not None and value.type in ("jwt_bearer", "identity_assertion"):
            if value.client_id is None or (value.assertion is None) == (value.assertion_file is None):
                raise PydanticCustomError(
                    "config",
                    f"{value.type} needs client_id and one of assertion_file or assertion (write ${{VAR}})",
                )
        elif value is not None and (value.assertion or value.assertion_file):
            raise PydanticCustomError(
                "config", "an assertion is only for auth types jwt_bearer and identity_assertion"
            )
        if value is not None and value.type == "identity_assertion":
            if not (
                value.client_secret and value.issuer and value.idp_token_endpoint and value.idp_client_id
            ):
                raise PydanticCustomError(
                    "config",
                    "identity_assertion needs client_secret, issuer, idp_token_endpoint and idp_client_id",
                )
        elif value is not None and (
            value.idp_token_endpoint or value.idp_client_id or value.idp_client_secret
        ):
            raise PydanticCustomError(
                "config", "an identity provider is only for auth type identity_assertion"
            )
        return value

    @field_validator("url")
    @classmethod
    def _url_is_http(cls, value: str) -> str:
        try:
            parts = urlsplit(value)
        except ValueError:
            raise PydanticCustomError("config", "is not a valid URL") from None
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            raise PydanticCustomError("config", "must be an http:// or https:// URL with a host")
        return value

    @field_validator("headers")
    @classmethod
    def _headers_valid(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        for name, val in value.items():
            if not _HEADER_NAME_RE.fullmatch(name):
                raise PydanticCustomError(
                    "config",
                    "{name} is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)",
                    {"name": repr(name)},
                )
            # A line break would split the header (and the HTTP client refuses it at connect time).
            if "\r" in val or "\n" in val or "\0" in val:
                raise PydanticCustomError(
                    "config", "the value of {name} contains a line break or NUL", {"name": name}
                )
            if not _HEADER_VALUE_RE.fullmatch(val):  # the HTTP client would fail on it at connect time
                raise PydanticCustomError(
                    "config",
                    "the value of {name} has a character HTTP headers cannot carry (only printable "
                    "ASCII, spaces and tabs); percent-encode or base64-encode it as the server expects",
                    {"name": name},
                )
        return value

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (_redact_url(value) if name == "url" else value)


class SseServerConfig(_ServerConfigBase):
    """A server reached over the legacy HTTP+SSE transport (protocol 2024-11-05): opt-in, never inferred.

    `url` is the SSE endpoint (often ending in /sse); `headers` go with the event stream and every message.
    The configured sign-in (`auth`) is Streamable HTTP's alone: a token goes in `headers` here.
    """

    transport: Literal["sse"] = "sse"
    url: str
    headers: _SecretMapping = RedactedMapping()

    @model_validator(mode="before")
    @classmethod
    def _no_sign_in(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "auth" in data:
            raise PydanticCustomError(
                "config",
                "'auth' (sign-in) is not available over the legacy SSE transport: put the token in 'headers' "
                "(Authorization: Bearer ${TOKEN}), or use 'streamable-http' if the server offers it",
            )
        return data

    @field_validator("url")
    @classmethod
    def _url_is_http(cls, value: str) -> str:
        return HttpServerConfig._url_is_http(value)

    @field_validator("headers")
    @classmethod
    def _headers_valid(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        return HttpServerConfig._headers_valid(value)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (_redact_url(value) if name == "url" else value)


def _redact_url(url: str) -> str:
    """The URL with its password and query values masked: both are common places for tokens."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:{_MASK}@{netloc.rpartition('@')[2]}"
    query = "&".join(f"{key}={_MASK}" for key, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, _MASK if parts.fragment else ""))


ServerConfig: TypeAlias = Annotated[
    StdioServerConfig | HttpServerConfig | SseServerConfig, Field(discriminator="transport")
]
_ServerModel: TypeAlias = StdioServerConfig | HttpServerConfig | SseServerConfig

_MODELS: dict[str, type[_ServerModel]] = {
    "stdio": StdioServerConfig,
    "streamable-http": HttpServerConfig,
    "sse": SseServerConfig,
}


# --------------------------------------------------------------------------- errors


class _EntryError(Exception):
    """Problems found in one entry; rendered into a `ConfigError` with the entry's name."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


def _render(where: str, problems: list[str]) -> str:
    if len(problems) == 1:
        return f"{where}: {problems[0]}"
    return f"{where}: {len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems)


def _path(parts: Iterable[str | int]) -> str:
    """`('headers', 'Authorization')` -> `headers.Authorization`; `('args', 1)` -> `args[1]`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            out += " (a key)"  # pydantic's marker for a failed dict key
        else:
            out += f".{part}" if out else str(part)
    return out


# --------------------------------------------------------------------------- interpolation

# One scan finds, in order: the `$${` escape (a literal `${`), a `${...}` reference, or a `${`
# that never closes. A bare `$VAR` matches nothing and stays literal: passwords contain `$`.
_REFERENCE_RE = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_INNER_RE = re.compile(r"(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)
_REFERENCE_FORMS = "write ${VAR}, ${VAR:-default} or ${env:VAR}, and $${ for a literal ${"


def _interpolate_string(text: str, where: str, environ: Mapping[str, str], problems: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$${":
            return "${"
        inner = match.group(1)
        parsed = _INNER_RE.fullmatch(inner) if inner is not None else None
        if parsed is None or "${" in (parsed.group(2) or ""):
            # The text itself is not echoed: it may be part of a secret.
            problems.append(f"field '{where}' has a malformed ${{...}} reference ({_REFERENCE_FORMS})")
            return ""
        name, default = parsed.group(1), parsed.group(2)
        value = environ.get(name)
        if default is not None:
            return value if value else default  # like the shell: unset or empty takes the default
        if value is None:
            problems.append(f"field '{where}' references ${{{name}}}, which is not set")
            return ""
        return value

    return _REFERENCE_RE.sub(replace, text)


# A server entry is a few dozen values; far more, or far deeper, is a mistake or an attack (a YAML
# alias bomb expands a few hundred bytes into millions of values).
_MAX_ENTRY_DEPTH = 32
_MAX_ENTRY_VALUES = 100_000


class _EntryTooLarge(Exception):
    """An entry past `_MAX_ENTRY_DEPTH` or `_MAX_ENTRY_VALUES`."""


# Fields whose value must come from the environment, never be written in the configuration itself.
_REFERENCE_ONLY = frozenset({("auth", "private_key"), ("auth", "assertion")})


def _interpolate(
    value: Any,
    parts: tuple[str | int, ...],
    environ: Mapping[str, str],
    problems: list[str],
    budget: list[int] | None = None,
) -> Any:
    """A copy of `value` with every string (in lists and dict values, not keys) interpolated."""
    budget = [_MAX_ENTRY_VALUES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0 or len(parts) > _MAX_ENTRY_DEPTH:
        raise _EntryTooLarge
    if isinstance(value, str):
        if "${" not in value:  # most values: no reference, and no need to name the field
            if parts[-2:] in _REFERENCE_ONLY:
                problems.append(f"field '{_path(parts)}' must be a ${{VAR}} reference, not the key itself")
            return value
        return _interpolate_string(value, _path(parts), environ, problems)
    if isinstance(value, Mapping):
        return {k: _interpolate(v, (*parts, k), environ, problems, budget) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_interpolate(v, (*parts, i), environ, problems, budget) for i, v in enumerate(value)]
    return value


# --------------------------------------------------------------------------- plain words


def suggest_server_name(name: str) -> str:
    """A valid server name close to `name`: `brave search` -> `brave_search`, `github.com` -> `github_com`.

    Accents are dropped, each run of other characters becomes one `_`, and the result is cut
    to 32 characters.
    """
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", ascii_name).strip("_")
    return cleaned[:32].rstrip("_-") or "server"


_NAME_RULE = (
    "a server name is 1 to 32 letters, digits, '_' or '-', since it becomes part of every tool name "
    "(mcp__<server>__<tool>)"
)


def _name_problem(name: Any) -> str:
    """Why `name` is not a valid server name, in plain words."""
    if not isinstance(name, str):
        return f"must be a string; {_NAME_RULE}"
    if not name:
        return f"is empty; {_NAME_RULE}"
    reasons: list[str] = []
    if len(name) > 32:
        reasons.append(f"is {len(name)} characters long")
    bad = sorted({char for char in name if not re.fullmatch(r"[A-Za-z0-9_-]", char)})
    if bad:
        shown = [("a space" if char == " " else repr(char)) for char in bad[:5]]
        reasons.append("contains " + (", ".join(shown[:-1]) + " and " if len(shown) > 1 else "") + shown[-1])
    return f"{name!r} cannot be used: it {' and '.join(reasons)}; {_NAME_RULE}"


_SUGGESTION_CUTOFF = 0.85  # `comand` -> `command` (0.92), but not `transportType` -> `transport` (0.82)


def _did_you_mean(key: Any, candidates: Iterable[str]) -> str:
    """`; did you mean 'command'?` for a close misspelling of a known key, else ""."""
    if not isinstance(key, str):
        return ""
    by_folded = {candidate.casefold(): candidate for candidate in candidates}
    match = difflib.get_close_matches(key.casefold(), by_folded, n=1, cutoff=_SUGGESTION_CUTOFF)
    return f"; did you mean {by_folded[match[0]]!r}?" if match else ""


# Keys of the mcpServers map that mean something else in a `servers` list entry.
_HOST_KEYS_IN_OUR_FORMAT = {
    "type": "transport",
    "disabled": "enabled",
    "timeout": "tool_call_timeout_ms",
    "httpUrl": "url",
}


def _unknown_key(key: Any, entry: _RawEntry) -> str:
    shown = repr(key) if isinstance(key, str) else str(key)
    if entry.map_key is None and key in _HOST_KEYS_IN_OUR_FORMAT:
        return f"unknown key {shown} (an mcpServers key); here, use {_HOST_KEYS_IN_OUR_FORMAT[key]!r}"
    candidates = [*_ALL_SPELLINGS, *(_HOST_KEYS if entry.map_key is not None else ())]
    return f"unknown key {shown}{_did_you_mean(key, candidates)}"


_TIMEOUT_FIELDS = frozenset({"tool_call_timeout_ms", "connect_timeout_ms"})
_PLAIN_MESSAGES = {
    "missing": "is required",
    "string_type": "must be a string (put numbers and true/false in quotes)",
    "tuple_type": 'must be a list of strings, like ["a", "b"]',
    "list_type": 'must be a list of strings, like ["a", "b"]',
    "dict_type": 'must be a map of names to strings, like {"NAME": "value"}',
    "mapping_type": 'must be a map of names to strings, like {"NAME": "value"}',
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_too_short": "must not be empty",
    "less_than_equal": f"must be at most {_MAX_TIMEOUT_MS} (about 24.8 days in milliseconds)",
}


def _plain(error: Mapping[str, Any], field_name: Any) -> str:
    """Pydantic's message for one error, in plain words, without the input."""
    kind = str(error["type"])
    message = _PLAIN_MESSAGES.get(kind) or str(error["msg"]).replace("Input should be", "must be")
    if kind.startswith("int_") and field_name in _TIMEOUT_FIELDS:
        message += " of milliseconds"
    return message


# --------------------------------------------------------------------------- entries


@dataclass
class _RawEntry:
    """One entry before validation, with where it came from."""

    label: str  # `servers[2]` or `mcpServers.fs`
    data: Any
    map_key: Any = None  # the mcpServers key (the server name), or None for a `servers` entry
    key_names: dict[str, str] = field(default_factory=dict)  # our field -> the key the user wrote


def _field_spellings(model: type[_ServerConfigBase]) -> dict[str, str]:
    """Every accepted key (snake_case name and camelCase alias) -> the field name."""
    spellings: dict[str, str] = {}
    for name, info in model.model_fields.items():
        spellings[name] = name
        if info.alias:
            spellings[info.alias] = name
    return spellings


_ALL_SPELLINGS = {
    **_field_spellings(StdioServerConfig),
    **_field_spellings(HttpServerConfig),
    **_field_spellings(SseServerConfig),
}


def _entry_name(data: Mapping[Any, Any]) -> str | None:
    """The entry's server name for messages, when it has a valid one."""
    for key in ("server_name", "serverName"):
        value = data.get(key)
        if isinstance(value, str) and _SERVER_NAME_RE.fullmatch(value):
            return value
    return None


def _written_name(entry: _RawEntry) -> str | None:
    """The name an entry was written under, valid or not: its own `server_name`, else its map key."""
    if isinstance(entry.data, Mapping):
        for key in ("server_name", "serverName"):
            value = entry.data.get(key)
            if isinstance(value, str) and value:
                return value
    return None if entry.map_key is None else str(entry.map_key)


def _choose_transport(data: dict[Any, Any], problems: list[str], *, quiet: bool = False) -> str | None:
    """The entry's transport: given, or inferred from `command` (stdio) / `url` (Streamable HTTP).

    `quiet` leaves out "missing": an unknown key (a misspelt `command`) explains it better.
    """
    if "transport" in data:
        transport = data["transport"]
        if transport not in _TRANSPORTS:
            problems.append("field 'transport': must be 'stdio', 'streamable-http' or 'sse'")
            return None
        return str(transport)
    has_command, has_url = "command" in data, "url" in data
    if has_command and has_url:
        problems.append("has both 'command' (stdio) and 'url' (streamable-http); keep one")
        return None
    if has_command:
        return "stdio"
    if has_url:
        return "streamable-http"
    if not quiet:
        problems.append(
            "field 'transport': missing, and there is no 'command' (stdio) or 'url' to infer it from"
        )
    return None


def _check_double_spellings(data: Mapping[Any, Any], problems: list[str]) -> None:
    for name, info in StdioServerConfig.model_fields.items():
        if info.alias and info.alias != name and name in data and info.alias in data:
            problems.append(f"both '{name}' and '{info.alias}' are given; keep one")


_MAP_KEY = "<the mcpServers key>"  # key_names marker: the server name came from the map key


def _describe(error: Mapping[str, Any], transport: str, entry: _RawEntry, data: Mapping[Any, Any]) -> str:
    """One pydantic error as a sentence naming the field as the user wrote it, without the input."""
    loc: tuple[Any, ...] = tuple(error["loc"])
    if not loc:
        return str(error["msg"])
    head, rest = loc[0], loc[1:]
    if error["type"] == "extra_forbidden" and not rest:
        if head in _ALL_SPELLINGS:
            return f"unknown key '{head}' for transport '{transport}'"
        return _unknown_key(head, entry)
    field_name = _ALL_SPELLINGS.get(head, head) if isinstance(head, str) else head
    message = _plain(error, field_name)
    renamed = field_name == "server_name" and error["type"] == "string_pattern_mismatch"
    if renamed:
        message = _name_problem(data.get(head))
    written = entry.key_names.get(field_name) if isinstance(field_name, str) else None
    if written == _MAP_KEY:
        if renamed:
            suggestion = suggest_server_name(str(entry.map_key))
            return (
                f"the server name (its key under mcpServers) {message}. Rename the key to {suggestion!r}, "
                f'or keep it and add "server_name": {json.dumps(suggestion)} to the entry'
            )
        return f"the server name (its key under mcpServers) {message}"
    if renamed:
        message += f"; use {suggest_server_name(str(data.get(head)))!r}"
    if written is not None:
        return f"field '{_path((written, *rest))}': {message}"
    if head in data or not isinstance(field_name, str):
        return f"field '{_path(loc)}': {message}"
    alias = to_camel(field_name)  # a missing field: name both spellings it accepts
    also = f" (or '{alias}')" if alias != field_name else ""
    return f"field '{_path((field_name, *rest))}'{also}: {message}"


def _validate(
    entry: _RawEntry, environ: Mapping[str, str], where: str
) -> _ServerModel:
    """Interpolate, map and validate one entry; raises `_EntryError` with every problem found."""
    problems: list[str] = []
    try:
        if entry.map_key is None:
            data = _interpolate(entry.data, (), environ, problems)
        else:  # ignored host keys go first: an unset variable in a setting we drop is no error
            data = _interpolate(_without_ignored_host_keys(entry.data, where), (), environ, problems)
    except _EntryTooLarge:
        too_large = f"nested deeper than {_MAX_ENTRY_DEPTH} levels or over {_MAX_ENTRY_VALUES} values"
        raise _EntryError([f"the entry is {too_large}"]) from None
    if entry.map_key is not None:
        data = _from_host_entry(entry, data, problems)
    _check_double_spellings(data, problems)
    unknown = [key for key in data if key not in _ALL_SPELLINGS]
    transport = _choose_transport(data, problems, quiet=bool(unknown))
    if transport is None:
        problems.extend(_unknown_key(key, entry) for key in unknown)
    if problems or transport is None:
        raise _EntryError(problems)
    data.setdefault("transport", transport)
    try:
        return _MODELS[transport].model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_input=False, include_url=False, include_context=False)
    # Raised outside the `except`: a chained ValidationError would print the inputs in a traceback.
    raise _EntryError([_describe(e, transport, entry, data) for e in errors])


# --------------------------------------------------------------------------- the mcpServers map

# Host keys that have a meaning here are mapped (see _from_host_entry). These have none and are
# skipped, before interpolation, with a log line; anything else is an unknown key, because
# dropping a setting we do not understand (envFile, headersHelper, ...) would run the server
# differently from the host.
_HOST_KEYS_IGNORED: dict[str, str] = {
    "alwaysAllow": "host approval policy (Cline, Roo)",
    "autoApprove": "host approval policy (Cline, Roo, Claude Desktop extensions)",
    "trust": "host approval policy (Gemini CLI)",
    "description": "a note for humans (Gemini CLI)",
}
# Authentication settings we cannot honour: skipped, but at warning level, since the server will
# probably refuse an unauthenticated connection and the user should know why.
_HOST_AUTH_KEYS_IGNORED: dict[str, str] = {
    "authProviderType": "Google credentials provider (Gemini CLI)",
    "targetAudience": "Google ID token audience (Gemini CLI)",
    "targetServiceAccount": "Google service account impersonation (Gemini CLI)",
}
_HOST_TYPES = {
    "stdio": "stdio",
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamableHttp": "streamable-http",
    "sse": "sse",
}
# Every key an mcpServers entry may hold besides ours: for "did you mean" suggestions.
_HOST_KEYS = (
    "type",
    "httpUrl",
    "disabled",
    "timeout",
    "oauth",
    *_HOST_KEYS_IGNORED,
    *_HOST_AUTH_KEYS_IGNORED,
)
# The keys of a host's `oauth` object (Claude Code, Gemini CLI) and of Cursor's `auth` object that mean
# what one of ours means; the others (endpoints we discover, audiences) are skipped with a warning.
_HOST_OAUTH_KEYS = {
    "clientId": "client_id",
    "client_id": "client_id",
    "CLIENT_ID": "client_id",
    "clientSecret": "client_secret",
    "client_secret": "client_secret",
    "CLIENT_SECRET": "client_secret",
    "scopes": "scopes",
    "callbackPort": "redirect_port",
    "redirectPort": "redirect_port",
    "redirect_port": "redirect_port",
    "issuer": "issuer",
}


def _host_auth(key: str, value: Any, where: str, problems: list[str]) -> dict[str, Any] | str | None:
    """A host's `oauth` (Claude Code, Gemini CLI) or `auth` (Cursor, or ours) as our `auth`; None for none."""
    if key == "auth" and (isinstance(value, str) or (isinstance(value, Mapping) and "type" in value)):
        return value if isinstance(value, str) else dict(value)  # already ours
    if not isinstance(value, Mapping):
        problems.append(f"field '{key}': must be a map of OAuth settings")
        return None
    if value.get("enabled") is False:
        return None
    out: dict[str, Any] = {"type": "oauth"}
    for name, setting in value.items():
        if name in _HOST_OAUTH_KEYS:
            out[_HOST_OAUTH_KEYS[name]] = setting
        elif name == "redirectUri" and isinstance(setting, str):  # Gemini CLI: only its port matters here
            port = urlsplit(setting).port
            if port is not None:
                out["redirect_port"] = port
        elif name != "enabled":
            _log.warning(
                "%s: ignoring '%s.%s': mcp_sync discovers the server's OAuth endpoints itself",
                where,
                key,
                name,
            )
    return out


_SHORT_TIMEOUT_MS = 1000  # below this, a mapped `timeout` was probably written in seconds (Cline, Roo)


def _without_ignored_host_keys(data: Any, where: str) -> dict[Any, Any]:
    """The mcpServers entry without the host keys we skip, each skip logged (the key, never its value)."""
    if not isinstance(data, Mapping):
        raise _EntryError([f"expected a mapping of settings, got {type(data).__name__}"])
    kept: dict[Any, Any] = {}
    for key, value in data.items():
        if key in _HOST_KEYS_IGNORED:
            _log.debug("%s: ignoring %r (%s)", where, key, _HOST_KEYS_IGNORED[key])
        elif key in _HOST_AUTH_KEYS_IGNORED:
            _log.warning(
                "%s: ignoring %r (%s): mcp_sync does not support it; the server may refuse to connect",
                where,
                key,
                _HOST_AUTH_KEYS_IGNORED[key],
            )
        else:
            kept[key] = value
    return kept


def _from_host_entry(entry: _RawEntry, data: dict[Any, Any], problems: list[str]) -> dict[Any, Any]:
    """An mcpServers entry in our own keys; records in `entry.key_names` which host key fed which field.

    The map key is the server name, unless the entry names itself with `server_name`.
    """
    out: dict[Any, Any] = {}
    if "server_name" not in data and "serverName" not in data:
        out["server_name"] = entry.map_key
        entry.key_names["server_name"] = _MAP_KEY

    def take(host_key: str, our_key: str, value: Any) -> None:
        """Map a host key onto one of ours, unless the entry also sets ours."""
        ours = next((k for k in (our_key, to_camel(our_key)) if k in data), None)
        if ours is not None:
            problems.append(f"both '{host_key}' and '{ours}' are given; keep one")
            return
        out[our_key] = value
        entry.key_names[our_key] = host_key

    for key, value in data.items():
        if key == "type":
            if not isinstance(value, str) or value not in _HOST_TYPES:
                problems.append(
                    "field 'type': must be 'stdio', 'http', 'streamable-http', 'streamableHttp' or 'sse'"
                )
            elif "transport" in data:
                problems.append("both 'type' and 'transport' are given; keep one")
            else:
                out["transport"] = _HOST_TYPES[value]
        elif key == "httpUrl":  # Gemini CLI's Streamable HTTP endpoint
            take(key, "url", value)
        elif key == "disabled":
            if not isinstance(value, bool):
                problems.append("field 'disabled': must be true or false")
            else:
                take(key, "enabled", not value)
        elif key == "timeout":  # Gemini CLI: milliseconds
            take(key, "tool_call_timeout_ms", value)
        elif key in ("oauth", "auth"):
            if "oauth" in data and "auth" in data:
                if key == "oauth":
                    problems.append("both 'oauth' and 'auth' are given; keep one")
                continue
            auth = _host_auth(key, value, entry.label, problems)
            if auth is not None:
                out["auth"] = auth
                entry.key_names["auth"] = key
        else:
            out[key] = value  # our own keys; the rest are reported as unknown, by name
    if "transport" not in out and "httpUrl" in data and "url" not in data:
        out["transport"] = "streamable-http"
    return out


# --------------------------------------------------------------------------- what a loader returns


@dataclass(frozen=True, eq=False)
class InvalidServerEntry:
    """An entry that cannot be used; the hub shows it as a `failed` server with `error`.

    `server_name` is the name it was written under (or its place, like `servers[2]`, when it
    has none, or when that name is also a valid server's); it is unique within one load, but
    it may not be a valid server name: it is for display. `label` says where the entry is.
    """

    server_name: str
    error: ConfigError
    label: str
    required: bool = False

    def _key(self) -> tuple[str, str, str, bool]:
        return (self.server_name, self.label, str(self.error), self.required)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InvalidServerEntry):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass(frozen=True)
class ConfigEntries:
    """Every entry of a configuration, in order: each a valid config or an `InvalidServerEntry`."""

    entries: tuple[_ServerModel | InvalidServerEntry, ...]
    source: str | None = None

    @property
    def configs(self) -> list[ServerConfig]:
        """The valid entries (enabled or not), in order."""
        return [entry for entry in self.entries if not isinstance(entry, InvalidServerEntry)]

    @property
    def invalid(self) -> list[InvalidServerEntry]:
        """The entries that cannot be used, in order."""
        return [entry for entry in self.entries if isinstance(entry, InvalidServerEntry)]


# --------------------------------------------------------------------------- building


def _is_disabled(data: Any) -> bool:
    """Whether a raw entry says it is switched off (`disabled: true` or `enabled: false`)."""
    return isinstance(data, Mapping) and (data.get("disabled") is True or data.get("enabled") is False)


def _build(
    raw_entries: list[_RawEntry], environ: Mapping[str, str], source: str | None, *, strict: bool
) -> ConfigEntries:
    """Validate every entry. Strict: any problem raises one `ConfigError` naming them all.

    Otherwise each entry stands alone: one that cannot be used becomes an `InvalidServerEntry`.
    Either way a disabled entry is never an error: when invalid, it is left out with a log line.
    """
    prefix = f"{source}: " if source else ""
    results: list[ServerConfig | InvalidServerEntry | None] = []
    failures: list[tuple[int, str]] = []
    for index, entry in enumerate(raw_entries):
        results.append(None)
        if isinstance(entry.data, _ServerModel):
            results[index] = entry.data
            continue
        if entry.map_key is None and not isinstance(entry.data, Mapping):
            failures.append(
                (
                    index,
                    f"{prefix}{entry.label}: expected a mapping of settings, got {type(entry.data).__name__}",
                )
            )
            continue
        name = _entry_name(entry.data) if entry.map_key is None else None
        where = prefix + (f'{entry.label} ("{name}")' if name else entry.label)
        try:
            config = _validate(entry, environ, where)
        except _EntryError as exc:
            message = _render(where, exc.problems)
            if _is_disabled(entry.data):
                _log.info("%s (the entry is disabled, so it is left out)", message)
            else:
                failures.append((index, message))
            continue
        if (
            entry.key_names.get("tool_call_timeout_ms") == "timeout"
            and config.tool_call_timeout_ms < _SHORT_TIMEOUT_MS
        ):
            _log.warning(
                "%s: 'timeout' is read as milliseconds (Gemini CLI's unit), so calls time out after %d ms; "
                "Cline and Roo write seconds: multiply by 1000",
                where,
                config.tool_call_timeout_ms,
            )
        results[index] = config

    first_enabled: dict[str, int] = {}
    for index, result in enumerate(results):
        if not isinstance(result, _ServerModel) or not result.enabled:
            continue
        if result.server_name not in first_enabled:
            first_enabled[result.server_name] = index
            continue
        earlier = raw_entries[first_enabled[result.server_name]].label
        message = (
            f"{prefix}duplicate server_name '{result.server_name}': {earlier} and "
            f"{raw_entries[index].label} are both enabled; rename one or disable one (enabled: false)"
        )
        results[index] = None
        failures.append((index, message))
    if strict and failures:  # one error naming every entry that cannot be used, in file order
        raise ConfigError("\n".join(message for _, message in sorted(failures)))

    taken = set(first_enabled)
    for index, message in sorted(failures):
        entry = raw_entries[index]
        display = _written_name(entry)
        if display is None or display in taken:
            display = entry.label
        taken.add(display)
        required = isinstance(entry.data, Mapping) and entry.data.get("required") is True
        results[index] = InvalidServerEntry(display, ConfigError(message), entry.label, required)
    return ConfigEntries(tuple(result for result in results if result is not None), source)


def _document_entries(document: Any, source: str | None) -> list[_RawEntry]:
    """The raw entries of a configuration document: a `servers:` list or an `mcpServers` map."""
    prefix = f"{source}: " if source else ""
    if not isinstance(document, Mapping):
        raise ConfigError(f"{prefix}expected a mapping with 'servers' (a list) or 'mcpServers' (a map)")
    if "servers" in document and "mcpServers" in document:
        raise ConfigError(f"{prefix}has both 'servers' and 'mcpServers'; use one")
    if "mcpServers" in document:
        others = sorted(str(key) for key in document if key != "mcpServers")
        if others:
            _log.debug("%signoring host settings outside mcpServers: %s", prefix, ", ".join(others))
        servers = document["mcpServers"]
        if servers is None:
            return []
        if not isinstance(servers, Mapping):
            raise ConfigError(f"{prefix}'mcpServers' must be a map of server name to settings")
        return [_RawEntry(f"mcpServers.{name}", settings, map_key=name) for name, settings in servers.items()]
    if "servers" in document:
        unknown = [str(key) for key in document if key != "servers"]
        if unknown:
            raise ConfigError(f"{prefix}unknown top-level key '{unknown[0]}' (expected only 'servers')")
        servers = document["servers"]
        if isinstance(servers, Mapping):
            raise ConfigError(
                f"{prefix}'servers' must be a list of entries; "
                "a map of server name to settings goes under 'mcpServers'"
            )
        if servers is not None and not isinstance(servers, list):
            raise ConfigError(f"{prefix}'servers' must be a list of entries")
        return [_RawEntry(f"servers[{i}]", entry) for i, entry in enumerate(servers or [])]
    raise ConfigError(f"{prefix}has neither 'servers' (a list) nor 'mcpServers' (a map)")


# --------------------------------------------------------------------------- public functions

ServerEntries: TypeAlias = (
    Iterable[Mapping[str, Any] | _ServerModel] | Mapping[str, Any]
)
"""What `parse_server_configs` takes: a list of entries, or a whole document (`{"mcpServers": {...}}`)."""


def _raw_entries(servers: ServerEntries, source: str | None) -> list[_RawEntry]:
    if isinstance(servers, Mapping):
        return _document_entries(servers, source)
    if isinstance(servers, str | bytes) or not isinstance(servers, Iterable):
        prefix = f"{source}: " if source else ""
        hint = (
            "; to read a file, use load_config_file() or MCPHub.from_file()"
            if isinstance(servers, str)
            else ""
        )
        raise ConfigError(
            f"{prefix}expected a list of server entries or a mapping with 'servers' or 'mcpServers', "
            f"got {type(servers).__name__}{hint}"
        )
    return [_RawEntry(f"servers[{i}]", entry) for i, entry in enumerate(servers)]


def parse_server_entries(
    servers: ServerEntries,
    *,
    environ: Mapping[str, str] | None = None,
    source: str | None = None,
    strict: bool = False,
) -> ConfigEntries:
    """Like `parse_server_configs`, but each entry stands alone unless `strict`.

    An entry that cannot be used becomes an `InvalidServerEntry` (with a `ConfigError` that
    says why in plain words) instead of failing the whole configuration.
    """
    raw = _raw_entries(servers, source)
    return _build(raw, os.environ if environ is None else environ, source, strict=strict)


def parse_server_configs(
    servers: ServerEntries,
    *,
    environ: Mapping[str, str] | None = None,
    source: str | None = None,
) -> list[ServerConfig]:
    """Validate server entries (dicts or models) in order; raises `ConfigError` naming entry and field.

    `servers` is a list of entries, or a mapping shaped like a file (`{"mcpServers": {...}}`
    or `{"servers": [...]}`), so `json.load(...)` of a host's file works too. Dicts are
    interpolated against `environ` (default `os.environ`) first; a dict without `transport`
    is stdio if it has a `command`, Streamable HTTP if it has a `url`. Models pass through as
    they are. Two enabled entries may not share a `server_name`. `source` (a file name, say)
    prefixes every message.
    """
    return parse_server_entries(servers, environ=environ, source=source, strict=True).configs


class _StrictLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses a repeated mapping key instead of keeping the last one silently."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *base` keys may be overridden: that is what merging is for
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:
            continue  # unhashable: construct_mapping reports it
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _DuplicateJsonKey(ValueError):
    """A JSON object repeats a key; YAML's loader reports it with its line."""


def _reject_duplicate_json_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateJsonKey(f"duplicate key {key!r}")
        result[key] = value
    return result


# One scan over JSON text: a string (kept whole, so `//` inside a URL stays), a `//` or `/* */`
# comment, or a comma that only whitespace and comments separate from a closing bracket.
_JSONC_RE = re.compile(
    r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|,(?=(?:\s|//[^\n]*|/\*.*?\*/)*[}\]])', re.DOTALL
)


def _without_json_comments(text: str) -> str:
    """JSON with comments (JSONC: VS Code, Cursor) as JSON: comments and trailing commas become spaces.

    Newlines are kept, so error positions still match the file.
    """

    def blank(match: re.Match[str]) -> str:
        token = match.group(0)
        return token if token.startswith('"') else re.sub(r"[^\n]", " ", token)

    return _JSONC_RE.sub(blank, text)


def _parse_text(text: str, source: str) -> Any:
    """JSON (comments allowed) or YAML, by content. Errors name the file and line, never the file's text."""
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicate_json_keys)
    except ValueError:
        pass  # not plain JSON: JSON with comments, or YAML
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply to be a configuration") from None
    json_problem: str | None = None
    yaml_text = text
    if text.lstrip()[:1] in ("{", "/"):
        stripped = _without_json_comments(text)
        if stripped.lstrip().startswith("{"):
            try:
                return json.loads(stripped, object_pairs_hook=_reject_duplicate_json_keys)
            except json.JSONDecodeError as exc:  # its message is a fixed phrase, never the text
                json_problem = (
                    f"{source}: not valid YAML or JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
                )
            except ValueError:  # a repeated key, or a number too long to convert
                yaml_text = stripped  # YAML reads the same document and says what and where
            except RecursionError:
                raise ConfigError(f"{source}: nested too deeply to be a configuration") from None
    problem: str | None = None
    try:
        return yaml.load(yaml_text, Loader=_StrictLoader)  # a SafeLoader subclass: plain data only
    except RecursionError:
        problem = f"{source}: nested too deeply to be a configuration"
    except ValueError as exc:  # a value PyYAML cannot build, such as an integer of thousands of digits
        problem = f"{source}: not valid YAML or JSON: {type(exc).__name__} building a value"
    except yaml.MarkedYAMLError as exc:
        # PyYAML's str(exc) quotes the offending line; only its fixed phrases and positions are used.
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = f"{source}: not valid YAML or JSON{where}: {exc.problem or exc.context or 'syntax error'}"
        if exc.problem and exc.context and exc.context_mark is not None:
            problem += f" ({exc.context} started at line {exc.context_mark.line + 1})"
    except yaml.YAMLError:
        problem = f"{source}: not valid YAML or JSON"
    raise ConfigError(json_problem or problem)


def _read_document(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """The parsed file and its name for messages; `~` in the path is the home directory."""
    source = os.fspath(path)
    try:
        with open(os.path.expanduser(source), "rb") as handle:
            raw_bytes = handle.read()
    except OSError as exc:
        raise ConfigError(
            f"{source}: cannot read the config file: {exc.strerror or type(exc).__name__}"
        ) from None
    try:
        text = raw_bytes.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{source}: not UTF-8 text") from None
    return _parse_text(text, source), source


def load_config_entries(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None, strict: bool = False
) -> ConfigEntries:
    """Read a config file (see `load_config_file`), each entry standing alone unless `strict`.

    A file that cannot be read or has neither shape raises `ConfigError`. Otherwise an entry
    that cannot be used (a name with a space, `"type": "websocket"`, a misspelt key) becomes an
    `InvalidServerEntry`, and the others load. `strict=True` raises one `ConfigError` naming
    every problem instead (for CI). Disabled entries are never errors.
    """
    document, source = _read_document(path)
    raw = _document_entries(document, source)
    entries = _build(raw, os.environ if environ is None else environ, source, strict=strict)
    _log.debug("%s: read %d server entries (%d invalid)", source, len(entries.entries), len(entries.invalid))
    return entries


def load_config_file(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> list[ServerConfig]:
    """Read servers from a JSON (comments allowed) or YAML file: a `servers:` list or an `mcpServers` map.

    The `mcpServers` shape is the one Claude Desktop, Claude Code (`.mcp.json`), Cursor and
    Gemini CLI write; other top-level settings in such a file are ignored. Any invalid entry
    raises `ConfigError`; `load_config_entries` lets each entry stand alone.
    """
    return load_config_entries(path, environ=environ, strict=True).configs


# --------------------------------------------------------------------------- tool filters


def unmatched_tool_filters(config: ServerConfig, raw_names: Iterable[str]) -> list[str]:
    """The `include_tools` and `exclude_tools` entries that name none of `raw_names`, in order, once each."""
    offered = set(raw_names)
    unmatched: list[str] = []
    for name in (*(config.include_tools or ()), *config.exclude_tools):
        if name not in offered and name not in unmatched:
            unmatched.append(name)
    return unmatched


def warn_unmatched_tool_filters(config: ServerConfig, raw_names: Iterable[str]) -> list[str]:
    """Log a warning naming the filter entries that match no tool; returns them.

    Call after the server's first tool listing: a filter that matches nothing is usually a
    public name (`mcp__fs__read_file`) or a typo where the raw name (`read_file`) belongs.
    """
    offered = sorted(set(raw_names))
    unmatched = unmatched_tool_filters(config, offered)
    if not unmatched:
        return unmatched
    public_prefix = f"mcp__{config.server_name}__"
    described: list[str] = []
    for name in unmatched:
        if name.startswith(public_prefix) and name[len(public_prefix) :] in offered:
            described.append(f"{name!r} (did you mean {name[len(public_prefix) :]!r}?)")
        else:
            close = difflib.get_close_matches(name, offered, n=1, cutoff=_SUGGESTION_CUTOFF)
            described.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    example = offered[0] if offered else "read_file"
    _log.warning(
        "server %r: include_tools/exclude_tools name no tool the server offers: %s; these lists take "
        "the server's raw tool names (like %r), not public names (like %r)",
        config.server_name,
        ", ".join(described),
        example,
        public_prefix + example,
    )
    return unmatched
