"""A Haystack `Agent` calling MCP tools through mcp_sync, from a plain script.

The switch from mcp-haystack, whose `MCPToolset` runs an event loop of its own and loads the tools once:

    tools = MCPToolset(server_info=StdioServerInfo(command="python", args=[...]))   # before
    tools = HubToolset(hub)                                                         # after

An `Agent` reads its tools at every step, and `HubToolset` is the hub's registry as it is then: the demo
server's `statistics` tool, turned on in the first turn, is offered from the next step on and used in
the second turn. A tool's error reaches the model as an error tool message, which it reads and recovers
from. The chat generator is scripted (see `agent_script.py`): no network, no API key.

Run from the repository root, with the virtualenv active (`pip install -e '.[haystack]'`):

    python examples/haystack_agent.py
"""

from __future__ import annotations

import itertools
from typing import Any

from agent_script import FOLLOW_UP, QUESTION, Results, ToolWatch, next_step, one_line, short_name
from haystack import component
from haystack.components.agents import Agent
from haystack.dataclasses import ChatMessage, ChatRole, ToolCall

from mcp_sync import MCPHub
from mcp_sync.integrations.haystack import HubToolset

TOOL_TIMEOUT = 10.0  # seconds per call; a call that runs longer is cancelled on the server


@component
class ScriptedChatGenerator:
    """A Haystack chat generator whose replies come from `agent_script.next_step`: it reads the calls it
    made and their results, as a chat model does."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], tools: Any = None, **kwargs: Any) -> dict[str, Any]:
        offered = [tool.name for tool in tools or []]
        results: Results = {}
        for message in messages:
            for result in message.tool_call_results:
                text = result.result if isinstance(result.result, str) else str(result.result)
                results.setdefault(short_name(result.origin.tool_name), []).append((text, result.error))
        last_question = [m.text for m in messages if m.is_from(ChatRole.USER)][-1]
        step = next_step(offered, results, follow_up=last_question == FOLLOW_UP)
        if isinstance(step, str):
            return {"replies": [ChatMessage.from_assistant(step)]}
        calls = [
            ToolCall(tool_name=name, arguments=args, id=f"call_{next(self._ids)}") for name, args in step
        ]
        return {"replies": [ChatMessage.from_assistant(tool_calls=calls)]}


def show(messages: list[ChatMessage]) -> None:
    for message in messages:
        for call in message.tool_calls:
            print(f"  -> {call.tool_name} {call.arguments}")
        for result in message.tool_call_results:
            print(f"  <- {'ERROR ' if result.error else ''}{one_line(str(result.result))}")
        if message.is_from(ChatRole.ASSISTANT) and not message.tool_calls:
            print(f"assistant: {message.text}")


def main() -> None:
    watch = ToolWatch()
    with MCPHub.from_file("examples/servers.yaml") as hub:
        hub.on_tool_added(watch)
        tools = HubToolset(hub, timeout=TOOL_TIMEOUT)
        agent = Agent(chat_generator=ScriptedChatGenerator(), tools=tools)
        messages: list[ChatMessage] = []
        for question in (QUESTION, FOLLOW_UP):
            print(f"user: {question}")
            print(f"  ({len(tools)} tools offered)")
            messages = agent.run(messages=[*messages, ChatMessage.from_user(question)])["messages"]
            turn = messages[[i for i, m in enumerate(messages) if m.is_from(ChatRole.USER)][-1] + 1 :]
            show(turn)
            called = {short_name(call.tool_name) for message in turn for call in message.tool_calls}
            watch.after_turn(called)  # wait (bounded) for the change, to report it here


if __name__ == "__main__":
    main()
