"""The hub's tools as DSPy `Tool`s, for `dspy.ReAct` and any program that calls tools, sync or async.

`dspy.Tool.from_mcp_tool` needs an async session, which sync DSPy code does not have (and a tool called
synchronously then starts a new event loop per call, unless `allow_tool_async_sync_conversion` is off, in
which case it raises). These tools run both ways: calling one blocks on the hub's call, and `acall` (what
`ReAct.aforward` uses) awaits it without blocking the event loop; cancelling the awaiting task cancels the
request on the server.

Each tool shows the model the server's argument schemas (descriptions, enums, nested objects, arrays;
local `$ref`s are inlined, as DSPy takes one schema per argument) and which arguments are required; its
function-calling spec is the server's whole schema. A result is the text, or `[text, dspy.Image, ...]`
when the tool also returned images, audio or binary resources (as `dspy.Image`, `dspy.Audio` and
`dspy.File`, which DSPy sends to the model as image, audio and file parts). Tools fail by raising,
as DSPy expects: `ReAct` shows the error to the model as the step's observation ("Execution error in
<tool>: ...") and goes on. An error result raises `ToolResultError`, a timeout `ToolCallTimeoutError`,
and so on; DSPy has no per-tool timeout: pass `timeout=`, or the server's `tool_call_timeout_ms` applies.

`ReAct` takes its tools when it is built and writes their names into its signature, so it cannot call a
tool that appears later (DSPy refuses a step that names one, with `AdapterParseError`), and one that
disappears answers `ToolNotFoundError` as an observation. Build it per question with `dspy_tools(hub)`
(cheap: nothing is fetched) to offer the tools the servers have now.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable
from typing import Any

from mcp_sync import MCPHub, Tool, ToolNotFoundError, ToolResult

from ._common import (
    ContentPart,
    ExposedTool,
    ToolFilter,
    ToolResultError,
    acall,
    audio_format,
    content_parts,
    exposed_tools,
    filename,
    inline_refs,
    parts_text,
)

try:
    import dspy
    from dspy.utils.callback import with_callbacks
    from pydantic import PrivateAttr
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("mcp_sync.integrations.dspy needs dspy: pip install 'mcp-syncio[dspy]'") from exc

__all__ = ["dspy_tool", "dspy_tools"]


def dspy_tools(
    hub: MCPHub,
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    raw_names: bool = False,
    include: ToolFilter | None = None,
    discovery: bool | int = False,
    pinned: Iterable[str] = (),
) -> list[dspy.Tool]:
    """Every tool in the hub's registry now, as DSPy tools; call it again for each `dspy.ReAct` you build
    (each question) to follow tools that appear or disappear.

    `timeout` (seconds) bounds each call (default: the server's); setting `cancel` cancels the running
    call. Names are `mcp__<server>__<tool>`; `raw_names=True` uses the servers' own names and raises
    `ConfigError` if two tools would share one. `include` keeps only the tools it returns True for.
    `discovery=True` gives the hub's search and call tools (`mcp__search_tools`, `mcp__call_tool`) and
    the `pinned` tools in place of all; `discovery=N` does so while all tools' definitions cost more than
    N tokens (see `MCPHub.function_specs`).
    """
    exposed = exposed_tools(
        hub, framework="dspy", raw_names=raw_names, include=include, discovery=discovery, pinned=pinned
    )
    return [_HubTool.build(hub, item, timeout, cancel) for item in exposed]


def dspy_tool(
    hub: MCPHub,
    name: str,
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
) -> dspy.Tool:
    """One tool of the hub, by public name, as a DSPy tool of the same name."""
    tool = hub.registry.get(name)
    if tool is None:
        raise ToolNotFoundError(name)
    return _HubTool.build(hub, ExposedTool(name, tool), timeout, cancel)


class _HubTool(dspy.Tool):  # type: ignore[misc]  # dspy ships no type information
    """One hub tool: calling it blocks on the hub's call, `acall` awaits it."""

    _hub: MCPHub = PrivateAttr()
    _public: str = PrivateAttr()
    _tool: Tool = PrivateAttr()
    _timeout: float | None = PrivateAttr(default=None)
    _cancel: threading.Event | None = PrivateAttr(default=None)
    _schema: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def build(
        cls, hub: MCPHub, exposed: ExposedTool, timeout: float | None, cancel: threading.Event | None
    ) -> _HubTool:
        public = exposed.tool.name

        def call(**arguments: Any) -> Any:
            return _output(hub.call_tool(public, arguments, timeout=timeout, cancel=cancel), public)

        schema = exposed.input_schema()
        properties = inline_refs(schema).get("properties")
        args = dict(properties) if isinstance(properties, dict) else {}
        tool = cls(
            func=call,
            name=exposed.name,
            desc=exposed.description,
            args=args,
            # No conversion: the values go to the server as the model wrote them, and the server checks them.
            arg_types=dict.fromkeys(args, Any),
            arg_desc={},
        )
        tool._hub = hub
        tool._public = public
        tool._tool = exposed.tool
        tool._timeout = timeout
        tool._cancel = cancel
        tool._schema = schema
        return tool

    @with_callbacks  # type: ignore[untyped-decorator]
    async def acall(self, **kwargs: Any) -> Any:
        arguments = self._validate_and_parse_args(**kwargs)
        result = await acall(self._hub, self._public, arguments, timeout=self._timeout, cancel=self._cancel)
        return _output(result, self._public)

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> _HubTool:
        # Copying a program (`copy.deepcopy(agent)`) copies its tools; a copy calls the same hub, which holds
        # threads and servers and cannot be copied.
        copied: _HubTool = self.model_copy()
        return copied

    def required(self) -> list[str]:
        """The arguments the server requires."""
        required = self._schema.get("required")
        return [str(name) for name in required] if isinstance(required, list) else []

    def format_as_litellm_function_call(self) -> dict[str, Any]:
        """The function-calling spec, with the server's schema whole (`$defs`, required, everything)."""
        parameters = copy.deepcopy(self._schema)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.desc, "parameters": parameters},
        }

    def __str__(self) -> str:
        # What ReAct's instructions list for each tool; DSPy's own leaves out which arguments are required.
        required = self.required()
        return f"{super().__str__()} Required arguments: {required}." if required else super().__str__()


def _output(result: ToolResult, public: str) -> Any:
    """The text, or the text (if any) followed by the images, sounds and files as DSPy's own types, which
    DSPy sends to the model as image, audio and file parts; an error result raises."""
    if result.is_error:
        raise ToolResultError(result, tool=public)
    parts = content_parts(result)
    text = parts_text(parts)
    media = [_media(part) for part in parts if part.kind != "text"]
    if not media:
        return text
    return [text, *media] if text else media


def _media(part: ContentPart) -> dspy.Image | dspy.Audio | dspy.File:
    """An image, a sound or a file as the DSPy type its adapters turn into the model's part of that kind."""
    data_url = f"data:{part.mime_type};base64,{part.base64}"
    if part.kind == "image":
        return dspy.Image(url=data_url)
    if part.kind == "audio":
        return dspy.Audio(data=part.base64, audio_format=audio_format(part.mime_type) or "wav")
    return dspy.File(file_data=data_url, filename=filename(part))
