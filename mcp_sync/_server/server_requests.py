"""The server's requests to the client (elicitation, sampling, roots) and its log messages.

A server asks through the SDK's callbacks: on 2025-era sessions as requests of their own,
on 2026-07-28 sessions inside a call's "input required" result; the SDK routes both to the
same callbacks, so both eras are served here alike. Each answer comes from a plain
synchronous handler that runs on a daemon thread of its own (`mcp-sync:<kind>:<server>`),
never on a server's loop thread, so a handler that blocks stalls neither that server's
other calls nor any other server. A handler has a deadline: past it (or when the request
is cancelled) its `cancelled` Event is set and the server gets an error. A handler's
exception is logged here and becomes a protocol error for the server.

Only the handlers that are set are declared as client capabilities: the SDK declares a
capability exactly when its callback is given. A 2025-11-25 server may ask for a sampling or
elicitation request to run as a task: `request_tasks` runs it through the same handlers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import mcp_types as types

from .._values.errors import describe

__all__ = [
    "ElicitationHandler",
    "ElicitationRequest",
    "ElicitationResponse",
    "RequestHandlers",
    "SamplingHandler",
    "SamplingRequest",
    "SamplingResponse",
    "ServerRequestBridge",
    "chat_message_from",
    "decline_elicitation",
    "log_server_message",
]

logger = logging.getLogger("mcp_sync")

T = TypeVar("T")

DEFAULT_HANDLER_TIMEOUT = 300.0
"""Seconds a handler may take by default (a person may be answering)."""

# The protocol's log levels (RFC 5424) on Python's.
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}


# -- elicitation -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ElicitationRequest:
    """A server asks the user for input: a message and, in form mode, the schema of the answer."""

    server_name: str
    message: str
    requested_schema: Mapping[str, Any] = field(default_factory=dict)
    """A flat JSON Schema object (`properties`, `required`) of the fields to ask for; empty in URL mode."""
    mode: Literal["form", "url"] = "form"
    url: str | None = None
    """URL mode: where the user should go (the answer is only whether they agree to)."""
    cancelled: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)
    """Set when the answer is no longer wanted (the deadline passed, or the call was cancelled)."""


@dataclass(frozen=True)
class ElicitationResponse:
    """The user's answer: accept (with the content), decline, or cancel (dismissed).

    A field that accepted content leaves out is sent with its `default` from the requested schema.
    """

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] | None = None

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None) -> ElicitationResponse:
        """The user answered: `content` holds the values of the requested fields."""
        return cls("accept", dict(content or {}))

    @classmethod
    def decline(cls) -> ElicitationResponse:
        """The user said no to the request."""
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitationResponse:
        """The user dismissed the request without choosing."""
        return cls("cancel")


ElicitationHandler = Callable[[ElicitationRequest], "ElicitationResponse | Mapping[str, Any]"]
"""Answers an elicitation: an `ElicitationResponse`, or a mapping (accepted with that content)."""


def _with_defaults(content: Mapping[str, Any] | None, schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """Accepted content with each field it leaves out set to that field's `default` in the requested
    schema (SEP-1034), so the server gets what the user saw offered; None stays None if nothing is filled."""
    filled = dict(content) if content is not None else {}
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, field_schema in properties.items():
            if name not in filled and isinstance(field_schema, Mapping) and "default" in field_schema:
                filled[name] = field_schema["default"]
    return filled if content is not None or filled else None


def decline_elicitation(request: ElicitationRequest) -> ElicitationResponse:
    """The default elicitation handler: declines every request."""
    logger.info(
        "declined an elicitation from server %r (no handler set): %s", request.server_name, request.message
    )
    return ElicitationResponse.decline()


# -- sampling --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplingRequest:
    """A server asks the host's model for a reply to `messages`, with its preferences."""

    server_name: str
    messages: tuple[dict[str, Any], ...]
    """Chat messages `{"role", "content"}` with the text of each message (other parts: `raw`)."""
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_hints: tuple[str, ...] = ()
    """Model names the server would like, best first (hints, not demands)."""
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None
    include_context: str | None = None
    metadata: Mapping[str, Any] | None = None
    raw: types.CreateMessageRequestParams | None = field(default=None, repr=False, compare=False)
    cancelled: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)

    def as_chat_messages(self) -> list[dict[str, Any]]:
        """The messages for an OpenAI-style chat API, the system prompt first."""
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return [*system, *(dict(message) for message in self.messages)]


@dataclass(frozen=True)
class SamplingResponse:
    """The model's reply: its text, the model that wrote it, and why it stopped."""

    text: str
    model: str
    stop_reason: str | None = "endTurn"


SamplingHandler = Callable[[SamplingRequest], "SamplingResponse | str"]
"""Answers a sampling request: a `SamplingResponse`, or the reply's text."""


def chat_message_from(message: types.SamplingMessage) -> dict[str, Any]:
    blocks = message.content if isinstance(message.content, list) else [message.content]
    texts = [block.text for block in blocks if isinstance(block, types.TextContent)]
    return {"role": message.role, "content": "\n".join(texts)}


def _sampling_request(server_name: str, params: types.CreateMessageRequestParams) -> SamplingRequest:
    preferences = params.model_preferences
    hints = tuple(hint.name for hint in (preferences.hints or ()) if hint.name) if preferences else ()
    return SamplingRequest(
        server_name=server_name,
        messages=tuple(chat_message_from(message) for message in params.messages),
        max_tokens=params.max_tokens,
        system_prompt=params.system_prompt,
        temperature=params.temperature,
        stop_sequences=tuple(params.stop_sequences or ()),
        model_hints=hints,
        cost_priority=preferences.cost_priority if preferences else None,
        speed_priority=preferences.speed_priority if preferences else None,
        intelligence_priority=preferences.intelligence_priority if preferences else None,
        include_context=params.include_context,
        metadata=params.metadata,
        raw=params,
    )


# -- the bridge from the SDK's callbacks to the handlers ----------------------------------------------


@dataclass(frozen=True)
class RequestHandlers:
    """The handlers one server's requests go to; None means not supported (and not declared)."""

    elicitation: ElicitationHandler | None = decline_elicitation
    sampling: SamplingHandler | None = None
    timeout: float = DEFAULT_HANDLER_TIMEOUT


class _HandlerFailed(Exception):
    """A handler raised, returned something unusable, or missed its deadline."""


class ServerRequestBridge:
    """One connection's SDK callbacks (loop side) and its roots (settable from any thread)."""

    def __init__(
        self,
        server_name: str,
        handlers: RequestHandlers,
        roots: Sequence[str] | None,
        log_level: str | None = None,
    ) -> None:
        self._name = server_name
        # Messages below the configured level are dropped here too: not every server honours it.
        self._min_level = _LEVELS.get(log_level, logging.NOTSET) if log_level is not None else logging.NOTSET
        self._handlers = handlers
        self._roots: tuple[str, ...] | None = tuple(roots) if roots is not None else None
        self._log = logging.getLogger(f"mcp_sync.server.{server_name}")

    @property
    def roots(self) -> tuple[str, ...] | None:
        return self._roots

    def set_roots(self, roots: Sequence[str]) -> None:
        self._roots = tuple(roots)

    def wanted_log_level(self) -> str:
        """The MCP log level that asks for what the server's logger records: the lowest level at or
        above the logger's effective level (read at connect time)."""
        effective = self._log.getEffectiveLevel()
        return next((name for name, number in _LEVELS.items() if number >= effective), "emergency")

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for `mcp.Client`: only the callbacks whose handlers are set."""
        options: dict[str, Any] = {"logging_callback": self._on_log}
        if self._handlers.elicitation is not None:
            options["elicitation_callback"] = self._on_elicitation
        if self._handlers.sampling is not None:
            options["sampling_callback"] = self._on_sampling
        if self._roots is not None:
            options["list_roots_callback"] = self._on_list_roots
        return options

    def task_methods(self) -> frozenset[str]:
        """The server requests this client can run as tasks (2025-11-25): those it has a handler for."""
        kinds = {
            "elicitation/create": self._handlers.elicitation,
            "sampling/createMessage": self._handlers.sampling,
        }
        return frozenset(method for method, handler in kinds.items() if handler is not None)

    async def answer(
        self, request: types.CreateMessageRequest | types.ElicitRequest
    ) -> types.CreateMessageResult | types.ElicitResult | types.ErrorData:
        """Answer a sampling or elicitation request the server asked to run as a task, as the direct
        request would be answered (same handler, thread and deadline)."""
        if isinstance(request, types.CreateMessageRequest):
            return await self._on_sampling(None, request.params)
        return await self._on_elicitation(None, request.params)

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        if _LEVELS.get(str(params.level), logging.INFO) >= self._min_level:
            log_server_message(self._log, params)

    async def _on_list_roots(self, context: Any) -> types.ListRootsResult | types.ErrorData:
        roots = self._roots or ()
        try:
            return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in roots])  # type: ignore[arg-type]
        except ValueError as exc:
            logger.error("server %r asked for its roots, and they are invalid: %s", self._name, exc)
            return types.ErrorData(code=types.INTERNAL_ERROR, message="the client's roots are invalid")

    async def _on_elicitation(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        handler = self._handlers.elicitation
        assert handler is not None
        if isinstance(params, types.ElicitRequestURLParams):
            request = ElicitationRequest(self._name, params.message, {}, mode="url", url=params.url)
        else:
            schema = params.requested_schema
            dumped = (
                schema if isinstance(schema, dict) else schema.model_dump(by_alias=True, exclude_none=True)
            )
            request = ElicitationRequest(self._name, params.message, dumped)
        try:
            answer = await self._run("elicitation", handler, request, request.cancelled)
            if isinstance(answer, Mapping):
                answer = ElicitationResponse.accept(answer)
            if not isinstance(answer, ElicitationResponse):
                raise _HandlerFailed(
                    f"the elicitation handler returned {type(answer).__name__}, not an ElicitationResponse"
                )
            accepted = answer.action == "accept"
            content = _with_defaults(answer.content, request.requested_schema) if accepted else None
            return types.ElicitResult(action=answer.action, content=content)
        except _HandlerFailed as exc:
            return self._error("elicitation", exc)
        except Exception as exc:  # the answer could not be made into a result (bad content types)
            return self._error("elicitation", _HandlerFailed(f"its answer is invalid: {describe(exc)}"))

    async def _on_sampling(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        handler = self._handlers.sampling
        assert handler is not None
        request = _sampling_request(self._name, params)
        try:
            answer = await self._run("sampling", handler, request, request.cancelled)
            if isinstance(answer, str):
                answer = SamplingResponse(text=answer, model="unknown")
            if not isinstance(answer, SamplingResponse):
                raise _HandlerFailed(
                    f"the sampling handler returned {type(answer).__name__}, not a SamplingResponse or str"
                )
            return types.CreateMessageResult(
                role="assistant",
                content=types.TextContent(type="text", text=answer.text),
                model=answer.model,
                stop_reason=answer.stop_reason,
            )
        except _HandlerFailed as exc:
            return self._error("sampling", exc)

    async def _run(
        self, kind: str, handler: Callable[[Any], T], request: Any, cancelled: threading.Event
    ) -> T:
        """Run `handler(request)` on a daemon thread of its own and await it, within the deadline."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(handler(request))
            except BaseException as exc:
                future.set_exception(exc)

        thread = threading.Thread(target=work, name=f"mcp-sync:{kind}:{self._name}", daemon=True)
        thread.start()
        timeout = self._handlers.timeout
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.wrap_future(future)
        except TimeoutError:
            cancelled.set()
            raise _HandlerFailed(f"the {kind} handler did not answer within {timeout:g} s") from None
        except asyncio.CancelledError:
            cancelled.set()  # the server or the caller no longer wants the answer
            raise
        except Exception as exc:
            logger.error(
                "the %s handler raised answering server %r: %s", kind, self._name, describe(exc), exc_info=exc
            )
            raise _HandlerFailed(f"the {kind} handler failed: {describe(exc)}") from exc

    def _error(self, kind: str, exc: _HandlerFailed) -> types.ErrorData:
        logger.warning("answering a %s request of server %r with an error: %s", kind, self._name, exc)
        return types.ErrorData(code=types.INTERNAL_ERROR, message=f"client: {exc}")


def log_server_message(log: logging.Logger, params: types.LoggingMessageNotificationParams) -> None:
    """A server's log message on `log` at the matching Python level (`logger` field in front)."""
    level = _LEVELS.get(str(params.level), logging.INFO)
    if not log.isEnabledFor(level):
        return
    data = params.data if isinstance(params.data, str) else json.dumps(params.data, default=str)
    if params.logger:
        log.log(level, "[%s] %s", params.logger, data)
    else:
        log.log(level, "%s", data)
