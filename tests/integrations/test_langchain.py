"""LangChain adapter: a real LangChain agent (`create_agent`, on LangGraph) with a scripted chat model
calls MCP tools through `langchain_tools(hub)` over stdio and Streamable HTTP.

LangChain is imported when a test runs, not when the module is collected: every test process collects
every test module, and only the one that runs these tests needs the framework (the scripted model, a
subclass of LangChain's own, is in tests/integrations/scripted_langchain.py)."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from typing import TYPE_CHECKING, Any

import pytest

from mcp_sync import ConfigError, MCPHub, ToolCallCancelledError, ToolRegistry
from tests.docstrings import undocumented_classes
from tests.integrations.support import (
    MEDIA_CONTENT,
    PDF,
    PNG_BASE64,
    RESEARCH_REPORT,
    RESEARCH_TOOL,
    RICH_ARGUMENTS,
    RICH_SCHEMA,
    WAV,
    Calls,
    Step,
    TwoServers,
    unique,
)
from tests.support import assert_stopped_if_started, stdio_config

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage, ToolMessage

    from tests.integrations.scripted_langchain import ScriptedChatModel


def scripted(*steps: Step) -> ScriptedChatModel:
    from tests.integrations.scripted_langchain import ScriptedChatModel

    return ScriptedChatModel(steps=list(steps))


def run_agent(
    model: ScriptedChatModel, tools: list[Any], history: list[BaseMessage] | None = None
) -> list[BaseMessage]:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    agent = create_agent(model, tools)
    state = agent.invoke({"messages": [*(history or []), HumanMessage("go")]})
    return list(state["messages"])


def tool_messages(messages: list[BaseMessage]) -> list[ToolMessage]:
    from langchain_core.messages import ToolMessage

    return [message for message in messages if isinstance(message, ToolMessage)]


def without_ids(content: str | list[Any]) -> list[dict[str, Any]]:
    """A message's content blocks without the ids LangChain gives them."""
    assert isinstance(content, list)
    return [{key: value for key, value in block.items() if key != "id"} for block in content]


# -- agents over both transports -----------------------------------------------------------------------


def test_agent_calls_a_tool_and_reads_its_text(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    model = scripted([("mcp__a__echo", {"text": "hello"})], "done")
    messages = run_agent(model, langchain_tools(servers.hub))
    [result] = tool_messages(messages)
    assert (result.content, result.status, result.name) == ("hello", "success", "mcp__a__echo")
    assert result.artifact["structured_content"] == {"result": "hello"}
    assert messages[-1].content == "done"


def test_image_reaches_the_model_as_an_image_block_between_the_texts(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    model = scripted([("mcp__a__blocks", {})], "done")
    run_agent(model, langchain_tools(servers.hub))
    [received] = tool_messages(model.received[-1])
    assert without_ids(received.content) == [
        {"type": "text", "text": "first"},
        {"type": "text", "text": "second"},
        {"type": "image", "base64": PNG_BASE64, "mime_type": "image/png"},
        {"type": "text", "text": "third"},
    ]


def test_artifact_holds_the_structured_content_and_the_blocks_as_sent(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    model = scripted([("mcp__a__blocks", {}), ("mcp__a__add", {"a": 2, "b": 3})], "done")
    blocks, added = tool_messages(run_agent(model, langchain_tools(servers.hub)))
    assert blocks.artifact["structured_content"] is None
    assert [block["type"] for block in blocks.artifact["content"]] == ["text", "text", "image", "text"]
    assert blocks.artifact["content"][2] == {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}
    assert added.artifact == {
        "structured_content": {"result": 5},
        "content": [{"type": "text", "text": "5"}],
    }


def test_tool_error_result_reaches_the_model_as_an_error_message(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    model = scripted([("mcp__a__fail", {"message": "disk full"})], "done")
    [result] = tool_messages(run_agent(model, langchain_tools(servers.hub)))
    assert result.status == "error"
    assert "disk full" in str(result.content)


def test_timeout_is_an_error_message_and_stops_the_call_on_the_server(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    tag = unique("lc-timeout-")
    model = scripted([("mcp__a__sleep", {"seconds": 30, "tag": tag})], "done")
    [result] = tool_messages(run_agent(model, langchain_tools(servers.hub, timeout=0.5)))
    assert result.status == "error"
    assert str(result.content).startswith("error: timed out")
    assert_stopped_if_started(
        servers.events, tag, lambda: servers.hub.call_tool("mcp__a__echo", {"text": "after"})
    )


def test_arguments_named_like_langchains_own_parameters_reach_the_server(servers: TwoServers) -> None:
    """`config` and `run_manager` are names LangChain passes its own values under; the tool's are kept."""
    from mcp_sync.integrations.langchain import langchain_tools

    sent = {"config": "fast", "run_manager": "ada", "callbacks": "none"}
    model = scripted([("mcp__a__framework_names", sent)], "done")
    [result] = tool_messages(run_agent(model, langchain_tools(servers.hub)))
    assert (result.status, json.loads(str(result.content))) == ("success", sent)


def test_ainvoke_passes_arguments_named_like_langchains_own_parameters(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tool

    sent = {"config": "fast", "run_manager": "ada", "callbacks": "none"}
    tool = langchain_tool(servers.hub, "mcp__a__framework_names")
    assert json.loads(asyncio.run(tool.ainvoke(sent))) == sent


def test_same_raw_name_on_two_servers_gives_two_tools(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    model = scripted([("mcp__a__pid", {}), ("mcp__b__pid", {})], "done")
    results = {
        message.name: message.content
        for message in tool_messages(run_agent(model, langchain_tools(servers.hub)))
    }
    assert set(results) == {"mcp__a__pid", "mcp__b__pid"}
    assert results["mcp__a__pid"] != results["mcp__b__pid"]


def test_raw_names_that_collide_are_refused(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    with pytest.raises(ConfigError, match=r"'add' \(mcp__a__add, mcp__b__add\)"):
        langchain_tools(servers.hub, raw_names=True)


def test_raw_names_on_request_when_they_do_not_collide(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    tools = langchain_tools(servers.hub, raw_names=True, include=lambda tool: tool.server_name == "b")
    [result] = tool_messages(run_agent(scripted([("echo", {"text": "raw"})], "done"), tools))
    assert (result.name, result.content) == ("echo", "raw")


def test_agent_built_per_turn_sees_a_tool_that_appeared_mid_run(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    late = unique("late_lc_")
    first = run_agent(scripted([("mcp__a__add_tool", {"name": late})], "added"), langchain_tools(servers.hub))
    servers.tool_events.wait_for(("added", f"mcp__a__{late}"))

    def call_the_new_tool(offered: list[str]) -> Calls:
        return [(next(name for name in offered if name.endswith(f"__{late}")), {"text": "fresh"})]

    second = run_agent(scripted(call_the_new_tool, "done"), langchain_tools(servers.hub), history=first)
    assert tool_messages(second)[-1].content == "fresh"


def test_agent_finds_a_tool_that_appeared_mid_run_with_the_search_tool_and_calls_it(
    servers: TwoServers,
) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    late = unique("zeppelin_lc_")

    def search_once_listed(offered: list[str]) -> Calls:
        servers.tool_events.wait_for(("added", f"mcp__a__{late}"))
        return [("mcp__search_tools", {"query": late})]

    def call_what_was_found(offered: list[str]) -> Calls:
        found = json.loads(str(tool_messages(model.received[-1])[-1].content))
        name = next(tool["name"] for tool in found if tool["name"] == f"mcp__a__{late}")
        return [("mcp__call_tool", {"name": name, "arguments": {"text": "fresh"}})]

    model = scripted(
        [("mcp__call_tool", {"name": "mcp__a__add_tool", "arguments": {"name": late}})],
        search_once_listed,
        call_what_was_found,
        "done",
    )
    results = tool_messages(run_agent(model, langchain_tools(servers.hub, discovery=True)))
    assert [spec["function"]["name"] for spec in model.offered[0]] == ["mcp__search_tools", "mcp__call_tool"]
    assert [result.name for result in results] == ["mcp__call_tool", "mcp__search_tools", "mcp__call_tool"]
    assert (results[-1].content, results[-1].status) == ("fresh", "success")


def test_ainvoke_cancellation_cancels_on_the_server(servers: TwoServers) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from mcp_sync.integrations.langchain import langchain_tools

    tag = unique("lc-cancel-")
    agent = create_agent(
        scripted([("mcp__a__sleep", {"seconds": 30, "tag": tag})], "done"), langchain_tools(servers.hub)
    )

    async def main() -> None:
        task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("go")]}))
        # Waiting in a thread: this only returns while the loop runs, i.e. the call does not block it.
        await asyncio.to_thread(servers.events.wait_for, "started", tag)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    servers.events.wait_for("cancelled", tag=tag)


# -- the adapter on its own ------------------------------------------------------------------------------


def test_schema_reaches_the_model_whole(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    model = scripted([("book_trip", RICH_ARGUMENTS)], "done")
    [result] = tool_messages(run_agent(model, langchain_tools(rich_hub)))
    [spec] = [spec["function"] for spec in model.offered[-1] if spec["function"]["name"] == "book_trip"]
    parameters = spec["parameters"]
    assert spec["description"] == "Book a trip for a group."
    assert parameters["required"] == RICH_SCHEMA["required"]
    assert parameters["properties"]["mode"]["enum"] == ["train", "plane"]
    assert parameters["properties"]["city"]["description"] == "Where to go."
    assert (
        parameters["properties"]["travellers"]["items"]["properties"]["name"]["description"] == "Full name."
    )
    assert parameters["properties"]["travellers"]["items"]["required"] == ["name"]
    # LangChain inlines `$ref`s itself; the reference's own description wins over its target's.
    assert parameters["properties"]["home"]["description"] == "Where the travellers live."
    assert parameters["properties"]["home"]["properties"]["country"]["enum"] == ["FR", "DE"]
    assert parameters["properties"]["home"]["required"] == ["street"]
    assert json.loads(str(result.content)) == RICH_ARGUMENTS


def test_invoke_works_without_an_event_loop(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.langchain import langchain_tool

    tool = langchain_tool(rich_hub, "book_trip")
    assert '"city": "Paris"' in tool.invoke({**RICH_ARGUMENTS, "city": "Paris"})


def test_unhandled_errors_raise_tool_exception_with_the_typed_cause(servers: TwoServers) -> None:
    from langchain_core.tools import ToolException

    from mcp_sync.integrations.langchain import langchain_tool

    tool = langchain_tool(servers.hub, "mcp__a__sleep", timeout=0.2, handle_tool_error=False)
    with pytest.raises(ToolException) as raised:
        tool.invoke({"seconds": 30, "tag": unique("lc-raise-")})
    assert isinstance(raised.value.__cause__, TimeoutError)


def test_cancel_event_ends_a_blocking_call(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tool

    cancel = threading.Event()
    tag = unique("lc-event-")
    tool = langchain_tool(servers.hub, "mcp__a__sleep", cancel=cancel)
    threading.Thread(target=lambda: (servers.events.wait_for("started", tag=tag), cancel.set())).start()
    with pytest.raises(ToolCallCancelledError):
        tool.invoke({"seconds": 30, "tag": tag})
    servers.events.wait_for("cancelled", tag=tag)


def test_embedded_files_become_file_blocks_and_audio_a_note(media_hub: MCPHub) -> None:
    """langchain-core takes no audio block in a tool message (it would turn all the content into JSON)."""
    from mcp_sync.integrations.langchain import langchain_tools

    model = scripted([("media", {})], "done")
    run_agent(model, langchain_tools(media_hub))
    [received] = tool_messages(model.received[-1])
    assert without_ids(received.content) == [
        {"type": "text", "text": "the recording"},
        {"type": "text", "text": f"[left out: audio, audio/wav, {len(WAV)} bytes]"},
        {"type": "file", "base64": base64.b64encode(PDF).decode(), "mime_type": "application/pdf"},
        {"type": "image", "base64": PNG_BASE64, "mime_type": "image/png"},
    ]
    assert len(received.artifact["content"]) == len(MEDIA_CONTENT)


# -- a tool that runs as a task -------------------------------------------------------------------------


def test_agent_runs_a_task_tool_as_a_blocking_call(research_hub: MCPHub) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    model = scripted([(RESEARCH_TOOL, {"topic": "tides"})], "done")
    tools = langchain_tools(research_hub, include=lambda tool: tool.name == RESEARCH_TOOL)
    [result] = tool_messages(run_agent(model, tools))
    assert result.status == "success"
    assert isinstance(result.content, str) and result.content.startswith(RESEARCH_REPORT)


def test_a_pinned_tool_of_a_server_that_crashed_is_left_out_of_the_offer() -> None:
    """Its server may come back; the other server's tools are still offered and called."""
    from mcp_sync.integrations.langchain import langchain_tools

    with MCPHub([stdio_config("fx"), stdio_config("gx")]) as hub:
        gone = threading.Event()
        hub.on_tool_removed(lambda tool: tool.name == "mcp__gx__echo" and gone.set())
        hub.call_tool_safe("mcp__gx__crash")
        assert gone.wait(20)
        tools = langchain_tools(hub, discovery=True, pinned=["mcp__fx__echo", "mcp__gx__echo"])
        assert [tool.name for tool in tools] == ["mcp__search_tools", "mcp__call_tool", "mcp__fx__echo"]


def test_the_search_tool_does_not_run_on_the_event_loop() -> None:
    """A first search after a change builds the index over every tool: a worker thread does it."""
    from mcp_sync.integrations.langchain import langchain_tools

    registry = ToolRegistry()
    try:
        registry.register_function(lambda text: text, name="echo", description="Return the text.")
        with MCPHub([], registry=registry) as hub:
            ran_on: list[int] = []
            search = hub.search_tools

            def recorded(query: str, *, limit: int = 5) -> list[Any]:
                ran_on.append(threading.get_ident())
                return search(query, limit=limit)

            hub.search_tools = recorded  # type: ignore[method-assign]
            tool = {t.name: t for t in langchain_tools(hub, discovery=True)}["mcp__search_tools"]

            async def main() -> int:
                await tool.ainvoke({"query": "return text"})
                return threading.get_ident()

            loop_thread = asyncio.run(main())
    finally:
        registry.close()
    assert ran_on and ran_on[0] != loop_thread


def test_every_public_class_of_the_adapter_documents_its_public_members() -> None:
    from mcp_sync.integrations import langchain

    assert not undocumented_classes(langchain), "what help() shows a user of the adapter"
