"""One connection's resources, prompts and server requests: the loop side and the blocking side.

A `ServerFeatures` belongs to one `ServerConnection`. On the loop thread it gives the
`mcp.Client` its callbacks (`_server.server_requests`), keeps the catalog in sync (`_server.catalog_sync`)
once the tools are listed, holds the 2026-07-28 resource-update stream, and routes the
2025-era notifications (and, through `wrap_transport`, the server's requests run as tasks). On
callers' threads it runs requests other than tool calls (read a resource, get a prompt, complete,
subscribe) the way tool calls run: handed to the loop as a
task, waited for on a lock, and cancelled on the server when the caller gives up (timeout,
cancel Event, Ctrl-C). When the connection ends, its catalog entries go and its requests fail.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._config import ServerConfig
from .._os.waits import wait_future
from .._runtime.callbacks import CallbackDispatcher
from .._runtime.calls import CallSlot, CallSoon, LoopCalls, request_failure, timed_out
from .._values.errors import (
    ResourceNotFoundError,
    ServerDisconnectedError,
    ToolCallError,
    UnsupportedFeatureError,
    describe,
)
from .._values.scrubbed_errors import scrub_exception
from .._values.secrets import scrub
from .catalog_sync import CatalogSync
from .leases import CatalogLease, CatalogOpener
from .request_tasks import RequestTasks
from .server_requests import RequestHandlers, ServerRequestBridge
from .transports import answer_lost

__all__ = ["ResourceUpdateCallback", "ServerFeatures"]

logger = logging.getLogger("mcp_sync")

T = TypeVar("T")
ResourceUpdateCallback = Callable[[str], object]
"""Called as `callback(uri)` on the callback thread when a subscribed resource changed."""

# The MCP error code for "resource not found" (2025 revisions).
_RESOURCE_NOT_FOUND = -32002


def _not_bound(*_args: Any) -> bool:
    """The loop hand-over before `bind()`: nothing runs."""
    return False


class ServerFeatures:
    """Resources, prompts, completions and server requests of one connection; see the module docstring."""

    def __init__(
        self,
        config: ServerConfig,
        catalog: CatalogOpener,
        handlers: RequestHandlers,
        dispatcher: CallbackDispatcher,
    ) -> None:
        self.config = config
        self.name = config.server_name
        self._catalog = catalog
        self._dispatcher = dispatcher
        self.bridge = ServerRequestBridge(self.name, handlers, config.roots, config.log_level)
        self._call_soon: CallSoon = _not_bound
        # Loop-thread state.
        self.client: Client | None = None
        self._lease: CatalogLease | None = None
        self._sync: CatalogSync | None = None
        self._calls = LoopCalls(_not_bound, self._abandoned)
        self._subscriptions_changed: asyncio.Event | None = None
        self._acks: list[tuple[str, concurrent.futures.Future[None]]] = []
        self._ended = False
        # Any thread: uri -> callbacks, replaced on write.
        self._lock = threading.Lock()
        self._subscribers: dict[str, tuple[ResourceUpdateCallback, ...]] = {}

    def bind(self, call_soon: CallSoon) -> None:
        """How to run a callable on the connection's loop thread (its `call_soon`)."""
        self._call_soon = call_soon
        self._calls = LoopCalls(call_soon, self._abandoned)

    @property
    def modern(self) -> bool:
        client = self.client
        return client is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS

    # -- loop side ----------------------------------------------------------------------------------

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for the connection's `mcp.Client`."""
        options = self.bridge.client_options()
        # The 2026-07-28 opt-in, without which such a server sends no log message at all; by default what
        # the server's logger records, as a 2025 server (which sends everything) gives. 2025: see connected().
        options["log_level"] = self.config.log_level or self.bridge.wanted_log_level()
        return options

    def wrap_transport(self, transport: Any) -> Any:
        """The connection's transport, running the server's sampling and elicitation requests as tasks when
        a 2025-11-25 server asks (`_server.request_tasks`); as it is when the client has no such handler."""
        if not self.bridge.task_methods():
            return transport
        return RequestTasks(self.name, self.bridge).wrap(transport)

    async def connected(self, client: Client, task_group: anyio.abc.TaskGroup) -> None:
        """After the first tool listing: list resources and prompts and keep them (and updates) flowing."""
        self.client = client
        self._subscriptions_changed = asyncio.Event()
        modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
        capabilities = client.server_capabilities
        if self.config.log_level is not None and not modern and capabilities.logging is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await client.set_logging_level(self.config.log_level)
            except Exception as exc:
                logger.warning(
                    "server %r refused log level %r: %s", self.name, self.config.log_level, describe(exc)
                )
        lease = self._lease = self._catalog.open(self.name)
        sync = self._sync = CatalogSync(self.config, lease, client)
        if not sync.kinds:
            return
        if modern:
            await task_group.start(
                sync.listen
            )  # subscribed before the first listing: no change falls between
        await sync.sync_all()
        for kind in sync.kinds:
            task_group.start_soon(sync.resync_when_dirty, kind)
        if modern and "resources" in sync.kinds:
            task_group.start_soon(self._hold_update_stream, client)

    def on_message(self, message: Any) -> None:
        """A 2025-era notification from the session's message handler."""
        if self._sync is not None:
            if isinstance(message, types.ResourceListChangedNotification):
                self._sync.mark_dirty("resources")
            elif isinstance(message, types.PromptListChangedNotification):
                self._sync.mark_dirty("prompts")
        if isinstance(message, types.ResourceUpdatedNotification):
            self._updated(str(message.params.uri))

    def end(self, then: Callable[[], object] | None = None) -> None:
        """The connection ended: its catalog entries go, its requests and waiting subscribers fail.
        `then()` runs once the entries are gone, before their removal is announced (`CatalogLease.end`)."""
        self._ended = True
        self.client = None
        if self._lease is not None:
            self._lease.end(then)
        elif then is not None:
            then()
        self._calls.end()
        for _uri, ack in self._acks:
            if not ack.done():
                ack.set_exception(ServerDisconnectedError(f"server {self.name!r} is gone"))
        self._acks = []

    def _updated(self, uri: str) -> None:
        callbacks = self._subscribers.get(uri, ())
        self._dispatcher.post(callbacks, uri)

    async def _hold_update_stream(self, client: Client) -> None:
        """2026-07-28: one `subscriptions/listen` stream for the subscribed URIs, reopened on change."""
        changed = self._subscriptions_changed
        assert changed is not None
        while True:
            uris = sorted(self._subscribers)
            acks, self._acks = self._acks, []
            changed.clear()
            if not uris:
                for _uri, ack in acks:
                    if not ack.done():
                        ack.set_result(None)
                await changed.wait()
                continue
            try:
                async with client.listen(resource_subscriptions=uris) as subscription:
                    honored = set(subscription.honored.resource_subscriptions or ())
                    for uri, ack in acks:
                        if ack.done():
                            continue
                        if uri in honored:
                            ack.set_result(None)
                        else:
                            ack.set_exception(
                                UnsupportedFeatureError(
                                    f"server {self.name!r} does not deliver updates of {uri!r}"
                                )
                            )
                    async with anyio.create_task_group() as group:

                        async def stop_on_change() -> None:
                            await changed.wait()
                            group.cancel_scope.cancel()

                        group.start_soon(stop_on_change)
                        async for event in subscription:
                            if isinstance(event, ResourceUpdated):
                                self._updated(event.uri)
                        group.cancel_scope.cancel()
            except Exception as exc:
                for _uri, ack in acks:
                    if not ack.done():
                        refused = f"server {self.name!r} refused the subscription: {describe(exc)}"
                        ack.set_exception(scrub_exception(ToolCallError(refused)))
                logger.warning("server %r: the resource update stream ended: %s", self.name, describe(exc))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(1.0):
                        await changed.wait()

    # -- requests (caller threads) ----------------------------------------------------------------------

    def request(
        self,
        make: Callable[[Client], Awaitable[T]],
        *,
        label: str,
        timeout: float,
        cancel: threading.Event | None,
    ) -> T:
        """Run `make(client)` on the loop and wait for it; cancelled on the server if the caller gives up."""
        slot: CallSlot[T] = CallSlot()
        if self._ended or not self._calls.hand_over(slot, label, self._perform, make, label):
            raise ServerDisconnectedError(
                f"server {self.name!r} is not connected; cannot {label}", tool=label
            )
        return self._calls.wait(slot, label, timeout, cancel)

    def _abandoned(self, label: str) -> BaseException:
        return ServerDisconnectedError(f"server {self.name!r} went away; {label} was abandoned", tool=label)

    async def _perform(self, make: Callable[[Client], Awaitable[T]], label: str) -> T:
        client = self.client
        if client is None or self._ended:
            raise ServerDisconnectedError(
                f"server {self.name!r} is not connected; cannot {label}", tool=label
            )
        try:
            try:
                return await make(client)
            except MCPError as lost:
                # The connection broke after the request was sent (see `transports`): asking again
                # changes nothing for a read, a prompt, a completion or a subscription, so it is.
                if not answer_lost(lost) or self._ended or self.client is not client:
                    raise
                logger.info("server %r: the connection broke during %s; sending it again", self.name, label)
                return await make(client)
        except ToolCallError:
            raise
        except Exception as exc:
            if isinstance(exc, MCPError) and exc.code == _RESOURCE_NOT_FOUND:
                raise ResourceNotFoundError(scrub(f"server {self.name!r}: {exc.message}")) from exc
            failure = request_failure(exc, self.name, label, tool=label)
            if failure is not None:
                raise failure from exc
            raise ToolCallError(
                scrub(f"server {self.name!r} sent an invalid answer to {label}: {describe(exc)}"), tool=label
            ) from exc

    # -- subscriptions and roots (caller threads) ----------------------------------------------------

    def subscribe(self, uri: str, callback: ResourceUpdateCallback, *, timeout: float) -> Callable[[], None]:
        """Call `callback(uri)` when the resource changes; returns the unsubscribe function."""
        client = self.client
        if client is None:
            raise ServerDisconnectedError(f"server {self.name!r} is not connected")
        resources = client.server_capabilities.resources
        if resources is None or not resources.subscribe:
            raise UnsupportedFeatureError(f"server {self.name!r} does not support resource subscriptions")
        with self._lock:
            first = uri not in self._subscribers
            self._subscribers = {**self._subscribers, uri: (*self._subscribers.get(uri, ()), callback)}
        try:
            if first:
                self._open_subscription(uri, timeout)
        except BaseException:
            self._drop_subscriber(uri, callback)
            raise
        done = threading.Event()

        def unsubscribe() -> None:
            if done.is_set():
                return
            done.set()
            if self._drop_subscriber(uri, callback):
                self._close_subscription(uri, timeout)

        return unsubscribe

    def _drop_subscriber(self, uri: str, callback: ResourceUpdateCallback) -> bool:
        """Remove one callback; True if it was the uri's last."""
        with self._lock:
            callbacks = list(self._subscribers.get(uri, ()))
            if callback in callbacks:
                callbacks.remove(callback)
            if callbacks:
                self._subscribers = {**self._subscribers, uri: tuple(callbacks)}
                return False
            self._subscribers = {key: value for key, value in self._subscribers.items() if key != uri}
            return True

    def _open_subscription(self, uri: str, timeout: float) -> None:
        if self.modern:
            ack: concurrent.futures.Future[None] = concurrent.futures.Future()

            def ask() -> None:
                self._acks.append((uri, ack))
                if self._subscriptions_changed is not None:
                    self._subscriptions_changed.set()

            if not self._call_soon(ask):
                raise ServerDisconnectedError(f"server {self.name!r} is not connected")
            if not wait_future(ack, timeout):
                raise timed_out(f"subscribe to {uri}", timeout, "the server")
            ack.result()
            return

        async def subscribe(client: Client) -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                return await client.subscribe_resource(uri)

        self.request(subscribe, label=f"subscribe to {uri}", timeout=timeout, cancel=None)

    def _close_subscription(self, uri: str, timeout: float) -> None:
        if self._ended:
            return
        if self.modern:
            self._call_soon(self._poke_subscriptions)
            return

        async def unsubscribe(client: Client) -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                return await client.unsubscribe_resource(uri)

        try:
            self.request(unsubscribe, label=f"unsubscribe from {uri}", timeout=timeout, cancel=None)
        except ToolCallError as exc:
            logger.warning("unsubscribing from %s on server %r failed: %s", uri, self.name, exc)

    def _poke_subscriptions(self) -> None:
        if self._subscriptions_changed is not None:
            self._subscriptions_changed.set()

    def set_roots(self, roots: Sequence[str], *, timeout: float) -> None:
        """Replace the roots the server is given; a 2025-era server is told they changed."""
        if self.bridge.roots is None:
            raise UnsupportedFeatureError(
                f"server {self.name!r} was connected without roots; add `roots:` to its configuration "
                "(an empty list will do) so that the roots capability is declared"
            )
        self.bridge.set_roots(roots)
        if self.client is None or self.modern:
            return  # a 2026-07-28 server asks for the roots each time it needs them

        async def notify(client: Client) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.send_roots_list_changed()

        self.request(notify, label="roots/list_changed", timeout=timeout, cancel=None)
