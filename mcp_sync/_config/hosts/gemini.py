"""Gemini CLI: the `mcpServers` map in its settings files, and the settings that leave servers off.

As documented in Gemini CLI's "MCP servers with the Gemini CLI" page (docs/tools/mcp-server.md):
`command`, `args`, `env`, `cwd` for stdio; `httpUrl` (Streamable HTTP) or `url` (Streamable HTTP,
falling back to SSE when that fails, as its `createUrlTransport` and `connectToMcpServer` do in
packages/core/src/tools/mcp-client.ts; `type: sse` for SSE only, `type: http` for Streamable HTTP
only) with `headers`; `timeout` in milliseconds (read only in Gemini CLI's files: the other hosts
have no `timeout`); `trust` (skip confirmations); `includeTools` / `excludeTools`; `oauth`;
`authProviderType` with `targetAudience` / `targetServiceAccount` for Google credentials. Values
may use `$VAR`, `${VAR}` and `${VAR:-default}` (`VARIABLES`: an unset one stays as written).

The files, in merge order (a later file's server wins): the system defaults
(`system-defaults.json` beside the system settings), the user's `~/.gemini/settings.json` (under
`GEMINI_CLI_HOME` when it is set), a project's `.gemini/settings.json`, and the system settings
(`/etc/gemini-cli/settings.json`, `/Library/Application Support/GeminiCli/settings.json`,
`C:\\ProgramData\\gemini-cli\\settings.json`, or `GEMINI_CLI_SYSTEM_SETTINGS_PATH`), which override the
others (packages/cli/src/config/settings.ts). `mcp.allowed`, `mcp.excluded` and the servers
`gemini mcp disable` wrote to `~/.gemini/mcp-server-enablement.json` leave servers off
(`ServerSwitches`). A project's file is read only in a folder Gemini CLI trusts
(`untrusted_workspace`: its folder trust, on by default). Extensions' servers
(`~/.gemini/extensions/*/gemini-extension.json`) are not read: they start under the extension's
folder and their enablement is per folder. Other top-level settings are the CLI's own; a file
without `mcpServers` has no servers.

| Gemini CLI | ours |
|---|---|
| `httpUrl` | `url`, `transport: streamable-http` |
| `url` | `url` (Streamable HTTP, then SSE) |
| `timeout` | `tool_call_timeout_ms` |
| `trust`, `description` | skipped (debug) |
| `authProviderType`, `targetAudience`, `targetServiceAccount` | skipped (warning) |
| `mcp.allowed`, `mcp.excluded`, `mcp-server-enablement.json` | a server they leave off is loaded disabled |
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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


ENABLEMENT_FILE = "mcp-server-enablement.json"  # in the Gemini folder: what `gemini mcp disable` wrote
TRUSTED_FOLDERS_FILE = "trustedFolders.json"  # in the Gemini folder: the folders the user trusted
# Gemini CLI's trust levels (packages/core/src/utils/trust.ts, `TrustLevel`).
_TRUSTING = frozenset({"TRUST_FOLDER", "TRUST_PARENT"})


def untrusted_workspace(
    workspace: str, rules: Any, settings: Iterable[Any], environ: Mapping[str, str], platform: str
) -> str | None:
    """Why Gemini CLI would not read `workspace`'s `.gemini/settings.json`, or None when it would.

    Its folder trust (packages/core/src/utils/trust.ts `checkPathTrust`, `isPathTrusted`; cli's
    settings.ts `isWorkspaceTrusted(...).isTrusted ?? false`): `GEMINI_CLI_TRUST_WORKSPACE` decides
    when it is `true` or `false`; `security.folderTrust.enabled: false` in the system or user
    settings trusts every folder; else the longest rule of `trustedFolders.json` whose folder holds
    the workspace (`TRUST_PARENT`: the rule path's parent) decides, and a folder no rule covers is
    not trusted. Paths compare through symlinks, in any case on Windows and macOS.
    """
    flag = environ.get("GEMINI_CLI_TRUST_WORKSPACE")
    if flag in ("true", "false"):
        return None if flag == "true" else "GEMINI_CLI_TRUST_WORKSPACE is false"
    enabled = True
    for document in settings:  # system defaults, user, system: the last that says wins
        security = document.get("security") if isinstance(document, Mapping) else None
        trust = security.get("folderTrust") if isinstance(security, Mapping) else None
        if isinstance(trust, Mapping) and isinstance(trust.get("enabled"), bool):
            enabled = trust["enabled"]
    if not enabled:
        return None
    folded = platform.startswith("win") or platform == "darwin"
    here = _comparable(workspace, folded)
    best, level = -1, None
    for rule, trust_level in (rules.items() if isinstance(rules, Mapping) else ()):
        if not isinstance(rule, str) or not rule:
            continue
        folder = os.path.dirname(rule) if trust_level == "TRUST_PARENT" else rule
        inside = _comparable(folder, folded)
        if (here == inside or here.startswith(inside.rstrip(os.sep) + os.sep)) and len(rule) > best:
            best, level = len(rule), trust_level
    if level in _TRUSTING:
        return None
    if level == "DO_NOT_TRUST":
        return "Gemini CLI's trustedFolders.json does not trust this folder"
    return (
        "Gemini CLI reads a folder's settings only once the folder is trusted (its trust dialog, or "
        "trustedFolders.json in the Gemini folder)"
    )


def _comparable(path: str, folded: bool) -> str:
    """A path as Gemini CLI compares folders: through symlinks, lower case where the system folds case."""
    real = os.path.realpath(path)
    return real.lower() if folded else real


def _names(value: Any) -> list[str]:
    """A settings list of server names (Gemini reads it only when it is an array)."""
    return [name for name in value if isinstance(name, str)] if isinstance(value, list) else []


def _normal(name: str) -> str:
    """A server name as Gemini CLI compares it: lower case, trimmed (its `normalizeServerId`)."""
    return name.lower().strip()


@dataclass(frozen=True)
class ServerSwitches:
    """What leaves a Gemini CLI server off before it is connected: `mcp.allowed`, `mcp.excluded` and
    `gemini mcp disable`, as Gemini CLI's `canLoadServer` checks them (packages/cli/src/config/mcp/
    mcpServerEnablement.ts; docs/tools/mcp-server.md, "Global MCP settings" and "Enabling and
    disabling servers").

    `mcp.excluded` lists are joined across the settings files and the `mcp.allowed` lists that are
    set are intersected, in its order (system, system defaults, user, workspace), keeping the first
    list's spelling (its `getConsolidatedExcludedMcpServers` / `...AllowedMcpServers` in
    packages/cli/src/config/settings.ts). Where its checks differ, a server either leaves off is left
    off: when it connects (`isBlockedBySettings` in packages/core/src/tools/mcp-client-manager.ts) an
    allowed name must match exactly, and `canLoadServer` (mcpServerEnablement.ts) allows nothing when
    lists are set but share no name (`allowedList !== undefined`); it compares names in lower case,
    trimmed, which is how an excluded or disabled name is matched here.
    """

    allowed: frozenset[str] | None = None
    excluded: frozenset[str] = frozenset()
    disabled: frozenset[str] = frozenset()

    @classmethod
    def of(cls, settings: Iterable[Any], enablement: Any = None) -> ServerSwitches:
        """The switches of Gemini's settings documents (in its order, see above) and its enablement file."""
        allowed: set[str] | None = None
        excluded: set[str] = set()
        for document in settings:
            mcp = document.get("mcp") if isinstance(document, Mapping) else None
            if not isinstance(mcp, Mapping):
                continue
            excluded.update(_normal(name) for name in _names(mcp.get("excluded")))
            if isinstance(mcp.get("allowed"), list):
                these = _names(mcp["allowed"])
                if allowed is None:
                    allowed = set(these)
                else:  # the names of the first list that every other list has too
                    kept = {_normal(name) for name in these}
                    allowed = {name for name in allowed if _normal(name) in kept}
        disabled = set()
        if isinstance(enablement, Mapping):
            for name, state in enablement.items():
                if isinstance(name, str) and isinstance(state, Mapping) and state.get("enabled") is False:
                    disabled.add(_normal(name))
        return cls(None if allowed is None else frozenset(allowed), frozenset(excluded), frozenset(disabled))

    def why_off(self, name: str) -> str | None:
        """The rule that leaves the server off, in Gemini's words, or None when it is started."""
        normal = _normal(name)
        if self.allowed is not None and name not in self.allowed:
            return "it is not in Gemini CLI's mcp.allowed list"
        if normal in self.excluded:
            return "it is in Gemini CLI's mcp.excluded list"
        if normal in self.disabled:
            return f"it was disabled with `gemini mcp disable` ({ENABLEMENT_FILE})"
        return None


def reads_timeout(entry: RawEntry, value: Any, where: str) -> bool:
    """Whether an `mcpServers` entry's `timeout` is read: Gemini CLI's milliseconds, where Gemini reads it.

    Only Gemini CLI reads `timeout`; Claude Desktop, Claude Code, Cursor and Windsurf document none
    and ignore it, as we do. Cline and Roo write it in seconds: in a file whose host is not known,
    a number under a second (or a string holding one) is such a one (read as milliseconds it would
    time every call out), so it is left out with a warning.
    """
    if entry.host == "gemini":
        return True
    if entry.host is not None:
        _log.debug("%s: ignoring 'timeout' (only Gemini CLI reads it, not %s)", where, entry.host)
        return False
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):  # "60": read as a number when it is checked, so guarded as one
        try:
            number = float(value.strip())
        except ValueError:
            number = None  # not a number: refused, naming the entry, when it is checked
    if number is not None and 0 < number < _SHORT_TIMEOUT_MS:
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
