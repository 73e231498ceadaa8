"""smolagents adapter: a real `ToolCallingAgent` with a scripted model calls MCP tools through
`HubToolCollection(hub)` over stdio and Streamable HTTP.

smolagents is imported when a test runs, not when the module is collected: every test process collects
every test module, and only the one that runs these tests needs the framework (the scripted models,
subclasses of smolagents' own, are in tests/integrations/scripted_smolagents.py)."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

import pytest

from mcp_sync import ConfigError, MCPHub, ToolCallCancelledError
from mcp_sync.integrations import ToolResultError
from tests.docstrings import undocumented_classes
from tests.integrations.support import (
    KITE,
    PDF,
    PNG,
    RESEARCH_REPORT,
    RESEARCH_TOOL,
    RICH_ARGUMENTS,
    RICH_SCHEMA,
    WAV,
    Calls,
    TwoServers,
    kite_hub,
    remove_kite,
    unique,
)
from tests.support import assert_stopped_if_started, stdio_config

if TYPE_CHECKING:
    from PIL import Image
    from smolagents import ToolCallingAgent
    from smolagents.memory import ActionStep

    from tests.integrations.scripted_smolagents import ScriptedCoder, ScriptedModel


def make_agent(model: ScriptedModel, tools: list[Any], **kwargs: Any) -> ToolCallingAgent:
    from smolagents import LogLevel, ToolCallingAgent

    return ToolCallingAgent(tools=tools, model=model, verbosity_level=LogLevel.OFF, max_steps=6, **kwargs)


def action_steps(agent: ToolCallingAgent) -> list[ActionStep]:
    from smolagents.memory import ActionStep

    return [step for step in agent.memory.steps if isinstance(step, ActionStep)]


def test_agent_calls_a_tool_and_reads_its_text(servers: TwoServers) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection
    from tests.integrations.scripted_smolagents import ScriptedModel

    agent = make_agent(
        ScriptedModel([("mcp__a__echo", {"text": "hello"})]), HubToolCollection(servers.hub).tools
    )
    assert agent.run("go") == "done"
    first = action_steps(agent)[0]
    assert (first.observations, first.error) == ("hello", None)


def images_received(model: ScriptedModel) -> list[Image.Image]:
    """The images in the messages of the model's latest step."""
    return [
        part["image"]
        for message in model.received[-1]
        for part in message.content or []
        if isinstance(part, dict) and part.get("type") == "image"
    ]


@pytest.mark.parametrize("attach", ["step_callbacks", "update_agent"])
def test_image_reaches_the_model_after_the_observation(servers: TwoServers, attach: str) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection
    from tests.integrations.scripted_smolagents import ScriptedModel

    collection = HubToolCollection(servers.hub)
    model = ScriptedModel([("mcp__a__blocks", {})])
    if attach == "step_callbacks":
        agent = make_agent(model, collection.tools, step_callbacks=[collection])
    else:
        agent = make_agent(model, [])
        collection.update_agent(agent)
    assert agent.run("go") == "done"
    [image] = images_received(model)
    assert (image.format, image.size) == ("PNG", (1, 1))
    observation = str(action_steps(agent)[0].observations)
    assert observation.startswith("first\nsecond\nthird\n")
    assert "1 image (image/png, 70 bytes)" in observation


def test_tool_without_a_collection_says_which_image_it_left_out(servers: TwoServers) -> None:
    from mcp_sync.integrations.smolagents import smolagents_tool

    text = smolagents_tool(servers.hub, "mcp__a__blocks")()
    assert text == "first\nsecond\n[left out: image, image/png, 70 bytes]\nthird"


def test_audio_and_files_are_named_as_left_out_and_image_resources_shown(media_hub: MCPHub) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection
    from tests.integrations.scripted_smolagents import ScriptedModel

    collection = HubToolCollection(media_hub)
    model = ScriptedModel([("media", {})])
    make_agent(model, collection.tools, step_callbacks=[collection]).run("go")
    [image] = images_received(model)
    assert image.size == (1, 1)
    [observation] = [
        part["text"]
        for message in model.received[-1]
        for part in message.content or []
        if part.get("type") == "text" and part["text"].startswith("Observation:")
    ]
    assert f"[left out: audio, audio/wav, {len(WAV)} bytes]" in observation
    assert f"[left out: file file:///report.pdf, application/pdf, {len(PDF)} bytes]" in observation
    assert f"1 image (image/png, {len(PNG)} bytes)" in observation


def test_collection_is_a_tool_collection(servers: TwoServers) -> None:
    from smolagents import ToolCollection

    from mcp_sync.integrations.smolagents import HubToolCollection

    assert isinstance(HubToolCollection(servers.hub), ToolCollection)


def test_client_opens_a_hub_from_a_config_and_closes_it_after() -> None:
    from mcp_sync.integrations.smolagents import HubMCPClient
    from tests.integrations.scripted_smolagents import ScriptedModel

    client = HubMCPClient([stdio_config("solo")], raw_names=True)
    with client as tools:
        by_name = {tool.name: tool for tool in tools}
        assert by_name["echo"](text="hi") == "hi"
        agent = make_agent(ScriptedModel([("blocks", {})]), [])
        client.collection.update_agent(agent)
        agent.run("go")
        assert len(images_received(agent.model)) == 1
    assert client.hub.state == "closed"


def test_collection_from_a_config_closes_its_hub_after() -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection

    with HubToolCollection.from_config([stdio_config("solo")]) as collection:
        assert "mcp__solo__echo" in [tool.name for tool in collection.tools]
    assert collection.hub.state == "closed"


def test_tool_error_result_raises_and_the_agent_reports_it(servers: TwoServers) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection
    from tests.integrations.scripted_smolagents import ScriptedModel

    agent = make_agent(
        ScriptedModel([("mcp__a__fail", {"message": "disk full"})]), HubToolCollection(servers.hub).tools
    )
    assert agent.run("go") == "done"
    error = action_steps(agent)[0].error
    assert error is not None
    assert "ToolResultError: disk full" in str(error)
    assert isinstance(error.__cause__, ToolResultError)


def test_timeout_is_reported_and_stops_the_call_on_the_server(servers: TwoServers) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection
    from tests.integrations.scripted_smolagents import ScriptedModel

    tag = unique("smol-timeout-")
    tools = HubToolCollection(servers.hub, timeout=0.5).tools
    agent = make_agent(ScriptedModel([("mcp__a__sleep", {"seconds": 30, "tag": tag})]), tools)
    assert agent.run("go") == "done"
    assert "ToolCallTimeoutError" in str(action_steps(agent)[0].error)
    assert_stopped_if_started(
        servers.events, tag, lambda: servers.hub.call_tool("mcp__a__echo", {"text": "after"})
    )


def test_same_raw_name_on_two_servers_gives_two_tools(servers: TwoServers) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection
    from tests.integrations.scripted_smolagents import ScriptedModel

    model = ScriptedModel([("mcp__a__pid", {}), ("mcp__b__pid", {})])  # run in parallel by the agent
    agent = make_agent(model, HubToolCollection(servers.hub).tools)
    agent.run("go")
    observations = str(action_steps(agent)[0].observations).splitlines()
    assert len(set(observations)) == 2 and all(line.isdigit() for line in observations)


def test_raw_names_that_collide_are_refused(servers: TwoServers) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection

    with pytest.raises(ConfigError, match=r"'echo' \(mcp__a__echo, mcp__b__echo\)"):
        _ = HubToolCollection(servers.hub, raw_names=True, include=lambda tool: tool.raw_name == "echo").tools


def test_raw_names_on_request_when_they_do_not_collide(servers: TwoServers) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection
    from tests.integrations.scripted_smolagents import ScriptedModel

    collection = HubToolCollection(servers.hub, raw_names=True, include=lambda tool: tool.server_name == "b")
    agent = make_agent(ScriptedModel([("echo", {"text": "raw"})]), collection.tools)
    agent.run("go")
    assert action_steps(agent)[0].observations == "raw"


def test_step_callback_offers_a_tool_that_appeared_mid_run(servers: TwoServers) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection
    from tests.integrations.scripted_smolagents import ScriptedModel

    late = unique("late_smol_")
    collection = HubToolCollection(servers.hub)

    def call_the_new_tool(offered: list[str]) -> Calls:
        return [(next(name for name in offered if name.endswith(f"__{late}")), {"text": "fresh"})]

    def announced(step: ActionStep, agent: Any) -> None:
        """Runs before the collection's callback: the server's announcement has reached the hub."""
        servers.tool_events.wait_for(("added", f"mcp__a__{late}"))

    model = ScriptedModel([("mcp__a__add_tool", {"name": late})], call_the_new_tool)
    agent = make_agent(model, collection.tools, step_callbacks=[announced, collection])
    assert agent.run("go") == "done"
    assert action_steps(agent)[1].observations == "fresh"


def test_agent_finds_a_tool_that_appeared_mid_run_with_the_search_tool_and_calls_it(
    servers: TwoServers,
) -> None:
    from mcp_sync.integrations.smolagents import smolagents_tools
    from tests.integrations.scripted_smolagents import ScriptedModel

    late = unique("zeppelin_smol_")

    def search_once_listed(offered: list[str]) -> Calls:
        servers.tool_events.wait_for(("added", f"mcp__a__{late}"))
        return [("mcp__search_tools", {"query": late})]

    def call_what_was_found(offered: list[str]) -> Calls:
        found = json.loads(str(action_steps(agent)[-1].observations))
        name = next(tool["name"] for tool in found if tool["name"] == f"mcp__a__{late}")
        return [("mcp__call_tool", {"name": name, "arguments": {"text": "fresh"}})]

    model = ScriptedModel(
        [("mcp__call_tool", {"name": "mcp__a__add_tool", "arguments": {"name": late}})],
        search_once_listed,
        call_what_was_found,
    )
    agent = make_agent(model, smolagents_tools(servers.hub, discovery=True))
    assert agent.run("go") == "done"
    offered = [spec["function"]["name"] for spec in model.offered[0]]
    assert {"mcp__search_tools", "mcp__call_tool"} <= set(offered)
    assert not [name for name in offered if name.startswith("mcp__a__")]
    assert [step.error for step in action_steps(agent)[:3]] == [None, None, None]
    assert action_steps(agent)[2].observations == "fresh"


def run_code_agent_with_a_late_tool(servers: TwoServers) -> tuple[Any, ScriptedCoder, str]:
    """A `CodeAgent` whose first step adds a tool on the server and whose second step calls it."""
    from smolagents import CodeAgent, LogLevel

    from mcp_sync.integrations.smolagents import HubToolCollection
    from tests.integrations.scripted_smolagents import ScriptedCoder

    late = f"mcp__a__{unique('late_code_')}"
    collection = HubToolCollection(servers.hub)

    def announced(step: ActionStep, agent: Any) -> None:
        """Runs before the collection's callback: the server's announcement has reached the hub."""
        servers.tool_events.wait_for(("added", late))

    model = ScriptedCoder(
        f'mcp__a__add_tool(name="{late.removeprefix("mcp__a__")}")', f'final_answer({late}(text="fresh"))'
    )
    agent = CodeAgent(
        tools=collection.tools,
        model=model,
        verbosity_level=LogLevel.OFF,
        max_steps=3,
        step_callbacks=[announced, collection],
    )
    return agent.run("go"), model, late


def test_code_agent_calls_a_tool_that_appeared_mid_run(servers: TwoServers) -> None:
    answer, _, _ = run_code_agent_with_a_late_tool(servers)
    assert answer == "fresh"


def test_code_agent_tells_the_model_about_a_tool_that_appeared_mid_run(servers: TwoServers) -> None:
    _, model, late = run_code_agent_with_a_late_tool(servers)
    assert late not in model.prompts[0]
    assert f"def {late}(text: string" in model.prompts[1]


def test_cancel_event_ends_a_running_call(servers: TwoServers) -> None:
    from mcp_sync.integrations.smolagents import smolagents_tool

    cancel = threading.Event()
    tag = unique("smol-cancel-")
    tool = smolagents_tool(servers.hub, "mcp__a__sleep", cancel=cancel)
    threading.Thread(target=lambda: (servers.events.wait_for("started", tag=tag), cancel.set())).start()
    with pytest.raises(ToolCallCancelledError):
        tool(seconds=30, tag=tag)
    servers.events.wait_for("cancelled", tag=tag)


# -- the adapter on its own ------------------------------------------------------------------------------


def test_schema_reaches_the_model_whole(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection
    from tests.integrations.scripted_smolagents import ScriptedModel

    model = ScriptedModel([("book_trip", RICH_ARGUMENTS)])
    agent = make_agent(model, HubToolCollection(rich_hub).tools)
    agent.run("go")
    [spec] = [spec["function"] for spec in model.offered[0] if spec["function"]["name"] == "book_trip"]
    properties, required = spec["parameters"]["properties"], spec["parameters"]["required"]
    assert spec["description"] == "Book a trip for a group."
    assert required == RICH_SCHEMA["required"]
    assert properties["mode"]["enum"] == ["train", "plane"]
    assert properties["city"]["description"] == "Where to go."
    assert properties["travellers"]["items"]["properties"]["name"]["description"] == "Full name."
    assert properties["travellers"]["items"]["required"] == ["name"]
    assert properties["home"]["properties"]["country"]["enum"] == ["FR", "DE"]
    assert properties["home"]["description"] == "Where the travellers live."
    assert (properties["notes"]["type"], properties["notes"]["nullable"]) == ("string", True)
    assert json.loads(str(action_steps(agent)[0].observations)) == RICH_ARGUMENTS


def test_inputs_type_every_argument_and_mark_optional_ones_nullable() -> None:
    from mcp_sync.integrations.smolagents import smolagents_inputs

    inputs = smolagents_inputs(RICH_SCHEMA)
    assert {name: spec["type"] for name, spec in inputs.items()} == {
        "city": "string",
        "mode": "string",
        "travellers": "array",
        "home": "object",
        "notes": "string",
    }
    assert [name for name, spec in inputs.items() if spec.get("nullable")] == ["home", "notes"]


def test_tool_names_become_python_identifiers(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.smolagents import HubToolCollection

    rich_hub.registry.register_native("my-tool", lambda: "ok")
    try:
        names = [tool.name for tool in HubToolCollection(rich_hub).tools]
    finally:
        rich_hub.registry.unregister_native("my-tool")
    assert names == ["book_trip", "my_tool"]


def test_structured_output_returns_the_structured_content(servers: TwoServers) -> None:
    from mcp_sync.integrations.smolagents import smolagents_tool

    tool = smolagents_tool(servers.hub, "mcp__a__add", structured_output=True)
    assert (tool.output_type, tool(a=2, b=3)) == ("object", {"result": 5})


# -- a tool that runs as a task -------------------------------------------------------------------------


def test_agent_runs_a_task_tool_as_a_blocking_call(research_hub: MCPHub) -> None:
    from mcp_sync.integrations.smolagents import smolagents_tools
    from tests.integrations.scripted_smolagents import ScriptedModel

    [tool] = smolagents_tools(research_hub, include=lambda tool: tool.name == RESEARCH_TOOL)
    agent = make_agent(ScriptedModel([(tool.name, {"topic": "tides"})]), [tool])
    assert agent.run("go") == "done"
    step = action_steps(agent)[0]  # then the final answer's step
    assert step.error is None
    assert RESEARCH_REPORT in str(step.observations)


def test_the_collection_keeps_working_after_a_pinned_tool_leaves() -> None:
    """`tools` is read at every step: a pinned tool the server removed is left out."""
    from mcp_sync.integrations.smolagents import HubToolCollection

    with kite_hub() as hub:
        collection = HubToolCollection(hub, discovery=True, pinned=[KITE])
        assert [tool.name for tool in collection.tools] == ["mcp__search_tools", "mcp__call_tool", KITE]
        remove_kite(hub)
        assert [tool.name for tool in collection.tools] == ["mcp__search_tools", "mcp__call_tool"]


def test_the_forms_with_a_hub_of_their_own_take_discovery_and_pinned() -> None:
    from mcp_sync.integrations.smolagents import HubMCPClient, HubToolCollection

    with HubMCPClient([stdio_config("c")], discovery=True, pinned=["mcp__c__echo"]) as tools:
        assert [tool.name for tool in tools] == ["mcp__search_tools", "mcp__call_tool", "mcp__c__echo"]
    with HubToolCollection.from_config([stdio_config("c")], discovery=True) as collection:
        assert [tool.name for tool in collection.tools] == ["mcp__search_tools", "mcp__call_tool"]


def test_every_public_class_of_the_adapter_documents_its_public_members() -> None:
    from mcp_sync.integrations import smolagents

    assert not undocumented_classes(smolagents), "what help() shows a user of the adapter"
