"""Agent-loop helpers: function specs from real servers, call_tool_safe's error results, and
host functions registered as validated native tools."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any, Literal

import anyio
import pytest
from mcp import Client

from mcp_sync import MCPHub, Tool, ToolRegistry
from tests.support import DEMO_SERVER, demo_config, stdio_config, stdio_params, wait_until


@pytest.fixture(scope="module")
def hub() -> Iterator[MCPHub]:
    """The demo server and the fixture server in one hub, shared by tests that do not change them."""
    with MCPHub([demo_config(), stdio_config("fx")]) as hub:
        assert {name: s.state for name, s in hub.servers.items()} == {"demo": "ready", "fx": "ready"}
        yield hub


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    """A host registry; hubs do not close a registry they were given, so the test does."""
    registry = ToolRegistry()
    yield registry
    registry.close()


def listed_schemas(params: Any) -> dict[str, dict[str, Any]]:
    """Each tool's inputSchema exactly as the server lists it, read with the SDK's own client."""

    async def main() -> dict[str, dict[str, Any]]:
        async with Client(params, cache=None) as client:
            listing = await client.list_tools()
        return {tool.name: tool.input_schema for tool in listing.tools}

    return anyio.run(main)


def spec_for(specs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(spec["function"] for spec in specs if spec["function"]["name"] == name)


# -- function specs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "params"),
    [
        ("demo", stdio_params(script=DEMO_SERVER)),
        ("fx", stdio_params()),
    ],
    ids=["demo-server", "fixture-server"],
)
def test_function_specs_carry_each_servers_listed_schema_unchanged(
    hub: MCPHub, server: str, params: Any
) -> None:
    listed = listed_schemas(params)
    specs = hub.function_specs()
    for tool in hub.registry.server_tools(server):
        assert tool.raw_name is not None
        spec = spec_for(specs, tool.name)
        assert spec["parameters"] == listed[tool.raw_name]
        assert spec["description"] == (tool.description or "")
    assert len([s for s in specs if s["function"]["name"].startswith(f"mcp__{server}__")]) == len(listed)


def test_function_specs_have_the_openai_shape_and_public_names(hub: MCPHub) -> None:
    specs = hub.function_specs()
    assert [spec["function"]["name"] for spec in specs] == [tool.name for tool in hub.tools()]
    for spec in specs:
        assert spec["type"] == "function"
        assert set(spec["function"]) == {"name", "description", "parameters"}
    word_count = spec_for(specs, "mcp__demo__word_count")
    assert word_count["description"] == "Count the words, characters and lines of a text."
    assert word_count["parameters"]["required"] == ["text"]


def test_function_specs_make_a_missing_description_empty_and_keep_a_typeless_schema(
    registry: ToolRegistry,
) -> None:
    typeless = {"properties": {"x": {"type": "integer"}}}
    registry.register_native("bare", lambda x=0: x, description=None, input_schema=typeless)
    (spec,) = registry.function_specs()
    assert spec["function"]["description"] == ""
    assert spec["function"]["parameters"] == typeless


def test_function_specs_are_copies_the_caller_may_change(hub: MCPHub) -> None:
    spec = spec_for(hub.function_specs(), "mcp__demo__word_count")
    spec["parameters"]["properties"]["text"]["type"] = "changed"
    tool = hub.registry.get("mcp__demo__word_count")
    assert tool is not None and tool.input_schema["properties"]["text"]["type"] == "string"


def test_hubs_sharing_a_registry_offer_and_call_each_others_tools(registry: ToolRegistry) -> None:
    registry.register_function(lambda: "", name="native")
    with MCPHub([stdio_config("a")], registry=registry) as a, MCPHub([stdio_config("b")], registry=registry):
        names = {spec["function"]["name"] for spec in a.function_specs()}
        assert {"native", "mcp__a__echo", "mcp__b__echo"} <= names
        assert a.call_tool("mcp__b__echo", {"text": "via a"}).text == "via a"


# -- call_tool_safe ---------------------------------------------------------------------------------


def test_call_tool_safe_returns_the_result_of_a_successful_call(hub: MCPHub) -> None:
    result = hub.call_tool_safe("mcp__fx__echo", {"text": "hi"})
    assert (result.text, result.is_error) == ("hi", False)


def test_call_tool_safe_tells_the_model_which_images_were_left_out(hub: MCPHub) -> None:
    result = hub.call_tool_safe("mcp__fx__blocks", {})
    assert result.text == (
        "first\nsecond\nthird\n[the tool also returned 1 image (image/png), not included in this text]"
    )
    assert len(result.images) == 1


def test_call_tool_safe_leaves_a_text_only_result_as_it_is(hub: MCPHub) -> None:
    assert hub.call_tool_safe("mcp__fx__echo", {"text": "hi"}).text == "hi"


def test_call_tool_safe_accepts_arguments_as_a_json_string(hub: MCPHub) -> None:
    result = hub.call_tool_safe("mcp__fx__add", '{"a": 2, "b": 3}')
    assert (result.text, result.is_error) == ("5", False)


def test_call_tool_safe_treats_an_empty_argument_string_as_no_arguments(hub: MCPHub) -> None:
    result = hub.call_tool_safe("mcp__fx__pid", "")
    assert not result.is_error and result.text.isdigit()


def test_call_tool_safe_answers_invalid_json_with_an_error_result(hub: MCPHub) -> None:
    result = hub.call_tool_safe("mcp__fx__echo", '{"text": "unterminated')
    assert result.is_error
    assert "invalid arguments for mcp__fx__echo: not valid JSON" in result.text


def test_call_tool_safe_answers_json_that_is_not_an_object_with_an_error_result(hub: MCPHub) -> None:
    result = hub.call_tool_safe("mcp__fx__echo", '["hi"]')
    assert result.is_error
    assert "expected a JSON object, got an array" in result.text


def test_call_tool_safe_answers_an_unknown_tool_with_an_error_result(hub: MCPHub) -> None:
    result = hub.call_tool_safe("mcp__fx__no_such_tool", {})
    assert result.is_error
    assert "no tool named 'mcp__fx__no_such_tool'" in result.text


def test_call_tool_safe_keeps_a_tools_own_error_result(hub: MCPHub) -> None:
    result = hub.call_tool_safe("mcp__fx__fail", {"message": "disk full"})
    assert (result.text, result.is_error) == ("disk full", True)


def test_call_tool_safe_answers_a_timeout_with_an_error_result(hub: MCPHub) -> None:
    started = time.monotonic()
    result = hub.call_tool_safe("mcp__fx__sleep", {"seconds": 30}, timeout=0.2)
    assert time.monotonic() - started < 5
    assert result.is_error
    assert result.text.startswith("error: timed out:")
    assert "mcp__fx__sleep" in result.text


def test_call_tool_safe_answers_a_cancellation_with_an_error_result(hub: MCPHub) -> None:
    cancel = threading.Event()
    # The demo server's sleep reports progress as soon as it starts: cancel the call then.
    result = hub.call_tool_safe(
        "mcp__demo__sleep", {"seconds": 30}, cancel=cancel, progress=lambda *_: cancel.set(), timeout=20
    )
    assert cancel.is_set()
    assert result.is_error
    assert result.text.startswith("error: cancelled:")


def test_call_tool_safe_answers_a_server_crash_with_an_error_result() -> None:
    with MCPHub([stdio_config("crashy")]) as hub:
        result = hub.call_tool_safe("mcp__crashy__crash", {}, timeout=20)
        assert result.is_error
        assert result.text.startswith("error: server unavailable:")
        wait_until(lambda: hub.servers["crashy"].state == "disconnected", timeout=10)
        after = hub.call_tool_safe("mcp__crashy__echo", {"text": "hi"})
    assert after.is_error
    assert "no tool named 'mcp__crashy__echo'" in after.text


# -- register_function --------------------------------------------------------------------------------


def test_register_function_derives_the_schema_from_type_hints(registry: ToolRegistry) -> None:

    def search(
        query: str,
        limit: int = 5,
        tags: list[str] | None = None,
        mode: Literal["fast", "deep"] = "fast",
        scale: float = 1.0,
        exact: bool = False,
    ) -> list[str]:
        return []

    schema = registry.register_function(search).input_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    properties = schema["properties"]
    assert list(properties) == ["query", "limit", "tags", "mode", "scale", "exact"]
    assert properties["query"] == {"type": "string"}
    assert properties["limit"] == {"type": "integer", "default": 5}
    assert properties["tags"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
        "default": None,
    }
    assert properties["mode"] == {"type": "string", "enum": ["fast", "deep"], "default": "fast"}
    assert properties["scale"] == {"type": "number", "default": 1.0}
    assert properties["exact"] == {"type": "boolean", "default": False}
    assert schema["additionalProperties"] is False


def test_register_function_takes_the_description_from_the_docstring(registry: ToolRegistry) -> None:

    def lookup(key: str) -> str:
        """Look a key up.

        More detail for the model."""
        return key

    tool = registry.register_function(lookup)
    assert tool == Tool("lookup", "Look a key up.\n\nMore detail for the model.", tool.input_schema)
    assert registry.get("lookup") is tool


def test_register_function_accepts_a_name_and_description(registry: ToolRegistry) -> None:
    tool = registry.register_function(lambda text: text, name="shout", description="Say it loudly.")
    assert (tool.name, tool.description) == ("shout", "Say it loudly.")
    assert tool.input_schema["properties"] == {"text": {}}  # no hint: any JSON value


def test_register_function_works_as_a_bare_decorator(registry: ToolRegistry) -> None:

    @registry.register_function
    def double(n: int) -> int:
        return n * 2

    assert isinstance(double, Tool)
    assert registry.get("double") is double


def test_register_function_works_as_a_decorator_with_arguments(registry: ToolRegistry) -> None:

    @registry.register_function(name="triple", description="Times three.")
    def times_three(n: int) -> int:
        return n * 3

    assert isinstance(times_three, Tool)
    assert (times_three.name, times_three.description) == ("triple", "Times three.")
    with MCPHub(registry=registry) as hub:
        assert hub.call_tool("triple", {"n": 4}).text == "12"


def test_registered_function_receives_validated_and_coerced_arguments(registry: ToolRegistry) -> None:
    received: list[tuple[int, list[str] | None]] = []

    @registry.register_function
    def record(n: int, tags: list[str] | None = None) -> str:
        received.append((n, tags))
        return "ok"

    with MCPHub(registry=registry) as hub:
        assert hub.call_tool_safe("record", '{"n": "5"}').text == "ok"
        assert hub.call_tool_safe("record", {"n": 1, "tags": ["a"]}).text == "ok"
    assert received == [(5, None), (1, ["a"])]


def test_registered_function_answers_invalid_arguments_with_an_error_naming_them(
    registry: ToolRegistry,
) -> None:
    calls: list[Any] = []
    registry.register_function(lambda n, label="": calls.append(n), name="count")

    @registry.register_function
    def scale(factor: float, unit: Literal["m", "km"] = "m") -> float:
        calls.append(factor)
        return factor

    with MCPHub(registry=registry) as hub:
        wrong_type = hub.call_tool("scale", {"factor": "lots"})
        wrong_choice = hub.call_tool("scale", {"factor": 2, "unit": "mi"})
        missing = hub.call_tool("count", {})
        unexpected = hub.call_tool("count", {"n": 1, "colour": "red"})
    assert calls == []
    assert wrong_type.is_error and wrong_type.text.startswith("invalid arguments for scale: factor: ")
    assert wrong_choice.is_error and "unit: " in wrong_choice.text
    assert missing.is_error and missing.text == "invalid arguments for count: n: Field required"
    assert unexpected.is_error and "colour: unexpected argument" in unexpected.text


def test_register_function_allows_parameters_named_like_pydantic_attributes(registry: ToolRegistry) -> None:

    def render(json: bool = False, model_config: str = "x", schema: str = "s") -> str:
        return f"{json} {model_config} {schema}"

    tool = registry.register_function(render)
    assert list(tool.input_schema["properties"]) == ["json", "model_config", "schema"]
    with MCPHub(registry=registry) as hub:
        assert hub.call_tool("render", {"json": True, "schema": "t"}).text == "True x t"


def test_register_function_rejects_what_cannot_be_a_tool(registry: ToolRegistry) -> None:

    async def fetch(url: str) -> str:
        return url

    def varargs(*items: str) -> None:
        pass

    with pytest.raises(TypeError, match="synchronous"):
        registry.register_function(fetch)
    with pytest.raises(TypeError, match="'items' cannot be passed by keyword"):
        registry.register_function(varargs)
    with pytest.raises(ValueError, match="pass name="):
        registry.register_function(lambda: None)
    with pytest.raises(ValueError, match="belong to MCP servers"):
        registry.register_function(lambda: None, name="mcp__x__y")
    assert len(registry) == 0


def test_register_function_refuses_a_name_already_taken(registry: ToolRegistry) -> None:
    registry.register_function(lambda: "a", name="same")
    with pytest.raises(ValueError, match="already registered"):
        registry.register_function(lambda: "b", name="same")


def test_native_and_mcp_tools_of_the_same_name_coexist_in_one_registry(registry: ToolRegistry) -> None:

    @registry.register_function
    def search(text: str = "") -> str:
        """Search the host's own notes."""
        return f"native: {text}"

    with MCPHub([stdio_config("x")], registry=registry) as hub:
        added = threading.Event()
        hub.on_tool_added(lambda tool: tool.name == "mcp__x__search" and added.set())
        assert hub.call_tool("mcp__x__add_tool", {"name": "search"}).text == "added search"
        assert added.wait(10)
        names = [spec["function"]["name"] for spec in hub.function_specs()]
        assert "search" in names and "mcp__x__search" in names
        assert hub.call_tool_safe("search", '{"text": "q"}').text == "native: q"
        assert hub.call_tool_safe("mcp__x__search", '{"text": "q"}').text == "q"
        assert spec_for(hub.function_specs(), "search")["description"] == "Search the host's own notes."
    assert json.dumps(hub.function_specs())  # still serialisable once the servers are gone
