"""OpenTelemetry spans for tool calls, resource reads and prompt gets; opt-in with `MCPHub(tracing=...)`.

The spans follow the OpenTelemetry semantic conventions for MCP client spans (the GenAI semantic
conventions, `semantic-conventions-genai` v0.1.0, "Semantic conventions for Model Context Protocol";
status Development): kind CLIENT, named `{mcp.method.name} {target}` (`tools/call echo`,
`prompts/get greet`, `resources/read`: a URI is no low-cardinality name), with `mcp.method.name`,
`gen_ai.operation.name` = `execute_tool` and `gen_ai.tool.name` for tool calls, `gen_ai.prompt.name`,
`mcp.resource.uri`, `mcp.protocol.version`, `mcp.session.id` (Streamable HTTP sessions),
`network.transport` (`pipe` for stdio, `tcp` for Streamable HTTP and SSE), `server.address` /
`server.port`, and on failure `error.type` with status ERROR: `timeout`, `cancelled`, the JSON-RPC
error code (also as `rpc.response.status_code`), `tool_error` for an `isError` result, or the error's
class name. `mcp_sync.server.name` and `mcp_sync.tool.public_name` say which configured server and
which public name. No argument, result or content is recorded; error descriptions are scrubbed of secrets.

A call that runs as an MCP task is one span all the same, from the call to its result (its polls are
not spans of their own): `mcp_sync.task.id` once the server created the task, and
`mcp_sync.task.status`, the last status the client learnt before the span ended (`completed`,
`failed`, `cancelled`, or `working` for a call that gave up first). The loop side reports them through
`_runtime.task_watch`, a watcher set in the context the call is handed over in.

Threads: a span starts on the caller's thread, as a child of the caller's current span, and is
current while the call is handed to the server's loop; the call's task runs in a copy of that
context (`_calls`), so the `traceparent` the SDK puts in the request's `_meta` continues this trace
on the server. The span ends once, where the caller gets the outcome: a blocking call on the
caller's thread once it has its result or gives up (timeout, cancel Event, Ctrl-C); a `submit()`
call in its Future's done callback (result, error or `cancel()`).

Only a hub with tracing on imports this module.
"""

from __future__ import annotations

import concurrent.futures
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from .._config import HttpServerConfig, ServerConfig, SseServerConfig
from .._runtime.task_watch import TASK_WATCHER
from .._values.errors import (
    ServerDisconnectedError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
)
from .._values.secrets import scrub
from .._values.tasks import TaskInfo

__all__ = ["CallSpan", "TracedServer", "Tracing"]

T = TypeVar("T")

_INSTRUMENTATION_NAME = "mcp_sync"
_SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"


class TracedServer(Protocol):
    """What a span says about the server a call goes to (a `ServerConnection`)."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def session_id(self) -> str | None: ...


class Tracing:
    """A hub's tracer: starts the span of each traced request."""

    def __init__(self, provider: trace.TracerProvider | None) -> None:
        """`provider` None: the process-wide tracer provider (`opentelemetry.trace.set_tracer_provider`)."""
        from .._values.version import __version__

        self._tracer = trace.get_tracer(
            _INSTRUMENTATION_NAME, __version__, tracer_provider=provider, schema_url=_SCHEMA_URL
        )

    def tool_call(self, server: TracedServer, raw_name: str, public_name: str) -> CallSpan:
        attributes = {
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": raw_name,
            "mcp_sync.tool.public_name": public_name,
        }
        return self._start(f"tools/call {raw_name}", server, attributes, tool_call=True)

    def resource_read(self, server: TracedServer, uri: str) -> CallSpan:
        attributes = {"mcp.method.name": "resources/read", "mcp.resource.uri": scrub(uri)}
        return self._start("resources/read", server, attributes)

    def prompt_get(self, server: TracedServer, raw_name: str, public_name: str) -> CallSpan:
        attributes = {
            "mcp.method.name": "prompts/get",
            "gen_ai.prompt.name": raw_name,
            "mcp_sync.prompt.public_name": public_name,
        }
        return self._start(f"prompts/get {raw_name}", server, attributes)

    def _start(
        self, name: str, server: TracedServer, attributes: dict[str, Any], *, tool_call: bool = False
    ) -> CallSpan:
        attributes.update(_server_attributes(server))
        span = self._tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
        return CallSpan(span, tool_call=tool_call)


class CallSpan:
    """One request's span: current while the request is handed over, ended once with its outcome."""

    __slots__ = ("_ended", "_lock", "_span", "_tool_call")

    def __init__(self, span: trace.Span, *, tool_call: bool) -> None:
        self._span = span
        self._tool_call = tool_call
        self._lock = threading.Lock()
        self._ended = False

    def run(self, call: Callable[[], T]) -> T:
        """Make a blocking call with this span current; end the span with its outcome."""
        token = otel_context.attach(trace.set_span_in_context(self._span))
        watching = TASK_WATCHER.set(self._task_seen) if self._tool_call else None
        try:
            result = call()
        except BaseException as exc:
            self.end(error=exc)
            raise
        finally:
            if watching is not None:
                TASK_WATCHER.reset(watching)
            otel_context.detach(token)
        self.end(result)
        return result

    def follow(self, start: Callable[[], concurrent.futures.Future[T]]) -> concurrent.futures.Future[T]:
        """Start a call that returns a Future, with this span current; the span ends with the Future."""
        token = otel_context.attach(trace.set_span_in_context(self._span))
        watching = TASK_WATCHER.set(self._task_seen) if self._tool_call else None
        try:
            future = start()
        except BaseException as exc:
            self.end(error=exc)
            raise
        finally:
            if watching is not None:
                TASK_WATCHER.reset(watching)
            otel_context.detach(token)
        future.add_done_callback(self._future_done)
        return future

    def _task_seen(self, info: TaskInfo) -> None:
        """The call's task as the loop side last learnt it (on the loop thread): its id and status."""
        with self._lock:  # an ended span takes no attribute
            if self._ended:
                return
            self._span.set_attribute("mcp_sync.task.id", info.task_id)
            self._span.set_attribute("mcp_sync.task.status", info.status)

    def _future_done(self, future: concurrent.futures.Future[Any]) -> None:
        if future.cancelled():
            self.end(error=ToolCallCancelledError("the call's Future was cancelled"))
        elif (error := future.exception()) is not None:
            self.end(error=error)
        else:
            self.end(future.result())

    def end(self, result: object = None, error: BaseException | None = None) -> None:
        """End the span (only the first end counts): ERROR with `error.type` for an error or a tool error."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        span = self._span
        if error is not None:
            span.set_attribute("error.type", error_type(error))
            code = getattr(error, "code", None)
            if isinstance(error, ToolCallError) and isinstance(code, int):
                span.set_attribute("rpc.response.status_code", str(code))
            span.set_status(StatusCode.ERROR, scrub(str(error)) or type(error).__name__)
        elif self._tool_call and getattr(result, "is_error", False):
            span.set_attribute("error.type", "tool_error")
            span.set_status(StatusCode.ERROR)
        span.end()


def error_type(error: BaseException) -> str:
    """The low-cardinality `error.type` of a request's error."""
    if isinstance(error, ToolCallTimeoutError):
        return "timeout"
    if isinstance(error, ToolCallCancelledError):
        return "cancelled"
    code = getattr(error, "code", None)
    if (
        isinstance(error, ToolCallError)
        and not isinstance(error, ServerDisconnectedError)
        and code is not None
    ):
        return str(code)
    return type(error).__qualname__


def _server_attributes(server: TracedServer) -> dict[str, Any]:
    config = server.config
    attributes: dict[str, Any] = {"mcp_sync.server.name": config.server_name}
    if server.protocol_version:
        attributes["mcp.protocol.version"] = server.protocol_version
    if isinstance(config, HttpServerConfig | SseServerConfig):
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
        url = urllib.parse.urlsplit(config.url)  # host and port only: never the URL's credentials
        if url.hostname:
            attributes["server.address"] = url.hostname
            attributes["server.port"] = url.port or (443 if url.scheme == "https" else 80)
        if isinstance(config, HttpServerConfig) and server.session_id:
            attributes["mcp.session.id"] = server.session_id
    else:
        attributes["network.transport"] = "pipe"
    return attributes
