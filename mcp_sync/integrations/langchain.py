"""The hub's tools as LangChain `StructuredTool`s, for LangChain and LangGraph agents, sync or async.

`langchain-mcp-adapters` builds tools that only run async (`tool.invoke` raises NotImplementedError).
These run both ways: `invoke` blocks on the hub's call, `ainvoke` awaits it without blocking the event
loop, and cancelling the awaiting task cancels the request on the server.

Each tool keeps the server's JSON schema as its `args_schema` (descriptions, required fields, enums,
nested objects and arrays reach the model untouched; the server validates the arguments), and the server
gets every argument the model wrote, also those named `config` or `run_manager` (names under which
LangChain hands a tool's function its own values). A result is
content and an artifact (`response_format="content_and_artifact"`): the content is the text or, when the
tool returned images, audio or binary resources, langchain-core's standard content blocks in the
server's order (text, image and file blocks, as langchain-mcp-adapters makes them; audio, which a tool
message cannot hold, becomes a note saying what was left out). The artifact is
`{"structured_content": ..., "content": [the blocks as the server sent them, as JSON]}`.

A tool's error result, a timeout, a lost server or an unknown tool raises `ToolException`, which
`handle_tool_error` (True by default) turns into a `ToolMessage` with `status="error"` for the model;
a cancelled call raises `ToolCallCancelledError` and ends the run. LangChain has no per-tool timeout of
its own: pass `timeout=`, or the server's `tool_call_timeout_ms` applies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from mcp_sync import MCPHub, MCPSyncError, ToolCallCancelledError, ToolNotFoundError, ToolResult

from ._common import (
    ContentPart,
    ExposedTool,
    PartKind,
    ToolFilter,
    acall,
    content_parts,
    exposed_tools,
    hint_metadata,
    message_for_model,
    parts_text,
    raw_blocks,
)

try:
    from langchain_core.messages.content import (
        create_audio_block,
        create_file_block,
        create_image_block,
        create_text_block,
    )
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from langchain_core.tools.base import TOOL_MESSAGE_BLOCK_TYPES
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "mcp_sync.integrations.langchain needs langchain-core: pip install 'mcp-syncio[langchain]'"
    ) from exc

__all__ = ["ErrorHandler", "langchain_tool", "langchain_tools"]

Content = str | list[str | dict[str, Any]]
"""A `ToolMessage`'s content: the text, or standard content blocks when there is more than text."""

# The kinds of content a tool message may hold: LangChain turns a list with a block of any other type
# into one JSON text, so a part of another kind (audio, in langchain-core 1.x) becomes a note instead.
_SHOWN: tuple[PartKind, ...] = tuple(
    kind for kind in ("text", "image", "audio", "file") if kind in TOOL_MESSAGE_BLOCK_TYPES
)

ErrorHandler = bool | str | Callable[[ToolException], str]
"""LangChain's `handle_tool_error`: True sends the error text to the model, False raises."""


def langchain_tools(
    hub: MCPHub,
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    raw_names: bool = False,
    include: ToolFilter | None = None,
    handle_tool_error: ErrorHandler = True,
    discovery: bool | int = False,
    pinned: Iterable[str] = (),
) -> list[BaseTool]:
    """Every tool in the hub's registry now, as LangChain tools; call it again for each agent you build
    (each turn) to follow tools that appear or disappear.

    `timeout` (seconds) bounds each call (default: the server's); setting `cancel` cancels blocking calls.
    Names are `mcp__<server>__<tool>`; `raw_names=True` uses the servers' own names and raises
    `ConfigError` if two tools would share one. `include` keeps only the tools it returns True for.
    `discovery=True` gives the hub's search and call tools (`mcp__search_tools`, `mcp__call_tool`) and
    the `pinned` tools in place of all; `discovery=N` does so while all tools' definitions cost more than
    N tokens (see `MCPHub.function_specs`).
    """
    exposed = exposed_tools(
        hub, framework="langchain", raw_names=raw_names, include=include, discovery=discovery, pinned=pinned
    )
    return [_structured_tool(hub, item, timeout, cancel, handle_tool_error) for item in exposed]


def langchain_tool(
    hub: MCPHub,
    name: str,
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    handle_tool_error: ErrorHandler = True,
) -> StructuredTool:
    """One tool of the hub, by public name, as a LangChain tool of the same name."""
    tool = hub.registry.get(name)
    if tool is None:
        raise ToolNotFoundError(name)
    return _structured_tool(hub, ExposedTool(name, tool), timeout, cancel, handle_tool_error)


def _structured_tool(
    hub: MCPHub,
    exposed: ExposedTool,
    timeout: float | None,
    cancel: threading.Event | None,
    handle_tool_error: ErrorHandler,
) -> StructuredTool:
    public = exposed.tool.name

    def run(**arguments: Any) -> tuple[Content, dict[str, Any]]:
        try:
            result = hub.call_tool(
                public, arguments, timeout=timeout, cancel=cancel
            )
        except ToolCallCancelledError:
            raise
        except MCPSyncError as exc:
            raise ToolException(message_for_model(public, exc)) from exc
        return _content_and_artifact(result)

    async def arun(**arguments: Any) -> tuple[Content, dict[str, Any]]:
        try:
            result = await acall(
                hub, public, arguments, timeout=timeout, cancel=cancel
            )
        except ToolCallCancelledError:
            raise
        except MCPSyncError as exc:
            raise ToolException(message_for_model(public, exc)) from exc
        return _content_and_artifact(result)

    return _HubStructuredTool(
        name=exposed.name,
        description=exposed.description,
        args_schema=exposed.input_schema(),
        func=run,
        coroutine=arun,
        response_format="content_and_artifact",
        handle_tool_error=handle_tool_error,
        # BaseTool.metadata (langchain_core/tools/base.py): the hints under the keys langchain-mcp-adapters
        # gives them (its `convert_mcp_tool_to_langchain_tool`), so code written for those tools reads them.
        metadata={
            "mcp_sync_name": public,
            "server_name": exposed.tool.server_name,
            **hint_metadata(exposed.tool),
        },
    )


class _HubStructuredTool(StructuredTool):
    """A `StructuredTool` that gives its function the model's arguments and nothing else.

    LangChain passes its own `config` and `run_manager` to a `_run` that takes them, replacing the model's
    arguments of those names; these methods take neither, so a server's `config` argument gets through.
    """

    def _run(self, /, *args: Any, **kwargs: Any) -> Any:
        assert self.func is not None
        return self.func(*args, **kwargs)

    async def _arun(self, /, *args: Any, **kwargs: Any) -> Any:
        assert self.coroutine is not None
        return await self.coroutine(*args, **kwargs)


def _content_and_artifact(result: ToolResult) -> tuple[Content, dict[str, Any]]:
    """The content for the model and the message's artifact (keyed as langchain-mcp-adapters keys it, with
    the raw blocks beside); an error result raises."""
    if result.is_error:
        raise ToolException(result.text or "the tool reported an error")
    parts = content_parts(result, shown=_SHOWN)
    content: Content = parts_text(parts)
    if any(part.kind != "text" for part in parts):
        content = [_block(part) for part in parts]
    return content, {"structured_content": result.structured_content, "content": raw_blocks(result)}


def _block(part: ContentPart) -> dict[str, Any]:
    """One part as a standard content block of langchain-core."""
    if part.kind == "image":
        return dict(create_image_block(base64=part.base64, mime_type=part.mime_type))
    if part.kind == "audio":
        return dict(create_audio_block(base64=part.base64, mime_type=part.mime_type))
    if part.kind == "file":
        return dict(create_file_block(base64=part.base64, mime_type=part.mime_type))
    return dict(create_text_block(part.text))
