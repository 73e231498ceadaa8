"""What every framework adapter shares: which tools to offer under which names, calls made from
blocking or async code that keep the hub's timeouts and its cancellation on the server (a task tool's
call lasting as long as its task), the server's hints about a tool in the spelling MCP gives them, and a
result's content as framework-neutral parts (text, image, audio, file) for each framework's own content types.

Nothing here imports a framework.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import copy
import os
import re
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias
from urllib.parse import unquote, urlsplit

import mcp_types as types

from mcp_sync import (
    ConfigError,
    MCPHub,
    ToolCallCancelledError,
    ToolCallError,
    ToolResult,
)
from mcp_sync._hub.agent import message_for_model
from mcp_sync._hub.discovery import CALL_TOOL_NAME, SEARCH_TOOL_NAME, call_request, check_discovery

if TYPE_CHECKING:
    from mcp_sync import Tool

__all__ = [
    "ContentPart",
    "ExposedTool",
    "HubConfig",
    "PartKind",
    "ToolFilter",
    "ToolResultError",
    "acall",
    "audio_format",
    "check_offer",
    "content_parts",
    "exposed_tools",
    "filename",
    "hint_metadata",
    "inline_refs",
    "message_for_model",
    "openai_safe_name",
    "parts_text",
    "raw_blocks",
    "started_hub",
]

HubConfig: TypeAlias = str | os.PathLike[str] | Iterable[Mapping[str, Any]] | Mapping[str, Any]
"""Where an adapter that opens its own hub finds the servers: a configuration file, or what `MCPHub` takes."""

ToolFilter = Callable[["Tool"], bool]
"""Chooses which registry tools an adapter offers: `include=lambda tool: tool.server_name == "docs"`."""

# How often an async call checks a caller's `cancel` Event (the hub checks it as often for blocking calls).
_CANCEL_POLL = 0.01
_OPENAI_NAME = re.compile(r"[^A-Za-z0-9_-]")
# Audio MIME subtypes whose format name (a file extension) is another word.
_AUDIO_FORMATS = MappingProxyType({"mpeg": "mp3", "x-wav": "wav", "wave": "wav", "vnd.wave": "wav"})


class ToolResultError(ToolCallError):
    """The tool ran and reported a failure (an `is_error` result); raised for frameworks whose tools fail
    by raising. `result` is the full `ToolResult`."""

    def __init__(self, result: ToolResult, *, tool: str) -> None:
        super().__init__(result.text or f"{tool} reported an error", tool=tool)
        self.result = result


@dataclass(frozen=True, slots=True)
class ExposedTool:
    """A registry tool as a framework offers it: the model sees `name`, the hub calls `tool.name`."""

    name: str
    tool: Tool

    @property
    def description(self) -> str:
        """The tool's description, as the model reads it ("" when the server gave none)."""
        return self.tool.description or ""

    def input_schema(self) -> dict[str, Any]:
        """The tool's input schema, deep-copied so the framework may change it freely."""
        return copy.deepcopy(dict(self.tool.input_schema))


def openai_safe_name(name: str) -> str:
    """A name function-calling APIs accept (`[A-Za-z0-9_-]`); public names already are."""
    return _OPENAI_NAME.sub("_", name)


def exposed_tools(
    hub: MCPHub,
    *,
    framework: str,
    raw_names: bool = False,
    include: ToolFilter | None = None,
    fix_name: Callable[[str], str] = openai_safe_name,
    discovery: bool | int = False,
    pinned: Iterable[str] = (),
    checked: bool = False,
) -> list[ExposedTool]:
    """The hub's tools as of now, named for `framework`; two tools that would share a name: `ConfigError`.

    Names are the public `mcp__<server>__<tool>` names, or with `raw_names` the servers' own names (native
    tools keep theirs); `fix_name` then makes each one valid for the framework. `discovery` and `pinned`
    are `MCPHub.function_specs`'s: the search and call tools (which the hub runs by name) and the pinned
    tools in place of all. The options are checked first (`check_offer`) unless `checked` says an
    adapter did so when it was made; a pinned tool that left since is left out of the list.
    """
    if not checked:
        check_offer(hub, framework=framework, include=include, discovery=discovery, pinned=pinned)
    offered = hub._discovery_set(discovery, pinned)
    chosen = offered if offered is not None else [t for t in hub.tools() if include is None or include(t)]
    exposed = [ExposedTool(fix_name(_wanted_name(tool, raw_names)), tool) for tool in chosen]
    by_name: dict[str, list[str]] = {}
    for item in exposed:
        by_name.setdefault(item.name, []).append(item.tool.name)
    clashes = {name: owners for name, owners in by_name.items() if len(owners) > 1}
    if clashes:
        shown = "; ".join(
            f"{name!r} ({', '.join(sorted(owners))})" for name, owners in sorted(clashes.items())[:3]
        )
        more = f" and {len(clashes) - 3} more" if len(clashes) > 3 else ""
        fix = "keep the public names (raw_names=False) or" if raw_names else "rename one or"
        raise ConfigError(
            f"{framework}: several tools would have the same name, and a model could not tell them apart: "
            f"{shown}{more}; {fix} leave all but one of each out with include=..."
        )
    return exposed


def check_offer(
    hub: MCPHub,
    *,
    framework: str,
    include: ToolFilter | None,
    discovery: bool | int,
    pinned: Iterable[str],
) -> tuple[str, ...]:
    """An adapter's options, checked when it is made rather than at an agent's step: `include` cannot
    narrow what the search and call tools reach (`ValueError` beside a `discovery` other than False), and
    a pinned name no tool has while its server is ready is a `ToolNotFoundError`. The pinned names."""
    if include is not None and discovery is not False:
        raise ValueError(
            f"{framework}: include= cannot be combined with discovery=: the search and call tools reach "
            "every tool of the hub's registry; pin the tools to offer beside them with pinned=[...]"
        )
    check_discovery(discovery)
    return hub._check_pins(pinned)


def _wanted_name(tool: Tool, raw_names: bool) -> str:
    return tool.raw_name if raw_names and tool.raw_name is not None else tool.name


def hint_metadata(tool: Tool) -> dict[str, Any]:
    """The tool's title and the server's hints, keyed as MCP's `Tool.title` and `ToolAnnotations` spell them
    (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`); only those the server gave.

    Hints, not guarantees: the spec says clients should never make tool use decisions based on them when
    they come from an untrusted server."""
    hints = tool.annotations
    given: dict[str, Any] = {"title": tool.title}
    if hints is not None:
        given |= {
            "readOnlyHint": hints.read_only_hint,
            "destructiveHint": hints.destructive_hint,
            "idempotentHint": hints.idempotent_hint,
            "openWorldHint": hints.open_world_hint,
        }
    return {key: value for key, value in given.items() if value is not None}


def started_hub(config: HubConfig) -> MCPHub:
    """A started hub for `config`: a path is read with `MCPHub.from_file`, anything else given to `MCPHub`."""
    if isinstance(config, str | os.PathLike):
        return MCPHub.from_file(config).start()
    return MCPHub(config).start()


async def acall(
    hub: MCPHub,
    name: str,
    arguments: Mapping[str, Any],
    *,
    timeout: float | None,
    cancel: threading.Event | None,
) -> ToolResult:
    """`hub.call_tool` for a coroutine: the event loop keeps running while the call does.

    Cancelling the awaiting task, the call's timeout and setting `cancel` all cancel the request on the
    server (the hub's `Future` does that), and raise `CancelledError`, `ToolCallTimeoutError` and
    `ToolCallCancelledError` respectively. A tool that asks a person first is asked, and the search
    tool searches, on a worker thread.
    The discovery call tool is resolved here, to the tool it names, so that its tool is asked for too.
    """
    while name == CALL_TOOL_NAME:
        request = call_request(arguments)
        if isinstance(request, ToolResult):
            return request
        name, arguments = request
        hub._check_called(name)
    tool = hub.registry.get(name)
    if tool is not None and tool.requires_approval:  # a person is asked first: not on the event loop
        future = await _asked_then_submitted(hub, name, arguments, timeout, cancel)
    elif name == SEARCH_TOOL_NAME:  # ranks, after a change over a fresh index: not on the event loop
        future = await asyncio.to_thread(hub.submit, name, arguments, timeout=timeout)
    else:
        future = hub.submit(name, arguments, timeout=timeout)
    waiter = asyncio.wrap_future(future)
    try:
        if cancel is None:
            return await waiter
        while not cancel.is_set():
            done, _ = await asyncio.wait({waiter}, timeout=_CANCEL_POLL)
            if done:
                return waiter.result()
        future.cancel()
        raise ToolCallCancelledError(f"call to {name} cancelled", tool=name)
    except asyncio.CancelledError:
        future.cancel()
        raise


async def _asked_then_submitted(
    hub: MCPHub,
    name: str,
    arguments: Mapping[str, Any],
    timeout: float | None,
    cancel: threading.Event | None,
) -> concurrent.futures.Future[ToolResult]:
    """`hub.submit` for a tool that asks a person first, asked on a worker thread. A call whose awaiting
    task is cancelled, or whose `cancel` is set, while the person is asked is not sent (one sent at that
    very moment is cancelled): the question cannot be taken back, but its yes runs nothing."""
    stop = threading.Event()
    lock = threading.Lock()
    handed: list[concurrent.futures.Future[ToolResult]] = []

    def ask_then_submit() -> concurrent.futures.Future[ToolResult]:
        future = hub._submit(name, arguments, timeout=timeout, progress=None, task=None, cancel=stop)
        with lock:
            handed.append(future)
            if stop.is_set():
                future.cancel()
        return future

    def give_up() -> None:
        with lock:
            stop.set()
            for future in handed:
                future.cancel()

    asking = asyncio.ensure_future(asyncio.to_thread(ask_then_submit))
    asking.add_done_callback(_retrieved)  # a refusal nobody awaits any more is nobody's error
    try:
        while True:
            done, _ = await asyncio.wait({asking}, timeout=None if cancel is None else _CANCEL_POLL)
            if done:
                return asking.result()
            if cancel is not None and cancel.is_set():
                give_up()
                raise ToolCallCancelledError(
                    f"call to {name} cancelled while its approval was asked; it was not sent", tool=name
                )
    except asyncio.CancelledError:
        give_up()
        raise


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


PartKind = Literal["text", "image", "audio", "file"]


@dataclass(frozen=True, slots=True)
class ContentPart:
    """One piece of a tool result, as a framework's content type takes it: a text, or the bytes of an image,
    a sound or a file with their MIME type (`uri` names an embedded resource)."""

    kind: PartKind
    text: str = ""
    mime_type: str = ""
    data: bytes = field(default=b"", repr=False)
    uri: str | None = None

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def left_out(self) -> ContentPart:
        """A text part that tells the model what was left out here: kind, MIME type and size."""
        where = f" {self.uri}" if self.uri else ""
        return ContentPart(
            "text", f"[left out: {self.kind}{where}, {self.mime_type}, {len(self.data)} bytes]"
        )


def content_parts(
    result: ToolResult, *, shown: Collection[PartKind] = ("text", "image", "audio", "file")
) -> list[ContentPart]:
    """The result's content in the server's order, one part per block, for a framework that can show the
    kinds in `shown`; each part of another kind becomes a text saying what was left out.

    Texts, text resources and resource links are text, as in `result.text`; images, audio and binary
    resources keep their decoded bytes (a resource whose MIME type is image/* or audio/* is an image or a
    sound, any other a file). A result without blocks (a host tool's) is its text and its images.
    """
    if result.content:
        parts = [_part(block) for block in result.content]
    else:
        texts = [ContentPart("text", result.text)] if result.text else []
        parts = texts + [ContentPart("image", mime_type=i.mime_type, data=i.data) for i in result.images]
    return [part if part.kind in shown else part.left_out() for part in parts]


def audio_format(mime_type: str) -> str | None:
    """The format name model APIs give audio by, a file extension ("mp3", "wav"), for a MIME type."""
    subtype = mime_type.partition("/")[2]
    return _AUDIO_FORMATS.get(subtype, subtype) or None


def filename(part: ContentPart) -> str | None:
    """The last segment of the resource's URI path ("report.pdf"), which some model APIs show with a file."""
    name = PurePosixPath(unquote(urlsplit(part.uri).path)).name if part.uri else ""
    return name or None


def parts_text(parts: Sequence[ContentPart]) -> str:
    """The text parts joined with newlines, as `ToolResult.text` joins text blocks."""
    return "\n".join(part.text for part in parts if part.kind == "text")


def raw_blocks(result: ToolResult) -> list[dict[str, Any]]:
    """The result's content blocks as the server sent them (their JSON form), for hosts that want them."""
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]


def _part(block: types.ContentBlock) -> ContentPart:
    if isinstance(block, types.TextContent):
        return ContentPart("text", block.text)
    if isinstance(block, types.ImageContent | types.AudioContent):
        return _binary(block.type, block.mime_type, block.data, None)
    if isinstance(block, types.ResourceLink):
        return ContentPart("text", f"[resource link: {block.name} {block.uri}]")
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return ContentPart("text", resource.text)
        mime_type = resource.mime_type or "application/octet-stream"
        kind: PartKind = "file"
        if mime_type.startswith("image/"):
            kind = "image"
        elif mime_type.startswith("audio/"):
            kind = "audio"
        return _binary(kind, mime_type, resource.blob, str(resource.uri))
    return ContentPart("text", f"[left out: a {getattr(block, 'type', 'content')} block]")


def _binary(kind: PartKind, mime_type: str, data: str, uri: str | None) -> ContentPart:
    try:
        decoded = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return ContentPart("text", f"[left out: {kind}, {mime_type}: not valid base64]")
    return ContentPart(kind, mime_type=mime_type, data=decoded, uri=uri)


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with every local `$ref` ("#/$defs/...", "#/definitions/...") replaced by its target, for
    frameworks that take each property as a schema of its own. A reference to itself (a recursive type)
    becomes `{"type": "object"}` with the reference's own keys kept."""
    root = copy.deepcopy(dict(schema))

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            target = _json_pointer(root, ref)
            if ref in seen:
                return {"type": "object", **resolve(siblings, seen)}
            if isinstance(target, dict):
                return resolve({**target, **siblings}, seen | {ref})
        return {key: resolve(value, seen) for key, value in node.items()}

    resolved: dict[str, Any] = resolve(root, frozenset())
    resolved.pop("$defs", None)
    resolved.pop("definitions", None)
    return resolved


def _json_pointer(document: Any, ref: str) -> Any:
    node = document
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node
