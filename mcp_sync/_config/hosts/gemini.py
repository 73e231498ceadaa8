"""Gemini CLI: the `mcpServers` map in `~/.gemini/settings.json` and a project's `.gemini/settings.json`.

As documented in Gemini CLI's "MCP servers with the Gemini CLI" page: `command`, `args`, `env`,
`cwd` for stdio; `httpUrl` (Streamable HTTP) or `url` (Streamable HTTP, falling back to SSE on a
4xx as Gemini CLI does; `type: sse` for SSE only) with `headers`; `timeout` in milliseconds;
`trust` (skip confirmations); `includeTools` / `excludeTools`; `oauth`; `authProviderType` with
`targetAudience` / `targetServiceAccount` for Google credentials. Values may use `$VAR` as well as
`${VAR}` (an unset `$VAR` stays as written, as in Gemini CLI). Other top-level settings in the
file are the CLI's own; a file without `mcpServers` has no servers. A project's entry wins over
the user's.

| Gemini CLI | ours |
|---|---|
| `httpUrl` | `url`, `transport: streamable-http` |
| `url` | `url` (Streamable HTTP, then SSE) |
| `timeout` | `tool_call_timeout_ms` |
| `trust`, `description` | skipped (debug) |
| `authProviderType`, `targetAudience`, `targetServiceAccount` | skipped (warning) |
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..interpolation import VariableRules
from ..models import ServerModel
from ..raw import RawEntry

_log = logging.getLogger("mcp_sync.config")

SKIPPED: Mapping[str, str] = MappingProxyType(
    {
        "trust": "host approval policy (Gemini CLI)",
        "description": "a note for humans (Gemini CLI)",
    }
)
# Authentication settings we cannot honour: skipped at warning level, since the server will
# probably refuse an unauthenticated connection and the user should know why.
UNSUPPORTED_AUTH: Mapping[str, str] = MappingProxyType(
    {
        "authProviderType": "Google credentials provider (Gemini CLI)",
        "targetAudience": "Google ID token audience (Gemini CLI)",
        "targetServiceAccount": "Google service account impersonation (Gemini CLI)",
    }
)
# Gemini key -> ours, where only the name differs (`httpUrl` also fixes the transport).
RENAMED: Mapping[str, str] = MappingProxyType({"httpUrl": "url", "timeout": "tool_call_timeout_ms"})
# Gemini CLI's `resolveEnvVarsInString` (packages/cli/src/utils/envVarResolver.ts): `$NAME`, `${NAME}`
# and `${NAME:-default}`; an unset one without a default stays as written, the default is taken only
# when the variable is unset, and `${env:NAME}` names a variable called `env:NAME` (never set: as written).
VARIABLES = VariableRules(env_prefix=False, unset_kept=True, default_when_empty=False, host="Gemini CLI")

_SHORT_TIMEOUT_MS = 1000  # below this, a mapped `timeout` was probably written in seconds (Cline, Roo)


def reads_timeout(entry: RawEntry, value: Any, where: str) -> bool:
    """Whether an `mcpServers` entry's `timeout` is read: Gemini CLI's milliseconds, where Gemini reads it.

    Only Gemini CLI reads `timeout`; Claude Desktop, Claude Code, Cursor and Windsurf document none
    and ignore it, as we do. Cline and Roo write it in seconds: in a file whose host is not known,
    a number under a second is such a one (read as milliseconds it would time every call out), so it
    is left out with a warning.
    """
    if entry.host == "gemini":
        return True
    if entry.host is not None:
        _log.debug("%s: ignoring 'timeout' (only Gemini CLI reads it, not %s)", where, entry.host)
        return False
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and 0 < value < _SHORT_TIMEOUT_MS:
        _log.warning(
            "%s: ignoring 'timeout': only Gemini CLI reads it, in milliseconds, and %s ms looks like "
            "seconds as Cline and Roo write them; write 'tool_call_timeout_ms' for a call timeout",
            where,
            value,
        )
        return False
    return True


def check_timeout(entry: RawEntry, config: ServerModel, where: str) -> None:
    """Warn when `timeout` (milliseconds in Gemini CLI) looks like seconds, as Cline and Roo write it."""
    if (
        entry.key_names.get("tool_call_timeout_ms") == "timeout"
        and config.tool_call_timeout_ms < _SHORT_TIMEOUT_MS
    ):
        _log.warning(
            "%s: 'timeout' is read as milliseconds (Gemini CLI's unit), so calls time out after %d ms; "
            "Cline and Roo write seconds: multiply by 1000",
            where,
            config.tool_call_timeout_ms,
        )
