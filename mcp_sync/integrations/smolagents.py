"""The hub's tools as smolagents `Tool`s, for `ToolCallingAgent` and `CodeAgent`.

`ToolCollection.from_mcp` goes through `mcpadapt`, which does not import with `mcp` 2.x, has no
per-call timeout, never cancels on the server, and names two servers' `echo` tools both `echo`.
`HubToolCollection(hub)` stands in for it: its `tools` are the hub's as of each access, named
`mcp__<server>__<tool>`, with the hub's timeouts and cancellation. As a step callback it brings an agent's
tools up to date during a run, including those a `CodeAgent`'s code may call and its system prompt.

smolagents describes each argument on its own (`inputs`): every property of the server's schema
becomes one input that keeps all of its JSON schema (description, enum, nested properties, items;
local `$ref`s are inlined), typed with smolagents' types, and `nullable` when it is not required.
Tools fail by raising, as smolagents expects (the agent shows the error to the model): an error
result raises `ToolResultError`, a timeout `ToolCallTimeoutError`, and so on. smolagents has no
per-tool timeout of its own: pass `timeout=`, or the server's `tool_call_timeout_ms` applies.

A tool returns its text. smolagents shows a model images only as a step's `observations_images`, which
a tool cannot reach: the tools of a `HubToolCollection` hand their images to the collection, and the
collection, as a step callback (`step_callbacks=[collection]`, or registered by `update_agent(agent)`),
attaches them to the step that made the call; the text says they are there. Audio, files, and the
images of a tool without a collection are named in the text (kind, MIME type, size) as left out.

Why one file of over 400 lines: smolagents' three forms (tools, a `ToolCollection`, an
`MCPClient`-like client) and the step callback that shows images share one tool wrapper.
"""

from __future__ import annotations

import io
import keyword
import logging
import re
import threading
import weakref
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from mcp_sync import MCPHub, ToolNotFoundError, ToolResult

from ._common import (
    ContentPart,
    ExposedTool,
    HubConfig,
    PartKind,
    ToolFilter,
    ToolResultError,
    check_offer,
    content_parts,
    exposed_tools,
    inline_refs,
    parts_text,
    started_hub,
)

try:
    import smolagents
    from PIL import Image, UnidentifiedImageError
    from smolagents.memory import ActionStep, SystemPromptStep
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "mcp_sync.integrations.smolagents needs smolagents: pip install 'mcp-syncio[smolagents]'"
    ) from exc

__all__ = ["HubMCPClient", "HubToolCollection", "smolagents_inputs", "smolagents_tool", "smolagents_tools"]

logger = logging.getLogger("mcp_sync")

# The JSON schema types smolagents accepts in `inputs` (its AUTHORIZED_TYPES, less image and audio).
_JSON_TYPES = ("string", "boolean", "integer", "number", "array", "object", "null")
_NOT_IDENTIFIER = re.compile(r"\W", re.ASCII)
# Images a collection keeps for the next step callback; a collection that no agent calls back (not in its
# step_callbacks) would otherwise keep every image: beyond this many the oldest are dropped.
_PENDING_IMAGES = 32


def smolagents_tools(
    hub: MCPHub,
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    raw_names: bool = False,
    include: ToolFilter | None = None,
    structured_output: bool = False,
    discovery: bool | int = False,
    pinned: Iterable[str] = (),
) -> list[smolagents.Tool]:
    """Every tool in the hub's registry now, as smolagents tools (see `HubToolCollection` to follow changes).

    `timeout` (seconds) bounds each call (default: the server's); setting `cancel` cancels the running
    call. Names are `mcp__<server>__<tool>` ("-" becomes "_": smolagents wants Python identifiers);
    `raw_names=True` uses the servers' own names and raises `ConfigError` if two tools would share one.
    `structured_output=True` makes tools with an output schema return the structured content (a dict).
    `discovery=True` gives the hub's search and call tools (`mcp__search_tools`, `mcp__call_tool`) and
    the `pinned` tools in place of all; `discovery=N` does so while all tools' definitions cost more than
    N tokens (see `MCPHub.function_specs`).
    """
    exposed = exposed_tools(
        hub,
        framework="smolagents",
        raw_names=raw_names,
        include=include,
        fix_name=_identifier,
        discovery=discovery,
        pinned=pinned,
    )
    return [_HubTool(hub, item, timeout, cancel, structured_output, None) for item in exposed]


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
    return _HubTool(hub, ExposedTool(_identifier(name), tool), timeout, cancel, structured_output, None)


class HubToolCollection(smolagents.ToolCollection):  # type: ignore[misc]  # smolagents has no type information
    """A `ToolCollection` over the hub: `tools` is the hub's tool list as of each access.

    Use it where `ToolCollection.from_mcp(...)` was (also as a `with` block, which closes the hub only
    if the collection opened it: `HubToolCollection.from_config(...)`). An agent keeps the tools it was
    given: call `update_agent(agent)` before each `agent.run(...)`, or pass the collection in
    `step_callbacks=[...]`, so that the agent is offered the current tools at every step of a run and
    the model sees the images its tools return. One collection serves one agent at a time: the images
    of a call go to the next step the collection is called back for. `discovery=` and `pinned=` are
    `smolagents_tools`'s.
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
        discovery: bool | int = False,
        pinned: Iterable[str] = (),
    ) -> None:
        # No `super().__init__()`: it would store a fixed list where `tools` is read from the hub.
        self.hub = hub
        self._timeout = timeout
        self._cancel = cancel
        self._raw_names = raw_names
        self._include = include
        self._discovery = discovery
        self._pinned = check_offer(
            hub, framework="smolagents", include=include, discovery=discovery, pinned=pinned
        )
        self._structured_output = structured_output
        self._owns_hub = False
        self._images_lock = threading.Lock()
        self._images: deque[Image.Image] = deque(maxlen=_PENDING_IMAGES)
        # The agents whose callback registry holds this collection (the registry lists them only privately).
        self._registered_with: weakref.WeakSet[Any] = weakref.WeakSet()

    @classmethod
    def from_config(
        cls,
        config: HubConfig,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        raw_names: bool = False,
        include: ToolFilter | None = None,
        structured_output: bool = False,
        discovery: bool | int = False,
        pinned: Iterable[str] = (),
    ) -> HubToolCollection:
        """A collection over a hub of its own, started from `config` (a configuration file, or what
        `MCPHub` takes); leaving its `with` block, or `close()`, closes the hub."""
        hub = started_hub(config)
        try:
            collection = cls(
                hub,
                timeout=timeout,
                cancel=cancel,
                raw_names=raw_names,
                include=include,
                structured_output=structured_output,
                discovery=discovery,
                pinned=pinned,
            )
        except BaseException:
            hub.close()
            raise
        collection._owns_hub = True
        return collection

    @property
    def tools(self) -> list[smolagents.Tool]:
        """The hub's tools as of now, as smolagents tools (read again on each access)."""
        exposed = exposed_tools(
            self.hub,
            framework="smolagents",
            raw_names=self._raw_names,
            include=self._include,
            fix_name=_identifier,
            discovery=self._discovery,
            pinned=self._pinned,
            checked=True,
        )
        return [
            _HubTool(self.hub, item, self._timeout, self._cancel, self._structured_output, self)
            for item in exposed
        ]

    def update_agent(self, agent: Any) -> None:
        """Give `agent` this hub's current tools in place of the ones it had from it (its other tools
        stay), and make this collection one of its step callbacks if it is not yet."""
        kept = {
            name: tool
            for name, tool in agent.tools.items()
            if not (isinstance(tool, _HubTool) and tool.hub is self.hub)
        }
        before = _offered(agent.tools)
        agent.tools = {**kept, **{tool.name: tool for tool in self.tools}}
        if _offered(agent.tools) != before:
            _tell_agent_its_tools(agent)
        callbacks: Any = getattr(agent, "step_callbacks", None)
        if isinstance(callbacks, list):  # smolagents before its CallbackRegistry
            if self not in callbacks:
                callbacks.append(self)
        elif hasattr(callbacks, "register") and agent not in self._registered_with:
            callbacks.register(ActionStep, self)
            self._registered_with.add(agent)

    def __call__(self, memory_step: Any, agent: Any = None) -> None:
        """As a step callback: attach the images this step's calls returned, and bring the agent's tools
        up to date."""
        with self._images_lock:
            images = list(self._images)
            self._images.clear()
        if images and isinstance(memory_step, ActionStep):
            # A new list: the step's own may be the run's `images`, which every step starts with.
            memory_step.observations_images = [*(memory_step.observations_images or ()), *images]
        if agent is not None:
            self.update_agent(agent)

    def _keep_images(self, images: Sequence[Image.Image]) -> None:
        with self._images_lock:
            if len(self._images) + len(images) > _PENDING_IMAGES:
                logger.debug("no step took the images of earlier smolagents calls: the oldest are dropped")
            self._images.extend(images)

    def close(self) -> None:
        """Close the hub if this collection opened it (`from_config`); otherwise the hub stays as it is."""
        if self._owns_hub:
            self.hub.close()

    def __enter__(self) -> HubToolCollection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _offered(tools: Mapping[str, Any]) -> dict[str, Any]:
    """What an agent's tools are, for telling a change: a hub tool by the registry tool it calls (each
    read of a collection makes new wrappers), any other by itself."""
    return {name: tool._registry_tool if isinstance(tool, _HubTool) else tool for name, tool in tools.items()}


def _tell_agent_its_tools(agent: Any) -> None:
    """After `agent.tools` changed: a `CodeAgent`'s code runs in an executor that was given the tools when
    the run began (and refuses to call any other), and every agent's system prompt lists them. Give both
    the current ones, so that the next step of a run can call a tool that appeared and the model knows it."""
    executor = getattr(agent, "python_executor", None)
    if executor is not None and hasattr(executor, "send_tools"):
        executor.send_tools({**agent.tools, **getattr(agent, "managed_agents", {})})
    memory = getattr(agent, "memory", None)
    if memory is not None and hasattr(memory, "system_prompt"):
        memory.system_prompt = SystemPromptStep(system_prompt=agent.system_prompt)


class HubMCPClient:
    """`smolagents.MCPClient`'s form over a hub of its own: `with HubMCPClient("servers.yaml") as tools:`.

    The hub starts here (as `MCPClient` connects) and closes on leaving the `with` block or on
    `disconnect()`. `get_tools()` gives the current tools; `collection` is the `HubToolCollection` to put
    in an agent's `step_callbacks` (or `collection.update_agent(agent)`), for changing tools and images.
    `discovery=` and `pinned=` are `smolagents_tools`'s.
    """

    def __init__(
        self,
        config: HubConfig,
        *,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        raw_names: bool = False,
        include: ToolFilter | None = None,
        structured_output: bool = False,
        discovery: bool | int = False,
        pinned: Iterable[str] = (),
    ) -> None:
        self.collection = HubToolCollection.from_config(
            config,
            timeout=timeout,
            cancel=cancel,
            raw_names=raw_names,
            include=include,
            structured_output=structured_output,
            discovery=discovery,
            pinned=pinned,
        )

    @property
    def hub(self) -> MCPHub:
        """The hub this client's tools come from."""
        return self.collection.hub

    def get_tools(self) -> list[smolagents.Tool]:
        """The hub's tools as of now."""
        return self.collection.tools

    def disconnect(self) -> None:
        """Close the hub: its servers stop, and its tools' calls fail from now on."""
        self.collection.close()

    def __enter__(self) -> list[smolagents.Tool]:
        return self.get_tools()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.disconnect()


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
        collection: HubToolCollection | None,
    ) -> None:
        schema = exposed.tool.input_schema
        self.hub = hub
        self._registry_tool = exposed.tool
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
        self._collection = collection
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
        text = self._text_and_images(result)
        if self._structured and result.structured_content is not None:
            return result.structured_content
        return text

    def _text_and_images(self, result: ToolResult) -> str:
        """The result's text for the model; its images go to the collection, which shows them to the model."""
        shown: tuple[PartKind, ...] = ("text", "image") if self._collection is not None else ("text",)
        parts = content_parts(result, shown=shown)
        images: list[Image.Image] = []
        described: list[ContentPart] = []
        for index, part in enumerate(parts):
            if part.kind != "image":
                continue
            image = _pil_image(part)
            if image is None:
                parts[index] = part.left_out()
            else:
                images.append(image)
                described.append(part)
        if self._collection is not None and images:
            self._collection._keep_images(images)
            listed = "; ".join(f"{part.mime_type}, {len(part.data)} bytes" for part in described)
            count = f"{len(images)} image{'s' if len(images) > 1 else ''}"
            parts.append(
                ContentPart("text", f"[the tool also returned {count} ({listed}), shown with this step]")
            )
        return parts_text(parts)


def _pil_image(part: ContentPart) -> Image.Image | None:
    """The image as smolagents shows it to models (PIL), or None if it cannot be read."""
    try:
        image = Image.open(io.BytesIO(part.data))
        image.load()
    except (UnidentifiedImageError, OSError, ValueError):
        logger.warning(
            "an image (%s, %d bytes) that a tool returned cannot be read", part.mime_type, len(part.data)
        )
        return None
    return image


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
