"""Opening one server's transport: our own stdio child, or the SDK's Streamable HTTP or legacy SSE
client, observed.

What the connection needs to know and the SDK does not say:

- when the transport ends by itself (a stdio server that dies while idle fires nothing
  public): the stdio transport reports its stdout's end; over HTTP and SSE, `_ObservedReadStream`
  reports the end of the SDK's read stream;
- when an HTTP server stops accepting connections: the SDK retries its GET stream quietly
  and gives up without a word, so `_ObservedHTTPTransport` reports the refused connection;
- when a message POST of the legacy SSE transport fails: the SDK's writer logs it and stops for
  good, so no request is sent again and the call waits for an answer that never comes;
  `_SseHttpClient` reports it as the transport's end.

A network blip on Streamable HTTP (a reset connection, a moment of refused connections) must not
end the session. In the SDK one POST that fails before its response ends the transport's task
group, and with it the whole client (`mcp/client/streamable_http.py`, `post_writer`), so
`_BlipProofHTTPTransport` keeps every such failure inside the request it belongs to: the session,
its id and its tools stay, and only that request learns of it. Containing it there, below the SDK,
is simpler than re-connecting a new session within a grace: nothing is re-listed, no registry
write is made, and a session id the server issued stays valid (it travels in the `Mcp-Session-Id`
header of every request, not with a TCP connection: "Session Management" in
https://modelcontextprotocol.io/specification/2025-03-26/basic/transports). What it does, by what
the failure proves:

- the connection could not be made (refused, unreachable): the request was not sent, so it waits
  and tries again, for as long as no HTTP response has come for less than `BLIP_GRACE` (a caller's
  `notifications/cancelled` stops it: it is never sent after that);
  past it the failure goes through, the SDK's client ends, and the server is disconnected as any
  lost server is (`reconnect:` then applies);
- the connection broke after the request was written (reset, closed, a response cut short): the
  server may have it. Any message other than a `tools/call` (a listing, a read, a poll of a task, a
  notification, an answer to the server) is sent once more at once, then again within the same grace:
  asking twice changes nothing. A `tools/call` is answered with a
  JSON-RPC error (`CONNECTION_CLOSED`, `ANSWER_LOST`), so that the session decides by its replay
  policy whether the call is sent again;
- a JSON response body is read here, so that a break in it is contained the same way; a broken
  event stream is the SDK's to handle (it answers the request with `CONNECTION_CLOSED`), and a
  broken GET stream (server messages of a 2025 session) ends as if the server closed it, so the
  SDK opens it again rather than count it toward giving up.

A 404 to a request that carried the session id says the server no longer knows the session: it
ends, so that `reconnect:` starts a new one ("Session Management", same page).

Nothing of this runs on a call whose connection holds: the plain path is the SDK's.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from .._config import HttpServerConfig, SseServerConfig, StdioServerConfig
from .._config.child_env import child_environment
from .stdio import StdioProcess, TransportStreams, open_stdio

__all__ = [
    "ANSWER_LOST",
    "BLIP_GRACE",
    "HttpObservations",
    "ReadStreamWrapper",
    "TransportStreams",
    "answer_lost",
    "open_transport",
    "warn_legacy_sse",
]

logger = logging.getLogger("mcp_sync")

# The SDK's own HTTP client settings: 30 s for a request, 5 min between events of a stream.
_HTTP_TIMEOUT = 30.0
_HTTP_STREAM_READ_TIMEOUT = 300.0

BLIP_GRACE = 2.0
"""How long a Streamable HTTP server, once connected, may refuse connections (or be unreachable) and
still be having a network blip: requests wait and go out once it accepts again. Past it, it is gone."""
# While a server refuses connections, the pause before trying again: doubling from the first to the last.
_BLIP_RETRY_FIRST = 0.05
_BLIP_RETRY_LAST = 0.5
ANSWER_LOST = "the connection broke before the answer came"
"""The message of the `CONNECTION_CLOSED` error a `tools/call` gets when its connection broke."""
# How the SDK answers a request whose event stream ended before its response (`_handle_sse_response`
# and `_handle_reconnection` in mcp/client/streamable_http.py); "Connection closed" is the session's end.
_SDK_STREAM_ENDED = "SSE stream ended"
# How many times a GET answered 409 (the server still holds the stream that broke) is asked again,
# after a pause doubling from twice `_BLIP_RETRY_FIRST`: 0.1 + 0.2 + 0.4 + 0.8 s, within `BLIP_GRACE`.
_GET_CONFLICTS = 4
# Failures that prove the request was not sent: no connection was made.
_NOT_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout)
# Failures of a connection after the request may have been written: the server may have it.
_BROKEN = (httpx2.ReadError, httpx2.WriteError, httpx2.RemoteProtocolError, httpx2.CloseError)


# What an HTTP status says to do, for the statuses a misconfigured client meets.
_STATUS_ADVICE = {
    401: "the server wants credentials: check the headers (an Authorization token?) or its sign-in",
    403: "the server refused these credentials: check the headers or the account's permissions",
    404: "nothing is served at this path: is the URL right? (most servers serve /mcp)",
    405: "this path does not take MCP requests: is the URL right? (most servers serve /mcp)",
}


class HttpObservations:
    """What the HTTP transport saw that the SDK does not report: the last error status, a refusal, the
    session id the server assigned (for trace spans)."""

    def __init__(self) -> None:
        self.problem: str | None = None
        self.session_id: str | None = None
        self.usual_path = "/mcp"
        """Where most servers serve this transport, for the advice on a 404 or 405."""
        self.first_post_status: int | None = None
        """The status of the first POST (the initialize request): a 4xx means "not Streamable HTTP"."""

    def saw_response(self, request: httpx2.Request, response: httpx2.Response) -> None:
        self.session_id = response.headers.get("mcp-session-id") or self.session_id
        status = response.status_code
        if request.method == "POST" and self.first_post_status is None:
            self.first_post_status = status
        if status < 400:
            return
        advice = _STATUS_ADVICE.get(status, "the server failed" if status >= 500 else "")
        advice = advice.replace("/mcp", self.usual_path)
        if status == 404 and request.headers.get("mcp-session-id"):
            advice = "the server no longer knows this session (did it restart?)"
        self.problem = (
            f"HTTP {status} {response.reason_phrase} from {request.method} {_endpoint(request.url)}"
            + (f": {advice}" if advice else "")
        )

    def saw_refusal(self, request: httpx2.Request) -> None:
        url = request.url
        port = url.port or (443 if url.scheme == "https" else 80)
        self.problem = f"nothing accepted a connection at {url.host}:{port}: is the server running?"


def _endpoint(url: httpx2.URL) -> str:
    """The URL without credentials: no user-info, no query."""
    return str(url.copy_with(username=None, password=None, query=None, fragment=None))


@asynccontextmanager
async def open_transport(
    config: StdioServerConfig | HttpServerConfig | SseServerConfig,
    *,
    process: StdioProcess,
    http: HttpObservations,
    on_end: Callable[[], None],
    on_refused: Callable[[], None],
    on_not_mcp: Callable[[], None] = lambda: None,
    auth: httpx2.Auth | None = None,
    sse_notice: bool = True,
) -> AsyncIterator[Any]:
    """Open the server's transport; `on_end` fires when it ends by itself, `on_refused` when an HTTP
    server refuses a connection, `on_not_mcp` when a stdio server proves it does not speak MCP on its
    stdout. A stdio child is described by `process` (pid, exit, stderr, what it wrote that is not MCP),
    an HTTP server's errors by `http`. `auth` signs the HTTP requests in (OAuth, or the host's own).
    `sse_notice=False` leaves the SSE deprecation warning to the caller (a fallback warns once it works)."""
    if isinstance(config, SseServerConfig):
        if sse_notice:
            warn_legacy_sse(config.server_name)
        async with _open_sse(config, http=http, on_end=on_end, on_refused=on_refused, auth=auth) as streams:
            yield streams
        return
    if isinstance(config, StdioServerConfig):
        async with open_stdio(
            config.command,
            config.args,
            env=child_environment(config.env, inherit_env=config.inherit_env),
            cwd=config.cwd,
            process=process,
            on_end=on_end,
            on_not_mcp=on_not_mcp,
        ) as streams:
            yield streams
        return
    http_client = httpx2.AsyncClient(
        headers=dict(config.headers),
        auth=auth,
        timeout=httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_STREAM_READ_TIMEOUT),
        transport=_BlipProofHTTPTransport(http, on_refused, on_end, config.server_name),
    )
    async with http_client, streamable_http_client(config.url, http_client=http_client) as streams:
        read_stream, write_stream = streams
        yield _ObservedReadStream(read_stream, on_end), write_stream


def warn_legacy_sse(server_name: str) -> None:
    """The one deprecation warning of a connection over the legacy SSE transport."""
    logger.warning(
        "server %r uses the legacy SSE transport (deprecated in MCP 2025-03-26); "
        "prefer streamable-http if the server offers it",
        server_name,
    )


@asynccontextmanager
async def _open_sse(
    config: SseServerConfig,
    *,
    http: HttpObservations,
    on_end: Callable[[], None],
    on_refused: Callable[[], None],
    auth: httpx2.Auth | None,
) -> AsyncIterator[Any]:
    """The SDK's legacy SSE client on an observed HTTP client."""
    http.usual_path = "/sse"

    def client(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return _SseHttpClient(
            on_end,
            headers=headers,
            auth=auth,
            timeout=timeout,
            transport=_ObservedHTTPTransport(http, on_refused),
        )

    async with sse_client(
        config.url,
        headers=dict(config.headers),
        timeout=_HTTP_TIMEOUT,
        sse_read_timeout=_HTTP_STREAM_READ_TIMEOUT,
        httpx_client_factory=client,
        auth=auth,
    ) as streams:
        read_stream, write_stream = streams
        yield _ObservedReadStream(read_stream, on_end), write_stream


class _SseHttpClient(httpx2.AsyncClient):
    """An HTTP client that calls `on_broken` when a message POST fails (after any sign-in retry): the
    SDK's SSE writer stops at the first failure, so the session can send nothing more."""

    def __init__(self, on_broken: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._on_broken = on_broken

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        if request.method != "POST":
            return await super().send(request, **kwargs)
        try:
            response = await super().send(request, **kwargs)
        except Exception:
            self._on_broken()
            raise
        if response.status_code >= 400:
            self._on_broken()
        return response


class ReadStreamWrapper:
    """Delegates everything to a transport's read stream; a subclass changes only `receive`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def last_context(self) -> Any:
        """The inner stream's (that of the item returned), or None: the SDK reads it for every message,
        which through `__getattr__` would raise and catch an AttributeError each time."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        return await self._inner.receive()

    def __aiter__(self) -> ReadStreamWrapper:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> ReadStreamWrapper:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


class _ObservedReadStream(ReadStreamWrapper):
    """Delegates to the transport's read stream and calls `on_end` once when it ends."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        super().__init__(inner)
        self._on_end = on_end

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise


class _ObservedHTTPTransport(httpx2.AsyncHTTPTransport):
    """The default HTTP transport, calling `on_refused` when a connection to the server cannot be made."""

    def __init__(self, observations: HttpObservations, on_refused: Callable[[], None]) -> None:
        # No cap on connections: every call in flight holds one (its response stream), and a capped
        # pool would queue the 101st call, and the session's DELETE at close, behind the others.
        super().__init__(limits=httpx2.Limits(max_connections=None, max_keepalive_connections=20))
        self._observations = observations
        self._on_refused = on_refused

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await super().handle_async_request(request)
        except httpx2.ConnectError:
            self._observations.saw_refusal(request)
            self._on_refused()
            raise
        self._observations.saw_response(request, response)
        return response


class _BlipProofHTTPTransport(_ObservedHTTPTransport):
    """The Streamable HTTP transport that keeps a network blip inside the request it hit (see the module
    docstring): while no HTTP response has come for less than `BLIP_GRACE`, a request that could not be
    sent, or whose connection broke, is tried again (a broken `tools/call` is answered `ANSWER_LOST`);
    past it, or when the server no longer knows the session, `on_gone` ends the session."""

    def __init__(
        self,
        observations: HttpObservations,
        on_refused: Callable[[], None],
        on_gone: Callable[[], None],
        server: str,
    ) -> None:
        super().__init__(observations, on_refused)
        self._server = server
        self._on_gone = on_gone
        self._reached = False
        """Whether a response ever came: a server never reached fails at once (its first connect)."""
        self._failing_since: float | None = None
        """Since when no request has had a response (None: the last one had)."""
        self._failed_last = 0.0
        """When a request last failed: a failure long after the one before starts the clock anew."""
        self._retrying: dict[Any, anyio.Event] = {}
        """The requests waiting to be tried again, by id: set once the caller cancelled it."""
        self._gone = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._retrying:
            self._note_cancel(request)
        message: dict[str, Any] | None = None
        cancelled: anyio.Event | None = None
        resent = False
        conflicts = 0
        try:
            while True:
                tried = time.monotonic()
                try:
                    response = await httpx2.AsyncHTTPTransport.handle_async_request(self, request)
                    if request.method == "POST" and response.headers.get("content-type", "").startswith(
                        "application/json"
                    ):
                        await response.aread()  # a break in the body is this request's, not the session's
                except (*_NOT_SENT, *_BROKEN) as failed:
                    broke = isinstance(failed, _BROKEN)
                    if request.method == "DELETE":
                        raise  # the session's end at close: not worth waiting for (the SDK logs it)
                    if message is None:
                        message = _message_of(request) or {}
                    method = message.get("method")
                    if broke and not message and request.method != "GET":
                        raise  # not a message of the session (a sign-in's own request): it fails as it did
                    if broke and method == "tools/call":
                        # The server may have it: the session's replay policy decides on sending it again.
                        self._failing(tried)
                        logger.info("server %r: the connection broke during tools/call", self._server)
                        return _stand_in(request, message)
                    if broke and not resent:
                        resent = True  # once at once: a reset that was the last of a blip costs no pause
                        logger.info(
                            "server %r: the connection broke during %s (%s); sending it again",
                            self._server,
                            method or f"a {request.method}",
                            type(failed).__name__,
                        )
                        self._failing(tried)
                        continue
                    pause = self._failing(tried, broke)
                    if pause is None:
                        if not broke:
                            self._observations.saw_refusal(request)
                        if self._reached:
                            logger.warning(
                                "server %r: no answer for %g s; it is gone", self._server, BLIP_GRACE
                            )
                            self._on_gone()
                        self._on_refused()
                        raise
                    if cancelled is None and "id" in message and isinstance(method, str):
                        cancelled = self._retrying.setdefault(message["id"], anyio.Event())
                    if cancelled is None:
                        await anyio.sleep(pause)
                        continue
                    with anyio.move_on_after(pause):
                        await cancelled.wait()
                    if cancelled.is_set():
                        # Its caller was told it was cancelled: it must not reach the server now.
                        logger.info("server %r: %s was cancelled before it was sent", self._server, method)
                        return httpx2.Response(202, request=request)
                    continue
                self._answered()
                if request.method == "GET" and response.status_code == 409 and conflicts < _GET_CONFLICTS:
                    # The server still holds the event stream that just broke (it learns of the break a
                    # moment later): ask again after a pause, rather than let it count toward the SDK's
                    # giving the stream up (`handle_get_stream` in mcp/client/streamable_http.py).
                    await response.aclose()
                    conflicts += 1
                    await anyio.sleep(_BLIP_RETRY_FIRST * 2**conflicts)
                    continue
                self._observations.saw_response(request, response)
                if response.status_code == 404 and request.headers.get("mcp-session-id"):
                    # The server no longer knows this session (it restarted): the client must start a new
                    # one ("Session Management" in the transports page of the 2025-03-26 specification).
                    if not self._gone:
                        self._gone = True
                        logger.warning("server %r no longer knows its session (HTTP 404)", self._server)
                    self._on_gone()
                elif (
                    request.method == "GET"
                    and isinstance(response.stream, httpx2.AsyncByteStream)
                    and response.headers.get("content-type", "").startswith("text/event-stream")
                ):
                    response.stream = _EndsQuietly(response.stream)
                return response
        finally:
            if cancelled is not None and message is not None:
                self._retrying.pop(message["id"], None)

    def _note_cancel(self, request: httpx2.Request) -> None:
        """A `notifications/cancelled` for a request waiting to be tried again: it is not tried again."""
        try:
            if request.method != "POST" or b"notifications/cancelled" not in request.content:
                return
        except httpx2.RequestNotRead:
            return
        message = _message_of(request)
        params = message.get("params") if message is not None else None
        cancel = message is not None and message["method"] == "notifications/cancelled"
        if cancel and isinstance(params, dict):
            waiting = self._retrying.get(params.get("requestId"))
            if waiting is not None:
                waiting.set()

    def _answered(self) -> None:
        self._reached = True
        self._failing_since = None

    def _failing(self, tried: float, broke: bool = True) -> float | None:
        """How long to wait before trying again a request tried at `tried`; None once no response has come
        for `BLIP_GRACE` (or the server was never reached: a first connection that fails is not a blip)."""
        if not self._reached:
            return None
        now = time.monotonic()
        # A retry is tried within `_BLIP_RETRY_LAST` of the failure before: a longer quiet means nothing
        # was tried meanwhile (a lost call's answer, then no request for a while), not a lasting outage.
        quiet = tried - self._failed_last > BLIP_GRACE
        self._failed_last = now
        if self._failing_since is None or quiet:
            self._failing_since = now
            logger.info(
                "server %r %s; waiting up to %g s for it to answer again",
                self._server,
                "broke a connection" if broke else "refused a connection",
                BLIP_GRACE,
            )
            return _BLIP_RETRY_FIRST
        left = self._failing_since + BLIP_GRACE - now
        if left <= 0:
            return None
        waited = now - self._failing_since
        return min(max(_BLIP_RETRY_FIRST, waited), _BLIP_RETRY_LAST, left)


def answer_lost(exc: BaseException) -> bool:
    """Whether `exc` is the error of a Streamable HTTP request whose connection broke after it was sent (our
    `ANSWER_LOST`, or the SDK's for an event stream that ended early), not of the session's end."""
    if not isinstance(exc, MCPError) or exc.code != types.CONNECTION_CLOSED:
        return False
    return exc.message == ANSWER_LOST or exc.message.startswith(_SDK_STREAM_ENDED)


def _message_of(request: httpx2.Request) -> dict[str, Any] | None:
    """The JSON-RPC message a POST carried, or None for any other request."""
    if request.method != "POST":
        return None
    try:
        message = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    return message if isinstance(message, dict) and message.get("jsonrpc") == "2.0" else None


def _stand_in(request: httpx2.Request, message: dict[str, Any]) -> httpx2.Response:
    """The answer that stands in for the one a broken connection lost: a `CONNECTION_CLOSED` error."""
    error = {
        "jsonrpc": "2.0",
        "id": message.get("id"),
        "error": {
            "code": types.CONNECTION_CLOSED,
            "message": ANSWER_LOST,
            "data": {"method": message["method"]},
        },
    }
    return httpx2.Response(200, json=error, request=request)


class _EndsQuietly(httpx2.AsyncByteStream):
    """A GET event stream whose connection broke ends as if the server had closed it: the SDK then opens
    it again, where it gives up on the second error in a row."""

    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except _BROKEN:
            logger.debug("a GET event stream broke; ending it", exc_info=True)

    async def aclose(self) -> None:
        await self._inner.aclose()
