"""Windsurf: the `mcpServers` map in `~/.codeium/windsurf/mcp_config.json`.

As documented in Windsurf's "Model Context Protocol (MCP)" page for Cascade: `command`, `args`,
`env` for a local server; `serverUrl` (or `url`) and `headers` for a remote one (Streamable HTTP,
falling back to SSE as Windsurf does; SSE only with `type: sse`); `disabled`; `disabledTools` (tools
Cascade leaves out: our `exclude_tools`); `${env:NAME}` in values. Windsurf has no project-level file.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Windsurf key -> ours, where only the name differs.
RENAMED: Mapping[str, str] = MappingProxyType(
    {
        "serverUrl": "url",  # a remote server's endpoint (Streamable HTTP, then SSE)
        "disabledTools": "exclude_tools",  # the tools Cascade leaves out
    }
)
