"""The hub's resources, prompts, completions and server-request settings: a mixin of `MCPHub`.

What it adds to the hub is one view over every server's resources, resource templates and
prompts (the `Catalog`), and blocking requests routed to the server that offers what is
asked for, with the same timeout, cancel and Ctrl-C contract as tool calls (run by each
connection's `ServerFeatures`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp import Client

from .._config import ServerConfig, root_uri
from .._runtime.callbacks import HeldCallbacks
from .._runtime.calls import resolve_timeout
from .._server.features import ResourceUpdateCallback, ServerFeatures
from .._server.server_requests import (
    DEFAULT_HANDLER_TIMEOUT,
    ElicitationHandler,
    RequestHandlers,
    SamplingHandler,
    decline_elicitation,
)
from .._values.errors import (
    AmbiguousResourceError,
    MCPSyncError,
    PromptNotFoundError,
    ResourceNotFoundError,
    ServerDisconnectedError,
    UnsupportedFeatureError,
)
from .._values.naming import public_tool_name
from .._values.prompts import Prompt, PromptResult, prompt_result_from
from .._values.resources import Resource, ResourceResult, ResourceTemplate, resource_result_from
from .._values.suggestions import public_name_hint
from .catalog import Catalog
from .connection import ServerConnection
from .registry import ToolRegistry
from .resource_tool import (
    RESOURCE_TOOL_RAW_NAME,
    make_resource_tool,
    resource_tool_description,
    resource_tool_schema,
)
from .servers import ServerSet

if TYPE_CHECKING:
    from .tracing import Tracing

__all__ = ["PASS_SERVER", "Completion", "FeatureHub"]

logger = logging.getLogger("mcp_sync")

# How a lookup that needs the server's name says so; the command line says its own option instead.
PASS_SERVER = "pass server=<name>"

_UNSET: Any = object()


class Completion:
    """Suggested values for an argument being typed: `values` (at most 100), `total`, `has_more`."""

    __slots__ = ("has_more", "total", "values")

    def __init__(self, values: Sequence[str], total: int | None, has_more: bool) -> None:
        self.values = list(values)
        self.total = total
        self.has_more = has_more

    def __repr__(self) -> str:
        return f"Completion(values={self.values!r}, total={self.total!r}, has_more={self.has_more!r})"


def _pick(choice: Any, server_name: str, default: Any) -> Any:
    if isinstance(choice, Mapping):
        return choice.get(server_name, default)
    return default if choice is _UNSET else choice


def _check_handler(argument: str, choice: Any) -> None:
    """A handler argument is a callable, None, or a mapping of server name to either: else a TypeError
    naming the argument, at the hub's construction rather than at the server's first request."""
    if isinstance(choice, Mapping):
        for name, handler in choice.items():
            if handler is not None and not callable(handler):
                kind = type(handler).__name__
                raise TypeError(f"{argument}[{name!r}] must be a callable or None, not {kind}")
    elif choice is not None and not callable(choice):
        raise TypeError(
            f"{argument} must be a callable, a mapping of server name to one, or None, "
            f"not {type(choice).__name__}"
        )


def _held_choice(held: HeldCallbacks, choice: Any, fallback: Callable[..., Any]) -> Any:
    """`choice` (a handler, a mapping of server name to handler, or None) with each handler a stand-in."""
    if isinstance(choice, Mapping):
        return {name: _held_choice(held, handler, fallback) for name, handler in choice.items()}
    return None if choice is None else held.weak(choice, fallback)[0]


def _unanswered(request: object) -> object:
    raise MCPSyncError("the hub was dropped; nobody answers this request")


class FeatureHub:
    """Resources, prompts, completions, roots and server requests; mixed into `MCPHub`."""

    registry: ToolRegistry
    _servers: ServerSet
    _held: HeldCallbacks
    _tracing: Tracing | None

    def _init_features(
        self,
        *,
        elicitation: ElicitationHandler | Mapping[str, ElicitationHandler | None] | None,
        sampling: SamplingHandler | Mapping[str, SamplingHandler | None] | None,
        handler_timeout: float,
    ) -> Callable[[ServerConfig], ServerFeatures]:
        """Make the catalog; return the factory of each connection's `ServerFeatures`."""
        _check_handler("elicitation", elicitation)
        _check_handler("sampling", sampling)
        handler_timeout = resolve_timeout(handler_timeout, DEFAULT_HANDLER_TIMEOUT)
        catalog = self._catalog = Catalog(self.registry.dispatcher)
        dispatcher = self.registry.dispatcher
        # The connections reach the user's handlers only weakly (see `HeldCallbacks`); a dropped hub's
        # servers get elicitation declined and sampling refused.
        elicitation = _held_choice(self._held, elicitation, decline_elicitation)
        sampling = _held_choice(self._held, sampling, _unanswered)

        # Refers to the catalog and the stand-ins, never to the hub or the user's handlers: the server set
        # holds this, and must not keep the hub alive.
        def features(config: ServerConfig) -> ServerFeatures:
            handlers = RequestHandlers(
                elicitation=_pick(elicitation, config.server_name, decline_elicitation),
                sampling=_pick(sampling, config.server_name, None),
                timeout=handler_timeout,
            )
            return ServerFeatures(config, catalog, handlers, dispatcher)

        return features

    # -- listings --------------------------------------------------------------------------------------

    def resources(self) -> list[Resource]:
        """Every server's listed resources (a snapshot), sorted by server and URI."""
        return self._catalog.resources()

    def resource_templates(self) -> list[ResourceTemplate]:
        """Every server's resource templates (a snapshot), sorted by server and template."""
        return self._catalog.resource_templates()

    def prompts(self) -> list[Prompt]:
        """Every server's prompts (a snapshot), sorted by public name `mcp__<server>__<prompt>`."""
        return self._catalog.prompts()

    def on_resource_added(self, callback: Callable[[Resource], object]) -> Callable[[], None]:
        """Call `callback(resource)` for each resource listed from now on; returns the unsubscriber."""
        return self._held.subscribe(self._catalog.resource_added.subscribe, callback)

    def on_resource_removed(self, callback: Callable[[Resource], object]) -> Callable[[], None]:
        """Call `callback(resource)` for each resource that goes from now on; returns the unsubscriber."""
        return self._held.subscribe(self._catalog.resource_removed.subscribe, callback)

    def on_prompt_added(self, callback: Callable[[Prompt], object]) -> Callable[[], None]:
        """Call `callback(prompt)` for each prompt listed from now on; returns the unsubscriber."""
        return self._held.subscribe(self._catalog.prompt_added.subscribe, callback)

    def on_prompt_removed(self, callback: Callable[[Prompt], object]) -> Callable[[], None]:
        """Call `callback(prompt)` for each prompt that goes from now on; returns the unsubscriber."""
        return self._held.subscribe(self._catalog.prompt_removed.subscribe, callback)

    # -- resources -------------------------------------------------------------------------------------

    def read_resource(
        self,
        uri: str,
        *,
        server: str | None = None,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> ResourceResult:
        """Read a resource and block until its contents (text and binary, with MIME types).

        A URI that exactly one server lists needs no `server`; one that several list, or one made
        from a template, names its server. `timeout` and `cancel` work as for `call_tool`, and the
        request is cancelled on the server too. Raises `ResourceNotFoundError`,
        `AmbiguousResourceError`, or the call errors (`ToolCallTimeoutError`, ...).
        """
        name = server if server is not None else self._server_of(uri)
        features = self._features_of(name, "resources")
        seconds = resolve_timeout(timeout, features.config.tool_call_timeout)

        async def read(client: Client) -> types.ReadResourceResult:
            return await client.read_resource(uri)

        request = functools.partial(
            features.request, read, label=f"read {uri}", timeout=seconds, cancel=cancel
        )
        if self._tracing is not None:
            return resource_result_from(
                name, uri, self._tracing.resource_read(self._servers.connections[name], uri).run(request)
            )
        return resource_result_from(name, uri, request())

    def subscribe_resource(
        self, uri: str, callback: ResourceUpdateCallback, *, server: str | None = None
    ) -> Callable[[], None]:
        """Call `callback(uri)` (on the callback thread) each time the server says the resource changed.

        Returns the unsubscribe function. Raises `UnsupportedFeatureError` if the server does not
        support subscriptions.
        """
        name = server if server is not None else self._server_of(uri)
        features = self._features_of(name, "resources")
        timeout = features.config.tool_call_timeout
        # Through a stand-in (see `HeldCallbacks`): the connection must not keep the hub alive.
        return self._held.subscribe(
            lambda stand_in: features.subscribe(uri, stand_in, timeout=timeout), callback
        )

    def _server_of(self, uri: str) -> str:
        offering = self._catalog.servers_offering(uri)
        if len(offering) == 1:
            return offering[0]
        if offering:
            raise AmbiguousResourceError(
                f"servers {', '.join(map(repr, offering))} all list resource {uri!r}; {PASS_SERVER}"
            )
        raise ResourceNotFoundError(
            f"no server lists resource {uri!r}; for a URI made from a resource template, {PASS_SERVER}"
        )

    # -- prompts ---------------------------------------------------------------------------------------

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> PromptResult:
        """Get a prompt by public name, filled with `arguments` (strings), and block until its messages."""
        prompt = self._catalog.prompt(name)
        if prompt is None:
            hint = public_name_hint(name, "prompt", ((p.name, p.raw_name) for p in self._catalog.prompts()))
            raise PromptNotFoundError(f"unknown prompt {name!r}" + (f": {hint}" if hint else ""))
        features = self._features_of(prompt.server_name, "prompts")
        seconds = resolve_timeout(timeout, features.config.tool_call_timeout)
        args = {key: _as_text(value) for key, value in (arguments or {}).items()}

        async def get(client: Client) -> types.GetPromptResult:
            return await client.get_prompt(prompt.raw_name, args)

        request = functools.partial(
            features.request, get, label=f"get prompt {name}", timeout=seconds, cancel=cancel
        )
        if self._tracing is not None:
            span = self._tracing.prompt_get(
                self._servers.connections[prompt.server_name], prompt.raw_name, name
            )
            return prompt_result_from(name, span.run(request))
        return prompt_result_from(name, request())

    # -- completions -----------------------------------------------------------------------------------

    def complete(
        self,
        target: str,
        argument: str,
        value: str = "",
        *,
        context: Mapping[str, str] | None = None,
        server: str | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """Suggestions for `argument` of a prompt (its public name) or of a resource template (its URI
        template), given what has been typed (`value`) and the arguments already chosen (`context`)."""
        prompt = self._catalog.prompt(target)
        ref: types.PromptReference | types.ResourceTemplateReference
        if prompt is not None:
            name = prompt.server_name
            ref = types.PromptReference(type="ref/prompt", name=prompt.raw_name)
        else:
            holders = [server] if server is not None else self._catalog.servers_with_template(target)
            if not holders:
                raise ResourceNotFoundError(f"no prompt or resource template {target!r}")
            if len(holders) > 1:
                raise AmbiguousResourceError(
                    f"servers {', '.join(map(repr, holders))} have template {target!r}; {PASS_SERVER}"
                )
            name = holders[0]
            ref = types.ResourceTemplateReference(type="ref/resource", uri=target)
        features = self._features_of(name, "prompts" if prompt is not None else "resources")
        client = features.client
        if client is not None and client.server_capabilities.completions is None:
            raise UnsupportedFeatureError(f"server {name!r} does not offer completions")
        seconds = resolve_timeout(timeout, features.config.tool_call_timeout)

        async def complete(client: Client) -> types.CompleteResult:
            return await client.complete(ref, {"name": argument, "value": value}, dict(context or {}) or None)

        result = features.request(complete, label=f"complete {target}", timeout=seconds, cancel=None)
        completion = result.completion
        return Completion(completion.values, completion.total, bool(completion.has_more))

    # -- roots -----------------------------------------------------------------------------------------

    def set_roots(self, server: str, roots: Sequence[str | os.PathLike[str]]) -> None:
        """Replace the roots (paths or `file://` URIs) `server` gets from `roots/list`, and tell it."""
        uris = [root_uri(root) for root in roots]
        features = self._features_of(server, None)
        features.set_roots(uris, timeout=features.config.tool_call_timeout)

    # -- resources as a model's tool ---------------------------------------------------------------

    def _offer_resource_tools(self) -> None:
        """Register `mcp__<server>__read_resource` while each server with resources is ready."""
        hub = weakref.ref(self)  # the listener must not keep the hub alive
        registry = self.registry  # the tool goes with its server, the hub dropped or not
        registered: dict[str, str] = {}

        def on_state(event: tuple[str, str, BaseException | None]) -> None:
            server, state, _error = event
            this = hub()
            if state == "ready" and this is not None:
                this._add_resource_tool(server, registered)
            elif server in registered and state in ("failed", "disconnected", "closed"):
                with contextlib.suppress(KeyError):
                    registry.unregister_native(registered.pop(server))

        self._servers.state_listeners.subscribe(on_state)

    def _add_resource_tool(self, server: str, registered: dict[str, str]) -> None:
        connection = self._servers.connections.get(server)
        client = connection.features.client if connection is not None and connection.features else None
        if client is None or client.server_capabilities.resources is None or not connection.config.resources:  # type: ignore[union-attr]
            return
        name = public_tool_name(server, RESOURCE_TOOL_RAW_NAME)
        if name in self.registry:
            logger.warning("not offering %s: a tool of that name exists", name)
            return
        uris = [resource.uri for resource in self._catalog.resources() if resource.server_name == server]
        templates = [t.uri_template for t in self._catalog.resource_templates() if t.server_name == server]
        hub = weakref.ref(self)

        def read(uri: str) -> ResourceResult:
            this = hub()
            if this is None:
                raise ServerDisconnectedError("the hub is gone")
            return this.read_resource(uri, server=server)

        self.registry.register_native(
            name,
            make_resource_tool(read),
            description=resource_tool_description(server, uris, templates),
            input_schema=resource_tool_schema(),
            per_process=True,  # it reads through this hub's connections: a forked child drops it
        )
        registered[server] = name

    # -- helpers ---------------------------------------------------------------------------------------

    def _features_of(self, server: str, kind: str | None) -> ServerFeatures:
        self._servers.check_usable()
        connection = self._servers.connections.get(server)
        if not isinstance(connection, ServerConnection) or connection.features is None:
            raise ServerDisconnectedError(f"no server named {server!r} is connected")
        if connection.state != "ready":
            raise ServerDisconnectedError(f"server {server!r} is {connection.state}")
        features = connection.features
        if kind is not None and not getattr(features.config, kind):
            raise UnsupportedFeatureError(f"server {server!r} is configured with {kind}: false")
        return features

    def _feature_counts(self, server: str) -> tuple[int, int, int]:
        return self._catalog.server_counts(server)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"prompt arguments are strings, not {type(value).__name__}")
