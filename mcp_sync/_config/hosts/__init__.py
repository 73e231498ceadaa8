"""Host file formats: how a configuration document is recognised and turned into raw entries.

A document is one of: our own `servers:` list; an `mcpServers` map (Claude Desktop, Claude Code,
Cursor, Gemini CLI, Windsurf; in `~/.claude.json` also `projects.<path>.mcpServers`); VS Code's
`servers` map (with `inputs`); or Codex's `mcp_servers` tables. Each host has a module here saying
what its keys mean and citing the documentation it follows; the entries of a host's map carry that
host's `HostFormat`, which maps them onto our keys before validation. `locations` says where each
host keeps its files.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from ..._values.errors import ConfigError
from ..context import LoadContext
from ..raw import RawEntry
from .codex import codex_entries
from .mcp_servers import McpServersFormat
from .vscode import vscode_entries

_log = logging.getLogger("mcp_sync.config")


def document_entries(
    document: Any,
    source: str | None,
    environ: Mapping[str, str] | None = None,
    context: LoadContext | None = None,
) -> list[RawEntry]:
    """The raw entries of a configuration document, whichever host wrote it."""
    context = context if context is not None else LoadContext()
    environ = environ if environ is not None else {}
    prefix = f"{source}: " if source else ""
    if not isinstance(document, Mapping):
        raise ConfigError(f"{prefix}expected a mapping with 'servers' (a list) or 'mcpServers' (a map)")
    if "servers" in document and "mcpServers" in document:
        raise ConfigError(f"{prefix}has both 'servers' and 'mcpServers'; use one")
    if "mcpServers" in document:
        return _mcp_servers_entries(document, prefix, context)
    if "mcp_servers" in document and "servers" not in document:
        return codex_entries(document, source, environ, context)
    if "servers" in document and isinstance(document["servers"], Mapping):
        if _is_vscode_file(document, source):
            return vscode_entries(document, source, environ, context)
        raise ConfigError(
            f"{prefix}'servers' must be a list of entries; "
            "a map of server name to settings goes under 'mcpServers'"
        )
    if "servers" in document:
        unknown = [str(key) for key in document if key != "servers"]
        if unknown:
            raise ConfigError(f"{prefix}unknown top-level key '{unknown[0]}' (expected only 'servers')")
        servers = document["servers"]
        if servers is not None and not isinstance(servers, list):
            raise ConfigError(f"{prefix}'servers' must be a list of entries")
        return [RawEntry(f"servers[{i}]", entry) for i, entry in enumerate(servers or [])]
    raise ConfigError(f"{prefix}has neither 'servers' (a list) nor 'mcpServers' (a map)")


def _is_vscode_file(document: Mapping[Any, Any], source: str | None) -> bool:
    """A `servers` map is VS Code's in JSON (its `mcp.json`), or with `inputs`; in our YAML, a slip."""
    suffix = os.path.splitext(source)[1].lower() if source is not None else ".json"
    return "inputs" in document or suffix in (".json", ".jsonc")


def _mcp_servers_entries(document: Mapping[Any, Any], prefix: str, context: LoadContext) -> list[RawEntry]:
    others = sorted(str(key) for key in document if key != "mcpServers")
    if others:
        _log.debug("%signoring host settings outside mcpServers: %s", prefix, ", ".join(others))
    servers = document["mcpServers"]
    if servers is None:
        return []
    if not isinstance(servers, Mapping):
        raise ConfigError(f"{prefix}'mcpServers' must be a map of server name to settings")
    return [
        RawEntry(f"mcpServers.{name}", settings, name, format=McpServersFormat, project=context.project)
        for name, settings in servers.items()
    ]
