"""What every host format shares: naming an entry by its map key, renaming keys, OAuth objects, warnings.

A host key either means one of ours (renamed, recorded in `key_names` so that messages name the
key as written), or is skipped with a log line naming it (never its value): at debug level when
it changes nothing about how the server runs (an approval policy, a note), at warning level
when mcp_sync cannot honour it (the server may then behave differently than in the host).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from pydantic.alias_generators import to_camel

from ..raw import MAP_KEY, RawEntry

_log = logging.getLogger("mcp_sync.config")

# The keys of a host's OAuth object (Claude Code's and Gemini CLI's `oauth`, Cursor's `auth`) that
# mean what one of ours means; the others (endpoints we discover, audiences) are skipped with a warning.
OAUTH_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "clientId": "client_id",
        "client_id": "client_id",
        "CLIENT_ID": "client_id",
        "clientSecret": "client_secret",
        "client_secret": "client_secret",
        "CLIENT_SECRET": "client_secret",
        "scopes": "scopes",
        "callbackPort": "redirect_port",
        "redirectPort": "redirect_port",
        "redirect_port": "redirect_port",
        "issuer": "issuer",
    }
)


def warn_unsupported(where: str, key: str, why: str, consequence: str = "") -> None:
    """Log that a host key is skipped because mcp_sync cannot honour it (the key, never its value)."""
    _log.warning("%s: ignoring %r (%s): mcp_sync does not support it%s", where, key, why, consequence)


class EntryMapper:
    """Builds one host entry in our keys: the map key as the server name, then renamed keys."""

    def __init__(self, entry: RawEntry, data: Mapping[Any, Any], problems: list[str]) -> None:
        self.entry, self.data, self.problems = entry, data, problems
        self.out: dict[Any, Any] = {}
        if "server_name" not in data and "serverName" not in data:
            self.out["server_name"] = entry.map_key
            entry.key_names["server_name"] = MAP_KEY

    def take(self, host_key: str, our_key: str, value: Any) -> None:
        """Map a host key onto one of ours, unless the entry also sets ours."""
        ours = next((k for k in (our_key, to_camel(our_key)) if k in self.data), None)
        if ours is not None:
            self.problems.append(f"both '{host_key}' and '{ours}' are given; keep one")
            return
        if our_key in self.out and our_key in self.entry.key_names:
            self.problems.append(
                f"both '{self.entry.key_names[our_key]}' and '{host_key}' are given; keep one"
            )
            return
        self.out[our_key] = value
        self.entry.key_names[our_key] = host_key

    def keep(self, key: Any, value: Any) -> None:
        """Our own keys pass through; the rest are reported as unknown, by name."""
        self.out[key] = value


def host_auth(key: str, value: Any, where: str, problems: list[str]) -> dict[str, Any] | str | None:
    """A host's `oauth` (Claude Code, Gemini CLI) or `auth` (Cursor, or ours) as our `auth`; None for none."""
    if key == "auth" and (isinstance(value, str) or (isinstance(value, Mapping) and "type" in value)):
        return value if isinstance(value, str) else dict(value)  # already ours
    if not isinstance(value, Mapping):
        problems.append(f"field '{key}': must be a map of OAuth settings")
        return None
    if value.get("enabled") is False:
        return None
    out: dict[str, Any] = {"type": "oauth"}
    for name, setting in value.items():
        if name in OAUTH_KEYS:
            out[OAUTH_KEYS[name]] = setting
        elif name == "redirectUri" and isinstance(setting, str):  # Gemini CLI: only its port matters here
            port = urlsplit(setting).port
            if port is not None:
                out["redirect_port"] = port
        elif name != "enabled":
            _log.warning(
                "%s: ignoring '%s.%s': mcp_sync discovers the server's OAuth endpoints itself",
                where,
                key,
                name,
            )
    return out
