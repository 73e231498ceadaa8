"""Codex: `[mcp_servers.<name>]` tables in `~/.codex/config.toml` (or `$CODEX_HOME/config.toml`).

As documented in Codex's "Configuration" (config.md, MCP servers) and its configuration reference:
stdio servers have `command`, `args`, `env`, `env_vars` (variables forwarded from Codex's own
environment) and `cwd`; Streamable HTTP servers `url`, `bearer_token_env_var`, `http_headers`
and `env_http_headers` (header name to the variable holding its value). Both have `enabled`,
`required`, `enabled_tools` / `disabled_tools` (allow and deny lists), `startup_timeout_sec`
(or `startup_timeout_ms`) and `tool_timeout_sec`. A trusted project may add `.codex/config.toml`,
whose servers win over the user's.

Also read: `bearer_token` (a token written in the file: our `Authorization` header), the approval
settings (`default_tools_approval_mode` and `[tools.<tool>] approval_mode`, see `APPROVAL_MODES`), and
the per-server keys Codex accepts that change nothing here, ignored at debug level
(`supports_parallel_tool_calls`, `experimental_environment`, `name`). Codex ignores keys it does not
know (`type`, an `[oauth]` table), and so do we. `env_vars` entries are names, or tables with a `name`
(and a `source`).

A project's `.codex/config.toml` (in each folder from the project root, the nearest folder up with
`.git`, down to the project) is read only when the project is trusted: `[projects."<path>"]
trust_level = "trusted"` in the user's `config.toml`, for that folder, else the project root, else
the repository root (codex-rs/core/src/config_loader/mod.rs: `load_project_layers`,
`ProjectTrustContext::decision_for_dir`); otherwise Codex leaves it off, saying why.

Values are read as written: Codex expands no `${VAR}` in `config.toml` (a feature it was asked for
and declined, openai/codex#7367 and #2680; an expansion of `config_loader/expansion.rs` was proposed
in openai/codex#10275 and closed unmerged, and the loader has no expansion); the environment comes
in only through `env_vars`, `bearer_token_env_var` and `env_http_headers`, whose variables are read here.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from ..._values.errors import ConfigError
from ..context import LoadContext
from ..messages import EntryError
from ..models import ServerModel
from ..raw import RawEntry
from .common import EntryMapper, drop_ignored, warn_unsupported

_log = logging.getLogger("mcp_sync.config")

# Codex key -> ours, where only the name differs.
RENAMED: Mapping[str, str] = MappingProxyType(
    {"enabled_tools": "include_tools", "disabled_tools": "exclude_tools"}
)
# Codex key -> (our field, milliseconds per unit).
TIMEOUTS: Mapping[str, tuple[str, int]] = MappingProxyType(
    {
        "startup_timeout_sec": ("connect_timeout_ms", 1000),
        "startup_timeout_ms": ("connect_timeout_ms", 1),
        "tool_timeout_sec": ("tool_call_timeout_ms", 1000),
    }
)
UNSUPPORTED: Mapping[str, str] = MappingProxyType(
    {
        "scopes": "the OAuth scopes Codex asks for when it signs in",
        "oauth_resource": "the OAuth resource Codex asks for when it signs in",
    }
)
# Accepted by Codex, nothing to do here: approvals and parallelism are the host's, not the server's.
SKIPPED: Mapping[str, str] = MappingProxyType(
    {
        "supports_parallel_tool_calls": "whether Codex calls the server's tools in parallel",
        "experimental_environment": "where Codex starts the server (experimental)",
        "name": "a display name Codex no longer uses",
    }
)
# Codex's `AppToolApproval` (codex-rs/config/src/mcp_types.rs) -> our `require_approval`, as
# `requires_mcp_tool_approval_for_mode` (codex-rs/core/src/mcp_tool_call.rs) applies it: `prompt` asks
# before every call, `writes` unless the tool's hints say read-only, `approve` never. `auto` is Codex's
# default, decided from the tool's hints and the session's approval policy, which a host that is not
# Codex has no equivalent of: as a server's default it sets nothing (as for every host's defaults); for
# one tool under a server default that is set, it is `writes`, the nearest rule we have.
APPROVAL_MODES: Mapping[str, str | None] = MappingProxyType(
    {"prompt": "always", "writes": "writes", "approve": "never", "auto": None}
)
APPROVAL_KEYS = ("default_tools_approval_mode", "tools")
HEADER_KEYS = ("bearer_token_env_var", "bearer_token", "http_headers", "env_http_headers")
_OUR_KEYS = ("command", "args", "env", "cwd", "url", "enabled", "required")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def trust_levels(user_config: Any) -> dict[str, str]:
    """The `[projects."<path>"] trust_level` of the user's `config.toml`, by the path as written."""
    projects = user_config.get("projects") if isinstance(user_config, Mapping) else None
    if not isinstance(projects, Mapping):
        return {}
    return {
        str(path): settings["trust_level"]
        for path, settings in projects.items()
        if isinstance(settings, Mapping) and isinstance(settings.get("trust_level"), str)
    }


def codex_entries(
    document: Mapping[Any, Any], source: str | None, environ: Mapping[str, str], context: LoadContext
) -> list[RawEntry]:
    """The raw entries of a Codex `config.toml`: its `mcp_servers` tables."""
    prefix = f"{source}: " if source else ""
    servers = document["mcp_servers"]
    if not isinstance(servers, Mapping):
        raise ConfigError(f"{prefix}'mcp_servers' must be a table of server name to settings")
    entries = []
    for name, settings in servers.items():
        entry = RawEntry(f"mcp_servers.{name}", settings, map_key=name, format=CodexFormat)
        entry.environ, entry.project, entry.literal = environ, context.project, True
        entries.append(entry)
    return entries


_MAX_MILLISECONDS = 2**31 - 1  # our timeouts' limit (about 24.8 days)


def _milliseconds(key: str, value: Any, unit: int, problems: list[str]) -> int | None:
    """Seconds or milliseconds as whole milliseconds; a value Codex refuses (inf, nan, < 0) is a problem."""
    what = "seconds" if unit == 1000 else "milliseconds"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        problems.append(f"field '{key}': must be a positive number of {what}")
        return None
    if value * unit > _MAX_MILLISECONDS:
        problems.append(f"field '{key}': must be at most {_MAX_MILLISECONDS // unit} {what}")
        return None
    return max(1, round(float(value) * unit))


def _forwarded(value: Any, environ: Mapping[str, str], problems: list[str]) -> dict[str, str]:
    """The variables `env_vars` forwards from the environment (unset ones left out), as they are."""
    if not isinstance(value, list):
        problems.append("field 'env_vars': must be a list of variable names")
        return {}
    names = []
    for item in value:
        name = item.get("name") if isinstance(item, Mapping) else item
        if not isinstance(name, str):
            problems.append("field 'env_vars': each item must be a variable name or a table with a 'name'")
            return {}
        names.append(name)
    return {name: environ[name] for name in names if name in environ}


def _approval_mode(key: str, value: Any, problems: list[str]) -> str | None:
    if isinstance(value, str) and value in APPROVAL_MODES:
        return APPROVAL_MODES[value]
    problems.append(f"field '{key}': must be one of {', '.join(map(repr, APPROVAL_MODES))}")
    return None


def _approvals(data: Mapping[Any, Any], problems: list[str]) -> dict[str, Any]:
    """`default_tools_approval_mode` and `[tools.<tool>] approval_mode` as our `require_approval` and
    `tool_approval` (see `APPROVAL_MODES`); a value Codex refuses is a problem, as Codex fails the entry."""
    out: dict[str, Any] = {}
    default = None
    if "default_tools_approval_mode" in data:
        value = data["default_tools_approval_mode"]
        default = _approval_mode("default_tools_approval_mode", value, problems)
        if default is not None:
            out["require_approval"] = default
    tools = data.get("tools", {})
    if not isinstance(tools, Mapping):
        problems.append("field 'tools': must be a table of tool name to settings")
        return out
    per_tool: dict[str, str] = {}
    for tool, settings in tools.items():
        if not isinstance(settings, Mapping):  # its other keys (`output_token_limit`) are Codex's alone
            problems.append(f"field 'tools.{tool}': must be a table of settings")
            continue
        if "approval_mode" in settings:
            mode = _approval_mode(f"tools.{tool}.approval_mode", settings["approval_mode"], problems)
            if mode is None and settings["approval_mode"] == "auto" and default is not None:
                mode = "writes"
            if mode is not None:
                per_tool[str(tool)] = mode
    if per_tool:
        out["tool_approval"] = per_tool
    return out


def _headers(data: Mapping[Any, Any], environ: Mapping[str, str], problems: list[str]) -> dict[str, Any]:
    """`http_headers`, `env_http_headers`, `bearer_token` and `bearer_token_env_var` as our `headers`.

    The variables are read now (header values are secrets wherever they go); an unset
    `env_http_headers` variable leaves its header out, as in Codex, and an unset
    `bearer_token_env_var` is a problem naming it.
    """
    headers: dict[str, Any] = {}
    plain = data.get("http_headers", {})
    if not isinstance(plain, Mapping):
        problems.append("field 'http_headers': must be a table of header name to value")
    else:
        headers.update(plain)
    from_env = data.get("env_http_headers", {})
    if not isinstance(from_env, Mapping):
        problems.append("field 'env_http_headers': must be a table of header name to variable name")
    else:
        for header, variable in from_env.items():
            if not isinstance(variable, str) or not _VARIABLE_NAME.fullmatch(variable):
                problems.append(f"field 'env_http_headers.{header}': must be an environment variable name")
            elif variable in environ:  # like Codex: a header whose variable is unset is left out
                headers[header] = environ[variable]
    if isinstance(data.get("bearer_token"), str) and "bearer_token_env_var" not in data:
        headers["Authorization"] = "Bearer " + data["bearer_token"]  # a secret, as every header value
    elif "bearer_token" in data and "bearer_token_env_var" not in data:
        problems.append("field 'bearer_token': must be a string")
    if "bearer_token_env_var" in data:
        variable = data["bearer_token_env_var"]
        if not isinstance(variable, str) or not _VARIABLE_NAME.fullmatch(variable):
            problems.append("field 'bearer_token_env_var': must be an environment variable name")
        else:
            if variable in environ:
                headers["Authorization"] = "Bearer " + environ[variable]
            else:
                problems.append(f"field 'bearer_token_env_var' names {variable}, which is not set")
    return headers


class CodexFormat:
    """Codex's `mcp_servers` tables in our keys (see `raw.HostFormat`; the class itself is the format)."""

    map_name: ClassVar[str] = "mcp_servers"
    known_keys: ClassVar[tuple[str, ...]] = (
        "env_vars",
        *_OUR_KEYS,
        *RENAMED,
        *TIMEOUTS,
        *UNSUPPORTED,
        *SKIPPED,
        *APPROVAL_KEYS,
        *HEADER_KEYS,
    )

    @staticmethod
    def prepare(entry: RawEntry, data: Any, where: str) -> dict[Any, Any]:
        """Mapped at once, the variables the entry names read from the environment (no `${VAR}` in Codex)."""
        if not isinstance(data, Mapping):
            raise EntryError([f"expected a table of settings, got {type(data).__name__}"])
        environ = entry.environ if entry.environ is not None else {}
        problems: list[str] = []
        out: dict[Any, Any] = {}
        for key, value in data.items():
            if key in RENAMED:
                out[RENAMED[key]] = value
                entry.key_names[RENAMED[key]] = key
            elif key in TIMEOUTS:
                ours, unit = TIMEOUTS[key]
                if ours in entry.key_names:
                    problems.append(f"both '{entry.key_names[ours]}' and '{key}' are given; keep one")
                milliseconds = _milliseconds(key, value, unit, problems)
                if milliseconds is not None:
                    out[ours] = milliseconds
                    entry.key_names[ours] = key
            elif key in UNSUPPORTED:
                warn_unsupported(where, key, UNSUPPORTED[key])
            elif key in SKIPPED:
                _log.debug("%s: ignoring %r (%s)", where, key, SKIPPED[key])
            elif key == "env_vars":
                forwarded = _forwarded(value, environ, problems)
                out["env"] = {**forwarded, **(out.get("env") or {})}
            elif key == "env" and isinstance(value, Mapping):
                out["env"] = {**(out.get("env") or {}), **value}
            elif key == "env":
                problems.append("field 'env': must be a table of variable name to value")
            elif key in _OUR_KEYS:
                out[key] = value
            elif key not in HEADER_KEYS and key not in APPROVAL_KEYS:
                drop_ignored(entry, where, key, "Codex", CodexFormat.known_keys)
        if any(key in data for key in APPROVAL_KEYS):
            out.update(_approvals(data, problems))
        if any(key in data for key in HEADER_KEYS):
            out["headers"] = _headers(data, environ, problems)
        if problems:
            raise EntryError(problems)
        return out

    @staticmethod
    def to_ours(entry: RawEntry, data: dict[Any, Any], problems: list[str]) -> dict[Any, Any]:
        mapper = EntryMapper(entry, data, problems)
        for key, value in data.items():
            mapper.keep(key, value)
        return mapper.out

    @staticmethod
    def finish(
        entry: RawEntry, config: ServerModel, where: str
    ) -> ServerModel:
        return config
