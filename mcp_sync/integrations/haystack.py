"""The hub's tools as a Haystack `Toolset`, for `Agent` (sync `run` and `run_async`) and chat generators.

Haystack's own MCP integration (`MCPToolset`, in `mcp-haystack`) runs an event loop of its own per
toolset and loads the tools once, at warm-up. `HubToolset(hub)` is the hub's registry as it is each time
it is read: an `Agent` re-reads its tools at every step, so a tool that appears mid-run is offered from
the next step, and one that disappears is no longer offered. Haystack `Tool`s are made once per registry
tool and kept while that tool is unchanged.

Each tool's `parameters` is the server's JSON schema as it is (descriptions, required fields, enums,
nested objects, arrays, `$defs`); a tool whose schema is not valid JSON schema is left out, with a
warning. A result is the text, or `[TextContent, ImageContent, FileContent, ...]` when the tool also
returned images or binary resources (`outputs_to_string={"raw_result": True}`); audio, and an image
Haystack cannot take, are named in the text as left out (kind, MIME type, size).
Tools fail by raising, as Haystack expects: an error result raises `ToolResultError`, a timeout
`ToolCallTimeoutError`, and so on; Haystack wraps it in `ToolInvocationError` (the typed error is its
`__cause__`), which an `Agent` sends to the model as an error tool message, or raises with
`raise_on_tool_invocation_failure=True`. Haystack has no per-tool timeout: pass `timeout=`, or the
server's `tool_call_timeout_ms` applies. Cancelling a `run_async` task cancels the call on the server.

Serialization: `HubToolset.from_file(path)` owns a hub for that configuration file (started at warm-up,
closed by `close()`) and serializes as the file's path (Haystack deserializes it once the module is
allowed: `allow_deserialization_module("mcp_sync.integrations.haystack")`); a toolset over a hub of the
caller's cannot be serialized, and `to_dict` says so.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from mcp_sync import MCPHub, Tool, ToolNotFoundError, ToolResult

from ._common import (
    ExposedTool,
    PartKind,
    ToolFilter,
    ToolResultError,
    acall,
    check_offer,
    content_parts,
    exposed_tools,
    filename,
    parts_text,
)

try:
    from haystack.core.serialization import generate_qualified_class_name
    from haystack.dataclasses import FileContent, ImageContent, TextContent
    from haystack.tools import Toolset
    from haystack.tools.tool import Tool as HaystackTool
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "mcp_sync.integrations.haystack needs haystack-ai: pip install 'mcp-syncio[haystack]'"
    ) from exc

__all__ = ["HubToolset", "haystack_tool"]

logger = logging.getLogger(__name__)

ToolResultContent = str | list[TextContent | ImageContent | FileContent]

# What a tool result shows the model: Haystack's tool results hold text, images and files; audio is a note.
_SHOWN: tuple[PartKind, ...] = ("text", "image", "file")


class HubToolset(Toolset):
    """A Haystack `Toolset` whose `tools` are the hub's tools as of each read.

    `Agent(chat_generator=..., tools=HubToolset(hub))`. `timeout` (seconds) bounds each call (default:
    the server's); setting `cancel` cancels the running call. Names are `mcp__<server>__<tool>`;
    `raw_names=True` uses the servers' own names and raises `ConfigError` if two tools would share one.
    `include` keeps only the tools it returns True for. Add tools of your own to the hub's registry
    (`hub.registry.register_function`), or pass them beside the toolset: `tools=[toolset, my_tool]`.
    `discovery=True` gives the hub's search and call tools (`mcp__search_tools`, `mcp__call_tool`) and
    the `pinned` tools in place of all; `discovery=N` does so while all tools' definitions cost more than
    N tokens (see `MCPHub.function_specs`).
    """

    def __init__(
        self,
        hub: MCPHub,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        raw_names: bool = False,
        include: ToolFilter | None = None,
        discovery: bool | int = False,
        pinned: Iterable[str] = (),
    ) -> None:
        # Toolset's own fields are not used: `tools` is computed from the registry.
        self.hub = hub
        self.timeout = timeout
        self.cancel = cancel
        self.raw_names = raw_names
        self.include = include
        self.discovery = discovery
        self.pinned = check_offer(
            hub, framework="haystack", include=include, discovery=discovery, pinned=pinned
        )
        self._config_file: str | None = None
        self._made: dict[tuple[str, Tool], HaystackTool | None] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        timeout: float | None = None,
        raw_names: bool = False,
        discovery: bool | int = False,
        pinned: Iterable[str] = (),
    ) -> HubToolset:
        """A toolset with a hub of its own for the servers in `path`: the hub starts at `warm_up()` (which
        an `Agent` calls) and closes at `close()`. Such a toolset serializes as the path and its options."""
        toolset = cls(
            MCPHub.from_file(path), timeout=timeout, raw_names=raw_names, discovery=discovery, pinned=pinned
        )
        toolset._config_file = os.fspath(path)
        return toolset

    @property
    def tools(self) -> list[HaystackTool]:
        """The hub's tools now, as Haystack tools (unchanged ones are the same objects as last time)."""
        exposed = exposed_tools(
            self.hub,
            framework="haystack",
            raw_names=self.raw_names,
            include=self.include,
            discovery=self.discovery,
            pinned=self.pinned,
            checked=True,
        )
        with self._lock:
            made: dict[tuple[str, Tool], HaystackTool | None] = {}
            for item in exposed:
                key = (item.name, item.tool)
                known = key in self._made
                made[key] = (
                    self._made[key] if known else _haystack_tool(self.hub, item, self.timeout, self.cancel)
                )
            self._made = made
        return [tool for tool in made.values() if tool is not None]

    @tools.setter
    def tools(self, value: list[HaystackTool]) -> None:
        raise AttributeError(_NOT_A_LIST)

    def __iter__(self) -> Iterator[HaystackTool]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __eq__(self, other: object) -> bool:
        # Not by contents, as a dataclass would: they change with the registry.
        return self is other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"HubToolset({len(self.tools)} tools)"

    def add(self, tool: HaystackTool | Toolset) -> None:
        """Refused with `TypeError`: the toolset is the hub's tools; yours go on the hub or beside it."""
        raise TypeError(_NOT_A_LIST)

    def warm_up(self) -> None:
        """Start a hub this toolset owns (`from_file`), once; a hub of the caller's is left as it is."""
        with self._lock:
            if self._config_file is not None and self.hub.state == "created":
                self.hub.start()

    def close(self) -> None:
        """Close a hub this toolset owns (`from_file`); a hub of the caller's is left open."""
        if self._config_file is not None:
            self.hub.close()

    def to_dict(self) -> dict[str, Any]:
        """The configuration file of a `from_file` toolset; any other cannot be serialized."""
        if self._config_file is None:
            raise TypeError(
                "HubToolset(hub) wraps a hub of yours and cannot be serialized; build it with "
                "HubToolset.from_file(path) to serialize the path of the servers' configuration file"
            )
        return {
            "type": generate_qualified_class_name(type(self)),
            "data": {
                "config_file": self._config_file,
                "timeout": self.timeout,
                "raw_names": self.raw_names,
                "discovery": self.discovery,
                "pinned": list(self.pinned),
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HubToolset:
        """A `from_file` toolset from its `to_dict`."""
        options = data["data"]
        return cls.from_file(
            options["config_file"],
            timeout=options["timeout"],
            raw_names=options["raw_names"],
            discovery=options.get("discovery", False),
            pinned=options.get("pinned", ()),
        )


_NOT_A_LIST = (
    "a HubToolset's tools are the hub's: register your own on the hub (hub.registry.register_function), "
    "or pass them beside the toolset (tools=[toolset, my_tool])"
)


def haystack_tool(
    hub: MCPHub, name: str, *, timeout: float | None = None, cancel: threading.Event | None = None
) -> HaystackTool:
    """One tool of the hub, by public name, as a Haystack tool of the same name."""
    tool = hub.registry.get(name)
    if tool is None:
        raise ToolNotFoundError(name)
    made = _haystack_tool(hub, ExposedTool(name, tool), timeout, cancel)
    if made is None:
        raise ValueError(f"the input schema of {name} is not a valid JSON schema")
    return made


def _haystack_tool(
    hub: MCPHub, exposed: ExposedTool, timeout: float | None, cancel: threading.Event | None
) -> HaystackTool | None:
    public = exposed.tool.name

    def call(**arguments: Any) -> ToolResultContent:
        return _content(hub.call_tool(public, arguments, timeout=timeout, cancel=cancel), public)

    async def acall_(**arguments: Any) -> ToolResultContent:
        return _content(await acall(hub, public, arguments, timeout=timeout, cancel=cancel), public)

    try:
        return HaystackTool(
            name=exposed.name,
            description=exposed.description,
            parameters=exposed.input_schema(),
            function=call,
            async_function=acall_,
            outputs_to_string={"raw_result": True},
        )
    except ValueError as exc:
        logger.warning("%s is left out of the Haystack tools: %s", public, exc)
        return None


def _content(result: ToolResult, public: str) -> ToolResultContent:
    """The text, or the text and the images and files as Haystack content parts; an error result raises.
    Audio, and an image Haystack does not take, are named in the text as left out."""
    if result.is_error:
        raise ToolResultError(result, tool=public)
    parts = content_parts(result, shown=_SHOWN)
    media: list[ImageContent | FileContent] = []
    for index, part in enumerate(parts):
        if part.kind == "image":
            try:
                media.append(ImageContent(base64_image=part.base64, mime_type=part.mime_type))
            except ValueError:  # a MIME type Haystack does not take as an image
                parts[index] = part.left_out()
        elif part.kind == "file":
            media.append(
                FileContent(base64_data=part.base64, mime_type=part.mime_type, filename=filename(part))
            )
    text = parts_text(parts)
    if not media:
        return text
    return [TextContent(text), *media]
