"""The hub's tools as smolagents `Tool`s, for `ToolCallingAgent` and `CodeAgent`.

`ToolCollection.from_mcp` goes through `mcpadapt`, which does not import with `mcp` 2.x, has no
per-call timeout, never cancels on the server, and names two servers' `echo` tools both `echo`.
`HubToolCollection(hub)` stands in for it: its `tools` are the hub's as of each access, named
`mcp__<server>__<tool>`, with the hub's timeouts and cancellation.

smolagents describes each argument on its own (`inputs`): every property of the server's schema
becomes one input that keeps all of its JSON schema (description, enum, nested properties, items;
local `$ref`s are inlined), typed with smolagents' types, and `nullable` when it is not required.
Tools fail by raising, as smolagents expects (the agent shows the error to the model): an error
result raises `ToolResultError`, a timeout `ToolCallTimeoutError`, and so on. smolagents has no
per-tool timeout of its own: pass `timeout=`, or the server's `tool_call_timeout_ms` applies.
"""

from __future__ import annotations

import keyword
import re
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from mcp_sync import MCPHub, ToolNotFoundError

from ._common import ExposedTool, ToolFilter, ToolResultError, exposed_tools, inline_refs

try:
    import smolagents
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "mcp_sync.integrations.smolagents needs smolagents: pip install 'mcp-syncio[smolagents]'"
    ) from exc

__all__ = ["HubToolCollection", "smolagents_inputs", "smolagents_tool", "smolagents_tools"]

# The JSON schema types smolagents accepts in `inputs` (its AUTHORIZED_TYPES, less image and audio).
_JSON_TYPES = ("string", "boolean", "integer", "number", "array", "object", "null")
_NOT_IDENTIFIER = re.compile(r"\W", re.ASCII)


def smolagents_tools(
    hub: MCPHub,
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    raw_names: bool = False,
    include: ToolFilter | None = None,
    structured_output: bool = False,
) -> list[smolagents.Tool]:
    """Every tool in the hub's registry now, as smolagents tools (see `HubToolCollection` to follow changes).

    `timeout` (seconds) bounds each call (default: the server's); setting `cancel` cancels the running
    call. Names are `mcp__<server>__<tool>` ("-" becomes "_": smolagents wants Python identifiers);
    `raw_names=True` uses the servers' own names and raises `ConfigError` if two tools would share one.
    `structured_output=True` makes tools with an output schema return the structured content (a dict).
    """
    exposed = exposed_tools(
        hub, framework="smolagents", raw_names=raw_names, include=include, fix_name=_identifier
    )
    return [_HubTool(hub, item, timeout, cancel, structured_output) for item in exposed]


def smolagents_tool(
    hub: MCPHub,
    name: str,
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    structured_output: bool = False,
) -> smolagents.Tool:
    """One tool of the hub, by public name, as a smolagents tool."""
    tool = hub.registry.get(name)
    if tool is None:
        raise ToolNotFoundError(name)
    return _HubTool(hub, ExposedTool(_identifier(name), tool), timeout, cancel, structured_output)


class HubToolCollection:
    """A `ToolCollection` over the hub: `tools` is the hub's tool list as of each access.

    Use it where `ToolCollection.from_mcp(...)` was (also as a `with` block; leaving it does not close the
    hub). An agent keeps the tools it was given: call `update_agent(agent)` before each `agent.run(...)`,
    or pass the collection in `step_callbacks=[...]` so a `ToolCallingAgent` is offered the current tools
    at every step of a run.
    """

    def __init__(
        self,
        hub: MCPHub,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        raw_names: bool = False,
        include: ToolFilter | None = None,
        structured_output: bool = False,
    ) -> None:
        self.hub = hub
        self._options: dict[str, Any] = {
            "timeout": timeout,
            "cancel": cancel,
            "raw_names": raw_names,
            "include": include,
            "structured_output": structured_output,
        }

    @property
    def tools(self) -> list[smolagents.Tool]:
        return smolagents_tools(self.hub, **self._options)

    def update_agent(self, agent: Any) -> None:
        """Give `agent` this hub's current tools in place of the ones it had from it; its other tools stay."""
        kept = {
            name: tool
            for name, tool in agent.tools.items()
            if not (isinstance(tool, _HubTool) and tool.hub is self.hub)
        }
        agent.tools = {**kept, **{tool.name: tool for tool in self.tools}}

    def __call__(self, memory_step: Any, agent: Any = None) -> None:
        """As a step callback: bring the agent's tools up to date after each step."""
        if agent is not None:
            self.update_agent(agent)

    def __enter__(self) -> HubToolCollection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class _HubTool(smolagents.Tool):  # type: ignore[misc]  # smolagents has no type information
    """One hub tool; `forward` makes the blocking call."""

    skip_forward_signature_validation = True

    def __init__(
        self,
        hub: MCPHub,
        exposed: ExposedTool,
        timeout: float | None,
        cancel: threading.Event | None,
        structured_output: bool,
    ) -> None:
        schema = exposed.tool.input_schema
        self.hub = hub
        self.mcp_sync_name = exposed.tool.name
        self.name = exposed.name
        self.description = exposed.description
        self.inputs = smolagents_inputs(schema)
        self._structured = structured_output and exposed.tool.output_schema is not None
        self.output_type = "object" if self._structured else "string"
        self.output_schema = dict(exposed.tool.output_schema or {}) if self._structured else None
        self._timeout = timeout
        self._cancel = cancel
        self._none_means_absent = _optional_non_null(schema)
        super().__init__()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        # A CodeAgent may pass arguments by position, in the order of `inputs`.
        arguments = {**dict(zip(self.inputs, args, strict=False)), **kwargs}
        arguments = {
            key: value
            for key, value in arguments.items()
            if not (value is None and key in self._none_means_absent)
        }
        result = self.hub.call_tool(self.mcp_sync_name, arguments, timeout=self._timeout, cancel=self._cancel)
        if result.is_error:
            raise ToolResultError(result, tool=self.mcp_sync_name)
        if self._structured and result.structured_content is not None:
            return result.structured_content
        return result.text


def smolagents_inputs(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A tool's JSON input schema as smolagents `inputs`: one full JSON schema per argument, typed with
    smolagents' types (a property without one gets "any"), `nullable` when the argument is optional."""
    resolved = inline_refs(schema)
    properties = resolved.get("properties")
    required = set(resolved.get("required") or ())
    inputs: dict[str, dict[str, Any]] = {}
    for name, spec in (properties if isinstance(properties, dict) else {}).items():
        entry = dict(spec) if isinstance(spec, dict) else {}
        entry.setdefault("description", "")
        for key in ("anyOf", "oneOf"):
            if isinstance(entry.get(key), list):
                entry[key] = [_typed(member) for member in entry[key]]
        kind, nullable = _input_type(entry)
        entry["type"] = kind
        if nullable or name not in required:
            entry["nullable"] = True
        inputs[name] = entry
    return inputs


def _input_type(spec: Mapping[str, Any]) -> tuple[str | list[str], bool]:
    """smolagents' type for a property, and whether it admits null."""
    declared = spec.get("type")
    if declared is None:
        members = [m for key in ("anyOf", "oneOf") for m in spec.get(key) or () if isinstance(m, dict)]
        declared = [_inferred_type(member) for member in members] if members else _inferred_type(spec)
    names = [declared] if isinstance(declared, str) else [t for t in declared if isinstance(t, str)]
    nullable = "null" in names
    kinds = list(dict.fromkeys(t if t in _JSON_TYPES else "any" for t in names if t != "null"))
    if not kinds:
        return ("null" if nullable else "any"), nullable
    if "any" in kinds:
        return "any", nullable
    return (kinds[0] if len(kinds) == 1 else kinds), nullable


def _typed(member: Any) -> Any:
    """An anyOf/oneOf member with a "type" (smolagents reads one from each)."""
    if not isinstance(member, dict) or "type" in member:
        return member
    return {**member, "type": _inferred_type(member)}


def _inferred_type(spec: Mapping[str, Any]) -> str:
    if "type" in spec and isinstance(spec["type"], str):
        return str(spec["type"])
    enum = spec.get("enum")
    values: list[Any] = enum if isinstance(enum, list) else []
    if "const" in spec:
        values = [spec["const"]]
    kinds = {_json_type(value) for value in values}
    if len(kinds) == 1:
        return kinds.pop()
    if "properties" in spec:
        return "object"
    if "items" in spec:
        return "array"
    return "any"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _optional_non_null(schema: Mapping[str, Any]) -> frozenset[str]:
    """Optional arguments whose schema refuses null: a None for one of them means "not given"."""
    resolved = inline_refs(schema)
    properties = resolved.get("properties")
    required = set(resolved.get("required") or ())
    return frozenset(
        name
        for name, spec in (properties if isinstance(properties, dict) else {}).items()
        if name not in required and not (isinstance(spec, dict) and _input_type(spec)[1])
    )


def _identifier(name: str) -> str:
    """`name` as a Python identifier that is not a keyword, as smolagents requires of tool names."""
    fixed = _NOT_IDENTIFIER.sub("_", name)
    if not fixed or fixed[0].isdigit():
        fixed = "_" + fixed
    return fixed + "_" if keyword.iskeyword(fixed) else fixed
