"""The server models: one per transport, frozen and compared by value (`reload()` diffs with `==`).

Both the RFC's camelCase keys and snake_case keys are accepted. A model built directly raises
pydantic's own error, without its inputs; loaders turn errors into `ConfigError`s in plain words.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Annotated, Any, Literal, Self, TypeAlias
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from .._values.naming import public_tool_name
from .auth import AuthConfig
from .credentials import credential_argument_values
from .fields import (
    HEADER_NAME_RE,
    HEADER_VALUE_RE,
    NESTED_CONFIG,
    SERVER_NAME_PATTERN,
    Approval,
    ApprovalMode,
    FrozenMapping,
    LogLevel,
    RedactedMapping,
    SecretMapping,
    TimeoutMs,
    ToolApprovals,
    redact_url,
    root_uri,
    shorthand,
)

TRANSPORTS = ("stdio", "streamable-http", "sse")


class ReconnectConfig(BaseModel):
    """Opt-in reconnection after a ready server drops: attempts with exponential backoff and jitter."""

    model_config = NESTED_CONFIG

    max_attempts: int = Field(default=5, ge=1, le=1000)
    initial_delay_ms: TimeoutMs = 500
    max_delay_ms: TimeoutMs = 30_000

    @property
    def initial_delay(self) -> float:
        """The first wait before reconnecting, in seconds."""
        return self.initial_delay_ms / 1000

    @property
    def max_delay(self) -> float:
        """The longest wait between attempts, in seconds (never below the first)."""
        return max(self.max_delay_ms, self.initial_delay_ms) / 1000


class ServerConfigBase(BaseModel):
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
    tool_call_timeout_ms: TimeoutMs = 60_000
    connect_timeout_ms: TimeoutMs = 30_000
    enabled: bool = True
    required: bool = False
    include_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    reconnect: Annotated[ReconnectConfig | None, BeforeValidator(shorthand("reconnect"))] = None
    resources: bool = True
    prompts: bool = True
    roots: tuple[str, ...] | None = None
    log_level: LogLevel | None = None
    require_approval: Approval = "never"
    tool_approval: ToolApprovals = FrozenMapping[ApprovalMode]()
    # Values its references marked as secrets (a host file's inputs, VS Code's `${input:ID}`, and variables
    # named like credentials, `${GITHUB_TOKEN}`): secrets wherever they were used.
    _input_secrets: frozenset[str] = PrivateAttr(default=frozenset())
    # The name a host's file wrote when it is not a valid server name (`io.github.upstash/context7`).
    _original_name: str | None = PrivateAttr(default=None)
    _sse_fallback: bool = PrivateAttr(default=False)  # HTTP only: see `HttpServerConfig.sse_fallback`

    @field_validator("roots")
    @classmethod
    def _roots_as_uris(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(root_uri(root) for root in value)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        """Transport and name first, then the transport's own fields, then the common ones."""
        args = list(super().__repr_args__())
        common = set(ServerConfigBase.model_fields) - {"transport", "server_name"}
        yield from (arg for arg in args if arg[0] not in common)
        yield from (arg for arg in args if arg[0] in common)

    @property
    def input_secrets(self) -> frozenset[str]:
        """The values the entry's references marked as secrets: given for `${input:ID}`, or read from a
        variable named like a credential (`${GITHUB_TOKEN}`)."""
        return self._input_secrets

    def with_input_secrets(self, values: Iterable[str]) -> Self:
        """A copy that knows `values` came from inputs."""
        copy = self.model_copy()
        copy._input_secrets = frozenset(values)
        return copy

    @property
    def original_name(self) -> str | None:
        """The name the host's file gave this server when `server_name` had to be made from it, else None."""
        return self._original_name

    def with_original_name(self, name: str) -> Self:
        """A copy that remembers the host's name it was made from."""
        copy = self.model_copy()
        copy._original_name = name
        return copy

    @property
    def tool_call_timeout(self) -> float:
        """The default per-call timeout, in seconds."""
        return self.tool_call_timeout_ms / 1000

    @property
    def connect_timeout(self) -> float:
        """The bound on connecting plus the first tool listing, in seconds."""
        return self.connect_timeout_ms / 1000

    def approval_required(self, raw_name: str, *, read_only: bool) -> bool:
        """Whether each call of this tool waits for a person's approval: its `tool_approval` (by raw name,
        or by public name), else `require_approval`; `writes` asks unless the tool is `read_only`."""
        mode = self.tool_approval.get(raw_name) or self.tool_approval.get(
            public_tool_name(self.server_name, raw_name), self.require_approval
        )
        return mode == "always" or (mode == "writes" and not read_only)

    def allows_tool(self, raw_name: str) -> bool:
        """Whether to register the tool with this raw (server-side) name: include list, then exclude wins."""
        if self.include_tools is not None and raw_name not in self.include_tools:
            return False
        return raw_name not in self.exclude_tools


InheritEnv: TypeAlias = Literal["filtered", "minimal"]
"""How a stdio child inherits the host's environment (see `child_environment`)."""


class StdioServerConfig(ServerConfigBase):
    """A server started as a child process, spoken to over its stdin and stdout."""

    transport: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: SecretMapping = RedactedMapping()
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

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (_masked_arguments(value) if name == "args" else value)

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


def _masked_arguments(args: tuple[str, ...]) -> tuple[str, ...]:
    """`args` with the values of credential flags (`--api-key X`, `--token=X`) as `***`, by position: the
    same text elsewhere (`--port 1`) is not a credential."""
    masked = list(args)
    for index, value, _header in credential_argument_values(args):
        if value:  # the value is the whole argument or its end (`--key=X`, `NAME=X`, `Header: X`)
            masked[index] = args[index][: len(args[index]) - len(value)] + "***"
    return tuple(masked) if masked != list(args) else args

ReplayPolicy: TypeAlias = Literal["hints", "never", "always"]
"""Whether a call whose connection broke after it was sent is sent again: by the tool's hints (read-only
or idempotent, and not destructive), never, or always."""


class HttpServerConfig(ServerConfigBase):
    """A server reached over Streamable HTTP."""

    transport: Literal["streamable-http"] = "streamable-http"
    url: str
    headers: SecretMapping = RedactedMapping()
    auth: Annotated[AuthConfig | None, BeforeValidator(shorthand("auth"))] = None
    replay_calls: ReplayPolicy = "hints"

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
            if not HEADER_NAME_RE.fullmatch(name):
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
            if not HEADER_VALUE_RE.fullmatch(val):  # the HTTP client would fail on it at connect time
                raise PydanticCustomError(
                    "config",
                    "the value of {name} has a character HTTP headers cannot carry (only printable "
                    "ASCII, spaces and tabs); percent-encode or base64-encode it as the server expects",
                    {"name": name},
                )
        return value

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (redact_url(value) if name == "url" else value)

    @property
    def sse_fallback(self) -> bool:
        """Whether a 4xx answer to the first POST means "try the legacy SSE transport", as the host does.

        Set for a host's entry that names no transport (a bare `url`, Windsurf's `serverUrl`) and for
        VS Code's `"type": "http"`; never for our own `transport: streamable-http`.
        """
        return self._sse_fallback

    def with_sse_fallback(self) -> Self:
        """A copy that falls back to SSE as the host that wrote it would."""
        copy = self.model_copy()
        copy._sse_fallback = True
        return copy

    def as_sse(self) -> SseServerConfig:
        """The same server over the legacy SSE transport (the fallback's second try)."""
        fields = self.model_dump(exclude={"transport", "auth", "replay_calls"})
        fields["headers"] = dict(self.headers)
        sse = SseServerConfig.model_validate(fields)
        sse._input_secrets, sse._original_name = self._input_secrets, self._original_name
        return sse


class SseServerConfig(ServerConfigBase):
    """A server reached over the legacy HTTP+SSE transport (protocol 2024-11-05): opt-in, never inferred.

    `url` is the SSE endpoint (often ending in /sse); `headers` go with the event stream and every message.
    The configured sign-in (`auth`) is Streamable HTTP's alone: a token goes in `headers` here.
    """

    transport: Literal["sse"] = "sse"
    url: str
    headers: SecretMapping = RedactedMapping()

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
            yield name, (redact_url(value) if name == "url" else value)


ServerConfig: TypeAlias = Annotated[
    StdioServerConfig | HttpServerConfig | SseServerConfig, Field(discriminator="transport")
]
# What `help(ServerConfig)` shows (an Annotated alias has no docstring of its own).
ServerConfig.__doc__ = """One server's configuration: a `StdioServerConfig`, `HttpServerConfig` or
`SseServerConfig`, told apart by `transport` (frozen models that compare by value)."""
ServerModel: TypeAlias = StdioServerConfig | HttpServerConfig | SseServerConfig

MODELS: Mapping[str, type[ServerModel]] = MappingProxyType(
    {
        "stdio": StdioServerConfig,
        "streamable-http": HttpServerConfig,
        "sse": SseServerConfig,
    }
)
