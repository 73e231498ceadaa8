"""Tool results as a model sees them: one text, an error flag, and structured content.

Text blocks are joined with "\\n" (never "": block boundaries matter to the
model). Images, audio and binary resources have no place in a text result:
they are dropped with a warning. Text resources keep their text, and resource
links become a line naming the link.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

__all__ = ["ToolResult", "error_result", "from_call_tool_result", "from_native_value"]

logger = logging.getLogger("mcp_sync")


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call. `is_error` results are answers for the model, not exceptions."""

    text: str
    is_error: bool = False
    structured_content: dict[str, Any] | None = field(default=None, hash=False)
    raw: types.CallToolResult | None = field(default=None, repr=False, compare=False, hash=False)
    """The server's result as received (content blocks included), for hosts that want more than text."""


def from_call_tool_result(result: types.CallToolResult, tool_name: str) -> ToolResult:
    parts: list[str] = []
    dropped: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource) and isinstance(
            block.resource, types.TextResourceContents
        ):
            parts.append(block.resource.text)
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link: {block.name} {block.uri}]")
        else:
            dropped.append(block.type)
    if dropped:
        logger.warning(
            "dropped %d non-text content block(s) (%s) from the result of %s",
            len(dropped),
            ", ".join(sorted(set(dropped))),
            tool_name,
        )
    return ToolResult(
        text="\n".join(parts),
        is_error=bool(result.is_error),
        structured_content=result.structured_content,
        raw=result,
    )


def from_native_value(value: Any) -> ToolResult:
    """Map what a host function returned: a ToolResult as is, a str as text, anything else as JSON."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(text=value)
    if value is None:
        return ToolResult(text="")
    text = json.dumps(value, ensure_ascii=False, default=str)
    structured = value if isinstance(value, dict) else {"result": value}
    return ToolResult(text=text, structured_content=structured)


def error_result(message: str) -> ToolResult:
    return ToolResult(text=message, is_error=True)
