"""From raw entries to validated configs: choosing the transport, validating, and what a loader returns.

Each entry stands alone (an `InvalidServerEntry` when it cannot be used) unless `strict`; every
message names the entry and the field as the user wrote them, never a value. Errors are built from
pydantic's error list without its inputs, and never chained to the `ValidationError` (whose text
echoes them).
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeAlias

from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from .._values.errors import ConfigError, UnresolvedInputError
from .._values.naming import server_names_from_host
from .._values.tool import Tool
from .fields import SERVER_NAME_RE
from .hosts import document_entries
from .interpolation import (
    MAX_ENTRY_DEPTH,
    MAX_ENTRY_VALUES,
    EntryTooLarge,
    MissingInput,
    field_path,
    interpolate,
)
from .messages import (
    EntryError,
    did_you_mean,
    name_problem,
    plain_message,
    render_problems,
    suggest_server_name,
)
from .models import (
    MODELS,
    TRANSPORTS,
    HttpServerConfig,
    ServerConfig,
    ServerConfigBase,
    ServerModel,
    SseServerConfig,
    StdioServerConfig,
)
from .raw import MAP_KEY, RawEntry

_log = logging.getLogger("mcp_sync.config")

_HOST_KEYS_IN_OUR_FORMAT = {
    "type": "transport",
    "disabled": "enabled",
    "timeout": "tool_call_timeout_ms",
    "httpUrl": "url",
}


def _unknown_key(key: Any, entry: RawEntry) -> str:
    shown = repr(key) if isinstance(key, str) else str(key)
    if entry.format is None and key in _HOST_KEYS_IN_OUR_FORMAT:
        return f"unknown key {shown} (an mcpServers key); here, use {_HOST_KEYS_IN_OUR_FORMAT[key]!r}"
    candidates = [*_ALL_SPELLINGS, *(entry.format.known_keys if entry.format is not None else ())]
    return f"unknown key {shown}{did_you_mean(key, candidates)}"


def _field_spellings(model: type[ServerConfigBase]) -> dict[str, str]:
    """Every accepted key (snake_case name and camelCase alias) -> the field name."""
    spellings: dict[str, str] = {}
    for name, info in model.model_fields.items():
        spellings[name] = name
        if info.alias:
            spellings[info.alias] = name
    return spellings


_ALL_SPELLINGS = {
    **_field_spellings(StdioServerConfig),
    **_field_spellings(HttpServerConfig),
    **_field_spellings(SseServerConfig),
}


def _entry_name(data: Mapping[Any, Any]) -> str | None:
    """The entry's server name for messages, when it has a valid one."""
    for key in ("server_name", "serverName"):
        value = data.get(key)
        if isinstance(value, str) and SERVER_NAME_RE.fullmatch(value):
            return value
    return None


def _written_name(entry: RawEntry) -> str | None:
    """The name an entry was written under, valid or not: its own `server_name`, else its map key."""
    if isinstance(entry.data, Mapping):
        for key in ("server_name", "serverName"):
            value = entry.data.get(key)
            if isinstance(value, str) and value:
                return value
    return None if entry.map_key is None else str(entry.map_key)


def _choose_transport(data: dict[Any, Any], problems: list[str], *, quiet: bool = False) -> str | None:
    """The entry's transport: given, or inferred from `command` (stdio) / `url` (Streamable HTTP).

    `quiet` leaves out "missing": an unknown key (a misspelt `command`) explains it better.
    """
    if "transport" in data:
        transport = data["transport"]
        if transport not in TRANSPORTS:
            problems.append("field 'transport': must be 'stdio', 'streamable-http' or 'sse'")
            return None
        return str(transport)
    has_command, has_url = "command" in data, "url" in data
    if has_command and has_url:
        problems.append("has both 'command' (stdio) and 'url' (streamable-http); keep one")
        return None
    if has_command:
        return "stdio"
    if has_url:
        return "streamable-http"
    if not quiet:
        problems.append(
            "field 'transport': missing, and there is no 'command' (stdio) or 'url' to infer it from"
        )
    return None


def _check_double_spellings(data: Mapping[Any, Any], problems: list[str]) -> None:
    for name, info in StdioServerConfig.model_fields.items():
        if info.alias and info.alias != name and name in data and info.alias in data:
            problems.append(f"both '{name}' and '{info.alias}' are given; keep one")


def _describe(error: Mapping[str, Any], transport: str, entry: RawEntry, data: Mapping[Any, Any]) -> str:
    """One pydantic error as a sentence naming the field as the user wrote it, without the input."""
    loc: tuple[Any, ...] = tuple(error["loc"])
    if not loc:
        return str(error["msg"])
    head, rest = loc[0], loc[1:]
    if error["type"] == "extra_forbidden" and not rest:
        if head in _ALL_SPELLINGS:
            return f"unknown key '{head}' for transport '{transport}'"
        return _unknown_key(head, entry)
    field_name = _ALL_SPELLINGS.get(head, head) if isinstance(head, str) else head
    message = plain_message(error, field_name)
    renamed = field_name == "server_name" and error["type"] == "string_pattern_mismatch"
    if renamed:
        message = name_problem(data.get(head))
    written = entry.key_names.get(field_name) if isinstance(field_name, str) else None
    if written == MAP_KEY:
        map_name = entry.format.map_name if entry.format is not None else "mcpServers"
        if renamed:
            suggestion = suggest_server_name(str(entry.map_key))
            return (
                f"the server name (its key under {map_name}) {message}. Rename the key to {suggestion!r}, "
                f'or keep it and add "server_name": {json.dumps(suggestion)} to the entry'
            )
        return f"the server name (its key under {map_name}) {message}"
    if renamed:
        message += f"; use {suggest_server_name(str(data.get(head)))!r}"
    if written is not None:
        return f"field '{field_path((written, *rest))}': {message}"
    if head in data or not isinstance(field_name, str):
        return f"field '{field_path(loc)}': {message}"
    alias = to_camel(field_name)  # a missing field: name both spellings it accepts
    also = f" (or '{alias}')" if alias != field_name else ""
    return f"field '{field_path((field_name, *rest))}'{also}: {message}"


def _start_in_project(data: dict[Any, Any], project: Path) -> None:
    """A project file's stdio server starts in the project folder, as the hosts start it.

    Its relative `cwd` is taken from there too; relative paths in `command` and `args` then
    resolve against it, as they do in the host.
    """
    if "command" not in data or "url" in data:
        return
    cwd = data.get("cwd")
    if cwd is None:
        data["cwd"] = os.fspath(project)
    elif isinstance(cwd, str) and cwd and not os.path.isabs(os.path.expanduser(cwd)):
        data["cwd"] = os.fspath(project / cwd)


def _validate(entry: RawEntry, environ: Mapping[str, str], where: str) -> ServerModel:
    """Interpolate, map and validate one entry; raises `EntryError` with every problem found.

    The one order every entry goes through, so that a value is transformed exactly once:
    the host's `prepare` (skipped keys dropped and logged; the variables a Codex entry names read)
    -> `${VAR}` with the host's variables (`entry.environ`: VS Code's and Cursor's predefined ones
    and inputs; `$VAR` for Gemini; nothing for Codex, `entry.literal`) -> the host's `to_ours`
    (its keys in ours) -> the project folder -> validation by the transport's model.
    """
    problems: list[str] = []
    notices: list[str] = []  # a `${...}` the host does not read: passed as written, as the host passes it
    try:
        if entry.format is None:
            data = interpolate(entry.data, (), environ, problems, secrets=entry.secrets)
        else:  # skipped host keys go first: an unset variable in a setting we drop is no error
            prepared = entry.format.prepare(entry, entry.data, where)
            variables = entry.environ if entry.environ is not None else environ
            data = interpolate(
                prepared,
                (),
                variables,
                problems,
                bare=entry.bare_dollar,
                lenient=entry.lenient,
                literal=entry.literal,
                secrets=entry.secrets,
                rules=entry.rules,
                notices=notices,
            )
            for notice in notices:
                _log.warning("%s: %s", where, notice)
    except EntryTooLarge:
        too_large = f"nested deeper than {MAX_ENTRY_DEPTH} levels or over {MAX_ENTRY_VALUES} values"
        raise EntryError([f"the entry is {too_large}"]) from None
    if entry.format is not None:
        data = entry.format.to_ours(entry, data, problems)
    if entry.project is not None:
        _start_in_project(data, entry.project)
    _check_double_spellings(data, problems)
    unknown = [key for key in data if key not in _ALL_SPELLINGS]
    transport = _choose_transport(data, problems, quiet=bool(unknown or entry.misspelt))
    if transport is None:
        problems.extend(entry.misspelt)
    if transport is None:
        problems.extend(_unknown_key(key, entry) for key in unknown)
    if problems or transport is None:
        raise EntryError(problems)
    data.setdefault("transport", transport)
    try:
        return MODELS[transport].model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_input=False, include_url=False, include_context=False)
    # Raised outside the `except`: a chained ValidationError would print the inputs in a traceback.
    raise EntryError([_describe(e, transport, entry, data) for e in errors])


# --------------------------------------------------------------------------- what a loader returns


@dataclass(frozen=True, eq=False)
class InvalidServerEntry:
    """An entry of a configuration that cannot be used: a loader's result lists it in `invalid`, and
    `hub.servers` shows it among the servers, `failed`, with `error` saying why.

    `server_name` is the name it was written under (or its place, like `servers[2]`, when it
    has none, or when that name is also a valid server's); it is unique within one load, but
    it may not be a valid server name: it is for display. `label` says where the entry is.
    Among `hub.servers` it reads as a connection that never started: `state` "failed", no tools,
    no process; the other entries start as usual, and `required: true` on it makes `start()` raise.
    """

    server_name: str
    error: ConfigError
    label: str
    required: bool = False

    # What a connection has and an entry that never started has not.
    config: ClassVar[None] = None
    server_info: ClassVar[None] = None
    protocol_version: ClassVar[None] = None
    pid: ClassVar[None] = None
    transport: ClassVar[str] = "invalid"
    original_name: ClassVar[None] = None
    """None: `name` is already the name as written."""

    @property
    def name(self) -> str:
        """The entry's name among `hub.servers` (its `server_name`)."""
        return self.server_name

    @property
    def state(self) -> Literal["failed"]:
        """Always "failed": the entry could not be used (`error` says why)."""
        return "failed"

    @property
    def tools(self) -> list[Tool]:
        """Always []: an unusable entry has no tools."""
        return []

    @property
    def entry(self) -> InvalidServerEntry:
        """Deprecated: the entry itself (what `UnusableServer.entry` was); use `hub.servers[name]`."""
        warnings.warn(
            "InvalidServerEntry.entry is deprecated and will be removed in the next release; "
            "use the entry itself: hub.servers[name] is the InvalidServerEntry",
            DeprecationWarning,
            stacklevel=2,
        )
        return self

    def _key(self) -> tuple[str, str, str, bool]:
        return (self.server_name, self.label, str(self.error), self.required)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InvalidServerEntry):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"<InvalidServerEntry {self.server_name!r} ({self.label}) error={self.error!r}>"


@dataclass(frozen=True)
class ConfigEntries:
    """Every entry of a configuration, in order: each a valid config or an `InvalidServerEntry`."""

    entries: tuple[ServerModel | InvalidServerEntry, ...]
    source: str | None = None

    @property
    def configs(self) -> list[ServerConfig]:
        """The valid entries (enabled or not), in order."""
        return [entry for entry in self.entries if not isinstance(entry, InvalidServerEntry)]

    @property
    def invalid(self) -> list[InvalidServerEntry]:
        """The entries that cannot be used, in order."""
        return [entry for entry in self.entries if isinstance(entry, InvalidServerEntry)]


# --------------------------------------------------------------------------- building


def _is_disabled(data: Any) -> bool:
    """Whether a raw entry says it is switched off (`disabled: true` or `enabled: false`)."""
    return isinstance(data, Mapping) and (data.get("disabled") is True or data.get("enabled") is False)


def _config_error(message: str, input_ids: tuple[str, ...]) -> ConfigError:
    """An `UnresolvedInputError` when inputs were missing (the message says what else is wrong)."""
    return UnresolvedInputError(message, input_ids) if input_ids else ConfigError(message)


def _name_map_keys(raw_entries: list[RawEntry]) -> None:
    """Choose the server names of the entries named by their map key, all at once: no two alike.

    `Dev_Box_345271fc9fef` written beside `Dev Box` (whose normalised form it is) is hashed too.
    """
    named = [
        entry
        for entry in raw_entries
        if entry.format is not None
        and isinstance(entry.map_key, str)
        and not (isinstance(entry.data, Mapping) and {"server_name", "serverName"} & entry.data.keys())
    ]
    names = server_names_from_host(entry.map_key for entry in named)
    for entry in named:
        entry.host_name = names[entry.map_key]


def build_entries(
    raw_entries: list[RawEntry], environ: Mapping[str, str], source: str | None, *, strict: bool
) -> ConfigEntries:
    """Validate every entry. Strict: any problem raises one `ConfigError` naming them all.

    Otherwise each entry stands alone: one that cannot be used becomes an `InvalidServerEntry`.
    Either way a disabled entry is never an error: when invalid, it is left out with a log line.
    """
    prefix = f"{source}: " if source else ""
    _name_map_keys(raw_entries)
    results: list[ServerConfig | InvalidServerEntry | None] = []
    failures: list[tuple[int, str]] = []
    missing_inputs: dict[int, tuple[str, ...]] = {}  # entry index -> the `${input:ID}`s nothing gave
    for index, entry in enumerate(raw_entries):
        results.append(None)
        if isinstance(entry.data, ServerModel):
            results[index] = entry.data
            continue
        if entry.format is None and not isinstance(entry.data, Mapping):
            failures.append(
                (
                    index,
                    f"{prefix}{entry.label}: expected a mapping of settings, got {type(entry.data).__name__}",
                )
            )
            continue
        name = _entry_name(entry.data) if entry.format is None else None
        where = prefix + (f'{entry.label} ("{name}")' if name else entry.label)
        try:
            config = _validate(entry, environ, where)
        except (TypeError, ValueError, ArithmeticError) as exc:  # a value no check foresaw: this entry's
            _log.debug("%s: %s while reading the entry", where, type(exc).__name__)
            failures.append((index, render_problems(where, [f"cannot be read ({type(exc).__name__})"])))
            continue
        except EntryError as exc:
            message = render_problems(where, exc.problems)
            if _is_disabled(entry.data):
                _log.info("%s (the entry is disabled, so it is left out)", message)
            else:
                failures.append((index, message))
                ids = dict.fromkeys(p.input_id for p in exc.problems if isinstance(p, MissingInput))
                if ids:
                    missing_inputs[index] = tuple(ids)
            continue
        if entry.format is not None:
            config = entry.format.finish(entry, config, where)
        if entry.secrets:
            config = config.with_input_secrets(entry.secrets)
        if entry.sse_fallback and isinstance(config, HttpServerConfig) and config.auth is None:
            config = config.with_sse_fallback()
        if entry.original_name is not None and config.server_name != entry.original_name:
            config = config.with_original_name(entry.original_name)
        results[index] = config

    first_enabled: dict[str, int] = {}
    for index, result in enumerate(results):
        if not isinstance(result, ServerModel) or not result.enabled:
            continue
        if result.server_name not in first_enabled:
            first_enabled[result.server_name] = index
            continue
        earlier = raw_entries[first_enabled[result.server_name]].label
        message = (
            f"{prefix}duplicate server_name '{result.server_name}': {earlier} and "
            f"{raw_entries[index].label} are both enabled; rename one or disable one (enabled: false)"
        )
        results[index] = None
        failures.append((index, message))
    if strict and failures:  # one error naming every entry that cannot be used, in file order
        every_input = tuple(dict.fromkeys(i for ids in missing_inputs.values() for i in ids))
        raise _config_error("\n".join(message for _, message in sorted(failures)), every_input)

    taken = set(first_enabled)
    for index, message in sorted(failures):
        entry = raw_entries[index]
        display = _written_name(entry)
        if display is None or display in taken:
            display = entry.label
        taken.add(display)
        required = isinstance(entry.data, Mapping) and entry.data.get("required") is True
        error = _config_error(message, missing_inputs.get(index, ()))
        results[index] = InvalidServerEntry(display, error, entry.label, required)
    return ConfigEntries(tuple(result for result in results if result is not None), source)


# --------------------------------------------------------------------------- public functions

ServerEntries: TypeAlias = Iterable[Mapping[str, Any] | ServerModel] | Mapping[str, Any]
"""What `parse_server_entries` takes: a list of entries, or a whole document (`{"mcpServers": {...}}`)."""


def _raw_entries(servers: ServerEntries, source: str | None, environ: Mapping[str, str]) -> list[RawEntry]:
    if isinstance(servers, Mapping):
        return document_entries(servers, source, environ)
    if isinstance(servers, str | bytes) or not isinstance(servers, Iterable):
        prefix = f"{source}: " if source else ""
        hint = (
            "; to read a file, use load_config_entries() or MCPHub.from_file()"
            if isinstance(servers, str)
            else ""
        )
        raise ConfigError(
            f"{prefix}expected a list of server entries or a mapping with 'servers' or 'mcpServers', "
            f"got {type(servers).__name__}{hint}"
        )
    return [RawEntry(f"servers[{i}]", entry) for i, entry in enumerate(servers)]


def parse_server_entries(
    servers: ServerEntries,
    *,
    environ: Mapping[str, str] | None = None,
    source: str | None = None,
    strict: bool = False,
) -> ConfigEntries:
    """The servers of a configuration given from Python: the loader for a list or a mapping.

    `servers` is a list of entries (dicts or config models), or a mapping shaped like a file
    (`{"mcpServers": {...}}` or `{"servers": [...]}`), so `json.load(...)` of a host's file works
    too. Dicts are interpolated against `environ` (default `os.environ`) first; a dict without
    `transport` is stdio if it has a `command`, Streamable HTTP if it has a `url`. Models pass
    through as they are. `source` (a file name, say) prefixes every message.

    Each entry stands alone: one that cannot be used (two enabled entries sharing a `server_name`,
    a misspelt key) becomes an `InvalidServerEntry` whose `ConfigError` says why in plain words,
    and the others load. `strict=True` raises one `ConfigError` naming every problem instead:
    `parse_server_entries(servers, strict=True).configs` is the valid configurations or an error.
    A value of no known shape (a string, a number) always raises `ConfigError`.
    """
    environ = os.environ if environ is None else environ
    return build_entries(_raw_entries(servers, source, environ), environ, source, strict=strict)


def parse_server_configs(
    servers: ServerEntries,
    *,
    environ: Mapping[str, str] | None = None,
    source: str | None = None,
) -> list[ServerConfig]:
    """Deprecated: `parse_server_entries(servers, strict=True).configs`."""
    return parse_server_entries(servers, environ=environ, source=source, strict=True).configs
