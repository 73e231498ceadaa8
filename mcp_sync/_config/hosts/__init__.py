"""Host file formats: how a configuration document is recognised and turned into raw entries.

A document is one of: our own `servers:` list; an `mcpServers` map (Claude Desktop, Claude Code,
Cursor, Gemini CLI, Windsurf; in `~/.claude.json` also `projects.<path>.mcpServers`); VS Code's
`servers` map (with `inputs`); or Codex's `mcp_servers` tables. Each host has a module here saying
what its keys mean and citing the documentation it follows; the entries of a host's map carry that
host's `HostFormat`, which maps them onto our keys before validation. `locations` says where each
host keeps its files. When the caller knows the host (`load_host_entries`), its map is read and
nothing else; a file without it has no servers. Otherwise the document's shape says which it is.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..._values.errors import ConfigError
from ..context import LoadContext
from ..messages import did_you_mean
from ..raw import RawEntry
from . import claude, gemini
from .codex import codex_entries
from .common import PredefinedVariables, editor_variables
from .mcp_servers import McpServersFormat
from .vscode import migrated, vscode_entries

_log = logging.getLogger("mcp_sync.config")


# Which map each host reads its servers from, when the caller knows the host.
HOST_MAPS: Mapping[str, str] = MappingProxyType(
    {
        "claude-desktop": "mcpServers",
        "claude-code": "mcpServers",
        "cursor": "mcpServers",
        "gemini": "mcpServers",
        "windsurf": "mcpServers",
        "vscode": "servers",
        "codex": "mcp_servers",
    }
)
_HOST_SUFFIXES = (".json", ".jsonc", ".toml")  # host files; our own format is YAML
_SERVER_MAPS = ("mcpServers", "servers", "mcp_servers")
# The `${...}` rules of the `mcpServers` hosts that have their own; the others read ours.
_MCP_SERVERS_VARIABLES: Mapping[str, Any] = MappingProxyType(
    {"gemini": gemini.VARIABLES, "claude-code": claude.CODE_VARIABLES}
)


def document_entries(
    document: Any,
    source: str | None,
    environ: Mapping[str, str] | None = None,
    context: LoadContext | None = None,
    host: str | None = None,
) -> list[RawEntry]:
    """The raw entries of a configuration document: `host`'s map when given, else by its shape.

    With `host`, the caller found the file and `context.project` is the project (None for a user's
    file read without one); without it, a project file's place gives its project (`project_of`).

    A host's file without servers (Gemini's `settings.json` and Codex's `config.toml` exist before
    any server is added) is zero servers, as for the host.
    """
    context = context if context is not None else LoadContext()
    if host is None and context.project is None:  # a file given by its path: its place says its project
        context = replace(context, project=project_of(source, context.home_folder()))
    if context.host is None and (host or host_of(source)) is not None:
        context = replace(context, host=host or host_of(source))
    environ = environ if environ is not None else {}
    prefix = f"{source}: " if source else ""
    if context.host == "vscode" and isinstance(document, Mapping):
        document = migrated(document)  # VS Code moves `mcpServers` into `servers` as it reads the file
    if host is not None:
        return _host_entries(HOST_MAPS[host], document, source, environ, context)
    if isinstance(document, Mapping) and not document:
        return []
    if not isinstance(document, Mapping):
        raise ConfigError(f"{prefix}expected a mapping with 'servers' (a list) or 'mcpServers' (a map)")
    if "servers" in document and isinstance(document["servers"], Mapping):
        if _is_vscode_file(document, source):
            document = migrated(document)
            return _host_entries("servers", document, source, environ, context)
        raise ConfigError(
            f"{prefix}'servers' must be a list of entries; "
            "a map of server name to settings goes under 'mcpServers'"
        )
    if "servers" in document and "mcpServers" in document:
        raise ConfigError(f"{prefix}has both 'servers' and 'mcpServers'; use one")
    if "mcpServers" in document:
        return _host_entries("mcpServers", document, source, environ, context)
    if "mcp_servers" in document and "servers" not in document:
        return _host_entries("mcp_servers", document, source, environ, context)
    if "servers" in document:
        unknown = [str(key) for key in document if key != "servers"]
        if unknown:
            raise ConfigError(f"{prefix}unknown top-level key '{unknown[0]}' (expected only 'servers')")
        servers = document["servers"]
        if servers is not None and not isinstance(servers, list):
            raise ConfigError(f"{prefix}'servers' must be a list of entries")
        return [RawEntry(f"servers[{i}]", entry) for i, entry in enumerate(servers or [])]
    misspelt = _misspelt_server_map(document)
    if source is not None and source.lower().endswith(_HOST_SUFFIXES):
        own = host_of(source) is not None  # a host's own file by its place: no servers is ordinary
        if misspelt and not own:  # a file given by name, not a host's own: a slip
            raise ConfigError(f"{prefix}no servers: {misspelt}")
        if misspelt or not own:
            keys = misspelt or "its top-level keys are " + ", ".join(repr(str(key)) for key in document)
            _log.warning("%sno servers in this file (%s); they go under 'mcpServers'", prefix, keys)
        else:
            _log.debug("%sno servers in this file ('mcpServers', 'servers' or 'mcp_servers')", prefix)
        return []
    raise ConfigError(
        f"{prefix}has neither 'servers' (a list) nor 'mcpServers' (a map)"
        + (f": {misspelt}" if misspelt else "")
    )


def _misspelt_server_map(document: Mapping[Any, Any]) -> str:
    """`unknown top-level key 'mcpservers'; did you mean 'mcpServers'?` for the first top-level key that
    is a close misspelling of a map of servers, else "" (a host's other settings are not slips)."""
    for key in document:
        hint = did_you_mean(key, _SERVER_MAPS)
        if hint:
            return f"unknown top-level key {key!r}{hint}"
    return ""


def _host_entries(
    map_name: str, document: Any, source: str | None, environ: Mapping[str, str], context: LoadContext
) -> list[RawEntry]:
    """The entries of a host's map; a document without the map (or empty) has none."""
    prefix = f"{source}: " if source else ""
    if document is None:
        return []
    if not isinstance(document, Mapping):
        raise ConfigError(f"{prefix}expected a JSON object or TOML table of settings")
    if document.get(map_name) is None:
        _log.debug("%sno '%s' in this file: no servers", prefix, map_name)
        return []
    if map_name == "servers":
        return vscode_entries(document, source, environ, context)
    if map_name == "mcp_servers":
        return codex_entries(document, source, environ, context)
    return _mcp_servers_entries(document, source, environ, context)


def _is_vscode_file(document: Mapping[Any, Any], source: str | None) -> bool:
    """A `servers` map is VS Code's in JSON (its `mcp.json`), or with `inputs`; in our YAML, a slip."""
    suffix = os.path.splitext(source)[1].lower() if source is not None else ".json"
    return "inputs" in document or suffix in (".json", ".jsonc")


def _mcp_servers_entries(
    document: Mapping[Any, Any], source: str | None, environ: Mapping[str, str], context: LoadContext
) -> list[RawEntry]:
    """The entries of an `mcpServers` map, with the variables of the host that wrote it."""
    prefix = f"{source}: " if source else ""
    others = sorted(str(key) for key in document if key != "mcpServers")
    if others:
        _log.debug("%signoring host settings outside mcpServers: %s", prefix, ", ".join(others))
    servers = document["mcpServers"]
    if not isinstance(servers, Mapping):
        raise ConfigError(f"{prefix}'mcpServers' must be a map of server name to settings")
    why_off = context.why_off
    if why_off is None and context.host == "gemini":  # one file alone: its own `mcp` lists
        why_off = gemini.ServerSwitches.of([document]).why_off
    variables: Mapping[str, str] | None = None
    if context.host in (None, "cursor"):  # Cursor documents VS Code's variables; no other host uses them
        variables = PredefinedVariables(environ, editor_variables(context.project, context.home_folder()))
    entries = []
    for name, settings in servers.items():
        reason = why_off(name) if why_off is not None and isinstance(name, str) else None
        if reason is not None and isinstance(settings, Mapping):
            _log.info("%smcpServers.%s: left off, as %s leaves it: %s", prefix, name, context.host, reason)
            off = "enabled" if "enabled" in settings else "disabled"  # the spelling it already has
            settings = {**settings, off: off == "disabled"}
        entry = RawEntry(f"mcpServers.{name}", settings, name, format=McpServersFormat)
        entry.project, entry.environ, entry.bare_dollar = context.project, variables, context.host == "gemini"
        entry.host = context.host
        entry.rules = _MCP_SERVERS_VARIABLES.get(context.host or "", entry.rules)
        entry.lenient = True
        entries.append(entry)
    return entries


# The folder a host's project file sits in, by the file's place: `.cursor/mcp.json`, `.mcp.json`.
_PROJECT_FOLDERS = (".vscode", ".cursor", ".gemini", ".codex")
# In the home folder these hold the user's own file (`~/.cursor/mcp.json`), not a project's.
_USER_FOLDERS = (".cursor", ".gemini", ".codex")
# The host a file belongs to, by its folder (or its name), for the variables its values may use.
_HOST_FOLDERS: Mapping[str, str] = MappingProxyType(
    {".vscode": "vscode", ".cursor": "cursor", ".gemini": "gemini", ".codex": "codex", "windsurf": "windsurf"}
)
_HOST_FILE_NAMES: Mapping[str, str] = MappingProxyType(
    {
        ".mcp.json": "claude-code",
        ".claude.json": "claude-code",
        "claude_desktop_config.json": "claude-desktop",
    }
)


def host_of(source: str | None) -> str | None:
    """The host whose file this is, by where it is (`.gemini/settings.json`), else None."""
    if source is None:
        return None
    path = Path(source)
    return _HOST_FILE_NAMES.get(path.name) or _HOST_FOLDERS.get(path.parent.name)


def project_of(source: str | None, home: str) -> Path | None:
    """The project a file belongs to when it is a host's project file, else None.

    A user's file (`~/.gemini/settings.json`, `~/.codex/config.toml`, `~/.cursor/mcp.json`) has none:
    the hosts start its servers where they are started, and `${workspaceFolder}` is not the home folder.
    """
    if source is None:
        return None
    path = Path(source).expanduser().absolute()
    if path.parent.name in _USER_FOLDERS and _same_folder(path.parent.parent, Path(home)):
        return None
    if path.parent.name in _PROJECT_FOLDERS:
        return path.parent.parent
    return path.parent if path.name == ".mcp.json" else None


def _same_folder(a: Path, b: Path) -> bool:
    """Whether two paths name one folder, through symlinks (a home folder behind a link)."""
    return os.path.realpath(a) == os.path.realpath(b.expanduser())
