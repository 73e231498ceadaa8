"""Reading configuration files: JSON (comments allowed), YAML or TOML, by content; then their entries.

Errors name the file and the line, never the file's text (it may hold secrets).
"""

from __future__ import annotations

import json
import logging
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

import json5
import yaml

from .._values.errors import ConfigError
from .context import Inputs, LoadContext, remembered
from .entries import ConfigEntries, build_entries
from .hosts import document_entries
from .models import ServerConfig

_log = logging.getLogger("mcp_sync.config")


class _StrictLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses a repeated mapping key instead of keeping the last one silently."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *base` keys may be overridden: that is what merging is for
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:
            continue  # unhashable: construct_mapping reports it
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _JsonObject(dict[str, Any]):
    """A JSON object that remembers the keys it repeats (the last value kept, as `JSON.parse` keeps it)."""

    repeated: tuple[str, ...] = ()


class _KeepLastKey:
    """An `object_pairs_hook` keeping a repeated key's last value, and whether any key was repeated."""

    def __init__(self) -> None:
        self.repeated = False

    def __call__(self, pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
        result = _JsonObject()
        repeated: list[str] = []
        for key, value in pairs:
            if key in result:
                repeated.append(key)  # keeps its first place, as in `JSON.parse`
            result[key] = value
        if repeated:
            result.repeated = tuple(dict.fromkeys(repeated))
            self.repeated = True
        return result


def _warn_repeated_keys(document: Any, source: str) -> None:
    """Name every key a JSON object repeats (its path, never a value): the last value is the one read.

    `JSON.parse` and VS Code's `jsonc-parser` keep the last value of a repeated key, so the hosts
    run such a file; refusing it would lose every server in it for one slip.
    """
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _JsonObject):
            for key in value.repeated:
                where = f"{path}.{key}" if path else key
                _log.warning("%s: the key '%s' is given more than once; the last one is read", source, where)
            stack.extend((item, f"{path}.{key}" if path else str(key)) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(value))


# json5's messages: `<string>:LINE Unexpected "X" at column COL` or `... end of input at column COL`.
_JSON5_POSITION = re.compile(r"<string>:(\d+) Unexpected (end of input|.*) at column (\d+)$")


def _parse_jsonc(text: str, source: str) -> Any:
    """JSON with comments and trailing commas, as VS Code, Cursor and the other hosts read it.

    `json5` reads a superset of JSONC (comments, trailing commas). Errors give the line and column,
    never the file's text.
    """
    try:
        hook = _KeepLastKey()
        document = json5.loads(text, object_pairs_hook=hook)
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply to be a configuration") from None
    except ValueError as exc:
        position = _JSON5_POSITION.match(str(exc))
        if position is None:
            raise ConfigError(f"{source}: not valid JSON") from None
        line, found, column = position.groups()
        what = "the file ends too early" if found == "end of input" else "unexpected character"
        raise ConfigError(f"{source}: not valid JSON at line {line}, column {column}: {what}") from None
    if hook.repeated:  # most files repeat nothing: `~/.claude.json` may be megabytes to walk
        _warn_repeated_keys(document, source)
    return document


_JSON_SUFFIXES = (".json", ".jsonc")


def _parse_text(text: str, source: str) -> Any:
    """JSON (comments allowed) or YAML, by content. Errors name the file and line, never the file's text.

    A `.json` file that starts like JSON (`{` or a comment) is JSON with comments and nothing else:
    YAML would read a `//` comment as a key. Elsewhere `{` may start a YAML flow mapping.
    """
    hook = _KeepLastKey()
    try:
        document = json.loads(text, object_pairs_hook=hook)
    except ValueError:
        pass  # not plain JSON: JSON with comments, or YAML
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply to be a configuration") from None
    else:
        if hook.repeated:
            _warn_repeated_keys(document, source)
        return document
    start = text.lstrip()[:1]
    if start == "/" or (start == "{" and source.lower().endswith(_JSON_SUFFIXES)):
        return _parse_jsonc(text, source)
    if start == "{":
        try:
            return _parse_jsonc(text, source)
        except ConfigError:
            pass  # a YAML flow mapping, perhaps: YAML says what is wrong if not
    problem: str | None = None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: plain data only
    except RecursionError:
        problem = f"{source}: nested too deeply to be a configuration"
    except ValueError as exc:  # a value PyYAML cannot build, such as an integer of thousands of digits
        problem = f"{source}: not valid YAML or JSON: {type(exc).__name__} building a value"
    except yaml.MarkedYAMLError as exc:
        # PyYAML's str(exc) quotes the offending line; only its fixed phrases and positions are used.
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = f"{source}: not valid YAML or JSON{where}: {exc.problem or exc.context or 'syntax error'}"
        if exc.problem and exc.context and exc.context_mark is not None:
            problem += f" ({exc.context} started at line {exc.context_mark.line + 1})"
    except yaml.YAMLError:
        problem = f"{source}: not valid YAML or JSON"
    raise ConfigError(problem)


def read_document(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """The parsed file and its name for messages; `~` in the path is the home directory."""
    source = os.fspath(path)
    try:
        with open(os.path.expanduser(source), "rb") as handle:
            raw_bytes = handle.read()
    except OSError as exc:
        raise ConfigError(
            f"{source}: cannot read the config file: {exc.strerror or type(exc).__name__}"
        ) from None
    try:
        text = raw_bytes.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{source}: not UTF-8 text") from None
    if source.lower().endswith(".toml"):
        return _parse_toml(text, source), source
    return _parse_text(text, source), source


def _parse_toml(text: str, source: str) -> Any:
    """A TOML file (Codex's `config.toml`); tomllib's messages are fixed phrases and a position."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply to be a configuration") from None


def load_config_entries(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    strict: bool = False,
    inputs: Inputs = None,
) -> ConfigEntries:
    """The servers of a configuration file: the loader for a file.

    JSON (comments and trailing commas allowed), YAML or TOML: our `servers:` list, or a host's
    file: an `mcpServers` map (Claude Desktop, Claude Code's `.mcp.json`, Cursor, Gemini CLI,
    Windsurf), VS Code's `mcp.json` (a `servers` map) or Codex's `config.toml` (`mcp_servers`
    tables); other top-level settings in such a file are ignored. (`load_host_entries` reads a
    host's files where the host keeps them, with the host's own rules.)

    A file that cannot be read or has no known shape raises `ConfigError`. Otherwise an entry
    that cannot be used (a name with a space, a misspelt key) becomes an `InvalidServerEntry`,
    and the others load. `strict=True` raises one `ConfigError` naming every problem instead
    (for CI): `load_config_entries(path, strict=True).configs`. Disabled entries are never
    errors. `inputs` gives the values of a VS Code file's `${input:ID}` references: a mapping of
    id to value, or a handler called with each `HostInput`.
    """
    context = LoadContext(inputs=remembered(inputs))  # each input asked once, however often it is used
    return read_entries(path, environ=environ, strict=strict, context=context)


def read_entries(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    strict: bool = False,
    context: LoadContext,
) -> ConfigEntries:
    """`load_config_entries` with the folders a host file's references are resolved against."""
    environ = os.environ if environ is None else environ
    document, source = read_document(path)
    raw = document_entries(document, source, environ, context)
    entries = build_entries(raw, environ, source, strict=strict)
    _log.debug("%s: read %d server entries (%d invalid)", source, len(entries.entries), len(entries.invalid))
    return entries


def load_config_file(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> list[ServerConfig]:
    """Deprecated: `load_config_entries(path, strict=True).configs`."""
    return load_config_entries(path, environ=environ, strict=True).configs
