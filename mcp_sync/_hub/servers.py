"""A hub's servers and its lifecycle: start, reload and close, safe from any thread and any host.

`ServerSet` is what an `MCPHub` is made of below its public methods, and what the exit hook
and the garbage-collection finalizer close: it never refers back to the `MCPHub`, and reaches the
user's callbacks and handlers (which may) only weakly, so a hub nobody references can be collected
while its loop threads still run.

Its states and moves are the hub's table in `_runtime.lifecycle`. No lock is held across a wait:
the state and the connection map change under the state machine's condition, and waits
happen outside it, so `close()` from another thread preempts a `start()` or `reload()` in
progress (their waits end when the connections they wait on end). An exception anywhere
(Ctrl-C included) leaves nothing half done: an interrupted `start()` closes what it
started before the exception reaches the caller, an interrupted `reload()` puts its
previous configuration back, and an interrupted `close()` can be called again to finish the job.

Connections belong to a configuration generation (`_hub.reload.Generation`). The set holds one
generation at a time, made current in one step under the condition (at creation, and by each
`reload()`), and a connection is launched only by `_fill()`: for a server of the current generation
that has none. A connection that must go (its entry changed or was removed, or a sign-in restarts it)
is marked replaced and asked to stop; it keeps its name until it has ended, and its end launches the
current generation's entry in its place. So `start()`, `reload()`, `restart()` and reconnection can
run in any order, from any thread, and be interrupted anywhere: none can start a configuration that
another replaced, and no server of the current generation is left without a connection.

Why one file of over 400 lines: start, reload and close share one state machine and one lock
discipline (no lock held across a wait); split apart, that rule would span files.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from .._auth.sign_in import AuthFactory
from .._config import ConfigEntries, InvalidServerEntry, ServerConfig
from .._os.waits import interruptible_wait
from .._runtime.callbacks import ListenerSet
from .._runtime.lifecycle import (
    HUB_TRANSITIONS,
    ExitHook,
    HubState,
    StateMachine,
    fork_generation,
    on_fork_in_child,
)
from .._server.features import ServerFeatures
from .._values.errors import ConfigError, MCPSyncError, ServerStartError, SignInRequiredError
from .connection import CLOSE_TIMEOUT, ServerConnection
from .handovers import HandOvers
from .reconnect import Reconnector
from .registry import ToolRegistry
from .reload import Generation, ReloadResult, hands_over, plan_reload, same_server

__all__ = ["ServerSet", "StateEvent"]

logger = logging.getLogger("mcp_sync")

StateEvent = tuple[str, str, BaseException | None]
"""(server_name, state, error), as `on_server_state` listeners receive it."""

# Beyond a server's own connect deadline, time start() allows for its thread to report back.
_START_GRACE = 5.0
# At interpreter exit, how long open hubs get to close before their children are killed.
_EXIT_CLOSE_TIMEOUT = 4.0
# How long close() waits for a reconnector's thread once told to stop (it only has to leave a wait).
_RECONNECTOR_JOIN_TIMEOUT = 1.0
# How long close(), or a reload that gives a server's name another server, waits for a connection to the
# server of a handed-over task nobody re-attached to (connecting, or made for that alone), to cancel it.
_HANDED_OVER_CONNECT_TIMEOUT = 2.0


class ServerSet:
    """The connections of one hub and the hub's state; see the module docstring."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        entries: ConfigEntries,
        owns_registry: bool,
        auth_factory: AuthFactory | None = None,
        features: Callable[[ServerConfig], ServerFeatures] | None = None,
    ) -> None:
        self.registry = registry
        self._generation = Generation(0, tuple(entries.configs), tuple(entries.invalid))
        self._features = features
        self._owns_registry = owns_registry
        self._auth_factory = auth_factory
        self._reconnectors: dict[str, Reconnector] = {}  # replaced, never mutated
        self._machine: StateMachine[HubState] = StateMachine("created", HUB_TRANSITIONS)
        self._connections: dict[str, ServerConnection] = {}  # replaced, never mutated: readers take no lock
        self._unusable: dict[str, InvalidServerEntry] = {}  # likewise
        # Connections asked to stop so that the current generation's entry replaces them once they end.
        self._replaced: frozenset[ServerConnection] = frozenset()
        self.state_listeners: ListenerSet[StateEvent] = ListenerSet()
        # The process the hub was started in (None until then: a hub made before a fork starts in the child).
        self._fork_generation: int | None = None
        self._pid: int | None = None
        self.handovers = HandOvers()
        """Tasks handed over by a replaced connection to its successor that no call re-attached to yet."""

    # -- reading (any thread) --------------------------------------------------------------------

    @property
    def state(self) -> HubState:
        return "forked" if self.forked else self._machine.state

    @property
    def forked(self) -> bool:
        """True in a child process that inherited this hub, started, through `os.fork()`."""
        return self._fork_generation is not None and self._fork_generation != fork_generation()

    @property
    def configuration(self) -> Generation:
        """The configuration the servers run on (or will, once started): the latest applied."""
        return self._generation

    @property
    def connections(self) -> Mapping[str, ServerConnection]:
        return MappingProxyType(self._connections)

    @property
    def servers(self) -> Mapping[str, ServerConnection | InvalidServerEntry | Reconnector]:
        """Every server by name: connections, entries of the configuration that could not be used, and
        servers between two reconnection attempts (`reconnecting`). Read under the condition: a
        connection's replacement takes its place in one step, so a name is never missing in between."""
        with self._machine.condition:
            servers: dict[str, ServerConnection | InvalidServerEntry | Reconnector] = {
                **self._unusable,
                **self._connections,
            }
            for name, reconnector in self._reconnectors.items():
                current = self._connections.get(name)
                if current is None or current.state not in ("connecting", "ready"):
                    servers[name] = reconnector
        return MappingProxyType(servers)

    def _servers_now(self) -> Mapping[str, object]:
        """`servers`, for a connection to hand to the task handles of its server (`TaskHandle`)."""
        return self.servers

    def _set_unusable(self, invalid: Iterable[InvalidServerEntry]) -> None:
        self._unusable = {entry.server_name: entry for entry in invalid}
        for entry in self._unusable.values():
            logger.warning("server %r cannot be used: %s", entry.name, entry.error)

    def check_usable(self) -> None:
        """Raise unless calls may be made: never in a forked child, never once closing."""
        if self.forked:
            raise MCPSyncError(
                f"this hub was started in process {self._pid}, and this is process {os.getpid()} "
                "(a fork): its servers belong to the parent; create a new MCPHub in the child"
            )

    # -- start ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Connect every enabled server of the configuration in parallel; return once each is ready or
        failed (also those a `reload()` from another thread launched meanwhile)."""
        with self._machine.condition:
            self.check_usable()
            if self._machine.state == "running":
                return
            if not self._machine.move("starting"):
                raise MCPSyncError(f"this hub is {self._machine.state}; make a new one")
            self._fork_generation, self._pid = fork_generation(), os.getpid()
            _open_sets.add(self)
            _EXIT_HOOK.arm()
        try:
            with self._machine.condition:  # a close() in between leaves nothing to launch
                if self._machine.state == "starting":
                    self._set_unusable(self._generation.invalid)
                    self._fill()
            self._settle()
        except BaseException:
            logger.info("start() was interrupted; stopping every server it started")
            self.close(abort=True)
            raise
        with self._machine.condition:
            if not self._machine.move("running"):
                raise MCPSyncError("the hub was closed while it was starting")
            current = [c for c in self._connections.values() if c not in self._replaced]
        failures: dict[str, BaseException] = {
            name: unusable.error for name, unusable in self._unusable.items() if unusable.required
        }
        failures |= {
            connection.name: connection.error or RuntimeError(connection.state)
            for connection in current
            if connection.config.required and connection.state != "ready"
        }
        if failures:
            self.close()
            details = "; ".join(f"{name}: {error}" for name, error in failures.items())
            raise ServerStartError(f"required server(s) failed to start: {details}", failures)

    def _settle(self) -> None:
        """Wait until no connection is connecting; each round is bounded by the slowest connect deadline,
        and only a reload from another thread meanwhile (launching more) makes another round."""
        while True:
            with self._machine.condition:
                pending = [c for c in self._connections.values() if not c.ready.done()]
            if not pending or not _wait_ready(pending):
                return

    def _fill(self) -> list[ServerConnection]:
        """Launch the current generation's entry of every server that has no connection (under the
        condition): the only way a connection is made, so only the current configuration ever runs."""
        return self._launch(
            config for name, config in self._generation.wanted.items() if name not in self._connections
        )

    def _launch(self, configs: Iterable[ServerConfig]) -> list[ServerConnection]:
        """Create, reserve and start a connection per enabled config (under the condition)."""
        launched: list[ServerConnection] = []
        for config in configs:
            if not config.enabled:
                continue
            connection = ServerConnection(
                config,
                self.registry,
                on_state=self._announce_state,
                auth_factory=self._auth_factory,
                features=self._features(config) if self._features is not None else None,
                hub_servers=self._servers_now,
                handovers=self.handovers,
            )
            try:
                connection.reserve()
            except ConfigError as exc:
                logger.error("%s", exc)
                connection.fail_without_starting(exc)
            self._connections = {**self._connections, config.server_name: connection}
            launched.append(connection)
        for connection in launched:
            if connection.lease is not None:
                connection.start()
        return launched

    # -- reload ---------------------------------------------------------------------------------

    def reload(self, configs: list[ServerConfig], invalid: Iterable[InvalidServerEntry] = ()) -> ReloadResult:
        """Make a new generation current: keep unchanged servers (ready or still connecting), replace
        changed, failed or disconnected ones, add and remove; before `start()`, only store it.

        An invalid entry for a running server keeps that server as it is (see `_hub.reload`). Returns
        what was done once the servers it launched are ready or failed. Interrupted (Ctrl-C), it makes
        the previous configuration current again before the exception reaches the caller.
        """
        with self._machine.condition:
            self.check_usable()
            previous = self._generation
            previous_connections = frozenset(self._connections.values())
            if self._machine.state == "created":
                self._generation = Generation(previous.number + 1, tuple(configs), tuple(invalid))
                return ReloadResult()
            if self._machine.state not in ("starting", "running"):
                raise MCPSyncError("this hub is closed; make a new one")
        wanted = {config.server_name: config for config in configs if config.enabled}
        for name in self.handovers.names():
            self._cancel_handed_over(name, wanted.get(name))
        try:
            with self._machine.condition:
                if self._machine.state not in ("starting", "running"):
                    raise MCPSyncError("the hub was closed during reload()")
                plan = plan_reload(self._connections, configs, invalid, self._replaced)
                self._generation = plan.generation(previous.number + 1, configs)
                self._set_unusable(plan.unusable)
                self._replace(plan.outdated)
                before = set(self._connections.values())
            for name, error in plan.kept_errors.items():
                logger.warning(
                    "server %r keeps running on its previous configuration: its new entry cannot be used: %s",
                    name,
                    error,
                )
            self._stop(list(plan.outdated), abort=False)
            with self._machine.condition:
                if self._machine.state not in ("starting", "running"):
                    raise MCPSyncError("the hub was closed during reload()")
                self._fill()
                launched = [
                    c for c in self._connections.values() if c not in before and c.name in plan.wanted
                ]
            _wait_ready(launched)
            if self._machine.state not in ("starting", "running"):
                raise MCPSyncError("the hub was closed during reload()")
            # Inside the `try`: a Ctrl-C that lands as the last wait ends is raised here, and the caller
            # who gets it must find the previous configuration.
            return plan.result(launched)
        except BaseException:
            self._restore(previous, previous_connections)
            raise

    def _restore(self, previous: Generation, previous_connections: frozenset[ServerConnection]) -> None:
        """Make `previous` current again after an interrupted reload, without waiting: servers the reload
        added stop, and those it replaced or removed come back on their previous entry.

        A connection the reload launched is outdated whatever `previous` says of its name: an entry that
        was invalid there must not keep it running as if it were a server that entry failed to replace."""
        with self._machine.condition:
            if self._machine.state not in ("starting", "running"):
                return
            logger.info("reload() was interrupted; going back to the previous configuration")
            launched = {c for c in self._connections.values() if c not in previous_connections}
            plan = plan_reload(
                self._connections, previous.configs, previous.invalid, self._replaced | launched
            )
            self._generation = plan.generation(self._generation.number + 1, previous.configs)
            self._set_unusable(plan.unusable)
            self._replace(plan.outdated)
            self._fill()

    def _replace(self, connections: Iterable[ServerConnection]) -> None:
        """Take `connections` out of the current generation (under the condition): each is asked to
        stop, and gives its name to its replacement once it has ended (`_ended`)."""
        for connection in connections:
            self._stop_reconnectors(connection.name)
            if connection.state in ("failed", "disconnected", "closed"):  # ended: nothing to wait for
                self._forget(connection)
            elif connection not in self._replaced:
                self._replaced |= {connection}
                successor = self._generation.wanted.get(connection.name)
                connection.replaced = successor is not None
                connection.close(
                    abort=connection.state == "connecting",
                    handing_over=hands_over(connection.config, successor, connection.protocol_version),
                )
            elif connection.handing_over and not hands_over(
                connection.config, self._generation.wanted.get(connection.name), connection.protocol_version
            ):  # replaced again, by another server: what it was handing over is cancelled after all
                connection.close(handing_over=False)

    def _ended(self, connection: ServerConnection) -> None:
        """A connection ended (its loop thread): if it was being replaced, launch its replacement."""
        with self._machine.condition:
            if connection in self._replaced:
                self._forget(connection)
                if self._machine.state in ("starting", "running"):
                    self._fill()

    # -- close ----------------------------------------------------------------------------------

    def close(self, *, abort: bool = False) -> None:
        """Stop every server and thread; bounded, idempotent, and it finishes an interrupted close."""
        with self._machine.condition:
            if self.forked or self._machine.state == "closed":
                return
            self._machine.move("closing")
            connections = list(self._connections.values())
            reconnectors = self._stop_reconnectors()
        if not abort:
            for name in self.handovers.names():
                self._cancel_handed_over(name, None)
        for connection in connections:  # nothing takes over: the tasks calls follow are cancelled
            connection.close(abort=abort or connection.state == "connecting", handing_over=False)
        self._stop(connections, abort=abort)
        for reconnector in reconnectors:
            reconnector.join(_RECONNECTOR_JOIN_TIMEOUT)
        with self._machine.condition:
            if self._connections:  # another thread's close is still at work
                return
            self._replaced = frozenset()
            self._machine.move("closed")
        _open_sets.discard(self)
        if self._owns_registry:
            self.registry.close()

    def begin_close(self) -> list[ServerConnection]:
        """Ask every server to stop without waiting (exit hook, finalizer); returns what to wait for."""
        with self._machine.condition:
            if self.forked or self._machine.state == "closed":
                return []
            self._machine.move("closing")
            connections = list(self._connections.values())
            self._stop_reconnectors()
        for connection in connections:
            connection.close(abort=connection.state == "connecting", handing_over=False)
        return connections

    def _cancel_handed_over(self, name: str, keep: ServerConfig | None) -> None:
        """Cancel the tasks of `name` handed over and not re-attached to, on each server that `keep` (the
        entry the name runs on next; None: none) does not reach: through the connection to that server,
        once ready (bounded), or through one made for that alone. Outside the condition."""
        for origin in self.handovers.origins(name):
            if keep is not None and same_server(origin, keep):
                continue  # their calls re-attach there

            def reaches(config: ServerConfig, origin: ServerConfig = origin) -> bool:
                return same_server(config, origin)

            current = self._connections.get(name)
            usable = current is not None and current not in self._replaced and reaches(current.config)
            if current is not None and usable and current.state == "connecting":
                concurrent.futures.wait([current.ready], _HANDED_OVER_CONNECT_TIMEOUT)
            if current is not None and usable and current.state == "ready":
                task_ids = self.handovers.take(name, reaches)
                _cancel_tasks(current, name, task_ids, self.handovers)
            else:
                self._cancel_through_new_connection(name, origin, reaches)

    def _cancel_through_new_connection(
        self, name: str, origin: ServerConfig, reaches: Callable[[ServerConfig], bool]
    ) -> None:
        """Connect to `origin`'s server on a registry of its own (its tools stay out of the hub's), send
        `tasks/cancel` for the handed-over tasks of `name` there, and close that connection again."""
        registry = ToolRegistry()
        connection = ServerConnection(origin, registry)
        try:
            connection.reserve()
            connection.start()
            concurrent.futures.wait([connection.ready], _HANDED_OVER_CONNECT_TIMEOUT)
            task_ids = self.handovers.take(name, reaches)
            if connection.state == "ready":
                _cancel_tasks(connection, name, task_ids, self.handovers)
            elif task_ids:
                logger.warning(
                    "could not cancel task(s) %s of server %r handed over before it was closed or reloaded: "
                    "its server could not be reached (%s); they may be left running",
                    ", ".join(repr(task_id) for task_id in task_ids),
                    name,
                    connection.error or connection.state,
                )
        finally:
            connection.close()
            connection.join()
            if connection.lease is not None:
                connection.lease.release()
            registry.close()

    def _stop(self, connections: list[ServerConnection], *, abort: bool) -> None:
        """Close `connections` (servers still connecting are killed, not awaited), wait for each within
        one shared deadline, then free their names."""
        for connection in connections:
            connection.close(abort=abort or connection.state == "connecting")
        deadline = time.monotonic() + CLOSE_TIMEOUT
        for connection in connections:
            connection.join(max(0.0, deadline - time.monotonic()))
            self._forget(connection)

    def _forget(self, connection: ServerConnection) -> None:
        """Free the name of an ended (or abandoned) connection and drop it from the map."""
        if connection.lease is not None:
            connection.lease.release()
        with self._machine.condition:
            self._replaced -= {connection}
            if self._connections.get(connection.name) is connection:
                self._connections = {
                    name: other for name, other in self._connections.items() if other is not connection
                }

    def _announce_state(self, connection: ServerConnection) -> None:
        # Its resources, prompts and tools went with the end state itself (`ServerConnection._set_state`).
        event: StateEvent = (connection.name, connection.state, connection.error)
        self.registry.dispatcher.post(self.state_listeners.snapshot(), event)
        if connection.state == "ready" and self.handovers.waiting(connection.name):
            # Tasks handed over to it whose callers gave up before they re-attached.
            task_ids = self.handovers.take(
                connection.name, lambda origin: same_server(origin, connection.config), abandoned_only=True
            )
            _cancel_tasks(connection, connection.name, task_ids, self.handovers)
        if connection.state in ("failed", "disconnected", "closed"):
            self._ended(connection)
        if (
            connection.state == "disconnected"
            and connection.config.reconnect is not None
            and not isinstance(connection.error, SignInRequiredError)  # retrying cannot sign in
        ):
            self._start_reconnecting(connection)

    # -- restart and reconnection -----------------------------------------------------------------

    def restart(self, name: str) -> None:
        """Replace one server's connection with a new one of the current configuration (after a
        sign-in); returns once it is ready or failed. Does nothing unless the hub is running and has
        that server; once a reload removed it, nothing comes back."""
        with self._machine.condition:
            self.check_usable()
            old = self._connections.get(name)
            if self._machine.state != "running" or old is None:
                return
            self._replace([old])
        try:
            self._stop([old], abort=False)
        finally:
            with self._machine.condition:
                if self._machine.state in ("starting", "running"):
                    self._fill()
        with self._machine.condition:
            if self._machine.state != "running":
                raise MCPSyncError("the hub was closed while the server restarted")
            new = self._connections.get(name)
        if new is not None and new is not old:
            _wait_ready([new])

    def _start_reconnecting(self, connection: ServerConnection) -> None:
        """Start reconnecting a server whose ready connection dropped (its loop thread calls this), also
        while other servers are still starting; close() stops it like any other."""
        with self._machine.condition:
            if not self._reconnects() or self._connections.get(connection.name) is not connection:
                return
            reconnector = Reconnector(
                connection.config,
                connection.error,
                connect=self._reconnect_attempt,
                announce=self._announce_reconnecting,
                finished=self._reconnector_finished,
            )
            self._reconnectors = {**self._reconnectors, connection.name: reconnector}
            try:
                reconnector.start()
            except RuntimeError:  # the interpreter is shutting down: no new threads
                self._reconnectors = {n: r for n, r in self._reconnectors.items() if r is not reconnector}

    def _reconnect_attempt(self, reconnector: Reconnector) -> ServerConnection | None:
        """One attempt: the ended connection is stopped and forgotten, and a new one launched in its place."""
        name = reconnector.name
        with self._machine.condition:
            if not self._wants(reconnector):
                return None
            old = self._connections.get(name)
        if old is not None:
            self._stop([old], abort=False)
        with self._machine.condition:
            if not self._wants(reconnector) or name in self._connections:
                return None
            launched = self._fill()
            return next((connection for connection in launched if connection.name == name), None)

    def _wants(self, reconnector: Reconnector) -> bool:
        return (
            self._reconnects()
            and not reconnector.stopped
            and self._reconnectors.get(reconnector.name) is reconnector
        )

    def _reconnects(self) -> bool:
        """Whether servers that drop are reconnected now: from the first ready server until close()."""
        return self._machine.state in ("starting", "running")

    def _announce_reconnecting(self, reconnector: Reconnector) -> None:
        event: StateEvent = (reconnector.name, "reconnecting", reconnector.error)
        self.registry.dispatcher.post(self.state_listeners.snapshot(), event)

    def _reconnector_finished(self, reconnector: Reconnector) -> None:
        with self._machine.condition:
            if self._reconnectors.get(reconnector.name) is reconnector:
                self._reconnectors = {
                    name: other for name, other in self._reconnectors.items() if other is not reconnector
                }

    def _stop_reconnectors(self, name: str | None = None) -> list[Reconnector]:
        """Stop the reconnectors (of one server, or all) and forget them; under the condition."""
        stopped = [r for n, r in self._reconnectors.items() if name is None or n == name]
        for reconnector in stopped:
            reconnector.stop()
        self._reconnectors = {n: r for n, r in self._reconnectors.items() if r not in stopped}
        return stopped

    # -- hubs nobody closed -------------------------------------------------------------------------

    def abandon(self, description: str, quiet: bool = False) -> None:
        """The finalizer of a hub that was dropped while open: warn (log, if `quiet`), and stop its
        servers without waiting (this may run on any thread, inside a garbage collection)."""
        if self.forked or self._machine.state in ("created", "closed"):
            return
        if quiet:
            logger.debug("closing the dropped %s", description)
        else:
            message = f"unclosed {description}; call close() or use `with`"
            warnings.warn(message, ResourceWarning, stacklevel=2)
        self.begin_close()  # each connection frees its name when it reaches `closed`
        _open_sets.discard(self)


def _wait_ready(connections: list[ServerConnection]) -> bool:
    """Wait until every connection is ready or ended, bounded by the slowest connect deadline; True if
    each is."""
    if not connections:
        return True
    timeout = max(connection.config.connect_timeout for connection in connections) + _START_GRACE
    futures = [connection.ready for connection in connections]
    return interruptible_wait(lambda seconds: not concurrent.futures.wait(futures, seconds)[1], timeout)


def _cancel_tasks(connection: ServerConnection, name: str, task_ids: list[str], handovers: HandOvers) -> None:
    """Have `tasks/cancel` sent through `connection` for handed-over tasks nobody waits for any more."""
    for task_id in task_ids:
        if connection.cancel_task_soon(task_id, f"task {task_id!r} on server {name!r}"):
            handovers.cancel_sent(name, [task_id])
        else:
            logger.warning("could not cancel task %r of server %r; it may be left running", task_id, name)


_open_sets: weakref.WeakSet[ServerSet] = weakref.WeakSet()


def _close_at_exit() -> None:
    """Close the hubs the program left open, before non-daemon threads are joined; starts no thread
    (Python 3.12 refuses new threads at shutdown). Servers still alive at the deadline are killed.

    Each hub is taken out of `_open_sets` as it is closed, so the hook's second registration (the
    `atexit` fallback) finds nothing left to wait for, instead of waiting out a stuck server again."""
    server_sets = list(_open_sets)
    for server_set in server_sets:
        _open_sets.discard(server_set)
    connections = [connection for server_set in server_sets for connection in server_set.begin_close()]
    deadline = time.monotonic() + _EXIT_CLOSE_TIMEOUT
    for connection in connections:
        connection.wait(max(0.0, deadline - time.monotonic()))
    for connection in connections:
        connection.kill()


on_fork_in_child(_open_sets.clear)  # the parent's hubs are the parent's to close
_EXIT_HOOK = ExitHook(_close_at_exit)
"""Armed by the first start (see `ExitHook`): registered then, it runs before pool workers are joined."""
