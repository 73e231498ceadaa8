"""Claude Desktop and Claude Code: the `mcpServers` map, and where each keeps it.

As documented in Claude Code's "Connect Claude Code to tools via MCP" (MCP installation scopes)
and the Model Context Protocol's "Connect to local MCP servers" guide for Claude Desktop:

- Claude Desktop: `claude_desktop_config.json`, an `mcpServers` map of `command`, `args`, `env`.
- Claude Code: `.mcp.json` in a project (project scope), and `~/.claude.json`, whose top-level
  `mcpServers` is the user scope and whose `projects.<absolute project path>.mcpServers` is the
  local scope (one project, this user). Entries add `type` (`stdio`, `http`, `sse`), `url`,
  `headers`, `oauth` (`clientId`, `callbackPort`) and `headersHelper`. When one name is in
  several scopes, local wins over project, project over user. A `.mcp.json` server the user
  turned down (`disabledMcpjsonServers` in `~/.claude.json` or Claude Code's settings files) is
  left off, as Claude Code leaves it; one never approved is loaded (mcp_sync does not ask).
  With `CLAUDE_CONFIG_DIR` set, `.claude.json` and the user's `settings.json` are in that folder.
  On Windows `projects` is keyed with forward slashes (`C:/Users/ann/app`), matched as Windows
  matches paths. Only the project's own `.mcp.json` is read, not a parent folder's
  (anthropics/claude-code#68603). Values take `${VAR}` and `${VAR:-default}` (`CODE_VARIABLES`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePath, PureWindowsPath
from types import MappingProxyType
from typing import Any

from ..interpolation import VariableRules

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
# Skipped at warning level: the server may refuse us without the headers the command would make.
UNSUPPORTED: Mapping[str, str] = MappingProxyType(
    {"headersHelper": "a command Claude Code runs to make request headers"}
)


# Claude Code's "Environment variable expansion in .mcp.json" (code.claude.com/docs/en/mcp): `${VAR}` and
# `${VAR:-default}`; a variable that is unset with no default fails the configuration (here: the entry).
# `${env:VAR}` is no spelling of it: passed as written.
CODE_VARIABLES = VariableRules(env_prefix=False, host="Claude Code")

# Where Claude Code records the project servers (`.mcp.json`) the user turned down.
REJECTED_KEY = "disabledMcpjsonServers"


def local_scope(document: Any, project: PurePath, key: str | None = "mcpServers") -> Any:
    """`~/.claude.json`'s local scope for `project`: `projects.<absolute path>.mcpServers`, as a document.

    With `key=None`, the project's whole record (where `disabledMcpjsonServers` is kept).
    """
    projects = document.get("projects") if isinstance(document, Mapping) else None
    local = _project_record(projects, project, key or REJECTED_KEY) if isinstance(projects, Mapping) else None
    if key is None:
        return local if isinstance(local, Mapping) else {}
    servers = local.get(key) if isinstance(local, Mapping) else None
    return {"mcpServers": servers if isinstance(servers, Mapping) else {}}


def _project_record(projects: Mapping[Any, Any], project: PurePath, wanted: str) -> Any:
    """The record `~/.claude.json` keeps for `project`, under whichever spelling of its path it used.

    Claude Code keys it by the real path (the caller may give a link). On Windows it writes forward
    slashes (`C:/Users/ann/app`; PrefectHQ/fastmcp#5094) and keeps the drive letter's case as its
    working folder had it, so there a key is any spelling of the same path (`PureWindowsPath`
    equality: either slash, any case); of several, one that holds `wanted` is taken.
    """
    paths = [project, project.resolve()] if isinstance(project, Path) else [project]
    if not isinstance(project, PureWindowsPath):
        return next((projects[name] for name in map(os.fspath, paths) if name in projects), None)
    spellings = {PureWindowsPath(path) for path in paths}
    found = [
        record
        for name, record in projects.items()
        if isinstance(name, str) and name and PureWindowsPath(name) in spellings
    ]
    with_wanted = [record for record in found if isinstance(record, Mapping) and record.get(wanted)]
    return (with_wanted or found or [None])[0]


def switched_off(document: Any, rejected: frozenset[str]) -> Any:
    """`.mcp.json` with the servers the user turned down in Claude Code marked `disabled`, as it does."""
    servers = document.get("mcpServers") if isinstance(document, Mapping) else None
    if not rejected or not isinstance(servers, Mapping):
        return document
    marked = dict(servers)
    for name, settings in servers.items():
        if name in rejected and isinstance(settings, Mapping):
            marked[name] = {**settings, "disabled": True}
    return {**document, "mcpServers": marked}


def user_scope(document: Any) -> dict[str, Any]:
    """`~/.claude.json`'s user scope: its top-level `mcpServers`, without the CLI's other settings."""
    servers = document.get("mcpServers") if isinstance(document, Mapping) else None
    return {"mcpServers": servers if isinstance(servers, Mapping) else {}}
