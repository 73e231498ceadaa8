"""Tool search, token budgets and progressive discovery, against the demo, fixture and reference servers.

`search_tools` ranks the registry as it is at each call; `context_tokens` prices tool definitions;
`function_specs(discovery=...)` offers two tools (search, call) instead of all, and `call_tool` /
`call_tool_safe` run them with the same timeout, cancel, progress, images and errors as any tool.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_sync import (
    MCPHub,
    Tool,
    ToolCallCancelledError,
    ToolCallTimeoutError,
    ToolNotFoundError,
    ToolRegistry,
    UnsupportedFeatureError,
)
from tests.integrations.support import KITE, kite_hub, remove_kite
from tests.support import (
    PYTHON,
    SERVERS_DIR,
    ReferenceServers,
    demo_config,
    stdio_config,
)

SEARCH = "mcp__search_tools"
CALL = "mcp__call_tool"


@pytest.fixture(scope="module")
def hub() -> Iterator[MCPHub]:
    """The demo server and the fixture server in one hub, shared by tests that do not change them."""
    with MCPHub([demo_config(), stdio_config("fx")]) as hub:
        assert {name: s.state for name, s in hub.servers.items()} == {"demo": "ready", "fx": "ready"}
        yield hub


@pytest.fixture(scope="module")
def reference_hub(
    reference_servers: ReferenceServers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MCPHub]:
    """The official reference servers everything and filesystem (over an empty folder) in one hub."""
    folder = tmp_path_factory.mktemp("served")
    configs = [
        reference_servers.everything_config("everything"),
        reference_servers.filesystem_config("fs", folder),
    ]
    with MCPHub(configs) as hub:
        assert {name: s.state for name, s in hub.servers.items()} == {"everything": "ready", "fs": "ready"}
        yield hub


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    """A host registry; hubs do not close a registry they were given, so the test does."""
    registry = ToolRegistry()
    yield registry
    registry.close()


def names(tools: list[Tool]) -> list[str]:
    return [tool.name for tool in tools]


def spec_names(specs: list[dict[str, Any]]) -> list[str]:
    return [spec["function"]["name"] for spec in specs]


# -- search ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("count the words in a text", "mcp__demo__word_count"),
        ("convert miles to kilometres", "mcp__demo__convert_units"),
        ("add two integers", "mcp__fx__add"),
        ("evaluate an arithmetic expression", "mcp__demo__calculate"),
        ("make a URL slug from a title", "mcp__demo__slugify"),
        ("return an error result with a message", "mcp__fx__fail"),
        ("send progress notifications", "mcp__fx__progress"),
        ("removing tools", "mcp__fx__remove_tool"),
    ],
)
def test_search_ranks_the_tool_that_does_what_the_query_says_first(
    hub: MCPHub, query: str, best: str
) -> None:
    assert names(hub.search_tools(query))[0] == best


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("read a file", "mcp__fs__read_file"),
        ("list the files in a folder", "mcp__fs__list_directory"),
        ("move or rename a file", "mcp__fs__move_file"),
        ("get file size and modification time", "mcp__fs__get_file_info"),
        ("which directories am I allowed to access", "mcp__fs__list_allowed_directories"),
        ("print an environment variable", "mcp__everything__get-env"),
        ("long running operation with progress", "mcp__everything__trigger-long-running-operation"),
        ("return an image", "mcp__everything__get-tiny-image"),
    ],
)
def test_search_ranks_the_reference_servers_tools(reference_hub: MCPHub, query: str, best: str) -> None:
    assert names(reference_hub.search_tools(query))[0] == best


def test_search_returns_at_most_limit_tools_best_first(hub: MCPHub) -> None:
    found = hub.search_tools("sleep", limit=2)
    assert len(found) == 2
    assert set(names(found)) == {"mcp__fx__sleep", "mcp__demo__sleep"}
    assert len(hub.search_tools("tool", limit=50)) > 5
    assert len(hub.search_tools("tool")) == 5


def test_search_leaves_out_tools_that_share_no_word_with_the_query(hub: MCPHub) -> None:
    assert hub.search_tools("zeppelin aardvark") == []
    assert hub.search_tools("the of and") == []  # stop words only


def test_search_splits_snake_camel_and_kebab_names_and_matches_inflections(registry: ToolRegistry) -> None:
    registry.register_function(lambda: "", name="fetchWeatherForecast", description="Ask the sky.")
    registry.register_function(lambda: "", name="list-open-issues", description="What is left to do.")
    registry.register_function(lambda: "", name="create_pull_request", description="Propose a change.")
    hub = MCPHub([], registry=registry)
    assert names(hub.search_tools("weather forecasts", limit=1)) == ["fetchWeatherForecast"]
    assert names(hub.search_tools("listing issue", limit=1)) == ["list-open-issues"]
    assert names(hub.search_tools("pull requests created", limit=1)) == ["create_pull_request"]


def test_search_weighs_a_name_over_a_description_over_an_argument(registry: ToolRegistry) -> None:
    def by_argument(invoice: str) -> str:
        return invoice

    registry.register_function(lambda: "", name="invoice", description="Print a document.")
    registry.register_function(lambda: "", name="paper", description="Print an invoice.")
    registry.register_function(by_argument, name="printer", description="Print a document.")
    hub = MCPHub([], registry=registry)
    assert names(hub.search_tools("invoice")) == ["invoice", "paper", "printer"]


def test_search_reads_argument_descriptions(registry: ToolRegistry) -> None:
    schema = {
        "type": "object",
        "properties": {"where": {"type": "string", "description": "the harbour to moor at"}},
    }
    registry.register_native("dock", lambda where: where, description="Dock.", input_schema=schema)
    registry.register_native("sail", lambda: "", description="Sail away.")
    assert names(MCPHub([], registry=registry).search_tools("moor in a harbour")) == ["dock"]


def test_search_follows_tools_as_servers_add_and_remove_them() -> None:
    with MCPHub([stdio_config("fx")]) as hub:
        added, removed = threading.Event(), threading.Event()
        hub.on_tool_added(lambda tool: tool.name == "mcp__fx__zeppelin" and added.set())
        hub.on_tool_removed(lambda tool: tool.name == "mcp__fx__zeppelin" and removed.set())
        assert hub.search_tools("zeppelin") == []
        hub.call_tool("mcp__fx__add_tool", {"name": "zeppelin"})
        assert added.wait(10)
        assert names(hub.search_tools("zeppelin")) == ["mcp__fx__zeppelin"]
        hub.call_tool("mcp__fx__remove_tool", {"name": "zeppelin"})
        assert removed.wait(10)
        assert hub.search_tools("zeppelin") == []


def test_search_follows_host_tools_registered_and_unregistered(registry: ToolRegistry) -> None:
    hub = MCPHub([], registry=registry)
    assert hub.search_tools("kettle") == []
    registry.register_function(lambda: "hot", name="boil", description="Boil the kettle.")
    assert names(hub.search_tools("kettle")) == ["boil"]
    registry.unregister_native("boil")
    assert hub.search_tools("kettle") == []


@pytest.mark.parametrize(
    ("query", "limit", "error", "match"),
    [
        ("", 5, ValueError, "query must not be empty"),
        ("   ", 5, ValueError, "query must not be empty"),
        (None, 5, TypeError, "query must be a str, not NoneType"),
        (["sleep"], 5, TypeError, "query must be a str, not list"),
        ("sleep", 0, ValueError, "limit must be at least 1, not 0"),
        ("sleep", -3, ValueError, "limit must be at least 1"),
        ("sleep", True, TypeError, "limit must be an int, not bool"),
        ("sleep", 2.0, TypeError, "limit must be an int, not float"),
    ],
)
def test_search_refuses_bad_input_with_a_typed_error_naming_it(
    hub: MCPHub, query: Any, limit: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        hub.search_tools(query, limit=limit)


# -- token budget ------------------------------------------------------------------------------------------


def test_a_tools_context_tokens_estimate_its_compact_function_spec_at_four_characters_a_token(
    hub: MCPHub,
) -> None:
    tool = hub.registry.get("mcp__demo__word_count")
    assert tool is not None
    spec = hub.registry.function_specs()
    compact = json.dumps(
        next(s for s in spec if s["function"]["name"] == tool.name), separators=(",", ":"), ensure_ascii=False
    )
    assert tool.context_tokens() == math.ceil(len(compact) / 4)
    seen: list[str] = []
    assert tool.context_tokens(lambda text: seen.append(text) or 7) == 7
    assert seen == [compact]


@pytest.mark.parametrize(
    ("tokenizer", "match"),
    [
        (lambda text: -1, "returned -1"),
        (lambda text: 2.5, "returned 2.5"),
        (lambda text: True, "returned True"),
        ("cl100k_base", "tokenizer must be a function"),
    ],
)
def test_a_tokenizer_that_does_not_count_is_a_type_error(hub: MCPHub, tokenizer: Any, match: str) -> None:
    tool = hub.registry.get("mcp__fx__echo")
    assert tool is not None
    with pytest.raises(TypeError, match=match):
        tool.context_tokens(tokenizer)


def test_hub_context_tokens_are_each_servers_tools_summed(hub: MCPHub) -> None:
    totals = hub.context_tokens()
    assert set(totals) == {"demo", "fx"}
    for server in ("demo", "fx"):
        assert totals[server] == sum(t.context_tokens() for t in hub.registry.server_tools(server))
    by_characters = hub.context_tokens(tokenizer=len)
    assert by_characters["fx"] == sum(t.context_tokens(len) for t in hub.registry.server_tools("fx"))
    assert by_characters["fx"] > totals["fx"]


def test_hub_context_tokens_count_host_tools_under_the_empty_name(registry: ToolRegistry) -> None:
    tool = registry.register_function(lambda: "", name="noop", description="Nothing.")
    assert MCPHub([], registry=registry).context_tokens() == {"": tool.context_tokens()}


# -- the discovery set ---------------------------------------------------------------------------------------


def test_function_specs_with_discovery_are_the_search_and_call_tools(hub: MCPHub) -> None:
    specs = hub.function_specs(discovery=True)
    assert spec_names(specs) == [SEARCH, CALL]
    search, call = (spec["function"] for spec in specs)
    assert all(spec["type"] == "function" for spec in specs)
    assert search["parameters"]["required"] == ["query"]
    assert set(search["parameters"]["properties"]) == {"query", "limit"}
    assert call["parameters"]["required"] == ["name"]
    assert call["parameters"]["properties"]["arguments"]["type"] == "object"
    assert CALL in search["description"] and SEARCH in call["description"]
    assert hub.function_specs(discovery=False) == hub.function_specs() == hub.registry.function_specs()


def test_the_discovery_tools_names_fit_function_calling_apis_and_no_registry_tool_can_take_them(
    registry: ToolRegistry,
) -> None:
    for name in (SEARCH, CALL):
        assert len(name) <= 64 and name.replace("_", "").isalnum()
        with pytest.raises(ValueError, match="belong to MCP servers"):
            registry.register_function(lambda: "", name=name)


def test_pinned_tools_follow_the_discovery_tools_in_the_order_given(hub: MCPHub) -> None:
    specs = hub.function_specs(
        discovery=True, pinned=["mcp__fx__echo", "mcp__demo__calculate", "mcp__fx__echo"]
    )
    assert spec_names(specs) == [SEARCH, CALL, "mcp__fx__echo", "mcp__demo__calculate"]
    assert specs[2] == next(s for s in hub.function_specs() if s["function"]["name"] == "mcp__fx__echo")


def test_an_unknown_pinned_name_is_a_tool_not_found_error_naming_it(hub: MCPHub) -> None:
    with pytest.raises(ToolNotFoundError, match="mcp__fx__ecko") as caught:
        hub.function_specs(discovery=True, pinned=["mcp__fx__echo", "mcp__fx__ecko"])
    assert caught.value.name == "mcp__fx__ecko"
    with pytest.raises(ToolNotFoundError, match="mcp__fx__ecko"):
        hub.function_specs(discovery=5, pinned=["mcp__fx__ecko"])  # when the discovery set is given


def test_pinned_given_as_one_string_is_a_type_error(hub: MCPHub) -> None:
    with pytest.raises(TypeError, match="not one string"):
        hub.function_specs(discovery=True, pinned="mcp__fx__echo")


def test_a_token_budget_switches_to_discovery_only_when_all_tools_cost_more(hub: MCPHub) -> None:
    total = sum(hub.context_tokens().values())
    assert hub.function_specs(discovery=total) == hub.function_specs()
    assert spec_names(hub.function_specs(discovery=total - 1)) == [SEARCH, CALL]
    assert spec_names(hub.function_specs(discovery=0, pinned=["mcp__fx__add"])) == [
        SEARCH,
        CALL,
        "mcp__fx__add",
    ]


def test_a_token_budget_follows_the_registry_as_tools_come(registry: ToolRegistry) -> None:
    first = registry.register_function(lambda: "", name="first", description="One tool.")
    hub = MCPHub([], registry=registry)
    budget = first.context_tokens()
    assert spec_names(hub.function_specs(discovery=budget)) == ["first"]
    registry.register_function(lambda: "", name="second", description="Another tool. " * 200)
    assert spec_names(hub.function_specs(discovery=budget)) == [SEARCH, CALL]


@pytest.mark.parametrize(
    ("discovery", "error", "match"),
    [
        (-1, ValueError, "token budget must be 0 or more, not -1"),
        (1.5, TypeError, "not float"),
        ("yes", TypeError, "not str"),
        (None, TypeError, "not NoneType"),
    ],
)
def test_a_bad_discovery_option_is_a_typed_error(
    hub: MCPHub, discovery: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        hub.function_specs(discovery=discovery)


# -- running the discovery tools ------------------------------------------------------------------------


def test_the_search_tool_answers_with_names_descriptions_and_schemas_as_json(hub: MCPHub) -> None:
    result = hub.call_tool_safe(SEARCH, '{"query": "count words", "limit": 1}')
    assert not result.is_error
    found = json.loads(result.text)
    tool = hub.registry.get("mcp__demo__word_count")
    assert tool is not None
    assert found == [
        {"name": tool.name, "description": tool.description, "input_schema": dict(tool.input_schema)}
    ]
    assert result.structured_content == {"tools": found}
    assert json.loads(hub.call_tool_safe(SEARCH, {"query": "zeppelin"}).text) == []


def test_the_call_tool_calls_the_tool_it_names(hub: MCPHub) -> None:
    result = hub.call_tool_safe(CALL, {"name": "mcp__fx__echo", "arguments": {"text": "hi"}})
    assert (result.text, result.is_error) == ("hi", False)
    as_text = hub.call_tool_safe(CALL, '{"name": "mcp__fx__add", "arguments": "{\\"a\\": 2, \\"b\\": 3}"}')
    assert as_text.text == "5"
    assert hub.call_tool_safe(CALL, {"name": "mcp__fx__pid"}).text.isdigit()  # no arguments
    assert hub.call_tool(CALL, {"name": "mcp__fx__echo", "arguments": {"text": "plain"}}).text == "plain"


def test_the_call_tool_keeps_a_tools_images_and_says_so_in_the_text(hub: MCPHub) -> None:
    result = hub.call_tool_safe(CALL, {"name": "mcp__fx__blocks"})
    direct = hub.call_tool_safe("mcp__fx__blocks")
    assert result.text == direct.text and "1 image (image/png)" in result.text
    assert result.images == direct.images and len(result.images) == 1


def test_the_call_tool_keeps_a_tools_own_error_result(hub: MCPHub) -> None:
    result = hub.call_tool_safe(CALL, {"name": "mcp__fx__fail", "arguments": {"message": "disk full"}})
    assert (result.text, result.is_error) == ("disk full", True)


def test_the_call_tool_times_out_as_the_call_would(hub: MCPHub) -> None:
    arguments = {"name": "mcp__fx__sleep", "arguments": {"seconds": 30}}
    result = hub.call_tool_safe(CALL, arguments, timeout=0.2)
    assert result.is_error and result.text.startswith("error: timed out:")
    assert "mcp__fx__sleep" in result.text
    with pytest.raises(ToolCallTimeoutError) as caught:
        hub.call_tool(CALL, arguments, timeout=0.2)
    assert caught.value.tool == "mcp__fx__sleep"


def test_the_call_tool_is_cancelled_and_reports_progress_as_the_call_would(hub: MCPHub) -> None:
    cancel = threading.Event()
    # The demo server's sleep reports progress as soon as it starts: cancel the call then.
    result = hub.call_tool_safe(
        CALL,
        {"name": "mcp__demo__sleep", "arguments": {"seconds": 30}},
        cancel=cancel,
        progress=lambda *_: cancel.set(),
        timeout=20,
    )
    assert cancel.is_set()
    assert result.is_error and result.text.startswith("error: cancelled:")


def test_the_call_tool_passes_progress_on(hub: MCPHub) -> None:
    steps: list[float] = []
    result = hub.call_tool(
        CALL, {"name": "mcp__fx__progress", "arguments": {"steps": 3}}, progress=lambda p, *_: steps.append(p)
    )
    assert result.text == "done"
    assert steps == [1, 2, 3]


def test_the_call_tool_answers_an_unknown_name_with_an_error_naming_it(hub: MCPHub) -> None:
    result = hub.call_tool_safe(CALL, {"name": "mcp__fx__ecko", "arguments": {}})
    assert result.is_error
    assert "no tool named 'mcp__fx__ecko'" in result.text
    with pytest.raises(ToolNotFoundError, match="mcp__fx__ecko"):
        hub.call_tool(CALL, {"name": "mcp__fx__ecko"})


def test_a_tool_added_after_the_specs_were_taken_is_found_and_called() -> None:
    with MCPHub([stdio_config("fx")]) as hub:
        specs = hub.function_specs(discovery=True)
        added = threading.Event()
        hub.on_tool_added(lambda tool: tool.name == "mcp__fx__zeppelin" and added.set())
        hub.call_tool("mcp__fx__add_tool", {"name": "zeppelin"})
        assert added.wait(10)
        assert hub.function_specs(discovery=True) == specs
        found = json.loads(hub.call_tool_safe(SEARCH, {"query": "zeppelin"}).text)
        assert [tool["name"] for tool in found] == ["mcp__fx__zeppelin"]
        result = hub.call_tool_safe(CALL, {"name": "mcp__fx__zeppelin", "arguments": {"text": "aloft"}})
        assert (result.text, result.is_error) == ("aloft", False)


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        (SEARCH, "{bad", "invalid arguments for mcp__search_tools: not valid JSON"),
        (SEARCH, {}, "query must be a non-empty string"),
        (SEARCH, {"query": ""}, "query must be a non-empty string"),
        (SEARCH, {"query": 3}, "query must be a non-empty string"),
        (SEARCH, {"query": "sleep", "limit": 0}, "limit must be an integer from 1 to 20, not 0"),
        (SEARCH, {"query": "sleep", "limit": "3"}, 'limit must be an integer from 1 to 20, not "3"'),
        (SEARCH, {"query": "sleep", "limit": 500}, "limit must be an integer from 1 to 20, not 500"),
        (SEARCH, {"query": "sleep", "topic": "x"}, "unexpected argument 'topic'"),
        (SEARCH, '["sleep"]', "expected a JSON object, got an array"),
        (CALL, "{bad", "invalid arguments for mcp__call_tool: not valid JSON"),
        (CALL, {}, "name must be the name of a tool"),
        (CALL, {"name": 7}, "name must be the name of a tool"),
        (CALL, {"name": "mcp__fx__echo", "text": "hi"}, "unexpected argument 'text'; put the tool's own"),
        (CALL, {"name": "mcp__fx__echo", "arguments": "{bad"}, "invalid arguments for mcp__fx__echo"),
        (CALL, {"name": "mcp__fx__echo", "arguments": [1]}, "expected a JSON object, got an array"),
    ],
)
def test_bad_arguments_from_a_model_are_error_results(
    hub: MCPHub, name: str, arguments: Any, message: str
) -> None:
    result = hub.call_tool_safe(name, arguments)
    assert result.is_error
    assert message in result.text
    assert hub.call_tool(name, arguments if not isinstance(arguments, str) else {"x": 1}).is_error


def test_limit_from_a_model_may_be_a_whole_float(hub: MCPHub) -> None:
    assert len(json.loads(hub.call_tool_safe(SEARCH, {"query": "tool", "limit": 2.0}).text)) == 2


def test_submit_runs_the_discovery_tools_too(hub: MCPHub) -> None:
    searched = hub.submit(SEARCH, {"query": "echo"}).result(timeout=10)
    assert "mcp__fx__echo" in [tool["name"] for tool in json.loads(searched.text)]
    called = hub.submit(CALL, {"name": "mcp__fx__echo", "arguments": {"text": "later"}}).result(timeout=10)
    assert called.text == "later"
    assert hub.submit(CALL, {}).result(timeout=10).is_error


def test_an_invalid_timeout_is_the_callers_error_for_the_discovery_tools_too(hub: MCPHub) -> None:
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        hub.call_tool_safe(SEARCH, {"query": "echo"}, timeout=0)


def test_the_call_tool_asks_for_the_approval_its_tool_needs() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def approve(tool: Tool, arguments: Any) -> bool:
        asked.append((tool.name, dict(arguments)))
        return len(asked) > 1  # no to the first call, yes to the second

    with MCPHub([stdio_config("fx", require_approval=True)], approve=approve) as hub:
        arguments = {"name": "mcp__fx__echo", "arguments": {"text": "x"}}
        denied = hub.call_tool_safe(CALL, arguments)
        approved = hub.call_tool_safe(CALL, arguments)
    assert asked == [("mcp__fx__echo", {"text": "x"})] * 2
    assert denied.is_error and "said no (mcp__fx__echo)" in denied.text
    assert (approved.text, approved.is_error) == ("x", False)


def specs_cost(specs: list[dict[str, Any]]) -> int:
    """Tokens of function specs, as `Tool.context_tokens` prices them (compact JSON, characters / 4)."""
    return sum(-(-len(json.dumps(spec, separators=(",", ":"), ensure_ascii=False)) // 4) for spec in specs)


def test_a_token_budget_never_offers_a_set_dearer_than_every_tool(registry: ToolRegistry) -> None:
    """Below what the search and call tools cost themselves, a small registry is offered whole."""
    registry.register_function(lambda text: text, name="echo", description="Return the text.")
    hub = MCPHub([], registry=registry)
    every = hub.function_specs()
    for budget in (0, 10, 40):
        assert hub.function_specs(discovery=budget) == every
    assert spec_names(hub.function_specs(discovery=True)) == [SEARCH, CALL]  # True is always obeyed
    assert specs_cost(hub.function_specs(discovery=True)) > specs_cost(every)


def test_a_pinned_tool_that_left_is_not_checked_while_the_budget_offers_every_tool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Under budget `pinned` has no effect; over it a name no tool has is refused, as a typo would be."""
    with kite_hub() as hub:
        budget = 10**9
        assert len(hub.function_specs(discovery=budget, pinned=[KITE])) == len(hub.tools())
        remove_kite(hub)
        assert len(hub.function_specs(discovery=budget, pinned=[KITE])) == len(hub.tools())
        with pytest.raises(ToolNotFoundError, match=KITE):
            hub.function_specs(discovery=True, pinned=[KITE])


def test_a_pinned_tool_of_a_server_that_crashed_is_left_out_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with MCPHub([stdio_config("fx"), stdio_config("gx")]) as hub:
        gone = threading.Event()
        hub.on_tool_removed(lambda tool: tool.name == "mcp__gx__echo" and gone.set())
        hub.call_tool_safe("mcp__gx__crash")
        assert gone.wait(20)
        with caplog.at_level(logging.INFO, logger="mcp_sync"):
            for _ in range(2):
                specs = hub.function_specs(discovery=True, pinned=["mcp__fx__echo", "mcp__gx__echo"])
                assert spec_names(specs) == [SEARCH, CALL, "mcp__fx__echo"]
        assert caplog.text.count("pinned tool mcp__gx__echo is not in the registry now") == 1
        with pytest.raises(ToolNotFoundError, match="mcp__fx__ecko"):
            hub.function_specs(discovery=True, pinned=["mcp__fx__ecko"])  # a typo still raises


def test_one_search_answer_is_bounded_whatever_a_server_describes() -> None:
    """A 2,000,000-character description is cut, marked as cut, in an answer that stays short."""
    config = {
        "server_name": "h",
        "transport": "stdio",
        "command": PYTHON,
        "args": [str(SERVERS_DIR / "hostile_server.py"), "--description-bytes", "2000000"],
    }
    with MCPHub([config]) as hub:
        answer = hub.call_tool_safe(SEARCH, {"query": "big description"})
    assert not answer.is_error
    assert len(answer.text) < 50_000
    [found] = [tool for tool in json.loads(answer.text) if tool["name"] == "mcp__h__big_description"]
    assert found["description"].endswith("[cut: 1998500 more characters]")


def test_a_search_answer_leaves_out_the_tools_past_its_size_and_says_how_many(registry: ToolRegistry) -> None:
    schema = {
        "type": "object",
        "properties": {
            f"coat_{n}": {"type": "string", "description": "Which paint. " * 12} for n in range(30)
        },
    }
    for number in range(20):
        registry.register_native(
            f"tool_{number}", lambda **_: "", description="Paint walls. " * 300, input_schema=schema
        )
    hub = MCPHub([], registry=registry)
    answer = hub.call_tool_safe(SEARCH, {"query": "paint walls", "limit": 20})
    text, note = answer.text.rsplit("\n", 1)
    assert len(answer.text) < 50_000
    shown = json.loads(text)
    assert answer.structured_content == {"tools": shown, "left_out": 20 - len(shown)}
    assert 0 < len(shown) < 20
    assert note.startswith(f"{20 - len(shown)} more matching tool(s) left out")


def test_a_schema_too_long_to_show_is_shortened(registry: ToolRegistry) -> None:
    schema = {
        "type": "object",
        "properties": {f"field_{n}": {"type": "string", "description": "x" * 1000} for n in range(20)},
    }
    registry.register_native("wide", lambda **arguments: "", description="A wide tool.", input_schema=schema)
    hub = MCPHub([], registry=registry)
    [found] = json.loads(hub.call_tool_safe(SEARCH, {"query": "wide"}).text)
    assert sorted(found["input_schema"]["properties"]) == sorted(schema["properties"])
    assert len(json.dumps(found["input_schema"])) < 8_000


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        (CALL, {"name": "mcp__fx__echo", "arguments": "[" * 100_000}),  # inner arguments as JSON text
        (CALL, "[" * 100_000),
        (SEARCH, "[" * 100_000),
        ("mcp__fx__echo", "[" * 100_000),
    ],
    ids=["call-inner", "call-outer", "search", "tool"],
)
def test_deeply_nested_json_from_a_model_is_an_error_result(hub: MCPHub, name: str, arguments: Any) -> None:
    """json.loads raises RecursionError, not ValueError, on deep nesting."""
    result = hub.call_tool_safe(name, arguments)
    assert result.is_error
    assert "nested too deeply" in result.text


def test_an_unknown_name_through_the_call_tool_points_the_model_at_the_search_tool(hub: MCPHub) -> None:
    result = hub.call_tool_safe(CALL, {"name": "mcp__fx__ecko", "arguments": {}})
    assert result.is_error
    assert f"find tools with {SEARCH}" in result.text
    with pytest.raises(ToolNotFoundError, match=f"find tools with {SEARCH}"):
        hub.call_tool(CALL, {"name": "mcp__fx__ecko"})


def test_the_search_tool_takes_cancel_and_task_as_other_calls_do(hub: MCPHub) -> None:
    cancelled = threading.Event()
    cancelled.set()
    with pytest.raises(ToolCallCancelledError):
        hub.call_tool(SEARCH, {"query": "echo"}, cancel=cancelled)
    assert hub.call_tool_safe(SEARCH, {"query": "echo"}, cancel=cancelled).is_error
    with pytest.raises(UnsupportedFeatureError, match="cannot run as a task"):
        hub.call_tool(SEARCH, {"query": "echo"}, task=True)
    with pytest.raises(UnsupportedFeatureError, match="cannot run as a task"):
        hub.submit(SEARCH, {"query": "echo"}, task=True)


def test_a_registry_snapshot_is_read_only_and_the_same_until_a_change(registry: ToolRegistry) -> None:
    registry.register_function(lambda text: text, name="echo", description="Return the text.")
    snapshot = registry.snapshot()
    with pytest.raises(TypeError):
        snapshot["other"] = snapshot["echo"]  # type: ignore[index]
    assert registry.snapshot() is snapshot
    registry.register_function(lambda: "", name="other")
    assert registry.snapshot() is not snapshot and list(snapshot) == ["echo"]


def test_the_index_follows_changes_as_a_fresh_one_ranks(registry: ToolRegistry) -> None:
    """The index re-reads only the tools that changed; its ranking is that of an index built anew."""
    for number in range(30):
        registry.register_function(lambda: "", name=f"tool_{number}", description=f"Paint wall {number % 7}.")
    hub = MCPHub([], registry=registry)
    queries = ["paint wall", "wall 3", "sand floor", "tool 12"]
    assert [hub.search_tools(query, limit=10) for query in queries]  # the index is built
    registry.unregister_native("tool_3")
    registry.register_function(lambda: "", name="tool_31", description="Sand the floor, then paint it.")
    registry.unregister_native("tool_12")
    registry.register_function(lambda: "", name="tool_12", description="Sand a wall.")
    fresh = MCPHub([], registry=registry)
    for query in queries:
        assert hub.search_tools(query, limit=10) == fresh.search_tools(query, limit=10)


def nested_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"inner": schema}}
    return schema


def test_a_tool_with_a_schema_nested_too_deep_to_copy_is_found_not_an_exception(
    registry: ToolRegistry,
) -> None:
    """Copying or comparing a 600-level schema passes Python's recursion limit: the search answers with
    the tool, its schema left out, and after an equal tool is registered anew (compared to the old one)."""
    with MCPHub([], registry=registry) as hub:
        for _ in range(2):
            with contextlib.suppress(KeyError):
                registry.unregister_native("deep_thing")
            registry.register_native(
                "deep_thing", lambda **kw: "x", description="a deep thing", input_schema=nested_schema(600)
            )
            result = hub.call_tool_safe("mcp__search_tools", {"query": "deep thing"})
            assert not result.is_error, result.text
            [found] = json.loads(result.text)
            assert found["name"] == "deep_thing"
            assert "nested too deep" in found["input_schema"]["description"]
