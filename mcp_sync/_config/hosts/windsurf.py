"""Windsurf: the `mcpServers` map in `~/.codeium/windsurf/mcp_config.json`.

As documented in Windsurf's "Model Context Protocol (MCP)" page for Cascade: `command`, `args`,
`env` for a local server; `serverUrl` (or `url`) and `headers` for a remote one (Streamable HTTP,
or SSE with `type: sse`); `disabled`; `${env:NAME}` in values. Windsurf has no project-level file.
"""

from __future__ import annotations

URL_KEY = "serverUrl"  # Windsurf's name for a remote server's endpoint: our `url`
