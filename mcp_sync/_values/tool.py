"""A tool as a model sees it, and what one registry change did.

`Tool` is the registry's value type; `function_spec` is the tool in the shape that
function-calling APIs (OpenAI's and those that copy it) take. Both are plain data with
no knowledge of servers, hubs or threads.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CHARACTERS_PER_TOKEN",
    "NativeFunction",
    "TaskSupport",
    "Tokenizer",
    "Tool",
    "ToolAnnotations",
    "ToolChanges",
    "count_tokens",
    "function_spec",
    "function_spec_json",
    "function_specs",
    "same_tool",
    "sorted_tools",
]

NativeFunction = Callable[..., Any]
"""A host function: called with the tool's arguments as keyword arguments."""

Tokenizer = Callable[[str], int]
"""Counts a text's tokens for a model: `lambda text: len(encoding.encode(text))` with tiktoken, say."""

CHARACTERS_PER_TOKEN = 4
"""The default token estimate's rule of thumb: a token is about 4 characters of English text (OpenAI,
https://help.openai.com/en/articles/4936856-what-are-tokens-and-how-to-count-them)."""

TaskSupport = Literal["forbidden", "optional", "required"]
"""Whether a tool runs as a task: never, when the caller asks, or always (a long-running call)."""


@dataclass(frozen=True, slots=True)
class ToolAnnotations:
    """The server's hints about a tool (MCP's `ToolAnnotations`); None where the server said nothing.

    Hints, not guarantees: the spec says a client must not trust them from an untrusted server, so
    whatever acts on them (the replay policy of a call whose connection broke) can be overridden.
    """

    title: str | None = None
    read_only_hint: bool | None = None
    """True: the tool does not modify its environment (the spec's default: False)."""
    destructive_hint: bool | None = None
    """True: it may destroy or overwrite; meaningful only when not read-only (default: True)."""
    idempotent_hint: bool | None = None
    """True: calling it again with the same arguments has no further effect (default: False)."""
    open_world_hint: bool | None = None
    """True: it reaches entities outside a closed domain, the web say (default: True)."""

    @property
    def read_only(self) -> bool:
        """The server says the tool changes nothing."""
        return self.read_only_hint is True

    @property
    def destructive(self) -> bool:
        """The tool may destroy (the spec's default unless it is read-only or says otherwise)."""
        return not self.read_only and self.destructive_hint is not False

    @property
    def idempotent(self) -> bool:
        """Repeating the call is harmless by the server's word: read-only, or idempotent."""
        return self.read_only or self.idempotent_hint is True


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
    title: str | None = None
    """The tool's display name, where the server gives one (the tool's `title`, else its annotations')."""
    annotations: ToolAnnotations | None = None
    """The server's hints (read-only, destructive, idempotent, open world); None if it gave none."""
    requires_approval: bool = False
    """Each call waits for a person's approval (the hub's `approve` callback) before it runs: the
    server's configuration says so (`require_approval`, `tool_approval`, a host's "ask first" setting)."""

    @property
    def is_native(self) -> bool:
        """Whether this is a host function registered as a tool, not a server's tool."""
        return self.server_name is None

    def context_tokens(self, tokenizer: Tokenizer | None = None) -> int:
        """About how many tokens this tool's definition takes in a model's context: the tokens of its
        `function_spec` as compact JSON. The default estimate is characters / 4, rounded up (OpenAI's rule
        of thumb, https://help.openai.com/en/articles/4936856-what-are-tokens-and-how-to-count-them);
        `tokenizer` counts them instead (a function of a text to its number of tokens). Providers wrap
        tool definitions in text of their own, so this is the definition's share, not the request's."""
        return count_tokens(function_spec_json(self), tokenizer)


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


def same_tool(a: Tool | None, b: Tool) -> bool:
    """Whether `a` is `b` or an equal tool. A schema nested too deep to compare (a server's or a host's
    function may describe one) counts as different, never as a `RecursionError`."""
    if a is b:
        return True
    try:
        return a == b
    except RecursionError:
        return False


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


def function_spec_json(tool: Tool) -> str:
    """The tool's `function_spec` as compact JSON (no spaces, non-ASCII as is): what its cost counts."""
    return json.dumps(function_spec(tool), separators=(",", ":"), ensure_ascii=False, default=str)


def count_tokens(text: str, tokenizer: Tokenizer | None) -> int:
    """`tokenizer(text)`, checked to be a count; without one, characters / 4 rounded up."""
    if tokenizer is None:
        return math.ceil(len(text) / CHARACTERS_PER_TOKEN)
    if not callable(tokenizer):
        raise TypeError(f"tokenizer must be a function of a text to its token count, not {tokenizer!r}")
    count = tokenizer(text)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise TypeError(f"tokenizer must return a count of tokens (an int >= 0), it returned {count!r}")
    return count
