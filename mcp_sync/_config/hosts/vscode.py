"""VS Code: `.vscode/mcp.json` in a workspace and `mcp.json` in the user profile.

As documented in VS Code's "MCP configuration reference": a top-level `servers` map (server name
to settings) and an optional `inputs` list. A server has `type` (`stdio`, `http`, `sse`); stdio
servers `command`, `args`, `env`, `envFile` (a dotenv file whose variables `env` overrides) and
`cwd`; remote ones `url` and `headers`. `dev` (watch and debug a server under development) and
the `sandbox` settings are VS Code's own: skipped with a warning.

Values may use `${input:ID}` (the value of the input with that id: from the caller's inputs, else
the environment variable `input_variable_name(ID)`, else the input's `default`),
`${workspaceFolder}` (the folder holding `.vscode`), `${userHome}`, `${pathSeparator}`, and
`${env:NAME}`. Values given for inputs are secrets wherever they are used.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from ..._values.errors import ConfigError
from ..context import HostInput, LoadContext
from ..interpolation import InputVariables, input_variable_name
from ..messages import EntryError
from ..models import ServerModel
from ..raw import RawEntry
from .common import EntryMapper, warn_unsupported

_log = logging.getLogger("mcp_sync.config")

TYPES: Mapping[str, str] = MappingProxyType({"stdio": "stdio", "http": "streamable-http", "sse": "sse"})
UNSUPPORTED: Mapping[str, str] = MappingProxyType(
    {
        "dev": "VS Code's watch and debug mode for a server under development",
        "sandboxEnabled": "VS Code's sandbox for stdio servers",
        "sandbox": "VS Code's sandbox for stdio servers",
    }
)
SKIPPED: Mapping[str, str] = MappingProxyType(
    {"gallery": "where VS Code installed it from", "version": "a note for humans"}
)
_MAX_ENV_FILE_BYTES = 1 << 20  # a dotenv file is a few lines; anything near this is not one


class _Variables(InputVariables):
    """What `${...}` reads in one VS Code entry: predefined variables, inputs, then the environment.

    Each input value read is recorded in the entry's `secrets`.
    """

    def __init__(
        self,
        environ: Mapping[str, str],
        predefined: Mapping[str, str],
        inputs: Mapping[str, HostInput],
        context: LoadContext,
        entry: RawEntry,
    ) -> None:
        self._environ, self._predefined, self._inputs = environ, predefined, inputs
        self._context, self._entry = context, entry

    def __getitem__(self, key: str) -> str:
        if key in self._predefined:
            return self._predefined[key]
        if key.startswith("input:"):
            value = self._input(key.removeprefix("input:"))
            if value is None:
                raise KeyError(key)
            self._entry.secrets.add(value)
            return value
        return self._environ[key]

    def _input(self, input_id: str) -> str | None:
        item = self._inputs.get(input_id, HostInput(input_id))
        value = self._context.input_value(item)
        if value is None:
            value = self._environ.get(input_variable_name(input_id))
        return value if value is not None else item.default

    def __iter__(self) -> Iterator[str]:
        return iter({**self._environ, **self._predefined})

    def __len__(self) -> int:
        return len({**self._environ, **self._predefined})


def _inputs(document: Mapping[Any, Any], prefix: str) -> dict[str, HostInput]:
    """The document's `inputs`, by id."""
    raw = document.get("inputs")
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ConfigError(f"{prefix}'inputs' must be a list of inputs")
    found: dict[str, HostInput] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            raise ConfigError(f"{prefix}inputs[{index}]: must be a map with an 'id'")
        default = item.get("default")
        options = item.get("options")
        found[item["id"]] = HostInput(
            id=item["id"],
            description=item.get("description") if isinstance(item.get("description"), str) else None,
            password=item.get("password") is True,
            type=str(item.get("type", "promptString")),
            default=default if isinstance(default, str) else None,
            options=tuple(str(o) for o in options) if isinstance(options, list) else (),
        )
    return found


def vscode_entries(
    document: Mapping[Any, Any], source: str | None, environ: Mapping[str, str], context: LoadContext
) -> list[RawEntry]:
    """The raw entries of a VS Code `mcp.json`: its `servers` map, each with its variables."""
    prefix = f"{source}: " if source else ""
    others = sorted(str(key) for key in document if key not in ("servers", "inputs"))
    if others:
        _log.debug("%signoring settings outside servers and inputs: %s", prefix, ", ".join(others))
    inputs = _inputs(document, prefix)
    project = context.project
    if project is None and source is not None and Path(source).parent.name == ".vscode":
        project = Path(source).parent.parent
    predefined = {"userHome": context.home_folder(), "pathSeparator": os.sep}
    if project is not None:
        predefined["workspaceFolder"] = os.fspath(project)
        predefined["workspaceFolderBasename"] = Path(project).name
    entries: list[RawEntry] = []
    for name, settings in document["servers"].items():
        entry = RawEntry(f"servers.{name}", settings, map_key=name, format=VsCodeFormat)
        entry.environ = _Variables(environ, predefined, inputs, context, entry)
        entry.project = project
        entries.append(entry)
    return entries


_DOTENV_LINE = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*")


def read_env_file(path: Path) -> dict[str, str]:
    """The variables of a dotenv file: `NAME=value` lines, `#` comments, optional quotes and `export`."""
    with open(path, "rb") as handle:
        raw = handle.read(_MAX_ENV_FILE_BYTES + 1)
    if len(raw) > _MAX_ENV_FILE_BYTES:
        raise ValueError("too large to be a dotenv file")
    values: dict[str, str] = {}
    for line in raw.decode("utf-8-sig").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _DOTENV_LINE.fullmatch(line)
        if match is None:
            raise ValueError("a line is not NAME=value")
        name, value = match.groups()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1].replace("\\n", "\n") if value[0] == '"' else value[1:-1]
        else:
            value = value.split(" #", 1)[0].rstrip()
        values[name] = value
    return values


class VsCodeFormat:
    """VS Code's `servers` entries in our keys (see `raw.HostFormat`; the class itself is the format)."""

    map_name: ClassVar[str] = "servers"
    known_keys: ClassVar[tuple[str, ...]] = ("type", "envFile", *UNSUPPORTED, *SKIPPED)

    @staticmethod
    def prepare(entry: RawEntry, data: Any, where: str) -> dict[Any, Any]:
        if not isinstance(data, Mapping):
            raise EntryError([f"expected a mapping of settings, got {type(data).__name__}"])
        kept: dict[Any, Any] = {}
        for key, value in data.items():
            if key in UNSUPPORTED:
                warn_unsupported(where, key, UNSUPPORTED[key])
            elif key in SKIPPED:
                _log.debug("%s: ignoring %r (%s)", where, key, SKIPPED[key])
            else:
                kept[key] = value
        return kept

    @staticmethod
    def to_ours(entry: RawEntry, data: dict[Any, Any], problems: list[str]) -> dict[Any, Any]:
        mapper = EntryMapper(entry, data, problems)
        for key, value in data.items():
            if key == "type":
                if not isinstance(value, str) or value not in TYPES:
                    problems.append("field 'type': must be 'stdio', 'http' or 'sse'")
                elif "transport" in data:
                    problems.append("both 'type' and 'transport' are given; keep one")
                else:
                    mapper.out["transport"] = TYPES[value]
            elif key != "envFile":
                mapper.keep(key, value)
        if "envFile" in data:
            _merge_env_file(entry, data["envFile"], mapper.out, problems)
        return mapper.out

    @staticmethod
    def finish(
        entry: RawEntry, config: ServerModel, where: str
    ) -> ServerModel:
        return config


def _merge_env_file(entry: RawEntry, value: Any, out: dict[Any, Any], problems: list[str]) -> None:
    """Put the variables of `envFile` under `env`; the entry's own `env` wins, as in VS Code."""
    if not isinstance(value, str) or not value:
        problems.append("field 'envFile': must be the path of a dotenv file")
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
