"""A LlamaIndex `FunctionAgent` calling MCP tools through mcp_sync, from a plain script.

The switch from llama-index-tools-mcp:

    tools = await McpToolSpec(client=BasicMCPClient(...)).to_tool_list_async()   # before
    tools = await HubToolSpec(hub).to_tool_list_async()                         # after
    tools = llamaindex_tools(hub)                                               # or

or, to follow tools that come and go during a run, `FunctionAgent(tool_retriever=HubToolRetriever(hub))`,
as here: the agent is asked for its tools at every step, and gets the hub's current ones. The demo
server's `statistics` tool, turned on in the first turn, is used in the second. A tool's error comes
back as `ToolOutput(is_error=True)`, which the model reads and recovers from; images, audio and files
come as the `ImageBlock`s, `AudioBlock`s and `DocumentBlock`s of the `ToolOutput`. The LLM is scripted
(see `agent_script.py`): no network, no API key.

Run from the repository root, with the virtualenv active (`pip install -e '.[llamaindex]'`):

    python examples/llamaindex_agent.py
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from agent_script import FOLLOW_UP, QUESTION, ToolWatch, next_step, one_line, short_name
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.memory import ChatMemoryBuffer

from mcp_sync import MCPHub
from mcp_sync.integrations.llamaindex import HubToolRetriever

TOOL_TIMEOUT = 10.0  # seconds per call; a call that runs longer is cancelled on the server


def scripted_reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """The LLM's reply, from `agent_script.next_step`: it reads the calls it made and the results."""
    offered = [tool.metadata.name for tool in kwargs.get("tools") or ()]
    called = {
        block.tool_call_id: block.tool_name
        for message in messages
        for block in message.blocks
        if isinstance(block, ToolCallBlock)
    }
    results: dict[str, list[tuple[str, bool]]] = {}
    for message in messages:
        if message.role == MessageRole.TOOL:
            text = message.content or ""
            name = short_name(called[message.additional_kwargs["tool_call_id"]])
            results.setdefault(name, []).append((text, text.startswith("Error")))
    last_question = [m.content for m in messages if m.role == MessageRole.USER][-1]
    step = next_step(offered, results, follow_up=last_question == FOLLOW_UP)
    if isinstance(step, str):
        return ChatMessage(role=MessageRole.ASSISTANT, content=step)
    blocks = [
        ToolCallBlock(tool_call_id=f"call_{len(messages):03d}_{i}", tool_name=name, tool_kwargs=arguments)
        for i, (name, arguments) in enumerate(step)
    ]
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)


async def ask(agent: FunctionAgent, memory: ChatMemoryBuffer, question: str) -> set[str]:
    """One user turn: print each call with its result; return the short names of the tools called."""
    handler = agent.run(user_msg=question, memory=memory)
    # Calls of one step run side by side and may finish in any order: print them in call order.
    results = sorted(
        [event async for event in handler.stream_events() if isinstance(event, ToolCallResult)],
        key=lambda event: event.tool_id,
    )
    for event in results:
        output = event.tool_output
        print(f"  -> {event.tool_name} {event.tool_kwargs}")
        print(f"  <- {'ERROR ' if output.is_error else ''}{one_line(output.content)}")
    print(f"assistant: {await handler}")
    return {short_name(event.tool_name) for event in results}


async def main() -> None:
    watch = ToolWatch()
    with MCPHub.from_file("examples/servers.yaml") as hub:
        hub.on_tool_added(watch)
        agent = FunctionAgent(
            llm=MockFunctionCallingLLM(response_generator=scripted_reply),
            tool_retriever=HubToolRetriever(hub, timeout=TOOL_TIMEOUT),  # the tools as they are at each step
        )
        memory = ChatMemoryBuffer.from_defaults()  # the conversation, kept across turns
        for question in (QUESTION, FOLLOW_UP):
            print(f"user: {question}")
            print(f"  ({len(hub.tools())} tools offered)")
            called = await ask(agent, memory, question)
            # The agent would see the change at a later step anyway; waiting keeps the output stable.
            await asyncio.to_thread(watch.after_turn, called)


if __name__ == "__main__":
    asyncio.run(main())
