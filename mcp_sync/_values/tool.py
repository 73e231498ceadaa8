"""A tool as a model sees it, and what one registry change did.

`Tool` is the registry's value type; `function_spec` is the tool in the shape that
function-calling APIs (OpenAI's and those that copy it) take. Both are plain data with
no knowledge of servers, hubs or threads.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "NativeFunction",
    "TaskSupport",
    "Tool",
    "ToolChanges",
    "function_spec",
    "function_specs",
    "sorted_tools",
]

NativeFunction = Callable[..., Any]
"""A host function: called with the tool's arguments as keyword arguments."""

TaskSupport = Literal["forbidden", "optional", "required"]
"""Whether a tool runs as a task: never, when the caller asks, or always (a long-running call)."""


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool as a model sees it; `server_name`/`raw_name` are None for a native tool."""

    name: str
    description: str | None
    input_schema: Mapping[str, Any] = field(hash=False)
    server_name: str | None = None
    raw_name: str | None = None
    output_schema: Mapping[str, Any] | None = field(default=None, hash=False)
    task_support: TaskSupport = "forbidden"
    """From the tool's `execution.taskSupport` (2025-11-25) or the tasks extension (2026-07-28):
    "required" tools are always called as tasks, "optional" ones when the caller asks."""

    @property
    def is_native(self) -> bool:
        return self.server_name is None


@dataclass(frozen=True, slots=True)
class ToolChanges:
    """What one registry change did, each list sorted by name."""

    added: tuple[Tool, ...] = ()
    removed: tuple[Tool, ...] = ()
    changed: tuple[Tool, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def sorted_tools(tools: Iterable[Tool]) -> tuple[Tool, ...]:
    return tuple(sorted(tools, key=lambda tool: tool.name))


def function_spec(tool: Tool) -> dict[str, Any]:
    """One tool as an OpenAI-style function tool spec.

    The description and the input schema are passed through as the tool has them (the
    schema deep-copied, so a caller may adjust it freely); only a missing description
    becomes "". Nothing is invented: a schema without "type" stays without it.
    """
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": copy.deepcopy(dict(tool.input_schema)),
        },
    }


def function_specs(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    return [function_spec(tool) for tool in tools]
