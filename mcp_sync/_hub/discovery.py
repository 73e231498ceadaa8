"""Progressive discovery: two tools that stand in for all of a registry's, so a model's context holds
two definitions instead of hundreds.

The model searches with `mcp__search_tools(query, limit)`, which answers with the matching tools'
names, descriptions and input schemas as JSON, then calls one with `mcp__call_tool(name, arguments)`.
Both names start with `mcp__` and have no second `__`: a host function may not take an `mcp__` name
and every server tool's public name is `mcp__<server>__<tool>`, so neither can ever name a registry
tool. The hub runs them (`MCPHub.call_tool`, `submit`, `call_tool_safe`); this module says what they
look like and reads the arguments a model sent them, answering a bad one with an error result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._values.errors import ToolNotFoundError
from .._values.results import ToolResult, error_result
from .._values.tool import Tool, function_spec
from .agent import parse_arguments

__all__ = [
    "CALL_TOOL",
    "CALL_TOOL_NAME",
    "DEFAULT_SEARCH_LIMIT",
    "DISCOVERY_TOOL_NAMES",
    "MAX_SEARCH_LIMIT",
    "SEARCH_TOOL",
    "SEARCH_TOOL_NAME",
    "call_request",
    "check_discovery",
    "check_pinned",
    "check_search",
    "found_result",
    "search_request",
]

SEARCH_TOOL_NAME = "mcp__search_tools"
CALL_TOOL_NAME = "mcp__call_tool"
DISCOVERY_TOOL_NAMES = frozenset({SEARCH_TOOL_NAME, CALL_TOOL_NAME})

DEFAULT_SEARCH_LIMIT = 5
# The most tools one search hands a model: each comes with its whole schema.
MAX_SEARCH_LIMIT = 20

SEARCH_TOOL = Tool(
    SEARCH_TOOL_NAME,
    "Search the available tools by what they do. Returns the best matches as JSON: each tool's name, "
    f"description and input schema. Then call one with {CALL_TOOL_NAME}.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what the tool should do, in a few words"},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SEARCH_LIMIT,
                "description": f"how many tools to return (default {DEFAULT_SEARCH_LIMIT})",
            },
        },
        "required": ["query"],
    },
)

CALL_TOOL = Tool(
    CALL_TOOL_NAME,
    f"Call a tool found with {SEARCH_TOOL_NAME}, by its name, with arguments as its input schema says.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": f"the tool's name, as {SEARCH_TOOL_NAME} gave it"},
            "arguments": {"type": "object", "description": "the tool's arguments"},
        },
        "required": ["name"],
    },
)


def check_search(query: object, limit: object) -> None:
    """`MCPHub.search_tools`'s argument check: a non-empty query and a limit of at least 1."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, not {type(query).__name__}")
    if not query.strip():
        raise ValueError("query must not be empty: say in a few words what the tool should do")
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int, not {type(limit).__name__}")
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")


def check_discovery(discovery: object, cost: Callable[[], int]) -> bool:
    """Whether `function_specs(discovery=...)` gives the discovery set: True, False, or an int N for
    "when every tool's definitions together cost more than N tokens" (`cost()`, read only then)."""
    if isinstance(discovery, bool):
        return discovery
    if not isinstance(discovery, int):
        raise TypeError(
            f"discovery must be True, False or a token budget (an int), not {type(discovery).__name__}"
        )
    if discovery < 0:
        raise ValueError(f"discovery's token budget must be 0 or more, not {discovery}")
    return cost() > discovery


def check_pinned(
    pinned: Iterable[str], lookup: Callable[[str], Tool | None], why_missing: Callable[[str], str | None]
) -> list[Tool]:
    """The pinned tools, in the order given, each once: `ToolNotFoundError` names an unknown one (with
    `why_missing(name)`), `TypeError` a single string given for a list of names."""
    if isinstance(pinned, str):
        raise TypeError(f"pinned takes public names, not one string: pinned=[{pinned!r}]")
    tools: dict[str, Tool] = {}
    for name in pinned:
        if not isinstance(name, str):
            raise TypeError(f"pinned takes public names (str), not {type(name).__name__}")
        tool = lookup(name)
        if tool is None:
            raise ToolNotFoundError(name, why_missing(name) or "it cannot be pinned")
        tools.setdefault(name, tool)
    return list(tools.values())


def search_request(arguments: Mapping[str, Any] | str | None) -> tuple[str, int] | ToolResult:
    """The query and limit a model sent the search tool, or an error result saying what is wrong."""
    parsed = parse_arguments(SEARCH_TOOL_NAME, arguments)
    if isinstance(parsed, ToolResult):
        return parsed
    query = parsed.get("query")
    limit = parsed.get("limit", DEFAULT_SEARCH_LIMIT)
    if not isinstance(query, str) or not query.strip():
        return error_result(
            f"invalid arguments for {SEARCH_TOOL_NAME}: query must be a non-empty string saying what "
            "the tool should do"
        )
    if limit is None:
        limit = DEFAULT_SEARCH_LIMIT
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        return error_result(
            f"invalid arguments for {SEARCH_TOOL_NAME}: limit must be an integer from 1 to "
            f"{MAX_SEARCH_LIMIT}, not {json.dumps(limit, default=str)}"
        )
    unknown = sorted(set(parsed) - {"query", "limit"})
    if unknown:
        return error_result(f"invalid arguments for {SEARCH_TOOL_NAME}: unexpected argument {unknown[0]!r}")
    return query, limit


def call_request(arguments: Mapping[str, Any] | str | None) -> tuple[str, dict[str, Any]] | ToolResult:
    """The tool name and arguments a model sent the call tool, or an error result saying what is wrong.
    The inner arguments may be an object or, as models sometimes send them, its JSON text."""
    parsed = parse_arguments(CALL_TOOL_NAME, arguments)
    if isinstance(parsed, ToolResult):
        return parsed
    name = parsed.get("name")
    if not isinstance(name, str) or not name:
        return error_result(
            f"invalid arguments for {CALL_TOOL_NAME}: name must be the name of a tool, as "
            f"{SEARCH_TOOL_NAME} gave it"
        )
    unknown = sorted(set(parsed) - {"name", "arguments"})
    if unknown:
        return error_result(
            f"invalid arguments for {CALL_TOOL_NAME}: unexpected argument {unknown[0]!r}; put the "
            f"tool's own arguments in 'arguments'"
        )
    inner = parse_arguments(name, parsed.get("arguments"))
    if isinstance(inner, ToolResult):
        return inner
    return name, inner


def found_result(tools: list[Tool]) -> ToolResult:
    """What the search tool answers: a JSON array of the tools (`[]` for none), also as structured content."""
    found = [
        {
            "name": spec["function"]["name"],
            "description": spec["function"]["description"],
            "input_schema": spec["function"]["parameters"],
        }
        for spec in map(function_spec, tools)
    ]
    return ToolResult(json.dumps(found, ensure_ascii=False, default=str), structured_content={"tools": found})
