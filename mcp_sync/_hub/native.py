"""Host Python functions as tools, called under the same contract as MCP tools.

`native_tool_from_function` derives a tool's schema from a function's type hints and wraps
the function so that invalid arguments answer with an error result naming them.
`start_native_call` runs one call on a daemon thread of its own, so that `submit()` returns
at once and a caller's `timeout` or `cancel` releases the caller even while the function
keeps running. A function that declares a `cancel` parameter receives a `threading.Event`
that is set when its caller gives up, so that it can stop cooperatively.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import inspect
import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema

from .._values.results import ToolResult, error_result, from_native_value
from .._values.tool import NativeFunction

__all__ = ["CANCEL_PARAMETER", "accepts_cancel", "native_tool_from_function", "start_native_call"]

logger = logging.getLogger("mcp_sync")

CANCEL_PARAMETER = "cancel"
"""A native function with a parameter of this name gets the call's cancel `threading.Event`."""

# What function-calling APIs accept as a function name; every MCP public name already fits.
_FUNCTION_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def accepts_cancel(function: Callable[..., Any]) -> bool:
    """Whether `function` declares a keyword-passable `cancel` parameter."""
    with contextlib.suppress(TypeError, ValueError):
        parameter = inspect.signature(function).parameters.get(CANCEL_PARAMETER)
        return parameter is not None and parameter.kind in (
            parameter.POSITIONAL_OR_KEYWORD,
            parameter.KEYWORD_ONLY,
        )
    return False


def start_native_call(
    name: str,
    function: NativeFunction,
    arguments: Mapping[str, Any],
    *,
    pass_cancel: bool,
) -> tuple[concurrent.futures.Future[ToolResult], threading.Event]:
    """Run `function(**arguments)` on its own daemon thread; returns its Future and its cancel Event.

    The Future stays pending while the function runs, so `future.cancel()` works (and sets the
    Event); a function that raises answers with an error result, as an MCP tool would.
    """
    future = concurrent.futures.Future[ToolResult]()
    stop = threading.Event()
    kwargs = dict(arguments)
    if pass_cancel:
        kwargs[CANCEL_PARAMETER] = stop

    def on_done(done: concurrent.futures.Future[ToolResult]) -> None:
        if done.cancelled():
            stop.set()
            done.set_running_or_notify_cancel()  # wake concurrent.futures.wait() and as_completed()

    def run() -> None:
        try:
            result = from_native_value(function(**kwargs))
        except Exception as exc:
            logger.warning("native tool %s raised", name, exc_info=True)
            result = error_result(f"{name} failed: {type(exc).__name__}: {exc}")
        with contextlib.suppress(concurrent.futures.InvalidStateError):  # the caller cancelled it
            future.set_result(result)

    future.add_done_callback(on_done)
    try:  # `start()` waits for the thread, which may already run the function when a Ctrl-C lands
        threading.Thread(target=run, name=f"mcp-sync:native:{name}", daemon=True).start()
    except BaseException:
        future.cancel()
        raise
    return future, stop


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
    takes_cancel = False
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.name == CANCEL_PARAMETER and parameter.kind != parameter.POSITIONAL_ONLY:
            takes_cancel = True  # filled in by the call, not by the model: not in the schema
            continue
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
        cancel = arguments.pop(CANCEL_PARAMETER, None) if takes_cancel else None
        try:
            validated = model.model_validate(arguments)
        except ValidationError as exc:
            return error_result(_describe_invalid(tool_name, exc))
        values = {parameter: getattr(validated, f"p{i}") for i, parameter in enumerate(parameter_names)}
        if takes_cancel:
            values[CANCEL_PARAMETER] = cancel if cancel is not None else threading.Event()
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
