"""Helpers for function-calling agent loops: tool specs for the model, and calls that always answer.

The loop this serves: send the model `function_specs()`, run each tool call it emits with
`call_tool_safe()` (which turns every failure into an error result the model can read),
append the results as `tool` messages, repeat. (`register_function()`, in `_hub.native`, puts
the host's own functions in the same registry.)
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .._runtime.callbacks import ProgressCallback
from .._runtime.calls import NO_LIMIT, resolve_timeout
from .._values.errors import (
    MCPSyncError,
    ServerDisconnectedError,
    ToolApprovalDeniedError,
    ToolApprovalRequiredError,
    ToolCallCancelledError,
    ToolCallMayHaveRunError,
    ToolCallTimeoutError,
    ToolNotFoundError,
)
from .._values.results import ToolResult, content_left_out, error_result
from .._values.tool import function_spec, function_specs

CallTool = Callable[..., ToolResult]
"""`MCPHub.call_tool`, as `call_tool_safe` uses it."""

__all__ = [
    "CALL_TOOL_NAME",
    "SEARCH_TOOL_NAME",
    "call_tool_safe",
    "function_spec",
    "function_specs",
    "message_for_model",
    "parse_arguments",
]

SEARCH_TOOL_NAME = "mcp__search_tools"
"""The discovery search tool (`discovery.py` says what it does); named here for this module's messages."""
CALL_TOOL_NAME = "mcp__call_tool"
"""The discovery call tool."""

logger = logging.getLogger("mcp_sync")

# -- calls that always answer ----------------------------------------------------------------------------


def parse_arguments(name: str, arguments: Mapping[str, Any] | str | None) -> dict[str, Any] | ToolResult:
    """The arguments as a dict, or an error result saying why they are not a JSON object.

    Models send arguments as a JSON string; "" and "null" mean no arguments.
    """
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            decoded = json.loads(arguments)
        except ValueError as exc:
            return error_result(f"invalid arguments for {name}: not valid JSON ({exc}); send a JSON object")
        except RecursionError:  # json.loads's answer to deep nesting ("[[[[..."), not a ValueError
            return error_result(f"invalid arguments for {name}: JSON nested too deeply; send a JSON object")
        if decoded is None:
            return {}
        arguments = decoded
    if not isinstance(arguments, Mapping):
        return error_result(
            f"invalid arguments for {name}: expected a JSON object, got {_json_type(arguments)}"
        )
    return dict(arguments)


def call_tool_safe(
    call_tool: CallTool,
    name: str,
    arguments: Mapping[str, Any] | str | None,
    *,
    timeout: float | None,
    cancel: threading.Event | None,
    progress: ProgressCallback | None,
) -> ToolResult:
    """`call_tool` (the hub's), with every `MCPSyncError` and bad argument string made an error result.

    When the result holds images (or other blocks that are not text), its text ends with a
    note saying so, so a text-only model is not handed an empty answer; `images` and
    `content` are kept for a host that can pass them on.
    """
    resolve_timeout(
        timeout, NO_LIMIT
    )  # an invalid timeout is the caller's ValueError, whatever the arguments
    parsed = parse_arguments(name, arguments)
    if isinstance(parsed, ToolResult):
        return parsed
    try:
        result = call_tool(name, parsed, timeout=timeout, cancel=cancel, progress=progress)
    except MCPSyncError as exc:
        logger.info("call to %s ended without a result: %s", name, exc)
        return error_result(message_for_model(name, exc))
    note = content_left_out(result)
    if note is None:
        return result
    return dataclasses.replace(result, text=f"{result.text}\n{note}" if result.text else note)


def message_for_model(name: str, exc: MCPSyncError) -> str:
    """Why a call produced no result, in words a model can act on. The tool is the one the error names,
    if it names one: the tool a discovery call tool called, rather than the call tool itself."""
    called = name
    named = exc.name if isinstance(exc, ToolNotFoundError) else getattr(exc, "tool", None)
    name = named if isinstance(named, str) and named else name
    if isinstance(exc, ToolNotFoundError):
        then = f"find tools with {SEARCH_TOOL_NAME}" if called == CALL_TOOL_NAME else "use a tool on offer"
        return f"error: there is no tool named {name!r} (it may have been removed); {then}"
    if isinstance(exc, ToolCallTimeoutError):
        return f"error: timed out: {exc}"
    if isinstance(exc, ToolCallCancelledError):
        return f"error: cancelled: {exc}"
    if isinstance(exc, ToolCallMayHaveRunError):
        return f"error: the connection broke during the call, which may have run: {exc}"
    if isinstance(exc, ServerDisconnectedError):
        return f"error: server unavailable: {exc}"
    if isinstance(exc, ToolApprovalDeniedError):
        return f"error: not run: the person asked to approve this call said no ({name}); do not repeat it"
    if isinstance(exc, ToolApprovalRequiredError):
        return f"error: not run: {name} needs a person's approval before each call, and no one can be asked"
    return f"error: the call failed: {exc}"


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__
