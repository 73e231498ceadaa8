"""What the adapters share: no framework is imported until its adapter is, `$ref`s are inlined for
frameworks that take each argument's schema on its own, a result's content becomes parts in order, and the
discovery set (search and call tools, pinned tools) is offered and run alike for every framework."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import mcp_types as types
import pytest

from mcp_sync import MCPHub, ToolImage, ToolNotFoundError, ToolResult
from mcp_sync.integrations._common import acall, content_parts, exposed_tools, inline_refs
from tests.integrations.support import MEDIA_CONTENT, PNG, PNG_BASE64, RICH_ARGUMENTS, RICH_SCHEMA, WAV
from tests.support import REPO_ROOT

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "smolagents", "llama_index", "dspy", "haystack")


def test_importing_mcp_sync_imports_no_framework() -> None:
    code = (
        "import sys, mcp_sync, mcp_sync.integrations\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({FRAMEWORKS!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == "[]"


def test_inline_refs_replaces_references_and_keeps_their_own_keys() -> None:
    resolved = inline_refs(RICH_SCHEMA)
    assert "$defs" not in resolved
    assert resolved["properties"]["home"] == {
        **RICH_SCHEMA["$defs"]["Address"],
        "description": "Where the travellers live.",
    }


def test_inline_refs_stops_at_a_recursive_type() -> None:
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node", "description": "d"}}}
        },
    }
    child = inline_refs(schema)["properties"]["root"]["properties"]["child"]
    assert child == {"type": "object", "description": "d"}


def test_content_parts_keep_the_servers_order_and_name_what_is_left_out() -> None:
    result = ToolResult(
        text="see\n[resource link: notes file:///notes.txt]",
        content=(
            types.TextContent(type="text", text="see"),
            types.ImageContent(type="image", data=PNG_BASE64, mime_type="image/png"),
            types.ResourceLink(type="resource_link", name="notes", uri="file:///notes.txt"),
            *MEDIA_CONTENT[1:2],
        ),
    )
    parts = content_parts(result, shown=("text", "image"))
    assert [(part.kind, part.text) for part in parts] == [
        ("text", "see"),
        ("image", ""),
        ("text", "[resource link: notes file:///notes.txt]"),
        ("text", f"[left out: audio, audio/wav, {len(WAV)} bytes]"),
    ]
    assert (parts[1].mime_type, parts[1].data) == ("image/png", PNG)


def test_content_parts_of_a_host_tool_result_are_its_text_and_images() -> None:
    result = ToolResult(text="drawn", images=(ToolImage("image/png", PNG),))
    assert [(part.kind, part.text, part.data) for part in content_parts(result)] == [
        ("text", "drawn", b""),
        ("image", "", PNG),
    ]


def test_an_image_that_is_not_base64_is_named_as_left_out() -> None:
    broken = types.ImageContent(type="image", data="not base64!", mime_type="image/png")
    [part] = content_parts(ToolResult(text="", content=(broken,)))
    assert (part.kind, part.text) == ("text", "[left out: image, image/png: not valid base64]")


def test_exposed_tools_with_discovery_are_the_search_and_call_tools_then_the_pinned(rich_hub: MCPHub) -> None:
    exposed = exposed_tools(rich_hub, framework="test", discovery=True, pinned=["book_trip"])
    assert [item.name for item in exposed] == ["mcp__search_tools", "mcp__call_tool", "book_trip"]
    everything = sum(rich_hub.context_tokens().values())
    assert [item.name for item in exposed_tools(rich_hub, framework="test", discovery=everything)] == [
        "book_trip"
    ]


def test_exposed_tools_refuse_include_with_discovery_and_an_unknown_pinned_name(rich_hub: MCPHub) -> None:
    with pytest.raises(ValueError, match="include= cannot be combined with discovery="):
        exposed_tools(rich_hub, framework="test", discovery=True, include=lambda tool: True)
    with pytest.raises(ToolNotFoundError, match="book_trap"):
        exposed_tools(rich_hub, framework="test", discovery=True, pinned=["book_trap"])


def test_acall_runs_the_call_tool_and_answers_its_bad_arguments(rich_hub: MCPHub) -> None:
    arguments = {"name": "book_trip", "arguments": RICH_ARGUMENTS}
    result = asyncio.run(acall(rich_hub, "mcp__call_tool", arguments, timeout=10, cancel=None))
    assert json.loads(result.text) == RICH_ARGUMENTS
    refused = asyncio.run(acall(rich_hub, "mcp__call_tool", {"arguments": {}}, timeout=10, cancel=None))
    assert refused.is_error and "name must be the name of a tool" in refused.text
    searched = asyncio.run(acall(rich_hub, "mcp__search_tools", {"query": "trip"}, timeout=10, cancel=None))
    assert [tool["name"] for tool in json.loads(searched.text)] == ["book_trip"]
