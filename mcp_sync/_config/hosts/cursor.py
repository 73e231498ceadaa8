"""Cursor: the `mcpServers` map in `~/.cursor/mcp.json` and a project's `.cursor/mcp.json`.

As documented in Cursor's "Model Context Protocol (MCP)" page: `command`, `args`, `env` and
`envFile` for a local server; `url` and `headers` for a remote one; `auth` (`CLIENT_ID`,
`CLIENT_SECRET`, `scopes`) for static OAuth client credentials. `${env:NAME}`, `${userHome}`,
`${workspaceFolder}`, `${workspaceFolderBasename}` and `${pathSeparator}` (or `${/}`) are
interpolated in every value, `envFile` included. A project's entry wins over the user's. Keys
Cursor does not read (`defer_loading`, a `_comment`) are ignored, as Cursor ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Cursor's own keys: its `auth` object is read by `common.host_auth`, `envFile` by `common.merge_env_file`.
KEYS: tuple[str, ...] = ("auth", "envFile")
UNSUPPORTED: Mapping[str, str] = MappingProxyType({})
