"""Cursor: the `mcpServers` map in `~/.cursor/mcp.json` and a project's `.cursor/mcp.json`.

As documented in Cursor's "Model Context Protocol (MCP)" page: `command`, `args`, `env` and
`envFile` for a local server; `url` and `headers` for a remote one; `auth` (`CLIENT_ID`,
`CLIENT_SECRET`, `scopes`) for static OAuth client credentials. `${env:NAME}`,
`${userHome}`, `${workspaceFolder}` are interpolated. A project's entry wins over the user's.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Cursor's own keys: its `auth` object is read by `common.host_auth`.
KEYS: tuple[str, ...] = ("auth",)
UNSUPPORTED: Mapping[str, str] = MappingProxyType({})
