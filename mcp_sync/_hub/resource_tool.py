"""Resources offered to a model as a tool: `mcp__<server>__read_resource(uri)`, one per server.

Off by default (`MCPHub(resource_tools=True)`): a model that can read any resource of a server
can read a lot. The tool's result is the resource's text; binary parts are described, not sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._values.resources import ResourceResult

__all__ = [
    "RESOURCE_TOOL_RAW_NAME",
    "make_resource_tool",
    "resource_tool_description",
    "resource_tool_schema",
    "resource_tool_text",
]

RESOURCE_TOOL_RAW_NAME = "read_resource"


def resource_tool_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"uri": {"type": "string", "description": "the URI of the resource to read"}},
        "required": ["uri"],
    }


def resource_tool_description(server_name: str, uris: list[str], templates: list[str]) -> str:
    """What the model is told: the server, and the resources and templates it listed (the first few)."""
    lines = [f"Read a resource of MCP server {server_name!r} by its URI and return its text."]
    if uris:
        lines.append("Resources: " + ", ".join(uris[:20]) + (" ..." if len(uris) > 20 else ""))
    if templates:
        lines.append("URI templates: " + ", ".join(templates[:10]) + (" ..." if len(templates) > 10 else ""))
    return "\n".join(lines)


def resource_tool_text(result: ResourceResult) -> str:
    parts = []
    for part in result.contents:
        if part.text is not None:
            parts.append(part.text)
        else:
            parts.append(f"[binary: {part.mime_type or 'unknown type'}, {len(part.blob or b'')} bytes]")
    return "\n".join(parts)


def make_resource_tool(read: Callable[[str], ResourceResult]) -> Callable[[str], str]:
    """The native function behind the tool: read the URI, return its text."""

    def read_resource(uri: str) -> str:
        return resource_tool_text(read(uri))

    return read_resource
