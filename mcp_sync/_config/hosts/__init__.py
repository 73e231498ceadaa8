"""Host file formats: how a configuration document is recognised and turned into raw entries.

A document is one of: our own `servers:` list, or a host's `mcpServers` map (Claude Desktop,
Claude Code, Cursor, Gemini CLI, Windsurf). Each host has a module here saying what its keys
mean and citing the documentation it follows; the entries of a host's map carry that host's
`HostFormat`, which maps them onto our keys before validation.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..._errors import ConfigError
from ..raw import _RawEntry
from .mcp_servers import McpServersFormat

_log = logging.getLogger("mcp_sync.config")


def _document_entries(document: Any, source: str | None) -> list[_RawEntry]:
    """The raw entries of a configuration document: a `servers:` list or an `mcpServers` map."""
    prefix = f"{source}: " if source else ""
    if not isinstance(document, Mapping):
        raise ConfigError(f"{prefix}expected a mapping with 'servers' (a list) or 'mcpServers' (a map)")
    if "servers" in document and "mcpServers" in document:
        raise ConfigError(f"{prefix}has both 'servers' and 'mcpServers'; use one")
    if "mcpServers" in document:
        others = sorted(str(key) for key in document if key != "mcpServers")
        if others:
            _log.debug("%signoring host settings outside mcpServers: %s", prefix, ", ".join(others))
        servers = document["mcpServers"]
        if servers is None:
            return []
        if not isinstance(servers, Mapping):
            raise ConfigError(f"{prefix}'mcpServers' must be a map of server name to settings")
        return [
            _RawEntry(f"mcpServers.{name}", settings, map_key=name, format=McpServersFormat)
            for name, settings in servers.items()
        ]
    if "servers" in document:
        unknown = [str(key) for key in document if key != "servers"]
        if unknown:
            raise ConfigError(f"{prefix}unknown top-level key '{unknown[0]}' (expected only 'servers')")
        servers = document["servers"]
        if isinstance(servers, Mapping):
            raise ConfigError(
                f"{prefix}'servers' must be a list of entries; "
                "a map of server name to settings goes under 'mcpServers'"
            )
        if servers is not None and not isinstance(servers, list):
            raise ConfigError(f"{prefix}'servers' must be a list of entries")
        return [_RawEntry(f"servers[{i}]", entry) for i, entry in enumerate(servers or [])]
    raise ConfigError(f"{prefix}has neither 'servers' (a list) nor 'mcpServers' (a map)")
