"""Helpers for function-calling agent loops: tool specs for the model, calls that always answer,
and host Python functions as tools.

The loop this serves: send the model `function_specs()`, run each tool call it emits with
`call_tool_safe()` (which turns every failure into an error result the model can read),
append the results as `tool` messages, repeat. `register_function()` puts the host's own
functions in the same registry, with a schema derived from their type hints.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema

from ._callbacks import ProgressCallback
from ._errors import (
    MCPSyncError,
    ServerDisconnectedError,
    ToolCallCancelledError,
    ToolCallTimeoutError,
    ToolNotFoundError,
)
from ._results import ToolResult, content_left_out, error_result

if TYPE_CHECKING:
    from ._hub import MCPHub
    from ._registry import NativeFunction, Tool

__all__ = ["call_tool_safe", "function_spec", "function_specs", "native_tool_from_function"]

logger = logging.getLogger("mcp_sync")

# What function-calling APIs accept as a function name; every MCP public name already fits.
_FUNCTION_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


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
        if decoded is None:
            return {}
        arguments = decoded
    if not isinstance(arguments, Mapping):
        return error_result(
            f"invalid arguments for {name}: expected a JSON object, got {_json_type(arguments)}"
        )
    return dict(arguments)


def call_tool_safe(
    hub: MCPHub,
    name: str,
    arguments: Mapping[str, Any] | str | None,
    *,
    timeout: float | None,
    cancel: threading.Event | None,
    progress: ProgressCallback | None,
) -> ToolResult:
    """`hub.call_tool`, with every `MCPSyncError` and bad argument string made an error result.

    When the result holds images (or other blocks that are not text), its text ends with a
    note saying so, so a text-only model is not handed an empty answer; `images` and
    `content` are kept for a host that can pass them on.
    """
    parsed = parse_arguments(name, arguments)
    if isinstance(parsed, ToolResult):
        return parsed
    try:
        result = hub.call_tool(name, parsed, timeout=timeout, cancel=cancel, progress=progress)
    except MCPSyncError as exc:
        logger.info("call to %s ended without a result: %s", name, exc)
        return error_result(_message_for_model(name, exc))
    note = content_left_out(result)
    if note is None:
        return result
    return dataclasses.replace(result, text=f"{result.text}\n{note}" if result.text else note)


def _message_for_model(name: str, exc: MCPSyncError) -> str:
    if isinstance(exc, ToolNotFoundError):
        return f"error: there is no tool named {name!r} (it may have been removed); use a tool on offer"
    if isinstance(exc, ToolCallTimeoutError):
        return f"error: timed out: {exc}"
    if isinstance(exc, ToolCallCancelledError):
        return f"error: cancelled: {exc}"
    if isinstance(exc, ServerDisconnectedError):
        return f"error: server unavailable: {exc}"
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


# -- host functions as tools -----------------------------------------------------------------------------


class _NoTitles(GenerateJsonSchema):
    """pydantic's JSON schema without the "title" it derives from each parameter name: noise to a model."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def native_tool_from_function(
    function: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> tuple[str, NativeFunction, str | None, dict[str, Any]]:
    """The tool name, a validating wrapper, the description and the input schema for a host function.

    The name defaults to the function's, the description to its docstring.
    Parameters become the schema's properties, typed by their hints (no hint: any JSON
    value), required unless they have a default. The wrapper validates the arguments
    with pydantic (lax: "5" is accepted for an int) and answers a failure with an error
    result naming each bad argument, instead of calling the function.
    """
    if inspect.iscoroutinefunction(function):
        raise TypeError("register_function takes a synchronous function: calls run in the caller's thread")
    tool_name = name if name is not None else getattr(function, "__name__", "")
    if not _FUNCTION_NAME_RE.fullmatch(tool_name):
        raise ValueError(
            f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'; pass name=... to choose one"
        )
    if tool_name.startswith("mcp__"):
        raise ValueError(f"tool name {tool_name!r}: names starting with 'mcp__' belong to MCP servers' tools")
    try:
        signature = inspect.signature(function, eval_str=True)
    except (NameError, SyntaxError, TypeError, ValueError) as exc:
        raise TypeError(f"cannot read the signature and type hints of {tool_name}: {exc}") from exc

    fields: dict[str, Any] = {}
    parameter_names: list[str] = []
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise TypeError(
                f"{tool_name}: parameter {parameter.name!r} cannot be passed by keyword "
                "(*args, **kwargs and positional-only parameters cannot be tool arguments)"
            )
        annotation = Any if parameter.annotation is parameter.empty else parameter.annotation
        default = ... if parameter.default is parameter.empty else parameter.default
        # Fields are named by position and aliased to the parameter: a parameter may then be
        # called `json` or `model_config` without clashing with pydantic's own attributes.
        fields[f"p{index}"] = (annotation, Field(default, alias=parameter.name))
        parameter_names.append(parameter.name)
    model = create_model(
        f"{tool_name}_arguments",
        __config__=ConfigDict(extra="forbid", validate_by_name=False, validate_by_alias=True),
        **fields,
    )
    schema: dict[str, Any] = model.model_json_schema(by_alias=True, schema_generator=_NoTitles)
    schema.pop("title", None)
    schema.setdefault("properties", {})

    def call(**arguments: Any) -> Any:
        try:
            validated = model.model_validate(arguments)
        except ValidationError as exc:
            return error_result(_describe_invalid(tool_name, exc))
        values = {parameter: getattr(validated, f"p{i}") for i, parameter in enumerate(parameter_names)}
        return function(**values)

    call.__name__ = tool_name
    call.__doc__ = function.__doc__
    call.__wrapped__ = function  # type: ignore[attr-defined]
    return tool_name, call, description if description is not None else inspect.getdoc(function), schema


def _describe_invalid(tool_name: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        message = "unexpected argument" if error["type"] == "extra_forbidden" else error["msg"]
        problems.append(f"{where}: {message}")
    return f"invalid arguments for {tool_name}: " + "; ".join(problems)
