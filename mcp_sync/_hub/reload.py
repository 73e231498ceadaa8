"""What `reload()` changes: the configuration generation a hub runs, the plan that compares the
running servers with a new configuration, and the `ReloadResult` that tells the caller what was done.

A hub's configuration is one `Generation` at a time, numbered; `start()`, `reload()` and every
replacement of a connection launch servers from the current one only, so no operation can bring back
a configuration that another has replaced. Planning is pure (no threads, no waits): `ServerSet.reload`
makes the plan under its condition from the connections it holds, makes its generation current in the
same step, then stops and starts what the plan says. The one rule beyond the diff: a configuration error
never replaces a working server. An entry that cannot be used, for a server whose connection is ready or
still connecting, keeps that connection (its generation, tools and names) and is reported as `kept`; the
next reload that gives the server a valid entry applies it as usual.

A connection replaced by one to the same server (`same_server`: a Streamable HTTP server at the same
URL, its entry changed otherwise, or a sign-in's restart) hands over the tasks its calls follow, when the
server is reconnected (`reconnect:`) and speaks 2026-07-28: they go on with the same task on the new
connection. Any other
replacement is a close for them: their tasks are cancelled on the server they were made on.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._config import HttpServerConfig, InvalidServerEntry, ServerConfig, StdioServerConfig
from .._values.errors import ConfigError
from .connection import ServerConnection

__all__ = [
    "Generation",
    "ReloadPlan",
    "ReloadResult",
    "hands_over",
    "plan_reload",
    "same_identity",
    "same_server",
]

_RUNNING = ("connecting", "ready")  # the states a configuration error must not end


def _no_errors() -> Mapping[str, ConfigError]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Generation:
    """One configuration of a hub: its valid entries (disabled ones too) and those that cannot be used."""

    number: int
    configs: tuple[ServerConfig, ...]
    invalid: tuple[InvalidServerEntry, ...]

    @property
    def wanted(self) -> dict[str, ServerConfig]:
        """The enabled entries by name: the servers that run while this generation is current."""
        return {config.server_name: config for config in self.configs if config.enabled}


@dataclass(frozen=True, eq=False)
class ReloadResult:
    """What one `reload()` did, by server name (each tuple sorted).

    `started`: new servers launched; `restarted`: servers whose connection was replaced (changed, or
    failed or disconnected before); `stopped`: servers closed and not replaced (removed or disabled);
    `unchanged`: servers left connected as they were. `kept`: running servers whose new entry cannot be
    used, left running on their previous configuration, with the `ConfigError` saying why; `invalid`:
    entries that cannot be used for servers that were not running, now shown as `failed`. Whether the
    started and restarted servers connected is their state in `hub.servers`.
    """

    started: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    stopped: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    kept: Mapping[str, ConfigError] = field(default_factory=_no_errors)
    invalid: Mapping[str, ConfigError] = field(default_factory=_no_errors)


@dataclass(frozen=True)
class ReloadPlan:
    """What a reload will do to one hub's connections, decided in one step under the hub's condition."""

    wanted: Mapping[str, ServerConfig]
    """The enabled valid configs by name: each runs after the reload."""
    outdated: tuple[ServerConnection, ...]
    """Connections to stop: removed, changed, ended, or already being replaced."""
    unchanged: tuple[str, ...]
    kept: Mapping[str, ServerConnection]
    """Running connections whose new entry cannot be used; left as they are."""
    kept_errors: Mapping[str, ConfigError]
    unusable: tuple[InvalidServerEntry, ...]
    """The invalid entries of servers that were not running: shown as failed."""

    def generation(self, number: int, configs: Iterable[ServerConfig]) -> Generation:
        """The generation this plan makes current: the new valid `configs`, the configurations the kept
        servers still run on, and the invalid entries of servers that were not running."""
        kept = tuple(connection.config for connection in self.kept.values())
        return Generation(number, (*configs, *kept), self.unusable)

    def result(self, launched: Iterable[ServerConnection]) -> ReloadResult:
        """The result, once `launched` (the connections started for `wanted`) are on their way."""
        replaced = {connection.name for connection in self.outdated}
        names = {connection.name for connection in launched}
        return ReloadResult(
            started=tuple(sorted(names - replaced)),
            restarted=tuple(sorted(names & replaced)),
            stopped=tuple(sorted(replaced - set(self.wanted))),
            unchanged=self.unchanged,
            kept=self.kept_errors,
            invalid=MappingProxyType({entry.server_name: entry.error for entry in self.unusable}),
        )


def plan_reload(
    connections: Mapping[str, ServerConnection],
    configs: Iterable[ServerConfig],
    invalid: Iterable[InvalidServerEntry],
    replaced: Container[ServerConnection] = (),
) -> ReloadPlan:
    """Compare the running `connections` with a new configuration (its valid and invalid entries).

    A connection still connecting on an unchanged entry is left to finish; one in `replaced` (stopping,
    its replacement launched once it has ended) is outdated whatever its entry."""
    configs = list(configs)
    named = {config.server_name for config in configs}
    wanted = {config.server_name: config for config in configs if config.enabled}
    kept: dict[str, ServerConnection] = {}
    kept_errors: dict[str, ConfigError] = {}
    unusable: list[InvalidServerEntry] = []
    for entry in invalid:
        running = connections.get(entry.server_name)
        # A valid entry of the same name (a disabled one) decides for itself.
        if (
            running is not None
            and running not in replaced
            and running.state in _RUNNING
            and entry.server_name not in named
        ):
            kept[entry.server_name] = running
            kept_errors[entry.server_name] = entry.error
        else:
            unusable.append(entry)
    def is_outdated(name: str, connection: ServerConnection) -> bool:
        if name in kept:
            return False
        changed = wanted.get(name) != connection.config
        return connection in replaced or changed or connection.state not in _RUNNING

    outdated = tuple(connection for name, connection in connections.items() if is_outdated(name, connection))
    stopping = {connection.name for connection in outdated}
    return ReloadPlan(
        wanted=MappingProxyType(wanted),
        outdated=outdated,
        unchanged=tuple(sorted(name for name in connections if name not in kept and name not in stopping)),
        kept=MappingProxyType(kept),
        kept_errors=MappingProxyType(dict(sorted(kept_errors.items()))),
        unusable=tuple(unusable),
    )


def same_server(old: ServerConfig, new: ServerConfig | None) -> bool:
    """Whether a connection made from `new` reaches the server one made from `old` reached, so that a task
    made through one can be followed through the other: a Streamable HTTP server at the same URL. (A stdio
    server's new connection is a new process, whose tasks are its own.)"""
    return isinstance(old, HttpServerConfig) and isinstance(new, HttpServerConfig) and old.url == new.url


def same_identity(old: ServerConfig, new: ServerConfig) -> bool:
    """Whether `new` names the server `old` named, so that a task made through one may be asked about
    through the other: the same transport, and the same URL, or for stdio the same command, arguments,
    working directory and environment (any other is another server, which never made that task)."""
    if type(old) is not type(new):
        return False
    if isinstance(old, StdioServerConfig) and isinstance(new, StdioServerConfig):
        return (old.command, old.args, old.cwd, old.inherit_env) == (
            new.command,
            new.args,
            new.cwd,
            new.inherit_env,
        ) and old.env == new.env
    return getattr(old, "url", None) == getattr(new, "url", None)


def hands_over(old: ServerConfig, new: ServerConfig | None, protocol_version: str | None) -> bool:
    """Whether a connection of `old` replaced by one of `new` hands the tasks its calls follow over to it
    (they go on there) rather than cancelling them: the same server, calls that follow a task across a
    new connection (`reconnect:`), and a protocol whose tasks outlive a connection (2026-07-28, which
    has no sessions; a 2025-11-25 server may keep a task in its session's own store, as the reference
    server does: `@modelcontextprotocol/server-everything`, dist/server/index.js, makes an
    `InMemoryTaskStore` per server instance, one per session over HTTP)."""
    return (
        old.reconnect is not None
        and same_server(old, new)
        and protocol_version in MODERN_PROTOCOL_VERSIONS
    )
