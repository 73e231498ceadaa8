"""The hub's tools as LlamaIndex `FunctionTool`s, for `FunctionAgent`, `ReActAgent` and other workflows.

Each tool runs both ways: `call` blocks on the hub's call and `acall` (what agents use) awaits it without
blocking the event loop; cancelling the awaiting task cancels the request on the server.

The model sees the server's JSON schema as it is (descriptions, required fields, enums, nested objects,
arrays, `$defs`): the tool's `fn_schema` reports it instead of a schema rebuilt from pydantic fields.
A result reaches the model as the `blocks` of its `ToolOutput`, in the server's order: `TextBlock`s,
and `ImageBlock`, `AudioBlock` and `DocumentBlock` for images, audio and binary resources (`content` is
the text alone, `raw_output` the `ToolResult`).

A tool's error result comes back as `ToolOutput(is_error=True)`; a timeout, a lost server or an unknown
tool raises its typed error, which LlamaIndex agents turn into `ToolOutput(is_error=True, exception=...)`
for the model. LlamaIndex has no per-tool timeout (a workflow's `timeout` bounds the whole run): pass
`timeout=`, or the server's `tool_call_timeout_ms` applies. `HubToolRetriever` gives an agent the current
tools at every step, so tools that appear or disappear mid-run are followed; `HubToolSpec` is the tool
spec (`to_tool_list()`, `to_tool_list_async()`, `allowed_tools`) that stands in for `McpToolSpec`.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from mcp_sync import MCPHub, Tool, ToolNotFoundError, ToolResult

from ._common import (
    ContentPart,
    ExposedTool,
    ToolFilter,
    acall,
    audio_format,
    check_offer,
    content_parts,
    exposed_tools,
    openai_safe_name,
)

try:
    from llama_index.core.base.llms.types import (
        AudioBlock,
        ContentBlock,
        DocumentBlock,
        ImageBlock,
        TextBlock,
    )
    from llama_index.core.objects import ObjectRetriever
    from llama_index.core.tools import BaseTool, FunctionTool, ToolMetadata, ToolOutput
    from llama_index.core.tools.tool_spec.base import SPEC_FUNCTION_TYPE, BaseToolSpec
    from pydantic import BaseModel, ConfigDict
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "mcp_sync.integrations.llamaindex needs llama-index-core: pip install 'mcp-syncio[llamaindex]'"
    ) from exc

__all__ = ["HubToolRetriever", "HubToolSpec", "llamaindex_tool", "llamaindex_tools", "schema_model"]


def llamaindex_tools(
    hub: MCPHub,
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    raw_names: bool = False,
    include: ToolFilter | None = None,
    discovery: bool | int = False,
    pinned: Iterable[str] = (),
) -> list[FunctionTool]:
    """Every tool in the hub's registry now, as LlamaIndex tools (`HubToolRetriever` follows changes).

    `timeout` (seconds) bounds each call (default: the server's); setting `cancel` cancels the running
    call. Names are `mcp__<server>__<tool>`; `raw_names=True` uses the servers' own names (made valid
    function names) and raises `ConfigError` if two tools would share one.
    `discovery=True` gives the hub's search and call tools (`mcp__search_tools`, `mcp__call_tool`) and
    the `pinned` tools in place of all; `discovery=N` does so while all tools' definitions cost more than
    N tokens (see `MCPHub.function_specs`).
    """
    exposed = exposed_tools(
        hub, framework="llamaindex", raw_names=raw_names, include=include, discovery=discovery, pinned=pinned
    )
    return [_function_tool(hub, item, timeout, cancel) for item in exposed]


def llamaindex_tool(
    hub: MCPHub,
    name: str,
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
) -> FunctionTool:
    """One tool of the hub, by public name, as a LlamaIndex tool of the same name."""
    tool = hub.registry.get(name)
    if tool is None:
        raise ToolNotFoundError(name)
    return _function_tool(hub, ExposedTool(name, tool), timeout, cancel)


class HubToolRetriever(ObjectRetriever[BaseTool]):
    """Gives an agent the hub's current tools at each step.

    `FunctionAgent(llm=..., tool_retriever=HubToolRetriever(hub))`. The query is ignored: every tool
    is returned (narrow them with `include=`), or with `discovery=` and `pinned=` (as `llamaindex_tools`)
    the search and call tools and the pinned ones.
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
        # No retriever or node mapping underneath: the registry is the index.
        self.hub = hub
        self._timeout = timeout
        self._cancel = cancel
        self._options: dict[str, Any] = {
            "raw_names": raw_names,
            "include": include,
            "discovery": discovery,
            "pinned": check_offer(
                hub, framework="llamaindex", include=include, discovery=discovery, pinned=pinned
            ),
        }

    def retrieve(self, str_or_query_bundle: Any) -> list[BaseTool]:
        """The hub's tools as of now, whatever the query (narrowed by `include=`, or `discovery=`); a
        pinned tool that left since the retriever was made is left out."""
        exposed = exposed_tools(self.hub, framework="llamaindex", checked=True, **self._options)
        return [_function_tool(self.hub, item, self._timeout, self._cancel) for item in exposed]

    async def aretrieve(self, str_or_query_bundle: Any) -> list[BaseTool]:
        """`retrieve()`, for an async agent (reading the registry does not block)."""
        return self.retrieve(str_or_query_bundle)


class HubToolSpec(BaseToolSpec):
    """A tool spec over the hub, where `McpToolSpec(client, allowed_tools=[...])` was.

    `to_tool_list()` and `to_tool_list_async()` give the hub's tools as of the call (with the hub's
    timeouts and cancellation, as `llamaindex_tools`). `allowed_tools` keeps only the tools it names,
    by the name the model sees, the public name or the server's own name; names of tools that are not
    there are ignored, as tools come and go.
    """

    spec_functions: list[SPEC_FUNCTION_TYPE]  # empty: the tools come from the hub, not from methods

    def __init__(
        self,
        hub: MCPHub,
        allowed_tools: list[str] | None = None,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        raw_names: bool = False,
        include: ToolFilter | None = None,
    ) -> None:
        self.spec_functions = []
        self.hub = hub
        self.allowed_tools = list(allowed_tools or [])
        self._timeout = timeout
        self._cancel = cancel
        self._raw_names = raw_names
        self._include = include

    def to_tool_list(
        self,
        spec_functions: list[SPEC_FUNCTION_TYPE] | None = None,
        func_to_metadata_mapping: dict[str, ToolMetadata] | None = None,
    ) -> list[FunctionTool]:
        """The hub's tools as of now (the arguments of other tool specs do not apply: they are ignored)."""
        allowed = set(self.allowed_tools)

        def chosen(tool: Tool) -> bool:
            named = {tool.name, tool.raw_name, openai_safe_name(tool.raw_name or tool.name)}
            return (not allowed or bool(named & allowed)) and (self._include is None or self._include(tool))

        exposed = exposed_tools(self.hub, framework="llamaindex", raw_names=self._raw_names, include=chosen)
        return [_function_tool(self.hub, item, self._timeout, self._cancel) for item in exposed]

    async def to_tool_list_async(
        self,
        spec_functions: list[SPEC_FUNCTION_TYPE] | None = None,
        func_to_metadata_mapping: dict[str, ToolMetadata] | None = None,
    ) -> list[FunctionTool]:
        """`to_tool_list()` for async code: reading the registry does not wait on any server."""
        return self.to_tool_list(spec_functions, func_to_metadata_mapping)


def schema_model(name: str, schema: Mapping[str, Any]) -> type[BaseModel]:
    """A pydantic model whose JSON schema is `schema` itself, for LlamaIndex's `fn_schema`.

    LlamaIndex reads a tool's parameters from `fn_schema.model_json_schema()`; building fields from the
    schema would lose what pydantic cannot express. The model accepts any arguments: the server checks them.
    """
    frozen = copy.deepcopy(dict(schema))

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="allow")

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return copy.deepcopy(frozen)

    Arguments.__name__ = Arguments.__qualname__ = f"{name}_arguments"
    return Arguments


def _function_tool(
    hub: MCPHub, exposed: ExposedTool, timeout: float | None, cancel: threading.Event | None
) -> FunctionTool:
    public = exposed.tool.name

    def output(arguments: dict[str, Any], result: ToolResult) -> ToolOutput:
        return ToolOutput(
            tool_name=exposed.name,
            blocks=[_block(part) for part in content_parts(result)],
            raw_input={"args": (), "kwargs": arguments},
            raw_output=result,
            is_error=result.is_error,
        )

    def call(**arguments: Any) -> ToolOutput:
        return output(arguments, hub.call_tool(public, arguments, timeout=timeout, cancel=cancel))

    async def acall_(**arguments: Any) -> ToolOutput:
        return output(arguments, await acall(hub, public, arguments, timeout=timeout, cancel=cancel))

    # FunctionTool wraps whatever the function returns in a new ToolOutput; its callback may replace that
    # with our own, which carries `is_error`.
    def keep(result: ToolOutput) -> ToolOutput:
        return result

    async def keep_async(result: ToolOutput) -> ToolOutput:
        return result

    metadata = ToolMetadata(
        name=exposed.name,
        description=exposed.description,
        fn_schema=schema_model(exposed.name, exposed.tool.input_schema),
    )
    return FunctionTool(fn=call, async_fn=acall_, metadata=metadata, callback=keep, async_callback=keep_async)


def _block(part: ContentPart) -> ContentBlock:
    """One part as LlamaIndex's content block of its kind.

    The bytes go in base64-encoded: LlamaIndex decodes any bytes that are valid base64 text, so raw media
    such as b"AAAA" would arrive as other bytes, while base64 text always decodes to the media itself.
    """
    encoded = part.base64.encode("ascii")
    if part.kind == "image":
        return ImageBlock(image=encoded, image_mimetype=part.mime_type)
    if part.kind == "audio":
        return AudioBlock(audio=encoded, format=audio_format(part.mime_type))
    if part.kind == "file":
        return DocumentBlock(data=encoded, document_mimetype=part.mime_type, title=part.uri or "document")
    return TextBlock(text=part.text)
