"""Haystack adapter: a real Haystack `Agent` with a scripted chat generator calls MCP tools through
`HubToolset(hub)` over stdio and Streamable HTTP.

Haystack is imported when a test runs, not when the module is collected: every test process collects
every test module, and only the one that runs these tests needs the framework (the scripted chat
generator, a Haystack component, is in tests/integrations/scripted_haystack.py)."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from mcp_sync import ConfigError, MCPHub, ToolCallCancelledError, ToolImage, ToolNotFoundError, ToolResult
from mcp_sync.integrations import ToolResultError
from tests.docstrings import undocumented_classes
from tests.integrations.support import (
    KITE,
    PDF,
    PNG_BASE64,
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
    from haystack.dataclasses import ChatMessage

    from tests.integrations.scripted_haystack import ScriptedChatGenerator


def run_agent(generator: ScriptedChatGenerator, tools: Any, **options: Any) -> list[ChatMessage]:
    from haystack.components.agents import Agent
    from haystack.dataclasses import ChatMessage

    agent = Agent(chat_generator=generator, tools=tools, **options)
    return list(agent.run(messages=[ChatMessage.from_user("go")])["messages"])


def tool_results(messages: list[ChatMessage]) -> list[Any]:
    return [result for message in messages for result in message.tool_call_results]


# -- an Agent over both transports ------------------------------------------------------------------


def test_agent_calls_a_tool_and_reads_its_text(servers: TwoServers) -> None:
    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    messages = run_agent(
        ScriptedChatGenerator([[("mcp__a__echo", {"text": "hello"})], "done"]), HubToolset(servers.hub)
    )
    [result] = tool_results(messages)
    assert (result.result, result.error, result.origin.tool_name) == ("hello", False, "mcp__a__echo")
    assert messages[-1].text == "done"


def test_tool_error_result_reaches_the_model_as_an_error_message(servers: TwoServers) -> None:
    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    generator = ScriptedChatGenerator([[("mcp__a__fail", {"message": "disk full"})], "done"])
    [result] = tool_results(run_agent(generator, HubToolset(servers.hub)))
    assert result.error
    assert "disk full" in result.result


def test_raise_on_failure_raises_with_the_typed_cause(servers: TwoServers) -> None:
    from haystack.tools.errors import ToolInvocationError

    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    generator = ScriptedChatGenerator([[("mcp__a__fail", {"message": "disk full"})], "done"])
    with pytest.raises(ToolInvocationError) as raised:
        run_agent(generator, HubToolset(servers.hub), raise_on_tool_invocation_failure=True)
    assert isinstance(raised.value.__cause__, ToolResultError)
    assert raised.value.__cause__.result.text == "disk full"


def test_timeout_is_an_error_message_and_stops_the_call_on_the_server(servers: TwoServers) -> None:
    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    tag = unique("hs-timeout-")
    generator = ScriptedChatGenerator([[("mcp__a__sleep", {"seconds": 30, "tag": tag})], "done"])
    [result] = tool_results(run_agent(generator, HubToolset(servers.hub, timeout=0.5)))
    assert result.error and "did not finish within 0.5 s" in result.result
    assert_stopped_if_started(
        servers.events, tag, lambda: servers.hub.call_tool("mcp__a__echo", {"text": "after"})
    )


def test_same_raw_name_on_two_servers_gives_two_tools(servers: TwoServers) -> None:
    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    generator = ScriptedChatGenerator([[("mcp__a__pid", {}), ("mcp__b__pid", {})], "done"])
    results = {
        r.origin.tool_name: r.result for r in tool_results(run_agent(generator, HubToolset(servers.hub)))
    }
    assert set(results) == {"mcp__a__pid", "mcp__b__pid"}
    assert results["mcp__a__pid"] != results["mcp__b__pid"]


def test_raw_names_that_collide_are_refused(servers: TwoServers) -> None:
    from mcp_sync.integrations.haystack import HubToolset

    with pytest.raises(ConfigError, match=r"'add' \(mcp__a__add, mcp__b__add\)"):
        list(HubToolset(servers.hub, raw_names=True))


def test_raw_names_on_request_when_they_do_not_collide(servers: TwoServers) -> None:
    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    toolset = HubToolset(servers.hub, raw_names=True, include=lambda tool: tool.server_name == "b")
    [result] = tool_results(run_agent(ScriptedChatGenerator([[("echo", {"text": "raw"})], "done"]), toolset))
    assert (result.origin.tool_name, result.result) == ("echo", "raw")


def test_agent_is_offered_a_tool_that_appeared_mid_run(servers: TwoServers) -> None:
    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    late = unique("late_hs_")

    def once_it_is_listed(offered: list[str]) -> Calls:
        # The step's tools were read before this: the new tool is offered from the next step on.
        servers.tool_events.wait_for(("added", f"mcp__a__{late}"))
        return [("mcp__a__echo", {"text": "waited"})]

    def call_the_new_tool(offered: list[str]) -> Calls:
        return [(next(name for name in offered if name.endswith(f"__{late}")), {"text": "fresh"})]

    generator = ScriptedChatGenerator(
        [[("mcp__a__add_tool", {"name": late})], once_it_is_listed, call_the_new_tool, "done"]
    )
    messages = run_agent(generator, HubToolset(servers.hub))
    assert tool_results(messages)[-1].result == "fresh"
    assert f"mcp__a__{late}" not in [tool.name for tool in generator.offered[0]]


def test_agent_finds_a_tool_that_appeared_mid_run_with_the_search_tool_and_calls_it(
    servers: TwoServers,
) -> None:
    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    late = unique("zeppelin_hs_")

    def search_once_listed(offered: list[str]) -> Calls:
        servers.tool_events.wait_for(("added", f"mcp__a__{late}"))
        return [("mcp__search_tools", {"query": late})]

    def call_what_was_found(offered: list[str]) -> Calls:
        found = json.loads(tool_results(generator.received[-1])[-1].result)
        name = next(tool["name"] for tool in found if tool["name"] == f"mcp__a__{late}")
        return [("mcp__call_tool", {"name": name, "arguments": {"text": "fresh"}})]

    generator = ScriptedChatGenerator(
        [
            [("mcp__call_tool", {"name": "mcp__a__add_tool", "arguments": {"name": late}})],
            search_once_listed,
            call_what_was_found,
            "done",
        ]
    )
    results = tool_results(run_agent(generator, HubToolset(servers.hub, discovery=True)))
    assert [tool.name for tool in generator.offered[0]] == ["mcp__search_tools", "mcp__call_tool"]
    assert [result.origin.tool_name for result in results] == [
        "mcp__call_tool",
        "mcp__search_tools",
        "mcp__call_tool",
    ]
    assert (results[-1].result, results[-1].error) == ("fresh", False)


def test_a_removed_tool_is_no_longer_offered(servers: TwoServers) -> None:
    from mcp_sync.integrations.haystack import HubToolset

    gone = unique("gone_hs_")
    servers.hub.call_tool("mcp__a__add_tool", {"name": gone})
    servers.tool_events.wait_for(("added", f"mcp__a__{gone}"))
    toolset = HubToolset(servers.hub)
    assert f"mcp__a__{gone}" in toolset
    servers.hub.call_tool("mcp__a__remove_tool", {"name": gone})
    servers.tool_events.wait_for(("removed", f"mcp__a__{gone}"))
    assert f"mcp__a__{gone}" not in toolset


def test_run_async_cancellation_cancels_on_the_server(servers: TwoServers) -> None:
    from haystack.components.agents import Agent
    from haystack.dataclasses import ChatMessage

    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    tag = unique("hs-cancel-")
    generator = ScriptedChatGenerator([[("mcp__a__sleep", {"seconds": 30, "tag": tag})], "done"])
    agent = Agent(chat_generator=generator, tools=HubToolset(servers.hub))

    async def main() -> None:
        task = asyncio.create_task(agent.run_async(messages=[ChatMessage.from_user("go")]))
        # Waiting in a thread: this only returns while the loop runs, i.e. the call does not block it.
        await asyncio.to_thread(servers.events.wait_for, "started", tag)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    servers.events.wait_for("cancelled", tag=tag)


def test_images_come_back_as_image_content(servers: TwoServers) -> None:
    from haystack.dataclasses import ImageContent, TextContent

    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    generator = ScriptedChatGenerator([[("mcp__a__blocks", {})], "done"])
    [result] = tool_results(run_agent(generator, HubToolset(servers.hub)))
    text, image = result.result
    assert isinstance(text, TextContent) and text.text == "first\nsecond\nthird"
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"


# -- the adapter on its own ------------------------------------------------------------------------------


def test_schema_reaches_the_model_whole(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    generator = ScriptedChatGenerator([[("book_trip", RICH_ARGUMENTS)], "done"])
    [result] = tool_results(run_agent(generator, HubToolset(rich_hub)))
    [tool] = generator.offered[0]
    assert tool.tool_spec == {
        "name": "book_trip",
        "description": "Book a trip for a group.",
        "parameters": RICH_SCHEMA,
    }
    assert json.loads(result.result) == RICH_ARGUMENTS


def test_files_and_image_resources_are_shown_and_audio_named_as_left_out(media_hub: MCPHub) -> None:
    from haystack.dataclasses import FileContent, ImageContent, TextContent

    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    generator = ScriptedChatGenerator([[("media", {})], "done"])
    [result] = tool_results(run_agent(generator, HubToolset(media_hub)))
    text, document, image = result.result
    assert isinstance(text, TextContent)
    assert text.text == f"the recording\n[left out: audio, audio/wav, {len(WAV)} bytes]"
    assert isinstance(document, FileContent) and document.mime_type == "application/pdf"
    assert (base64.b64decode(document.base64_data), document.filename) == (PDF, "report.pdf")
    assert isinstance(image, ImageContent)
    assert (image.mime_type, image.base64_image) == ("image/png", PNG_BASE64)


def test_an_image_haystack_cannot_take_is_named_as_left_out() -> None:
    from mcp_sync.integrations.haystack import haystack_tool

    svg = ToolResult(text="", images=(ToolImage("image/svg+xml", b"<svg/>"),))
    with MCPHub([]) as hub:
        hub.registry.register_native("draw", lambda: svg)
        assert haystack_tool(hub, "draw").invoke() == "[left out: image, image/svg+xml, 6 bytes]"


def test_unchanged_tools_are_the_same_objects(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.haystack import HubToolset

    toolset = HubToolset(rich_hub)
    assert toolset.tools[0] is toolset.tools[0]


def test_an_invalid_schema_leaves_the_tool_out_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    from mcp_sync.integrations.haystack import HubToolset

    with MCPHub([]) as hub:
        hub.registry.register_native("bad", lambda: "", input_schema={"type": "objekt"})
        hub.registry.register_native("good", lambda: "ok", input_schema={"type": "object"})
        assert [tool.name for tool in HubToolset(hub)] == ["good"]
    assert "bad is left out of the Haystack tools" in caplog.text


def test_the_toolset_is_not_a_list_to_add_to(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.haystack import HubToolset, haystack_tool

    toolset = HubToolset(rich_hub)
    with pytest.raises(TypeError, match="register_function"):
        toolset.add(haystack_tool(rich_hub, "book_trip"))


def test_a_toolset_over_a_hub_of_ones_own_does_not_serialize(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.haystack import HubToolset

    with pytest.raises(TypeError, match=r"HubToolset.from_file\(path\)"):
        HubToolset(rich_hub).to_dict()


def test_a_toolset_from_a_file_serializes_as_its_path_and_owns_its_hub(tmp_path: Path) -> None:
    from haystack.components.agents import Agent
    from haystack.dataclasses import ChatMessage
    from haystack.tools import Toolset

    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    config = tmp_path / "servers.yaml"
    config.write_text(yaml.safe_dump({"servers": [stdio_config("c")]}))
    data = HubToolset.from_file(config, timeout=5.0).to_dict()
    assert data["data"] == {
        "config_file": str(config),
        "timeout": 5.0,
        "raw_names": False,
        "discovery": False,
        "pinned": [],
    }
    toolset = HubToolset.from_dict(data)
    assert isinstance(toolset, Toolset) and toolset.hub.state == "created"
    generator = ScriptedChatGenerator([[("mcp__c__echo", {"text": "from the file"})], "done"])
    agent = Agent(chat_generator=generator, tools=toolset)  # the Agent warms the toolset up: the hub starts
    try:
        [result] = tool_results(agent.run(messages=[ChatMessage.from_user("go")])["messages"])
        assert result.result == "from the file"
    finally:
        agent.close()
    assert toolset.hub.state == "closed"


def test_cancel_event_ends_a_blocking_call(servers: TwoServers) -> None:
    from haystack.tools.errors import ToolInvocationError

    from mcp_sync.integrations.haystack import haystack_tool

    cancel = threading.Event()
    tag = unique("hs-event-")
    tool = haystack_tool(servers.hub, "mcp__a__sleep", cancel=cancel)
    threading.Thread(target=lambda: (servers.events.wait_for("started", tag=tag), cancel.set())).start()
    with pytest.raises(ToolInvocationError) as raised:
        tool.invoke(seconds=30, tag=tag)
    assert isinstance(raised.value.__cause__, ToolCallCancelledError)
    servers.events.wait_for("cancelled", tag=tag)


# -- a tool that runs as a task -------------------------------------------------------------------------


def test_agent_runs_a_task_tool_as_a_blocking_call(research_hub: MCPHub) -> None:
    from mcp_sync.integrations.haystack import HubToolset
    from tests.integrations.scripted_haystack import ScriptedChatGenerator

    generator = ScriptedChatGenerator([[(RESEARCH_TOOL, {"topic": "tides"})], "done"])
    toolset = HubToolset(research_hub, include=lambda tool: tool.name == RESEARCH_TOOL)
    [result] = tool_results(run_agent(generator, toolset))
    assert not result.error
    assert str(result.result).startswith(RESEARCH_REPORT)


def test_a_toolset_with_discovery_keeps_its_options_through_to_dict_and_from_dict(tmp_path: Path) -> None:
    """A pipeline saved and loaded keeps discovery: the loaded agent is offered the search and call tools."""
    from mcp_sync.integrations.haystack import HubToolset

    config = tmp_path / "servers.yaml"
    config.write_text(yaml.safe_dump({"servers": [stdio_config("c")]}))
    saved = HubToolset.from_file(config, discovery=True, pinned=["mcp__c__echo"])
    data = saved.to_dict()
    assert (data["data"]["discovery"], data["data"]["pinned"]) == (True, ["mcp__c__echo"])
    loaded = HubToolset.from_dict(data)
    try:
        loaded.warm_up()
        assert [tool.name for tool in loaded.tools] == ["mcp__search_tools", "mcp__call_tool", "mcp__c__echo"]
    finally:
        loaded.close()


def test_a_toolset_keeps_working_after_a_pinned_tool_leaves() -> None:
    """`tools` is read at every step of a run: a pinned tool the server removed is left out of it."""
    from mcp_sync.integrations.haystack import HubToolset

    with kite_hub() as hub:
        toolset = HubToolset(hub, discovery=True, pinned=[KITE])
        assert [tool.name for tool in toolset.tools] == ["mcp__search_tools", "mcp__call_tool", KITE]
        remove_kite(hub)
        assert [tool.name for tool in toolset.tools] == ["mcp__search_tools", "mcp__call_tool"]


def test_a_toolset_refuses_bad_discovery_options_when_it_is_made(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.haystack import HubToolset

    with pytest.raises(ValueError, match="include= cannot be combined"):
        HubToolset(rich_hub, discovery=True, include=lambda tool: True)
    with pytest.raises(ToolNotFoundError, match="book_trp"):
        HubToolset(rich_hub, discovery=True, pinned=["book_trp"])


def test_every_public_class_of_the_adapter_documents_its_public_members() -> None:
    from mcp_sync.integrations import haystack

    assert not undocumented_classes(haystack), "what help() shows a user of the adapter"
