"""The fixture server's code (what it serves and its flags: fixture_server.py, the script that runs it).

A module of its own, so that a parent that imported it (the test suite's warm launcher,
warm_launcher.py) can build its tools' models once (`build_tool_models`) for every server it forks.
"""

import argparse
import asyncio
import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import TextIOWrapper
from typing import Annotated, Any, Literal, cast

import anyio
import uvicorn
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, Prompt, UserMessage
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.server.mcpserver.resources import BinaryResource, TextResource
from mcp.server.mcpserver.tools import Tool
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LOG_LEVEL_META_KEY,
    METHOD_NOT_FOUND,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    Completion,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    ListRootsResult,
    ModelHint,
    ModelPreferences,
    NotificationParams,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass(frozen=True)
class Options:
    """The parsed command line (see the module docstring)."""

    transport: str
    port: int
    era: str
    events: str | None
    ignore_signals: bool
    tools: int
    page_size: int
    duplicate_listing: bool
    endless_cursor: bool
    garbage_stdout: bool
    invalid_utf8: bool
    stderr_lines: int
    resources: int = 0
    no_subscribe: bool = False
    hold_subscriptions: bool = False
    untyped_results: bool = False
    elicit_defaults: bool = False
    fail_listings: int = 0
    exit_during_handshake: bool = False
    helper: str | None = None
    hold_start: str | None = None
    echo_in_errors: bool = False
    stderr_env: str | None = None
    refuse_messages: int = 0
    media: bool = False
    stdout_banner: int = 0
    refuse_methods: tuple[str, ...] = ()
    fail_methods: tuple[str, ...] = ()

    record_calls: bool = False
    json_response: bool = False
    tls: tuple[str, str] | None = None


def parse_args(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description="mcp_sync test fixture MCP server (mcp 2.x SDK)")
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--era", choices=["modern", "legacy"], default="modern")
    parser.add_argument("--events", default=None)
    parser.add_argument("--ignore-signals", action="store_true")
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--duplicate-listing", action="store_true")
    parser.add_argument("--endless-cursor", action="store_true")
    parser.add_argument("--garbage-stdout", action="store_true")
    parser.add_argument("--invalid-utf8", action="store_true")
    parser.add_argument("--stderr-lines", type=int, default=0)
    parser.add_argument("--resources", type=int, default=0)
    parser.add_argument("--no-subscribe", action="store_true")
    parser.add_argument("--hold-subscriptions", action="store_true")
    parser.add_argument("--untyped-results", action="store_true")
    parser.add_argument("--elicit-defaults", action="store_true")
    parser.add_argument("--fail-listings", type=int, default=0)
    parser.add_argument("--exit-during-handshake", action="store_true")
    parser.add_argument("--helper", choices=["quiet", "inherit"], default=None)
    parser.add_argument("--hold-start", default=None)
    parser.add_argument("--echo-in-errors", action="store_true")
    parser.add_argument("--stderr-env", default=None)
    parser.add_argument("--refuse-messages", type=int, default=0)
    parser.add_argument("--media", action="store_true")
    parser.add_argument("--stdout-banner", type=int, default=0)
    parser.add_argument("--refuse-method", action="append", default=[])
    parser.add_argument("--fail-method", action="append", default=[])

    parser.add_argument("--record-calls", action="store_true")
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), default=None)
    ns = parser.parse_args(argv)
    if ns.garbage_stdout and ns.transport != "stdio":
        parser.error("--garbage-stdout is for --transport stdio only")
    if ns.stdout_banner and ns.transport != "stdio":
        parser.error("--stdout-banner is for --transport stdio only")
    if ns.helper and ns.transport != "stdio":
        parser.error("--helper is for --transport stdio only")
    if ns.tls and ns.transport == "stdio":
        parser.error("--tls is for --transport http or sse only")
    return Options(
        transport=ns.transport,
        port=ns.port,
        era=ns.era,
        events=ns.events,
        ignore_signals=ns.ignore_signals,
        tools=ns.tools,
        page_size=ns.page_size,
        duplicate_listing=ns.duplicate_listing,
        endless_cursor=ns.endless_cursor,
        garbage_stdout=ns.garbage_stdout,
        invalid_utf8=ns.invalid_utf8,
        stderr_lines=ns.stderr_lines,
        resources=ns.resources,
        no_subscribe=ns.no_subscribe,
        hold_subscriptions=ns.hold_subscriptions,
        untyped_results=ns.untyped_results,
        elicit_defaults=ns.elicit_defaults,
        fail_listings=ns.fail_listings,
        exit_during_handshake=ns.exit_during_handshake,
        helper=ns.helper,
        hold_start=ns.hold_start,
        echo_in_errors=ns.echo_in_errors,
        stderr_env=ns.stderr_env,
        refuse_messages=ns.refuse_messages,
        media=ns.media,
        stdout_banner=ns.stdout_banner,
        refuse_methods=tuple(ns.refuse_method),
        fail_methods=tuple(ns.fail_method),
        record_calls=ns.record_calls,
        json_response=ns.json_response,
        tls=tuple(ns.tls) if ns.tls else None,
    )


class EventSink:
    """Appends one JSON object per line to the events file (no-op without one).

    Each event is one small ``O_APPEND`` write, so lines from concurrent handlers and
    threads never interleave, and a reader polling the file sees whole lines.
    """

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._lock = threading.Lock()

    def write(self, event: str, **fields: Any) -> None:
        if self._path is None:
            return
        line = json.dumps({"event": event, "time": time.time(), **fields}) + "\n"
        with self._lock, open(self._path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()


def is_modern(protocol_version: str | None) -> bool:
    return protocol_version in MODERN_PROTOCOL_VERSIONS


class FixtureMiddleware:
    """Server middleware: era gate, ``listChanged`` advertisement, and the tools/list shapes.

    Forcing the handshake era (``--era legacy``): a 2.x server serves both eras, and a
    ``mode="auto"`` client opens with a ``server/discover`` probe stamped with the
    2026-07-28 envelope. In legacy mode this middleware answers every request that
    arrives at a modern protocol version (that is the probe) with METHOD_NOT_FOUND, which
    the client takes as "legacy server" and falls back to ``initialize`` immediately -
    unlike a 1.x server that ignores the probe and costs the client its 10 s timeout.
    On Streamable HTTP that is enough: the probe is its own POST and the handshake then
    opens an ordinary session. On stdio the SDK's dual-era loop (``Server.run``) would lock
    the connection to the era of the first request, the probe, and then refuse the
    fallback ``initialize``; so legacy stdio is served by the handshake-only
    ``serve_loop`` instead, where ``server/discover`` is not a method of the connection's
    (2025) version and is answered METHOD_NOT_FOUND before any handler runs.
    """

    def __init__(self, options: Options, events: EventSink) -> None:
        self._options = options
        self._events = events

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if self._options.exit_during_handshake and ctx.method in ("server/discover", "initialize"):
            self._events.write("exiting", method=ctx.method)
            os._exit(5)
        if self._options.era == "legacy" and is_modern(ctx.protocol_version):
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        if ctx.method in self._options.refuse_methods:
            self._events.write("method_refused", method=ctx.method)
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        if ctx.method in self._options.fail_methods:
            self._events.write("method_failed", method=ctx.method)
            raise MCPError(code=INTERNAL_ERROR, message=f"{ctx.method} failed on purpose")

        if ctx.method == "tools/call":  # what reached the server, exactly as sent
            params = ctx.params or {}
            self._events.write("call_arguments", tool=params.get("name"), arguments=params.get("arguments"))
            if self._options.record_calls:
                self._events.write("called", tool=params.get("name"), arguments=params.get("arguments"))
        if self._options.hold_subscriptions and _names_resources(ctx):
            self._events.write("listen_held")
            await anyio.sleep_forever()
        result = await call_next(ctx)
        if not isinstance(result, dict):
            return result
        if ctx.method == "server/discover" and self._options.no_subscribe:
            resources = result.get("capabilities", {}).get("resources")
            if isinstance(resources, dict):
                resources["subscribe"] = False
        if ctx.method == "initialize":
            # MCPServer's handshake advertises tools.listChanged=false; this server announces.
            capabilities = result.setdefault("capabilities", {})
            capabilities.setdefault("tools", {})["listChanged"] = True
            capabilities.setdefault("prompts", {})["listChanged"] = True
            resources = capabilities.setdefault("resources", {})
            resources["listChanged"] = True
            resources["subscribe"] = not self._options.no_subscribe
        elif ctx.method == "subscriptions/listen" and self._options.no_subscribe:
            uris = ((ctx.params or {}).get("notifications") or {}).get("resourceSubscriptions")
            if uris:
                raise MCPError(code=INVALID_PARAMS, message="this server offers no resource subscriptions")
        elif ctx.method in ("resources/list", "prompts/list") and self._options.page_size > 0:
            key = "resources" if ctx.method == "resources/list" else "prompts"
            cursor = (ctx.params or {}).get("cursor")
            result = self._page(result, cursor if isinstance(cursor, str) else None, key)
        elif ctx.method == "tools/call" and self._options.untyped_results:
            result.pop("resultType", None)
        elif ctx.method == "tools/list":
            if RUNTIME_FAULTS.failing_listings > 0:
                RUNTIME_FAULTS.failing_listings -= 1
                self._events.write("list_tools_failed", left=RUNTIME_FAULTS.failing_listings)
                raise MCPError(code=INVALID_PARAMS, message="listing failed on purpose")
            if RUNTIME_FAULTS.listing_delay > 0 and RUNTIME_FAULTS.delay_changed is not None:
                changed = RUNTIME_FAULTS.delay_changed
                self._events.write("list_tools_delayed", seconds=RUNTIME_FAULTS.listing_delay)
                with anyio.move_on_after(RUNTIME_FAULTS.listing_delay):
                    await changed.wait()
            cursor = (ctx.params or {}).get("cursor")
            result = self._page(result, cursor if isinstance(cursor, str) else None)
            self._events.write(
                "list_tools", cursor=cursor, count=len(result["tools"]), era=_era_name(ctx.protocol_version)
            )
        return result

    def _page(self, result: dict[str, Any], cursor: str | None, key: str = "tools") -> dict[str, Any]:
        tools: list[dict[str, Any]] = list(result.get(key, []))
        if key == "tools" and (self._options.duplicate_listing or RUNTIME_FAULTS.duplicate_listing):
            tools += [tool for tool in tools if tool.get("name") == "echo"]
        offset = 0
        if cursor is not None:
            try:
                offset = int(cursor.removeprefix("page-"))
            except ValueError:
                raise MCPError(code=INVALID_PARAMS, message=f"Invalid cursor: {cursor!r}") from None
        size = self._options.page_size if self._options.page_size > 0 else max(len(tools), 1)
        page = tools[offset : offset + size]
        out = {**result, key: page}
        out.pop("nextCursor", None)
        next_offset = offset + size
        if next_offset < len(tools) or (key == "tools" and self._options.endless_cursor):
            # Past the end the endless cursor keeps counting: empty pages, forever.
            out["nextCursor"] = f"page-{next_offset}"
        return out


@dataclass
class RuntimeFaults:
    """Faults switched on while serving, by tools, for re-sync tests."""

    duplicate_listing: bool = False
    failing_listings: int = 0
    listing_delay: float = 0.0
    # Set by the next `delay_listings` call: it ends the waits in progress.
    delay_changed: anyio.Event | None = None


RUNTIME_FAULTS = RuntimeFaults()


def _names_resources(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the request is a `subscriptions/listen` that subscribes to resources."""
    if ctx.method != "subscriptions/listen":
        return False
    return bool(((ctx.params or {}).get("notifications") or {}).get("resourceSubscriptions"))


def _era_name(protocol_version: str | None) -> str:
    return "modern" if is_modern(protocol_version) else "legacy"


_TOOL_MODELS: dict[tuple[types.CodeType, str, str], Tool] = {}
"""Each tool function's `Tool` as first built in this process, by code, name and defaults: pydantic
builds a model per signature, about 2 ms a tool. A server forked from a parent that ran
`build_tool_models` finds them built; its own closures are put in copies."""


STRUCTURED_TOOLS = frozenset({"echo", "add", "get_env", "get_cwd", "pid", "extra"})
"""The fixed tools whose results carry structured content (``{"result": ...}``, under the output schema
the SDK derives from the return type), with the ``--tools`` extras; the others give content only. Each
output schema costs the client a validator compiled in every session (about 1 ms a schema; mcp_sync
compiles them during start), and most tests start a session or more."""


def _tool(fn: Callable[..., Any], annotations: ToolAnnotations | None = None) -> Tool:
    """`Tool.from_function(fn, annotations=...)`, its models built once per function of this module;
    structured output only for `STRUCTURED_TOOLS`."""
    key = (fn.__code__, fn.__name__, repr((fn.__defaults__, fn.__kwdefaults__)))
    built = _TOOL_MODELS.get(key)
    if built is None:
        structured = fn.__name__ in STRUCTURED_TOOLS
        built = _TOOL_MODELS[key] = Tool.from_function(fn, structured_output=structured)
    return built.model_copy(update={"fn": fn, "annotations": annotations})


def build_tool_models() -> None:
    """Build every tool's models once (`_TOOL_MODELS`), as a parent that forks servers does first; no
    server is made (an `MCPServer` configures the process's logging)."""
    fixture_tools(parse_args(["--elicit-defaults", "--media"]), EventSink(None))


def fixture_tools(options: Options, events: EventSink) -> list[Tool]:
    """Every tool of the fixture (extras built cheaply from one template)."""

    async def announce_tools_changed(ctx: Context) -> None:
        # 2026-07-28: change notifications exist only on subscriptions/listen streams, fed by the
        # server's subscription bus (a bare notifications/tools/list_changed is dropped there).
        # 2025: the notification on the connection's standalone channel (stdio pipe, HTTP GET stream).
        if is_modern(ctx.protocol_version):
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        events.write("announced", era=_era_name(ctx.protocol_version))

    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def blocks() -> CallToolResult:
        """Return four content blocks: text, text, a tiny PNG image, text."""
        return CallToolResult(
            content=[
                TextContent(type="text", text="first"),
                TextContent(type="text", text="second"),
                ImageContent(type="image", data=TINY_PNG, mime_type="image/png"),
                TextContent(type="text", text="third"),
            ]
        )

    def media() -> CallToolResult:
        """Return text, two PNG images, a JPEG image, a WAV clip, and an embedded binary and text resource."""
        return CallToolResult(
            content=[
                TextContent(type="text", text="two pictures and a clip"),
                ImageContent(type="image", data=TINY_PNG, mime_type="image/png"),
                ImageContent(type="image", data=TINY_PNG, mime_type="image/png"),
                ImageContent(type="image", data=_b64(b"jpeg-bytes"), mime_type="image/jpeg"),
                AudioContent(type="audio", data=_b64(b"wav-bytes"), mime_type="audio/wav"),
                EmbeddedResource(
                    type="resource",
                    resource=BlobResourceContents(
                        uri="fixture://blob/report", mime_type="application/pdf", blob=_b64(b"pdf-bytes")
                    ),
                ),
                EmbeddedResource(
                    type="resource",
                    resource=TextResourceContents(
                        uri="fixture://text/notes", mime_type="text/plain", text="embedded notes"
                    ),
                ),
            ]
        )

    def fail(message: str) -> CallToolResult:
        """Return an isError result carrying the message."""
        return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)

    async def sleep(seconds: float, tag: str = "") -> str:
        """Sleep for the given seconds; records started / cancelled / finished events."""
        events.write("started", tool="sleep", tag=tag, seconds=seconds)
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            events.write("cancelled", tool="sleep", tag=tag)
            raise
        events.write("finished", tool="sleep", tag=tag)
        return f"slept {seconds}"

    async def progress(steps: int, ctx: Context, delay: float = 0.0) -> str:
        """Send `steps` progress notifications, then return "done"."""
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
            if delay > 0:
                await anyio.sleep(delay)
        return "done"

    def make_dynamic(name: str) -> Callable[[str], str]:
        def dynamic(text: str = "") -> str:
            return text

        dynamic.__doc__ = f"Tool {name}, added at run time; returns its text argument."
        return dynamic

    async def add_tool(name: str, ctx: Context) -> str:
        """Register a new tool `name` (it echoes its `text` argument) and announce the change."""
        ctx.mcp_server.add_tool(make_dynamic(name), name=name)
        events.write("tool_added", name=name)
        await announce_tools_changed(ctx)
        return f"added {name}"

    async def remove_tool(name: str, ctx: Context) -> str:
        """Remove tool `name` and announce the change."""
        ctx.mcp_server.remove_tool(name)
        events.write("tool_removed", name=name)
        await announce_tools_changed(ctx)
        return f"removed {name}"

    async def announce(n: int, ctx: Context) -> str:
        """Announce a tools change n times in a burst without changing anything."""
        for _ in range(n):
            await announce_tools_changed(ctx)
        return f"announced {n}"

    def crash() -> str:
        """Exit the process at once (exit status 3) while this call is in flight."""
        events.write("crashing", tool="crash")
        os._exit(3)

    def crash_by_signal(name: str = "SIGTERM") -> str:
        """Send this process the signal `name` while this call is in flight."""
        events.write("crashing", tool="crash_by_signal", signal=name)
        os.kill(os.getpid(), signal.Signals[name])
        return f"survived {name}"

    def exit_later(delay: float) -> str:
        """Return "ok" now and exit the process (status 4) `delay` seconds later."""
        timer = threading.Timer(delay, os._exit, args=(4,))
        timer.daemon = True
        timer.start()
        events.write("exit_scheduled", delay=delay)
        return "ok"

    def echoed(value: str) -> str:
        if options.echo_in_errors:
            raise MCPError(code=INVALID_PARAMS, message=f"credential rejected: {value}")
        return value

    def get_env(name: str) -> str:
        """Return the environment variable's value, or "<unset>"."""
        return echoed(os.environ.get(name, "<unset>"))

    def fail_with_env(name: str) -> str:
        """Fail with a JSON-RPC error whose message and data hold the variable's value."""
        value = os.environ.get(name, "<unset>")
        raise MCPError(INTERNAL_ERROR, f"cannot go on: {name}={value}", data={name: value})

    def http_error(status: int) -> str:
        """Over HTTP `EchoingErrorRoute` answers this call with `status`; only stdio gets here."""
        return f"no HTTP here to answer {status} with"

    def get_cwd() -> str:
        """Return the server's working directory."""
        return os.getcwd()

    def pid() -> int:
        """Return the server's process id."""
        return os.getpid()

    def get_header(name: str, ctx: Context) -> str:
        """Return the HTTP request header `name` as received, or "<unset>" (stdio has no headers)."""
        headers = ctx.headers or {}
        return echoed(headers.get(name.lower(), headers.get(name, "<unset>")))

    async def break_listing(ctx: Context) -> str:
        """From now on list ``echo`` twice (an invalid listing), and announce the change."""
        RUNTIME_FAULTS.duplicate_listing = True
        await announce_tools_changed(ctx)
        return "listing broken"

    async def fail_listings(n: int, ctx: Context) -> str:
        """Answer the next n ``tools/list`` requests with an error, and announce a change."""
        RUNTIME_FAULTS.failing_listings = n
        await announce_tools_changed(ctx)
        return f"next {n} listings fail"

    async def delay_listings(seconds: float, ctx: Context, announce: bool = True) -> str:
        """Answer every later ``tools/list`` after ``seconds``, ending the waits in progress; announce it."""
        if RUNTIME_FAULTS.delay_changed is not None:
            RUNTIME_FAULTS.delay_changed.set()
        RUNTIME_FAULTS.delay_changed = anyio.Event()  # created here: anyio needs the running loop
        RUNTIME_FAULTS.listing_delay = seconds
        if announce:
            await announce_tools_changed(ctx)
        return f"listings delayed by {seconds} s"

    async def notify_flood(n: int, ctx: Context, kind: str = "log") -> str:
        """Send n notifications as fast as possible: kind "log", "progress" or "tools_changed"."""
        for i in range(n):
            if kind == "log":
                await ctx.session.send_log_message(
                    level="info", data=f"flood {i}", logger="fixture", related_request_id=ctx.request_id
                )
            elif kind == "progress":
                await ctx.report_progress(i + 1, n, f"flood {i}")
            elif kind == "tools_changed":
                await announce_tools_changed(ctx)
            else:
                raise ValueError(f"unknown kind {kind!r}")
        return f"sent {n}"

    async def announce_changed(ctx: Context, kind: str) -> None:
        """Announce a resources or prompts change the way the negotiated era wants."""
        if is_modern(ctx.protocol_version):
            await (ctx.notify_resources_changed() if kind == "resources" else ctx.notify_prompts_changed())
        elif kind == "resources":
            await ctx.session.send_resource_list_changed()
        else:
            await ctx.session.send_prompt_list_changed()
        events.write("announced", kind=kind, era=_era_name(ctx.protocol_version))

    async def add_resource(name: str, text: str, ctx: Context) -> str:
        """Add resource fixture://dynamic/<name> with the text, and announce it."""
        ctx.mcp_server.add_resource(TextResource(uri=f"fixture://dynamic/{name}", name=name, text=text))
        await announce_changed(ctx, "resources")
        return f"added fixture://dynamic/{name}"

    async def remove_resource(name: str, ctx: Context) -> str:
        """Remove resource fixture://dynamic/<name>, and announce it."""
        ctx.mcp_server._resource_manager._resources.pop(f"fixture://dynamic/{name}", None)  # pyright: ignore
        await announce_changed(ctx, "resources")
        return f"removed fixture://dynamic/{name}"

    async def add_prompt(name: str, ctx: Context) -> str:
        """Add a prompt without arguments, and announce it."""

        def dynamic_prompt() -> str:
            return f"prompt {name}"

        prompt = Prompt.from_function(dynamic_prompt, name=name, description=f"Prompt {name}.")
        ctx.mcp_server.add_prompt(prompt)
        await announce_changed(ctx, "prompts")
        return f"added prompt {name}"

    async def remove_prompt(name: str, ctx: Context) -> str:
        """Remove a prompt, and announce it."""
        ctx.mcp_server.remove_prompt(name)
        await announce_changed(ctx, "prompts")
        return f"removed prompt {name}"

    async def announce_update(uri: str, ctx: Context) -> str:
        """Announce that the resource changed, to those subscribed to it."""
        if is_modern(ctx.protocol_version):
            await ctx.notify_resource_updated(uri)
        elif uri in LEGACY_SUBSCRIPTIONS:
            await ctx.session.send_resource_updated(uri)
        events.write("touched", uri=uri)
        return f"touched {uri}"

    async def ask_name(
        answer: Annotated[ElicitationResult[NameAndAge], Resolve(_elicit_name)],
    ) -> str:
        """Ask the user for a name and an age; return what they answered."""
        if isinstance(answer, AcceptedElicitation):
            return "accept " + json.dumps(answer.data.model_dump(), sort_keys=True)
        return answer.action

    async def ask_defaults(
        answer: Annotated[ElicitationResult[Defaults], Resolve(_elicit_defaults)],
    ) -> str:
        """Ask for fields that all have defaults; return what the client answered."""
        if isinstance(answer, AcceptedElicitation):
            return "accept " + json.dumps(answer.data.model_dump(), sort_keys=True)
        return answer.action

    async def ask_sample(prompt: str, reply: Annotated[CreateMessageResult, Resolve(_sample)]) -> str:
        """Ask the client's model to answer the prompt."""
        text = reply.content.text if isinstance(reply.content, TextContent) else str(reply.content)
        return f"sampled {reply.model}: {text}"

    async def ask_roots(roots: Annotated[ListRootsResult, Resolve(_roots)]) -> str:
        """Return the client's roots as a JSON list of URIs."""
        return json.dumps([str(root.uri) for root in roots.roots])

    async def ask_unhandled(ctx: Context) -> str:
        """(2025) Send sampling/createMessage whatever the client declared; return how it answered."""
        try:
            result = await ctx.session.send_request(
                CreateMessageRequest(
                    params=CreateMessageRequestParams(
                        messages=[SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
                        max_tokens=5,
                    )
                ),
                CreateMessageResult,
            )
        except MCPError as exc:
            return f"refused {exc.code}: {exc.message}"
        return f"answered {result.model}"

    def framework_names(config: str, run_manager: str = "", callbacks: str = "") -> str:
        """Return the arguments received, as JSON: their names are ones agent frameworks use themselves."""
        received = {"config": config, "run_manager": run_manager, "callbacks": callbacks}
        return json.dumps(received, sort_keys=True)

    def echo_meta(ctx: Context) -> str:
        """Return the request's `_meta` as received, as JSON."""
        return json.dumps(dict(ctx.request_context.meta or {}), sort_keys=True, default=str)

    async def log(level: str, message: str, ctx: Context) -> str:
        """Send one log message at `level` (logger "fixture")."""
        meta = ctx.request_context.meta or {}
        events.write("logged", level=level, requested=meta.get(LOG_LEVEL_META_KEY))
        await ctx.log(cast(Any, level), message, logger_name="fixture")
        return "logged"

    base = [
        echo,
        add,
        blocks,
        fail,
        sleep,
        progress,
        add_tool,
        remove_tool,
        announce,
        crash,
        crash_by_signal,
        exit_later,
        get_env,
        fail_with_env,
        http_error,
        get_cwd,
        pid,
        get_header,
        break_listing,
        fail_listings,
        delay_listings,
        notify_flood,
        add_resource,
        remove_resource,
        add_prompt,
        remove_prompt,
        announce_update,
        ask_name,
        ask_sample,
        ask_roots,
        ask_unhandled,
        log,
        echo_meta,
        framework_names,
    ]
    if options.elicit_defaults:
        base.append(ask_defaults)
    if options.media:
        base.append(media)
    # The server's hints on a few tools, as a real server gives them: what a client may replay.
    hints = {
        echo: ToolAnnotations(title="Echo", read_only_hint=True, open_world_hint=False),
        add: ToolAnnotations(idempotent_hint=True, destructive_hint=False),
        crash: ToolAnnotations(destructive_hint=True),
    }
    tools = [_tool(fn, annotations=hints.get(fn)) for fn in base]

    def extra(value: str = "") -> str:
        return value

    template = _tool(extra)
    tools += [
        template.model_copy(update={"name": f"t{i:05d}", "description": f"Extra fixture tool number {i}."})
        for i in range(options.tools)
    ]
    return tools


def build_server(options: Options, events: EventSink) -> MCPServer:
    """The fixture's MCPServer with every tool, resource and prompt registered."""
    server: MCPServer = MCPServer(
        "mcp-sync-fixture",
        version="1.0.0",
        instructions="Fixture server for the mcp_sync tests.",
        tools=fixture_tools(options, events),
        log_level="WARNING",
        middleware=[FixtureMiddleware(options, events)],
    )
    add_resources_and_prompts(server, options, events)
    return server


LEGACY_SUBSCRIPTIONS: set[str] = set()
"""URIs a 2025-era session subscribed to (one client per fixture process in the tests)."""


class NameAndAge(BaseModel):
    name: str
    age: int


def _elicit_name() -> Elicit[NameAndAge]:
    return Elicit("Who are you?", NameAndAge)


def _schema_default(value: Any) -> Any:
    """A required field whose schema still names a default: only the client can fill it in."""
    return Field(json_schema_extra={"default": value})


class Defaults(BaseModel):
    name: str = _schema_default("John Doe")
    age: int = _schema_default(30)
    score: float = _schema_default(95.5)
    status: Literal["active", "inactive", "pending"] = _schema_default("active")
    verified: bool = _schema_default(True)


def _elicit_defaults() -> Elicit[Defaults]:
    return Elicit("Accept the defaults?", Defaults)


def _sample(prompt: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=50,
        system_prompt="Answer briefly.",
        model_preferences=ModelPreferences(hints=[ModelHint(name="fixture-model")]),
    )


def _roots() -> ListRoots:
    return ListRoots()


def add_resources_and_prompts(server: MCPServer, options: Options, events: EventSink) -> None:
    """The fixture's resources, template, prompts and completions (see the module docstring)."""
    server.add_resource(
        TextResource(
            uri="fixture://text/readme", name="readme", text="fixture readme", mime_type="text/plain"
        )
    )
    server.add_resource(
        BinaryResource(
            uri="fixture://blob/pixel", name="pixel", data=base64.b64decode(TINY_PNG), mime_type="image/png"
        )
    )
    for i in range(options.resources):
        server.add_resource(
            TextResource(
                uri=f"fixture://extra/{i:05d}", name=f"extra{i}", text=f"extra {i}", mime_type="text/plain"
            )
        )

    @server.resource("fixture://items/{item}", name="item", mime_type="text/plain")
    def item(item: str) -> str:
        """One item, by name."""
        return f"item {item}"

    @server.resource("fixture://env-error/{name}", name="env_error", mime_type="text/plain")
    def env_error(name: str) -> str:
        """Fails with a JSON-RPC error holding the variable's value."""
        value = os.environ.get(name, "<unset>")
        raise MCPError(INTERNAL_ERROR, f"cannot read: {name}={value}", data={name: value})

    @server.prompt()
    def greet(name: str, style: str = "plain") -> str:
        """Greet someone in a style."""
        return f"Hello, {name}! ({style})"

    @server.prompt()
    def review(code: str) -> list[Message]:
        """Ask for a review of some code."""
        return [
            UserMessage(f"Review this code:\n{code}"),
            UserMessage(
                content=EmbeddedResource(
                    type="resource",
                    resource=TextResourceContents(uri="fixture://text/readme", text="fixture readme"),
                )
            ),
            AssistantMessage("I will review it."),
        ]

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        if isinstance(ref, ResourceTemplateReference) and argument.name == "item":
            values = ["apple", "apricot", "banana"]
        elif isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "style":
            values = ["plain", "formal", "pirate"]
        else:
            return None
        return Completion(
            values=[v for v in values if v.startswith(argument.value)], total=None, has_more=False
        )

    @server.resource("fixture://slow/{tag}", name="slow", mime_type="text/plain")
    async def slow(tag: str) -> str:
        """Sleeps 30 s, recording started / cancelled / finished events with the tag."""
        events.write("started", resource="slow", tag=tag)
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            events.write("cancelled", resource="slow", tag=tag)
            raise
        events.write("finished", resource="slow", tag=tag)
        return "slept"

    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]

    async def roots_changed(ctx: Any, params: NotificationParams) -> None:
        events.write("roots_changed")

    lowlevel.add_notification_handler("notifications/roots/list_changed", NotificationParams, roots_changed)
    if not options.no_subscribe:

        async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
            LEGACY_SUBSCRIPTIONS.add(str(params.uri))
            events.write("subscribed", uri=str(params.uri))
            return EmptyResult()

        async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
            LEGACY_SUBSCRIPTIONS.discard(str(params.uri))
            events.write("unsubscribed", uri=str(params.uri))
            return EmptyResult()

        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)


class _InvalidUtf8Stdout:
    """The stdio wire, with one line that is not valid UTF-8 before the server's first message."""

    def __init__(self) -> None:
        self._inner = anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
        self._first = True

    async def write(self, data: str) -> None:
        if self._first:
            self._first = False
            await self._inner.flush()
            line = b'{"jsonrpc": "2.0", "method": "notifications/x", "params": "\xff\xfe"}\n'
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
        await self._inner.write(data)

    async def flush(self) -> None:
        await self._inner.flush()


class _GarbageStdout:
    """The stdio wire, with noise written around the server's first message.

    The SDK writes one whole JSON-RPC line per ``write``; adding the noise here (rather
    than printing from a handler) keeps it between messages, never inside one. The
    truncated JSON line is newline-terminated: a partial line *without* a newline would
    merge with the next real message and corrupt it for any client.
    """

    BEFORE = (
        "fixture: about to answer (this line is not JSON)\n"
        '{"jsonrpc": "2.0", "id": 999, "result": {"truncated":\n'
        '{"hello": "a JSON object that is not JSON-RPC"}\n'
    )
    AFTER = "fixture: answered (more noise after the first response)\n"

    def __init__(self) -> None:
        self._inner = anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
        self._written = 0

    async def write(self, data: str) -> None:
        first = self._written == 0
        self._written += 1
        if first:
            await self._inner.write(self.BEFORE)
        await self._inner.write(data)
        if first:
            await self._inner.write(self.AFTER)

    async def flush(self) -> None:
        await self._inner.flush()


async def serve_stdio(server: MCPServer, options: Options, events: EventSink) -> None:
    # The low-level server is reached through MCPServer's private attribute (as the SDK's own
    # in-process Client does): legacy mode needs the handshake-only `serve_loop` entry.
    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    stdout = cast(Any, _GarbageStdout()) if options.garbage_stdout else None
    if options.invalid_utf8:
        stdout = cast(Any, _InvalidUtf8Stdout())
    if options.garbage_stdout:
        sys.stdout.buffer.write(b"fixture: starting up (this line is not JSON either)\n")
        sys.stdout.buffer.flush()
    async with stdio_server(stdout=stdout) as (read_stream, write_stream):
        events.write("ready", pid=os.getpid(), client_pid=client_pid(), transport="stdio", era=options.era)
        if options.era == "legacy":
            async with lowlevel.lifespan(lowlevel) as state:
                await serve_loop(lowlevel, read_stream, write_stream, lifespan_state=state)
        else:
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    events.write("stdin_closed")


class _NoSignalServer(uvicorn.Server):
    """A uvicorn server that leaves the process's signal handlers alone (``--ignore-signals``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class EchoingErrorRoute:
    """ASGI wrapper: a POST calling the tool ``http_error`` or reading ``fixture://http-error/<status>``
    is answered with that HTTP status and a JSON-RPC error whose message and data echo the request's
    Authorization and X-Api-Key headers and its query string, as a careless server might. Every
    other request goes through untouched (its body replayed), unless `refuse_status` answers every
    POST that way (``--refuse-messages``)."""

    def __init__(self, app: Any, refuse_status: int = 0) -> None:
        self.app = app
        self.refuse_status = refuse_status

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        found = _echoing_error_request(body)
        if found is None and self.refuse_status:
            found = _request_id(body), self.refuse_status
        if found is None:
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        request_id, status = found
        headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
        echoed = [
            headers.get("authorization", ""),
            headers.get("x-api-key", ""),
            scope["query_string"].decode(),
        ]
        error = {
            "code": INTERNAL_ERROR,
            "message": f"rejected {' '.join(filter(None, echoed))}",
            "data": echoed,
        }
        answer = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(answer)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": answer})


def _request_id(body: bytes) -> Any:
    """The JSON-RPC id of the message in `body`, or None (a notification, or not JSON)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message.get("id") if isinstance(message, dict) else None


def _echoing_error_request(body: bytes) -> tuple[Any, int] | None:
    """(request id, HTTP status) if the body asks for an echoing error (see `EchoingErrorRoute`)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or not isinstance(message.get("params"), dict):
        return None
    params = message["params"]
    if message.get("method") == "tools/call" and params.get("name") == "http_error":
        return message.get("id"), int((params.get("arguments") or {}).get("status", 500))
    uri = str(params.get("uri", ""))
    if message.get("method") == "resources/read" and uri.startswith("fixture://http-error/"):
        return message.get("id"), int(uri.rsplit("/", 1)[1])
    return None


async def serve_http(server: MCPServer, options: Options, events: EventSink) -> None:
    """Serve Streamable HTTP (``--transport http``) or legacy SSE (``--transport sse``) until stopped."""
    if options.transport == "sse":
        app = EchoingErrorRoute(server.sse_app(host="127.0.0.1"), options.refuse_messages)
    else:
        app = EchoingErrorRoute(
            server.streamable_http_app(host="127.0.0.1", json_response=options.json_response),
            options.refuse_messages,
        )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", options.port))
    port = sock.getsockname()[1]
    certfile, keyfile = options.tls or (None, None)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=2,
        lifespan="on",
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
    )
    web = _NoSignalServer(config) if options.ignore_signals else uvicorn.Server(config)
    task = asyncio.create_task(web.serve(sockets=[sock]))
    while not web.started:
        if task.done():
            await task
            raise SystemExit("uvicorn stopped before it started listening")
        await asyncio.sleep(0.01)
    events.write(
        "ready",
        pid=os.getpid(),
        client_pid=client_pid(),
        transport=options.transport,
        era=options.era,
        port=port,
    )
    sys.stdout.write(f"LISTENING {port}\n")
    sys.stdout.flush()
    await task


def install_signal_handlers(options: Options, events: EventSink) -> None:
    if not options.ignore_signals:
        return

    def record(signum: int, _frame: object) -> None:
        events.write("signal", signum=signum, ignored=True)

    signal.signal(signal.SIGTERM, record)
    signal.signal(signal.SIGINT, record)


def start_helper(options: Options, events: EventSink) -> None:
    """A child in this server's process group that outlives it unless its group is signalled."""
    code = "import signal, time\n"
    if options.ignore_signals:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "time.sleep(600)\n"
    quiet = options.helper == "quiet"
    helper = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL if quiet else None,
        stdout=subprocess.DEVNULL if quiet else None,
    )
    events.write("helper_started", pid=helper.pid, mode=options.helper)


def client_pid() -> int:
    """The process the client started: the warm launcher's shim when this server was warm-launched
    (tests/servers/warm_launcher.py), else this process."""
    return int(os.environ.get("MCP_SYNC_TEST_SHIM_PID") or os.getpid())


def hold_start(path: str, events: EventSink) -> None:
    events.write("holding", path=path, pid=os.getpid())
    while not os.path.exists(path):
        time.sleep(0.02)


def main(argv: list[str] | None = None) -> None:
    # The logging capability is deprecated at 2026-07-28 but is still how a 2025-era server
    # sends log messages; keep the warning off the stderr the tests read.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    options = parse_args(argv)
    events = EventSink(options.events)
    for i in range(options.stderr_lines):
        print(f"fixture stderr line {i}", file=sys.stderr)
    if options.stderr_env is not None:
        value = os.environ.get(options.stderr_env, "")
        print(f"fixture config {options.stderr_env}={value}", file=sys.stderr)
    sys.stderr.flush()
    for i in range(options.stdout_banner):
        print(f"fixture banner line {i + 1}")
    sys.stdout.flush()
    install_signal_handlers(options, events)
    RUNTIME_FAULTS.failing_listings = options.fail_listings
    if options.hold_start is not None:
        hold_start(options.hold_start, events)
    if options.helper is not None:
        start_helper(options, events)
    server = build_server(options, events)
    if options.transport in ("http", "sse"):
        asyncio.run(serve_http(server, options, events))
    else:
        anyio.run(serve_stdio, server, options, events)
    if options.ignore_signals:
        # A server that outlives its stdin and ignores SIGTERM: only SIGKILL ends it.
        while True:
            time.sleep(3600)
