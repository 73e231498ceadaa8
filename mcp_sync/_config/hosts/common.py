"""What every host format shares: naming an entry by its map key, renaming keys, OAuth objects, warnings.

A host key either means one of ours (renamed, recorded in `key_names` so that messages name the
key as written), or is skipped with a log line naming it (never its value): at debug level when
it changes nothing about how the server runs (an approval policy, a note, a key the host itself
does not read), at warning level when mcp_sync cannot honour it (the server may then behave
differently than in the host) or when it looks like a misspelt key. Also shared: the map key made
a valid server name (`server_name_from_host`), `envFile` read as VS Code reads it, and the editors'
predefined variables (`${workspaceFolder}`, `${userHome}`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from pydantic.alias_generators import to_camel

from ..._values.naming import server_name_from_host
from ..messages import did_you_mean
from ..models import MODELS
from ..raw import MAP_KEY, RawEntry
from .envfile import parse_env_file

_log = logging.getLogger("mcp_sync.config")

_MAX_ENV_FILE_BYTES = 1 << 20  # an env file is a few lines; anything near this is not one

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


def _spellings() -> frozenset[str]:
    keys: set[str] = set()
    for model in MODELS.values():
        for name, info in model.model_fields.items():
            keys.update((name, info.alias or name))
    return frozenset(keys)


OUR_KEYS = _spellings()  # every key of ours (snake_case and camelCase), whichever transport


def drop_ignored(entry: RawEntry, where: str, key: Any, host: str, known: Iterable[str]) -> None:
    """Log a key the host ignores and so do we: at debug level, or warning when it looks misspelt.

    A misspelling is also kept on the entry, so that "no command or url" can name it.
    """
    hint = did_you_mean(key, known)
    level = logging.WARNING if hint else logging.DEBUG
    _log.log(level, "%s: ignoring %r (not a key %s reads)%s", where, key, host, hint)
    if hint:
        entry.misspelt.append(f"'{key}' is not a key {host} reads{hint}")


def warn_unsupported(where: str, key: str, why: str, consequence: str = "") -> None:
    """Log that a host key is skipped because mcp_sync cannot honour it (the key, never its value)."""
    _log.warning("%s: ignoring %r (%s): mcp_sync does not support it%s", where, key, why, consequence)


class EntryMapper:
    """Builds one host entry in our keys: the map key as the server name, then renamed keys.

    A map key the host accepts but that is not a valid server name is normalised (the entry's
    `host_name`, else `server_name_from_host`); the entry keeps the key as its `original_name`.
    """

    def __init__(self, entry: RawEntry, data: Mapping[Any, Any], problems: list[str]) -> None:
        self.entry, self.data, self.problems = entry, data, problems
        self.out: dict[Any, Any] = {}
        if "server_name" not in data and "serverName" not in data:
            name = entry.map_key
            made = entry.host_name
            if made is None and isinstance(name, str):
                made = server_name_from_host(name)
            if made is not None and made != name:
                entry.original_name, name = name, made
            self.out["server_name"] = name
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


def read_env_file(path: Path) -> dict[str, str]:
    """The variables of an `envFile` as VS Code and Cursor read it (`parse_env_file`: VS Code's grammar).

    A line VS Code cannot read (no `=` or `:`) defines nothing; no `${...}` is expanded in it.
    """
    with open(path, "rb") as handle:
        raw = handle.read(_MAX_ENV_FILE_BYTES + 1)
    if len(raw) > _MAX_ENV_FILE_BYTES:
        raise ValueError("too large to be an env file")
    return parse_env_file(raw.decode("utf-8-sig"))


def merge_env_file(entry: RawEntry, value: Any, out: dict[Any, Any], problems: list[str]) -> None:
    """Put the variables of `envFile` under `env`; the entry's own `env` wins, as in VS Code and Cursor."""
    if not isinstance(value, str) or not value:
        problems.append("field 'envFile': must be the path of an env file")
        return
    path = Path(os.path.expanduser(value))
    if not path.is_absolute():
        path = (entry.project or Path.cwd()) / path
    try:
        variables = read_env_file(path)
    except OSError as exc:
        problems.append(f"field 'envFile': cannot read {path}: {exc.strerror or type(exc).__name__}")
        return
    except (ValueError, UnicodeDecodeError) as exc:  # the text is not echoed: it holds secrets
        reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else str(exc)
        problems.append(f"field 'envFile': {path}: {reason}")
        return
    own = out.get("env")
    out["env"] = {**variables, **own} if isinstance(own, Mapping) else variables
    if own is not None and not isinstance(own, Mapping):
        out["env"] = own  # let validation say what is wrong with it


class PredefinedVariables(Mapping[str, str]):
    """The environment plus a host's predefined variables (`${workspaceFolder}`, `${userHome}`)."""

    def __init__(self, environ: Mapping[str, str], predefined: Mapping[str, str]) -> None:
        self._environ, self._predefined = environ, predefined

    def __getitem__(self, key: str) -> str:
        return self._predefined[key] if key in self._predefined else self._environ[key]

    def __iter__(self) -> Iterator[str]:
        return iter({**self._environ, **self._predefined})

    def __len__(self) -> int:
        return len({**self._environ, **self._predefined})


def editor_variables(project: Path | None, home: str) -> dict[str, str]:
    """VS Code's predefined variables that a server entry may use (Cursor documents the same)."""
    predefined = {"userHome": home, "pathSeparator": os.sep, "/": os.sep}
    if project is not None:
        predefined["workspaceFolder"] = os.fspath(project)
        predefined["workspaceFolderBasename"] = project.name
    return predefined
