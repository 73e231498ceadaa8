"""Ready-made handlers for the servers' requests: ask a person at a terminal or in a notebook, or
let an OpenAI-compatible chat model answer a sampling request; and a person's approval of a tool call.

`terminal_elicitation()` asks for each field of the requested schema with `input()`, checks
the answer against the field's schema (type, bounds, enum, format), asks again when it does not
fit, and returns the content. `openai_sampling(client, model)` sends a sampling request to
`client.chat.completions.create(...)`, duck-typed: no dependency on any SDK. `terminal_approval()`
shows a tool's name and arguments and asks whether to run it (`MCPHub(approve=...)`).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

from ._cli.output import printable
from ._server.server_requests import (
    ElicitationRequest,
    ElicitationResponse,
    SamplingRequest,
    SamplingResponse,
)
from ._values.tool import Tool

__all__ = ["openai_sampling", "terminal_approval", "terminal_elicitation"]

logger = logging.getLogger("mcp_sync")

_MAX_ATTEMPTS = 3
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_TRUE = {"y", "yes", "true", "1", "on"}
_FALSE = {"n", "no", "false", "0", "off"}
# `input()` answers that end the dialog instead of answering a field.
_DECLINE = "!decline"
_CANCEL = "!cancel"


class _Invalid(ValueError):
    """An answer that does not fit its field's schema; the message says why."""


def _choices(schema: Mapping[str, Any]) -> list[str] | None:
    if "enum" in schema:
        return [str(value) for value in schema["enum"]]
    options = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(options, list):
        return [
            str(option["const"]) for option in options if isinstance(option, Mapping) and "const" in option
        ]
    return None


def _choose(text: str, choices: list[str]) -> str:
    if text in choices:
        return text
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1]
    raise _Invalid(f"choose one of {', '.join(choices)} (or its number)")


def parse_field(text: str, schema: Mapping[str, Any]) -> Any:
    """`text` as the value one field's `schema` asks for; `_Invalid` if it does not fit."""
    kind = schema.get("type", "string")
    if kind == "boolean":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise _Invalid("answer yes or no")
    if kind in ("integer", "number"):
        try:
            number: int | float = int(text) if kind == "integer" else float(text)
        except ValueError:
            raise _Invalid(f"enter {'a whole number' if kind == 'integer' else 'a number'}") from None
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and number < low) or (high is not None and number > high):
            raise _Invalid(
                f"enter a number from {'-inf' if low is None else low} to {'inf' if high is None else high}"
            )
        return number
    if kind == "array":
        items = schema.get("items", {})
        choices = _choices(items) if isinstance(items, Mapping) else None
        values = [part.strip() for part in text.split(",") if part.strip()]
        if choices is not None:
            values = [_choose(value, choices) for value in values]
        low, high = schema.get("minItems"), schema.get("maxItems")
        if (low is not None and len(values) < low) or (high is not None and len(values) > high):
            raise _Invalid(
                f"give {low or 0} to {'any number of' if high is None else high} items, comma-separated"
            )
        return values
    choices = _choices(schema)
    if choices is not None:
        return _choose(text, choices)
    low, high = schema.get("minLength"), schema.get("maxLength")
    if (low is not None and len(text) < low) or (high is not None and len(text) > high):
        raise _Invalid(f"enter {low or 0} to {high if high is not None else 'any number of'} characters")
    form = schema.get("format")
    if form == "email" and not _EMAIL.fullmatch(text):
        raise _Invalid("enter an email address")
    if form in ("uri", "url") and "://" not in text:
        raise _Invalid("enter a URI such as https://example.com")
    if form == "date":
        try:
            date.fromisoformat(text)
        except ValueError:
            raise _Invalid("enter a date as YYYY-MM-DD") from None
    return text


def _prompt_for(name: str, schema: Mapping[str, Any], required: bool) -> str:
    label = schema.get("title") or name
    details = [schema["description"]] if schema.get("description") else []
    choices = _choices(schema) or (
        _choices(schema["items"]) if isinstance(schema.get("items"), Mapping) else None
    )
    if choices:
        details.append("choices: " + ", ".join(f"{i}={c}" for i, c in enumerate(choices, 1)))
    if "default" in schema:
        details.append(f"default: {schema['default']}")
    elif not required:
        details.append("optional")
    return f"{label}" + (f" ({'; '.join(map(str, details))})" if details else "") + ": "


def terminal_elicitation(
    input_function: Callable[[str], str] = input,
) -> Callable[[ElicitationRequest], ElicitationResponse]:
    """An elicitation handler that asks with `input()` (a terminal, or a notebook cell's input box).

    It shows the server's message, then asks for each field; an empty answer takes the field's
    default (or skips an optional field), an answer that does not fit is asked again (three tries,
    then the request is cancelled). Answering `!decline` declines, `!cancel` (or end of input)
    cancels. In URL mode it asks whether to open the URL. `input_function` replaces `input`.
    """

    def ask(request: ElicitationRequest) -> ElicitationResponse:
        try:
            if request.mode == "url":
                answer = input_function(f"{request.message}\nOpen {request.url}? [y/N] ").strip().lower()
                return ElicitationResponse.accept() if answer in _TRUE else ElicitationResponse.decline()
            return _ask_fields(request, input_function)
        except (EOFError, KeyboardInterrupt):
            return ElicitationResponse.cancel()

    return ask


def _ask_fields(request: ElicitationRequest, input_function: Callable[[str], str]) -> ElicitationResponse:
    schema = request.requested_schema
    properties: Mapping[str, Any] = schema.get("properties", {}) or {}
    required = set(schema.get("required", []) or [])
    content: dict[str, Any] = {}
    header = f"[{request.server_name}] {request.message}\n"
    for name, field_schema in properties.items():
        for _attempt in range(_MAX_ATTEMPTS):
            if request.cancelled.is_set():
                return ElicitationResponse.cancel()
            text = input_function(header + _prompt_for(name, field_schema, name in required)).strip()
            header = ""
            if text == _DECLINE:
                return ElicitationResponse.decline()
            if text == _CANCEL:
                return ElicitationResponse.cancel()
            if not text:
                if "default" in field_schema:
                    content[name] = field_schema["default"]
                    break
                if name not in required:
                    break
                header = "this field is required\n"
                continue
            try:
                content[name] = parse_field(text, field_schema)
                break
            except _Invalid as problem:
                header = f"{problem}\n"
        else:
            return ElicitationResponse.cancel()
    return ElicitationResponse.accept(content)


def terminal_approval(
    input_function: Callable[[str], str] = input,
) -> Callable[[Tool, Mapping[str, Any]], bool]:
    """An `approve` callback that asks with `input()` (a terminal, or a notebook cell's input box).

    It shows the tool's public name, its server and the arguments as JSON (control characters as
    `\\xNN`: a model's arguments cannot drive the terminal) and runs the call only on `y` or `yes`;
    anything else, or the end of input, denies it. Ctrl-C reaches the caller, as in any blocking call.
    `input_function` replaces `input`. Calls from several threads are asked one after another, so that
    their questions do not interleave.
    """
    one_at_a_time = threading.Lock()

    def approve(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        text = json.dumps(dict(arguments), ensure_ascii=False, indent=2, default=str)
        shown = "\n".join(printable(line) for line in text.split("\n"))  # the indent's line breaks stay
        question = (
            f"Tool {tool.name} (server {printable(tool.server_name or '-')}) asks for approval before "
            f"it runs, with these arguments:\n{shown}\nRun it? [y/N] "
        )
        try:
            with one_at_a_time:
                answer = input_function(question)
        except EOFError:
            return False
        return answer.strip().lower() in ("y", "yes")

    return approve


_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse"}


def openai_sampling(
    client: Any, model: str, **create_options: Any
) -> Callable[[SamplingRequest], SamplingResponse]:
    """A sampling handler backed by an OpenAI-compatible chat client (anything with
    `client.chat.completions.create(model=..., messages=...)`); `create_options` are passed on."""

    def sample(request: SamplingRequest) -> SamplingResponse:
        options: dict[str, Any] = {"max_tokens": request.max_tokens, **create_options}
        if request.temperature is not None:
            options.setdefault("temperature", request.temperature)
        if request.stop_sequences:
            options.setdefault("stop", list(request.stop_sequences))
        response = client.chat.completions.create(model=model, messages=request.as_chat_messages(), **options)
        choice = response.choices[0]
        reason = getattr(choice, "finish_reason", None)
        return SamplingResponse(
            text=choice.message.content or "",
            model=getattr(response, "model", None) or model,
            stop_reason=_STOP_REASONS.get(reason, reason) if reason else "endTurn",
        )

    return sample
