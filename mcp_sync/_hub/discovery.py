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

from .._values.results import ToolResult, error_result
from .._values.tool import Tool, function_spec
from .agent import CALL_TOOL_NAME, SEARCH_TOOL_NAME, parse_arguments

__all__ = [
    "CALL_TOOL_NAME",
    "DEFAULT_SEARCH_LIMIT",
    "DISCOVERY_TOOL_NAMES",
    "MAX_SEARCH_LIMIT",
    "SEARCH_TOOL_NAME",
    "call_request",
    "check_budget",
    "check_discovery",
    "check_search",
    "discovery_tools",
    "found_result",
    "pinned_names",
    "search_request",
]

DISCOVERY_TOOL_NAMES = frozenset({SEARCH_TOOL_NAME, CALL_TOOL_NAME})

DEFAULT_SEARCH_LIMIT = 5
# The most tools one search hands a model.
MAX_SEARCH_LIMIT = 20
# One search answer's bounds, whatever a server describes: a description is cut after this many
# characters, a schema longer than this (as JSON) is shown without its descriptions or left out, and
# tools beyond the answer's total are left out, with their number.
_MAX_DESCRIPTION = 1_500
_MAX_SCHEMA = 8_000
_MAX_SCHEMA_STRING = 200
_MAX_ANSWER = 40_000


def discovery_tools() -> list[Tool]:
    """The search tool and the call tool, made anew at each call (their schemas are dicts a caller may
    change)."""
    search = Tool(
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
    call = Tool(
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
    return [search, call]


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


def check_discovery(discovery: object) -> None:
    """`function_specs(discovery=...)`'s type check: True, False, or a token budget of 0 or more."""
    if isinstance(discovery, bool):
        return
    if not isinstance(discovery, int):
        raise TypeError(
            f"discovery must be True, False or a token budget (an int), not {type(discovery).__name__}"
        )
    if discovery < 0:
        raise ValueError(f"discovery's token budget must be 0 or more, not {discovery}")


def check_budget(discovery: bool | int, own_cost: Callable[[], int], all_cost: Callable[[], int]) -> bool:
    """Whether `function_specs(discovery=...)` gives the discovery set (`discovery` checked already): True,
    False, or for a budget N when every tool's definitions cost more than N and more than the discovery
    set's own (`all_cost()`, `own_cost()`, read only then), so the set never costs more than all tools."""
    if isinstance(discovery, bool):
        return discovery
    return all_cost() > max(discovery, own_cost())


def pinned_names(pinned: Iterable[str]) -> tuple[str, ...]:
    """The pinned public names, each once, in the order given: `TypeError` for a single string given for
    a list of names, or a name that is not a str."""
    if isinstance(pinned, str):
        raise TypeError(f"pinned takes public names, not one string: pinned=[{pinned!r}]")
    names: dict[str, None] = {}
    for name in pinned:
        if not isinstance(name, str):
            raise TypeError(f"pinned takes public names (str), not {type(name).__name__}")
        names.setdefault(name)
    return tuple(names)


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
            f"{MAX_SEARCH_LIMIT}, not {_shown(limit)}"
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
    """What the search tool answers: a JSON array of the tools (`[]` for none), also as structured content.
    Bounded whatever a server describes: long descriptions are cut, large schemas shortened, and tools
    past the answer's size left out, the text saying how many."""
    found: list[dict[str, Any]] = []
    size = 2
    for tool in tools:
        try:
            schema = _bounded_schema(function_spec(tool)["function"]["parameters"])
        except RecursionError:  # nested too deep to copy
            schema = {"type": "object", "description": "input schema left out: nested too deep to show"}
        entry = {
            "name": tool.name,
            "description": _cut(tool.description or "", _MAX_DESCRIPTION),
            "input_schema": schema,
        }
        entry_size = len(json.dumps(entry, ensure_ascii=False, default=str)) + 2
        if size + entry_size > _MAX_ANSWER:
            break
        found.append(entry)
        size += entry_size
    text = json.dumps(found, ensure_ascii=False, default=str)
    left_out = len(tools) - len(found)
    if not left_out:
        return ToolResult(text, structured_content={"tools": found})
    note = (
        f"{left_out} more matching tool(s) left out to keep this answer short; "
        "search with more precise words to see them"
    )
    return ToolResult(f"{text}\n{note}", structured_content={"tools": found, "left_out": left_out})


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [cut: {len(text) - limit} more characters]"


def _bounded_schema(schema: Any) -> Any:
    """`schema`, or if it is longer than the answer allows, with its long strings cut, or if still too
    long, a note in its place (the tool's server still checks the arguments)."""
    try:
        size = len(json.dumps(schema, ensure_ascii=False, default=str))
    except RecursionError:
        size = _MAX_SCHEMA + 1
    if size <= _MAX_SCHEMA:
        return schema
    shortened = _cut_strings(schema, _SCHEMA_DEPTH_SHOWN)
    if len(json.dumps(shortened, ensure_ascii=False, default=str)) <= _MAX_SCHEMA:
        return shortened
    return {
        "type": "object",
        "description": f"input schema left out: {size} characters, too long to show",
    }


# How deep a too-long schema is copied with its strings cut; deeper parts are left out.
_SCHEMA_DEPTH_SHOWN = 8


def _cut_strings(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return _cut(value, _MAX_SCHEMA_STRING)
    if depth <= 0:
        return None
    if isinstance(value, Mapping):
        return {
            _cut(str(key), _MAX_SCHEMA_STRING): _cut_strings(item, depth - 1) for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_cut_strings(item, depth - 1) for item in value]
    return value


def _shown(value: object) -> str:
    """A model's value in an error message: short JSON of a number or string, else its type."""
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        return _cut(json.dumps(value), 50)
    return "null" if value is None else type(value).__name__
