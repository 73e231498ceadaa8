"""Claude Desktop and Claude Code: the `mcpServers` map, and where each keeps it.

As documented in Claude Code's "Connect Claude Code to tools via MCP" (MCP installation scopes)
and the Model Context Protocol's "Connect to local MCP servers" guide for Claude Desktop:

- Claude Desktop: `claude_desktop_config.json`, an `mcpServers` map of `command`, `args`, `env`.
- Claude Code: `.mcp.json` in a project (project scope), and `~/.claude.json`, whose top-level
  `mcpServers` is the user scope and whose `projects.<absolute project path>.mcpServers` is the
  local scope (one project, this user). Entries add `type` (`stdio`, `http`, `sse`), `url`,
  `headers`, `oauth` (`clientId`, `callbackPort`) and `headersHelper`. When one name is in
  several scopes, local wins over project, project over user.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..._errors import ConfigError

# `type` values: Claude Code's (`stdio`, `http`, `sse`) and the spellings other hosts write.
TYPES: Mapping[str, str] = MappingProxyType(
    {
        "stdio": "stdio",
        "http": "streamable-http",
        "streamable-http": "streamable-http",
        "streamableHttp": "streamable-http",  # Cline
        "sse": "sse",
    }
)
SKIPPED: Mapping[str, str] = MappingProxyType(
    {"autoApprove": "host approval policy (Cline, Roo, Claude Desktop extensions)"}
)
# `headersHelper` (a command that makes headers) is not here: without the headers the server would
# refuse us, so it stays an unknown key and the entry fails, saying so.
UNSUPPORTED: Mapping[str, str] = MappingProxyType({})


def claude_json_servers(document: Any, project: str | None, source: str) -> dict[str, Any]:
    """The servers of `~/.claude.json` for `project` (an absolute path): user scope, then local scope.

    A local-scope entry replaces a user-scope one of the same name.
    """
    if not isinstance(document, Mapping):
        raise ConfigError(f"{source}: expected a JSON object")
    servers: dict[str, Any] = {}
    user = document.get("mcpServers")
    if isinstance(user, Mapping):
        servers.update(user)
    projects = document.get("projects")
    if project is not None and isinstance(projects, Mapping):
        local = projects.get(project)
        if isinstance(local, Mapping) and isinstance(local.get("mcpServers"), Mapping):
            servers.update(local["mcpServers"])
    return servers
