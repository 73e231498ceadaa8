"""One entry before validation, and the hook through which a host's file format maps it onto ours.

A host file (`mcpServers`, VS Code's `servers`, Codex's `mcp_servers`) names each server by its
map key and spells some settings its own way; its `HostFormat` turns such an entry into our keys.
`entries._validate` owns the order: `prepare`, then `${VAR}` interpolation with the variables the
entry carries, then `to_ours`, then validation and `finish`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .interpolation import OUR_RULES, VariableRules

if TYPE_CHECKING:
    from .models import ServerModel

MAP_KEY = "<the map key>"  # key_names marker: the server name came from the map key


class HostFormat(Protocol):
    """How one host's entries become ours; `entries._validate` calls these in this order."""

    @property
    def map_name(self) -> str:
        """What the map holding the entries is called in messages (`mcpServers`)."""

    @property
    def known_keys(self) -> tuple[str, ...]:
        """Every key the host reads besides ours: what `prepare` keeps, and what "did you mean" offers."""

    def prepare(self, entry: RawEntry, data: Any, where: str) -> dict[Any, Any]:
        """The entry before interpolation, without the keys that are skipped (each logged by name)."""

    def to_ours(self, entry: RawEntry, data: dict[Any, Any], problems: list[str]) -> dict[Any, Any]:
        """The interpolated entry in our keys; records in `entry.key_names` which key fed which field."""

    def finish(
        self, entry: RawEntry, config: ServerModel, where: str
    ) -> ServerModel:
        """The valid entry, with warnings about it (a timeout that looks like seconds, say)."""


@dataclass
class RawEntry:
    """One entry before validation, with where it came from."""

    label: str  # `servers[2]` or `mcpServers.fs`
    data: Any
    map_key: Any = None  # the host map's key (the server name), or None for a `servers` list entry
    key_names: dict[str, str] = field(default_factory=dict)  # our field -> the key the user wrote
    format: HostFormat | None = None  # set for an entry of a host's map
    environ: Mapping[str, str] | None = None  # what its `${...}` references read, if not the caller's
    # Values its references marked as secrets: given for `${input:ID}`, or read from `${A_TOKEN}`.
    secrets: set[str] = field(default_factory=set)
    project: Path | None = None  # the project folder its file belongs to: relative paths start there
    original_name: str | None = None  # the host's name, when not a valid server name
    # The server name its map key becomes, chosen with the other entries' (`server_names_from_host`).
    host_name: str | None = None
    host: str | None = None  # the host whose file it is, when known (its place, or the caller said)
    bare_dollar: bool = False  # `$NAME` is a reference too (Gemini CLI)
    lenient: bool = False  # a `${...}` naming no variable stays as written (every host but VS Code)
    literal: bool = False  # no `${VAR}` at all: the host reads values as written (Codex)
    rules: VariableRules = OUR_RULES  # which `${...}` spellings the host reads, and what an unset one is
    sse_fallback: bool = False  # a remote entry whose host falls back to SSE on a 4xx (no explicit transport)
    misspelt: list[str] = field(default_factory=list)  # ignored keys that look like misspelt known ones
