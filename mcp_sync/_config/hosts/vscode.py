"""VS Code: `.vscode/mcp.json` in a workspace and `mcp.json` in the user profile.

As documented in VS Code's "MCP configuration reference": a top-level `servers` map (server name
to settings) and an optional `inputs` list. A server has `type` (`stdio`, `http`, `sse`); stdio
servers `command`, `args`, `env`, `envFile` (an env file in VS Code's grammar, whose variables
`env` overrides) and `cwd`; remote ones `url` and `headers`. `dev` (watch and debug a server under
development) and the `sandbox` settings are VS Code's own: skipped with a warning.

Values may use `${input:ID}` (the value of the input with that id: from the caller's inputs, else
the environment variable `input_variable_name(ID)`, else the input's `default`),
`${workspaceFolder}` (the folder holding `.vscode`), `${userHome}`, `${pathSeparator}`, and
`${env:NAME}`. Values given for inputs are secrets wherever they are used. Keys VS Code does not
read are ignored, as VS Code ignores them. `"type": "http"`, and a `url` without a `type`, are
VS Code's HTTP transport: Streamable HTTP, falling back to SSE as VS Code does.

An `mcpServers` map (the other hosts' key) is moved into `servers` as VS Code's reader moves it
(`configMcpDiscovery.ts` in src/vs/workbench/contrib/mcp/common/discovery: `servers: {...servers,
...mcpServers}`): its servers load, and on a name in both the `mcpServers` entry wins.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from ..._values.errors import ConfigError
from ..context import HostInput, LoadContext
from ..interpolation import InputVariables, VariableRules, input_variable_name
from ..messages import EntryError
from ..models import ServerModel
from ..raw import RawEntry
from .common import OUR_KEYS, EntryMapper, drop_ignored, editor_variables, merge_env_file, warn_unsupported

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
# VS Code's variable resolver (src/vs/workbench/services/configurationResolver/common/
# variableResolver.ts): `${env:NAME}` reads the environment, an unset one is "" ("as a normal shell
# does", VS Code issue #46436); its `evaluateSingleVariable` splits at `:` and reads the second part
# only, so `${env:NAME:-x}` is NAME, `:-x` no default; `${NAME}` is no VS Code variable (only its
# predefined ones are) and is passed as written.
VARIABLES = VariableRules(plain=False, unset_env_is_empty=True, defaults=False, host="VS Code")


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
        options = _options(item.get("options"))
        found[item["id"]] = HostInput(
            id=item["id"],
            description=item.get("description") if isinstance(item.get("description"), str) else None,
            password=item.get("password") is True,
            type=str(item.get("type", "promptString")),
            default=default if isinstance(default, str) else None,
            options=tuple(value for value, _ in options),
            option_labels=tuple(label for _, label in options),
        )
    return found


def _options(raw: Any) -> list[tuple[str, str]]:
    """A `pickString` input's options as (value, label): strings, or `{value, label}` objects.

    As VS Code's `PickStringInputInfo` (src/vs/workbench/services/configurationResolver/common/
    configurationResolver.ts): an option is a string, or an object whose `value` is passed and whose
    `label` (default: the value) is shown. One without a string `value` cannot be picked: left out.
    """
    if not isinstance(raw, list):
        return []
    options = []
    for option in raw:
        if isinstance(option, str):
            options.append((option, option))
        elif isinstance(option, Mapping) and isinstance(option.get("value"), str):
            label = option.get("label")
            options.append((option["value"], label if isinstance(label, str) and label else option["value"]))
    return options


def migrated(document: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """The document with `mcpServers` moved into `servers`, as VS Code's `configMcpDiscovery` moves it.

    A name in both keeps its place in `servers` and takes the `mcpServers` entry (a JavaScript
    object spread). A `servers` that is not a map is left for `vscode_entries` to refuse.
    """
    extra = document.get("mcpServers")
    servers = document.get("servers")
    if not isinstance(extra, Mapping) or not (servers is None or isinstance(servers, Mapping)):
        return document
    merged = {key: value for key, value in document.items() if key != "mcpServers"}
    merged["servers"] = {**(servers or {}), **extra}
    return merged


def vscode_entries(
    document: Mapping[Any, Any], source: str | None, environ: Mapping[str, str], context: LoadContext
) -> list[RawEntry]:
    """The raw entries of a VS Code `mcp.json`: its `servers` map, each with its variables."""
    prefix = f"{source}: " if source else ""
    document = migrated(document)
    others = sorted(str(key) for key in document if key not in ("servers", "inputs"))
    if others:
        _log.debug("%signoring settings outside servers and inputs: %s", prefix, ", ".join(others))
    if not isinstance(document["servers"], Mapping):
        raise ConfigError(f"{prefix}'servers' must be a map of server name to settings")
    inputs = _inputs(document, prefix)
    project = context.project
    predefined = editor_variables(project, context.home_folder())
    entries: list[RawEntry] = []
    for name, settings in document["servers"].items():
        entry = RawEntry(f"servers.{name}", settings, map_key=name, format=VsCodeFormat)
        entry.environ = _Variables(environ, predefined, inputs, context, entry)
        entry.project, entry.rules = project, VARIABLES
        entries.append(entry)
    return entries


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
            elif key in OUR_KEYS or key in VsCodeFormat.known_keys:
                kept[key] = value
            else:
                drop_ignored(entry, where, key, "VS Code", (*OUR_KEYS, *VsCodeFormat.known_keys))
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
                    entry.sse_fallback = value == "http"  # VS Code tries Streamable HTTP, then SSE
            elif key != "envFile":
                mapper.keep(key, value)
        if "url" in data and "type" not in data and "transport" not in data:
            entry.sse_fallback = True  # VS Code's reader makes any entry with a `url` its HTTP transport
        if "envFile" in data:
            merge_env_file(entry, data["envFile"], mapper.out, problems)
        return mapper.out

    @staticmethod
    def finish(entry: RawEntry, config: ServerModel, where: str) -> ServerModel:
        return config
