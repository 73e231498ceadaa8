"""LlamaIndex adapter: a real `FunctionAgent` with a scripted function-calling LLM calls MCP tools through
`llamaindex_tools(hub)` and `HubToolRetriever(hub)` over stdio and Streamable HTTP.

LlamaIndex is imported when a test runs, not when the module is collected: every test process collects
every test module, and only the one that runs these tests needs the framework."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as types
import pytest

from mcp_sync import ConfigError, MCPHub, ToolCallCancelledError, ToolCallTimeoutError, ToolResult
from tests.docstrings import undocumented_classes
from tests.integrations.support import (
    KITE,
    PDF,
    PNG,
    RESEARCH_REPORT,
    RESEARCH_SERVER,
    RESEARCH_TOOL,
    RICH_ARGUMENTS,
    RICH_SCHEMA,
    WAV,
    Calls,
    Step,
    TwoServers,
    kite_hub,
    new_task_ids,
    remove_kite,
    task_ids,
    unique,
)
from tests.support import assert_stopped_if_started, wait_until

if TYPE_CHECKING:
    from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
    from llama_index.core.base.llms.types import ChatMessage

# LlamaIndex's workflows inspect every attribute of an agent, including pydantic's deprecated ones.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect")


class Script:
    """A scripted function-calling LLM: step n of a run answers with tool calls or a final text.

    A step may be a function of the tool names it is offered. `offered` records each step's tool specs,
    `received` its messages.
    """

    def __init__(self, *steps: Step) -> None:
        from llama_index.core.llms import MockFunctionCallingLLM

        self.steps = list(steps)
        self.offered: list[list[dict[str, Any]]] = []
        self.received: list[list[ChatMessage]] = []
        self.llm = MockFunctionCallingLLM(response_generator=self.respond)

    def respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock

        self.received.append(list(messages))
        specs = [tool.metadata.to_openai_tool() for tool in kwargs.get("tools") or ()]
        self.offered.append(specs)
        last_user = max(i for i, message in enumerate(messages) if message.role == MessageRole.USER)
        turn = sum(message.role == MessageRole.ASSISTANT for message in messages[last_user:])
        step = self.steps[turn] if turn < len(self.steps) else "done"
        if callable(step):
            step = step([spec["function"]["name"] for spec in specs])
        if isinstance(step, str):
            return ChatMessage(role=MessageRole.ASSISTANT, content=step)
        blocks = [
            ToolCallBlock(tool_call_id=f"call_{turn}_{i}", tool_name=name, tool_kwargs=arguments)
            for i, (name, arguments) in enumerate(step)
        ]
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)


async def run_agent(agent: FunctionAgent) -> tuple[str, list[ToolCallResult]]:
    from llama_index.core.agent.workflow import ToolCallResult

    handler = agent.run(user_msg="go")
    results = [event async for event in handler.stream_events() if isinstance(event, ToolCallResult)]
    return str(await handler), results


def run(script: Script, tools: list[Any] | None = None, **kwargs: Any) -> tuple[str, list[ToolCallResult]]:
    from llama_index.core.agent.workflow import FunctionAgent

    return asyncio.run(run_agent(FunctionAgent(llm=script.llm, tools=tools, **kwargs)))


def test_agent_calls_a_tool_and_reads_its_text(servers: TwoServers) -> None:
    from mcp_sync.integrations.llamaindex import llamaindex_tools

    answer, [result] = run(Script([("mcp__a__echo", {"text": "hello"})]), llamaindex_tools(servers.hub))
    assert (result.tool_output.content, result.tool_output.is_error) == ("hello", False)
    assert result.tool_output.raw_output.structured_content == {"result": "hello"}
    assert answer == "done"


def blocks_received(script: Script) -> list[Any]:
    """The blocks of the tool messages the LLM received in its latest step."""
    from llama_index.core.base.llms.types import MessageRole

    return [
        block
        for message in script.received[-1]
        if message.role == MessageRole.TOOL
        for block in message.blocks
    ]


def test_image_reaches_the_model_as_an_image_block_between_the_texts(servers: TwoServers) -> None:
    from llama_index.core.base.llms.types import ImageBlock, TextBlock

    from mcp_sync.integrations.llamaindex import llamaindex_tools

    script = Script([("mcp__a__blocks", {})])
    _, [result] = run(script, llamaindex_tools(servers.hub))
    blocks = blocks_received(script)
    assert [type(block) for block in blocks] == [TextBlock, TextBlock, ImageBlock, TextBlock]
    assert [block.text for block in blocks if isinstance(block, TextBlock)] == ["first", "second", "third"]
    image = blocks[2]
    assert (image.image_mimetype, image.resolve_image().read()) == ("image/png", PNG)
    assert result.tool_output.content == "first\nsecond\nthird"


def test_tool_error_result_is_an_error_output(servers: TwoServers) -> None:
    from mcp_sync.integrations.llamaindex import llamaindex_tools

    _, [result] = run(Script([("mcp__a__fail", {"message": "disk full"})]), llamaindex_tools(servers.hub))
    assert result.tool_output.is_error
    assert "disk full" in result.tool_output.content


def test_timeout_is_an_error_output_and_stops_the_call_on_the_server(servers: TwoServers) -> None:
    from mcp_sync.integrations.llamaindex import llamaindex_tools

    tag = unique("li-timeout-")
    script = Script([("mcp__a__sleep", {"seconds": 30, "tag": tag})])
    _, [result] = run(script, llamaindex_tools(servers.hub, timeout=0.5))
    assert result.tool_output.is_error
    assert isinstance(result.tool_output.exception, ToolCallTimeoutError)
    assert_stopped_if_started(
        servers.events, tag, lambda: servers.hub.call_tool("mcp__a__echo", {"text": "after"})
    )


def test_same_raw_name_on_two_servers_gives_two_tools(servers: TwoServers) -> None:
    from mcp_sync.integrations.llamaindex import llamaindex_tools

    _, results = run(Script([("mcp__a__pid", {}), ("mcp__b__pid", {})]), llamaindex_tools(servers.hub))
    pids = {result.tool_name: result.tool_output.content for result in results}
    assert set(pids) == {"mcp__a__pid", "mcp__b__pid"}
    assert pids["mcp__a__pid"] != pids["mcp__b__pid"]


def test_raw_names_that_collide_are_refused(servers: TwoServers) -> None:
    from mcp_sync.integrations.llamaindex import llamaindex_tools

    with pytest.raises(ConfigError, match=r"'echo' \(mcp__a__echo, mcp__b__echo\)"):
        llamaindex_tools(servers.hub, raw_names=True, include=lambda tool: tool.raw_name == "echo")


def test_raw_names_on_request_when_they_do_not_collide(servers: TwoServers) -> None:
    from mcp_sync.integrations.llamaindex import llamaindex_tools

    tools = llamaindex_tools(servers.hub, raw_names=True, include=lambda tool: tool.server_name == "b")
    _, [result] = run(Script([("echo", {"text": "raw"})]), tools)
    assert (result.tool_name, result.tool_output.content) == ("echo", "raw")


def test_tool_retriever_offers_a_tool_that_appeared_mid_run(servers: TwoServers) -> None:
    from mcp_sync.integrations.llamaindex import HubToolRetriever

    late = unique("late_li_")

    def once_announced(offered: list[str]) -> Calls:
        """A slow model: by the time it answers, the server's announcement has reached the hub."""
        servers.tool_events.wait_for(("added", f"mcp__a__{late}"))
        return [("mcp__a__echo", {"text": "thinking"})]

    def call_the_new_tool(offered: list[str]) -> Calls:
        return [(next(name for name in offered if name.endswith(f"__{late}")), {"text": "fresh"})]

    script = Script([("mcp__a__add_tool", {"name": late})], once_announced, call_the_new_tool)
    _, results = run(script, tool_retriever=HubToolRetriever(servers.hub))
    assert f"mcp__a__{late}" not in [spec["function"]["name"] for spec in script.offered[0]]
    assert results[-1].tool_output.content == "fresh"


def test_agent_finds_a_tool_that_appeared_mid_run_with_the_search_tool_and_calls_it(
    servers: TwoServers,
) -> None:
    from llama_index.core.base.llms.types import MessageRole

    from mcp_sync.integrations.llamaindex import llamaindex_tools

    late = unique("zeppelin_li_")

    def search_once_listed(offered: list[str]) -> Calls:
        servers.tool_events.wait_for(("added", f"mcp__a__{late}"))
        return [("mcp__search_tools", {"query": late})]

    def call_what_was_found(offered: list[str]) -> Calls:
        answer = next(m for m in reversed(script.received[-1]) if m.role == MessageRole.TOOL)
        found = json.loads(str(answer.content))
        name = next(tool["name"] for tool in found if tool["name"] == f"mcp__a__{late}")
        return [("mcp__call_tool", {"name": name, "arguments": {"text": "fresh"}})]

    script = Script(
        [("mcp__call_tool", {"name": "mcp__a__add_tool", "arguments": {"name": late}})],
        search_once_listed,
        call_what_was_found,
    )
    _, results = run(script, llamaindex_tools(servers.hub, discovery=True))
    assert [spec["function"]["name"] for spec in script.offered[0]] == ["mcp__search_tools", "mcp__call_tool"]
    assert [result.tool_name for result in results] == [
        "mcp__call_tool",
        "mcp__search_tools",
        "mcp__call_tool",
    ]
    assert (results[-1].tool_output.content, results[-1].tool_output.is_error) == ("fresh", False)


def test_cancelling_the_run_cancels_on_the_server(servers: TwoServers) -> None:
    from llama_index.core.agent.workflow import FunctionAgent

    from mcp_sync.integrations.llamaindex import llamaindex_tools

    tag = unique("li-cancel-")
    script = Script([("mcp__a__sleep", {"seconds": 30, "tag": tag})])
    agent = FunctionAgent(llm=script.llm, tools=llamaindex_tools(servers.hub))

    async def main() -> None:
        task = asyncio.ensure_future(run_agent(agent))
        # Waiting in a thread: this only returns while the loop runs, i.e. the call does not block it.
        await asyncio.to_thread(servers.events.wait_for, "started", tag)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    servers.events.wait_for("cancelled", tag=tag)


def test_cancel_event_ends_a_blocking_call(servers: TwoServers) -> None:
    from mcp_sync.integrations.llamaindex import llamaindex_tool

    cancel = threading.Event()
    tag = unique("li-event-")
    tool = llamaindex_tool(servers.hub, "mcp__a__sleep", cancel=cancel)
    threading.Thread(target=lambda: (servers.events.wait_for("started", tag=tag), cancel.set())).start()
    with pytest.raises(ToolCallCancelledError):
        tool.call(seconds=30, tag=tag)
    servers.events.wait_for("cancelled", tag=tag)


# -- the adapter on its own ------------------------------------------------------------------------------


def test_schema_reaches_the_model_whole(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.llamaindex import llamaindex_tools

    script = Script([("book_trip", RICH_ARGUMENTS)])
    _, [result] = run(script, llamaindex_tools(rich_hub))
    [spec] = [spec["function"] for spec in script.offered[0]]
    assert spec["name"] == "book_trip"
    assert spec["description"] == "Book a trip for a group."
    assert spec["parameters"] == {
        key: RICH_SCHEMA[key] for key in ("type", "properties", "required", "$defs")
    }
    assert json.loads(result.tool_output.content) == RICH_ARGUMENTS


def test_call_works_without_an_event_loop(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.llamaindex import llamaindex_tool

    output = llamaindex_tool(rich_hub, "book_trip").call(**RICH_ARGUMENTS)
    assert (json.loads(output.content), output.is_error, output.raw_input["kwargs"]) == (
        RICH_ARGUMENTS,
        False,
        RICH_ARGUMENTS,
    )


def test_audio_and_embedded_resources_become_audio_document_and_image_blocks(media_hub: MCPHub) -> None:
    from llama_index.core.base.llms.types import AudioBlock, DocumentBlock, ImageBlock, TextBlock

    from mcp_sync.integrations.llamaindex import llamaindex_tools

    script = Script([("media", {})])
    run(script, llamaindex_tools(media_hub))
    text, audio, document, image = blocks_received(script)
    assert isinstance(text, TextBlock) and text.text == "the recording"
    assert isinstance(audio, AudioBlock) and audio.format == "wav"
    assert audio.resolve_audio().read() == WAV
    assert isinstance(document, DocumentBlock) and document.document_mimetype == "application/pdf"
    assert (document.title, document.resolve_document().read()) == ("file:///report.pdf", PDF)
    assert isinstance(image, ImageBlock) and image.resolve_image().read() == PNG


def test_media_whose_bytes_read_as_base64_text_arrive_unchanged() -> None:
    """LlamaIndex's blocks decode bytes that are valid base64 text (b"AAAA" would become three zero bytes)."""
    from mcp_sync.integrations.llamaindex import llamaindex_tools

    looks_encoded = b"AAAA" * 4
    encoded = base64.b64encode(looks_encoded).decode()
    content = (
        types.ImageContent(type="image", data=encoded, mime_type="image/png"),
        types.AudioContent(type="audio", data=encoded, mime_type="audio/wav"),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="file:///a.bin", blob=encoded, mime_type="application/pdf"
            ),
        ),
    )
    script = Script([("raw", {})])
    with MCPHub([]) as hub:
        hub.registry.register_native("raw", lambda: ToolResult(text="", content=content))
        run(script, llamaindex_tools(hub))
    image, audio, document = blocks_received(script)
    assert image.resolve_image().read() == looks_encoded
    assert image.inline_url() == f"data:image/png;base64,{encoded}"
    assert audio.resolve_audio().read() == looks_encoded
    assert document.resolve_document().read() == looks_encoded


def test_tool_spec_lists_the_allowed_tools_sync_and_async(servers: TwoServers) -> None:
    from mcp_sync.integrations.llamaindex import HubToolSpec

    spec = HubToolSpec(servers.hub, allowed_tools=["echo", "mcp__b__add"])
    names = sorted(tool.metadata.name for tool in spec.to_tool_list())
    assert names == ["mcp__a__echo", "mcp__b__add", "mcp__b__echo"]
    assert sorted(tool.metadata.name for tool in asyncio.run(spec.to_tool_list_async())) == names
    raw = HubToolSpec(
        servers.hub, allowed_tools=["pid"], raw_names=True, include=lambda t: t.server_name == "b"
    )
    _, [result] = run(Script([("pid", {})]), raw.to_tool_list())
    assert result.tool_output.content.isdigit()


def test_tool_spec_refuses_raw_names_that_collide(servers: TwoServers) -> None:
    from mcp_sync.integrations.llamaindex import HubToolSpec

    with pytest.raises(ConfigError, match=r"'echo' \(mcp__a__echo, mcp__b__echo\); 'pid' \("):
        HubToolSpec(servers.hub, allowed_tools=["echo", "pid"], raw_names=True).to_tool_list()


# -- a tool that runs as a task -------------------------------------------------------------------------


def test_async_agent_runs_a_task_tool(research_hub: MCPHub) -> None:
    from mcp_sync.integrations.llamaindex import llamaindex_tools

    tools = llamaindex_tools(research_hub, include=lambda tool: tool.name == RESEARCH_TOOL)
    answer, [result] = run(Script([(RESEARCH_TOOL, {"topic": "tides"})]), tools)
    assert not result.tool_output.is_error
    assert result.tool_output.content.startswith(RESEARCH_REPORT)
    assert answer == "done"


def test_cancelling_the_run_cancels_the_task_on_the_server(research_hub_real_clock: MCPHub) -> None:
    from llama_index.core.agent.workflow import FunctionAgent

    from mcp_sync.integrations.llamaindex import llamaindex_tools

    hub = research_hub_real_clock  # the task still runs when the run is cancelled
    before = task_ids(hub)
    tools = llamaindex_tools(hub, include=lambda tool: tool.name == RESEARCH_TOOL)
    agent = FunctionAgent(llm=Script([(RESEARCH_TOOL, {"topic": "tides"})]).llm, tools=tools)

    async def cancel_once_the_task_exists() -> None:
        task = asyncio.ensure_future(run_agent(agent))
        while not new_task_ids(hub, before):  # each check is a request: no busy loop
            assert not task.done(), task
            await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(cancel_once_the_task_exists(), timeout=60))
    [task_id] = new_task_ids(hub, before)
    handle = hub.task(RESEARCH_SERVER, task_id)
    wait_until(lambda: handle.refresh(timeout=10).status == "cancelled", timeout=20, message="not cancelled")


def test_the_retriever_keeps_working_after_a_pinned_tool_leaves() -> None:
    """The retriever is asked at every step of a run: a pinned tool the server removed is left out."""
    from mcp_sync.integrations.llamaindex import HubToolRetriever

    with kite_hub() as hub:
        retriever = HubToolRetriever(hub, discovery=True, pinned=[KITE])
        assert [tool.metadata.name for tool in retriever.retrieve("x")] == [
            "mcp__search_tools",
            "mcp__call_tool",
            KITE,
        ]
        remove_kite(hub)
        assert [tool.metadata.name for tool in retriever.retrieve("x")] == [
            "mcp__search_tools",
            "mcp__call_tool",
        ]


def test_every_public_class_of_the_adapter_documents_its_public_members() -> None:
    from mcp_sync.integrations import llamaindex

    assert not undocumented_classes(llamaindex), "what help() shows a user of the adapter"
