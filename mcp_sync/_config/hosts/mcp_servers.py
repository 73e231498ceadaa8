"""The `mcpServers` map: the shape Claude Desktop, Claude Code, Cursor, Gemini CLI and Windsurf write.

The map key is the server name. `command` means stdio; `url` with `type: http` means Streamable
HTTP; a URL without a type (Gemini's `url`, Windsurf's `serverUrl`, Cursor's `url`) means Streamable
HTTP with the hosts' fallback to SSE when the server answers the first POST with a 4xx; `type: sse`
means the legacy SSE transport. A file does not say which host wrote it, so the keys of every such
host are understood here; each host's module says what its own keys mean. Keys that have a meaning
here are mapped; the skipped ones are logged by name; any other key is ignored, as these hosts
ignore it (named at debug level, or at warning level when it looks like a misspelt key).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from ..messages import EntryError
from ..models import ServerModel
from ..raw import RawEntry
from . import claude, cursor, gemini, windsurf
from .common import OUR_KEYS, EntryMapper, drop_ignored, host_auth, merge_env_file, warn_unsupported

_log = logging.getLogger("mcp_sync.config")

# Skipped at debug level: they change nothing about how the server runs.
_SKIPPED: Mapping[str, str] = MappingProxyType(
    {"alwaysAllow": "host approval policy (Cline, Roo)", **claude.SKIPPED, **gemini.SKIPPED}
)
# Skipped at warning level: mcp_sync cannot honour them.
_UNSUPPORTED: Mapping[str, str] = MappingProxyType({**claude.UNSUPPORTED, **cursor.UNSUPPORTED})
_UNSUPPORTED_AUTH: Mapping[str, str] = gemini.UNSUPPORTED_AUTH
# Renamed keys: only the name differs from ours.
_RENAMED: Mapping[str, str] = MappingProxyType({**gemini.RENAMED, **windsurf.RENAMED})


class McpServersFormat:
    """The `mcpServers` map's entries in our keys (see `raw.HostFormat`; the class itself is the format)."""

    map_name: ClassVar[str] = "mcpServers"
    known_keys: ClassVar[tuple[str, ...]] = (
        "type",
        "disabled",
        "oauth",
        *cursor.KEYS,
        *_RENAMED,
        *_SKIPPED,
        *_UNSUPPORTED,
        *_UNSUPPORTED_AUTH,
    )

    @staticmethod
    def prepare(entry: RawEntry, data: Any, where: str) -> dict[Any, Any]:
        """The entry without the host keys we skip, each skip logged (the key, never its value)."""
        if not isinstance(data, Mapping):
            raise EntryError([f"expected a mapping of settings, got {type(data).__name__}"])
        kept: dict[Any, Any] = {}
        for key, value in data.items():
            if key in _SKIPPED:
                _log.debug("%s: ignoring %r (%s)", where, key, _SKIPPED[key])
            elif key == "timeout" and not gemini.reads_timeout(entry, value, where):
                continue
            elif key in _UNSUPPORTED_AUTH:
                warn_unsupported(where, key, _UNSUPPORTED_AUTH[key], "; the server may refuse to connect")
            elif key in _UNSUPPORTED:
                warn_unsupported(where, key, _UNSUPPORTED[key])
            elif key in OUR_KEYS or key in McpServersFormat.known_keys:
                kept[key] = value
            else:
                drop_ignored(
                    entry,
                    where,
                    key,
                    "Claude, Cursor, Gemini CLI or Windsurf",
                    (*OUR_KEYS, *McpServersFormat.known_keys),
                )
        return kept

    @staticmethod
    def to_ours(entry: RawEntry, data: dict[Any, Any], problems: list[str]) -> dict[Any, Any]:
        """An mcpServers entry in our own keys; the map key is the server name unless it names itself."""
        mapper = EntryMapper(entry, data, problems)
        for key, value in data.items():
            if key == "type":
                if not isinstance(value, str) or value not in claude.TYPES:
                    problems.append(
                        "field 'type': must be 'stdio', 'http', 'sse', 'streamable-http' or 'streamableHttp'"
                    )
                elif "transport" in data:
                    problems.append("both 'type' and 'transport' are given; keep one")
                else:
                    mapper.out["transport"] = claude.TYPES[value]
            elif key in _RENAMED:
                mapper.take(key, _RENAMED[key], value)
            elif key == "disabled":
                if not isinstance(value, bool):
                    problems.append("field 'disabled': must be true or false")
                else:
                    mapper.take(key, "enabled", not value)
            elif key == "envFile":  # Cursor: read after the other keys, so that `env` wins
                continue
            elif key in ("oauth", "auth"):
                if "oauth" in data and "auth" in data:
                    if key == "oauth":
                        problems.append("both 'oauth' and 'auth' are given; keep one")
                    continue
                auth = host_auth(key, value, entry.label, problems)
                if auth is not None:
                    mapper.out["auth"] = auth
                    entry.key_names["auth"] = key
            else:
                mapper.keep(key, value)
        if "envFile" in data:
            merge_env_file(entry, data["envFile"], mapper.out, problems)
        untyped = "type" not in data and "transport" not in data
        if untyped and ("url" in data or "serverUrl" in data):
            entry.sse_fallback = True  # Gemini, Windsurf, Cursor: HTTP, then SSE
        if "httpUrl" in data and "transport" not in mapper.out and "url" not in data:
            mapper.out["transport"] = "streamable-http"  # Gemini's `httpUrl`: Streamable HTTP, no fallback
        return mapper.out

    @staticmethod
    def finish(entry: RawEntry, config: ServerModel, where: str) -> ServerModel:
        gemini.check_timeout(entry, config, where)
        return config
