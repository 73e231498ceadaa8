"""Server configuration: the models, `${VAR}` interpolation, host file formats, and loading files.

An entry describes one MCP server, over stdio (`command`) or Streamable HTTP (`url`). Entries
come from Python (dicts or models), from our own file format (a `servers:` list), or from the
files the hosts users already have (`hosts/`), so users can point us at the file they already
have. Models are frozen and compare by value: `reload()` diffs old and new configurations with `==`.

Every failure is a `ConfigError` that names the file, the entry and the field. Header and env
values are secrets: they never appear in a repr, a log line or an error message.

- `fields`, `auth`, `models`: the models and the value types they share;
- `interpolation`: `${VAR}` references;
- `messages`: problems in plain words;
- `raw`, `entries`: from raw entries to validated configs (`parse_server_entries`);
- `context`: what a host file's references need besides the environment (project, inputs);
- `hosts/`: one module per host file format, how a document is recognised, and where each
  host keeps its files (`hosts/locations`);
- `loading`: reading files (`load_config_entries`);
- `tool_filters`: filters that match no tool;
- `credentials`: which names are a credential's (variables, headers, flags in `args`), `secrets`: which
  values of a configuration are secrets (`secrets_of`), and `child_env`: the environment a stdio
  server's child process starts with.

Runs on the caller's thread, when a hub is made or reloaded. May import: `_values` and `_os` only.
"""

from __future__ import annotations

from .auth import AuthConfig
from .context import HostInput, Inputs
from .context import remembered as remembered
from .entries import (
    ConfigEntries,
    InvalidServerEntry,
    parse_server_configs,
    parse_server_entries,
)
from .entries import (
    ServerEntries as ServerEntries,
)
from .fields import SERVER_NAME_PATTERN as SERVER_NAME_PATTERN
from .fields import LogLevel as LogLevel
from .fields import RedactedMapping, root_uri
from .hosts.locations import HOSTS, HostFile, host_config_files, load_host_entries
from .loading import load_config_entries, load_config_file
from .messages import suggest_server_name
from .models import (
    HttpServerConfig,
    InheritEnv,
    ReconnectConfig,
    ServerConfig,
    SseServerConfig,
    StdioServerConfig,
)
from .tool_filters import unmatched_tool_filters, warn_unmatched_tool_filters

__all__ = [
    "HOSTS",
    "AuthConfig",
    "ConfigEntries",
    "HostFile",
    "HostInput",
    "HttpServerConfig",
    "InheritEnv",
    "Inputs",
    "InvalidServerEntry",
    "ReconnectConfig",
    "RedactedMapping",
    "ServerConfig",
    "SseServerConfig",
    "StdioServerConfig",
    "host_config_files",
    "load_config_entries",
    "load_config_file",
    "load_host_entries",
    "parse_server_configs",
    "parse_server_entries",
    "root_uri",
    "suggest_server_name",
    "unmatched_tool_filters",
    "warn_unmatched_tool_filters",
]
