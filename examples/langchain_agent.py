"""A LangChain agent (`create_agent`, on LangGraph) calling MCP tools through mcp_sync, from sync code.

The switch from langchain-mcp-adapters, whose tools only run async (`tool.invoke` raises
NotImplementedError):

    tools = await MultiServerMCPClient({...}).get_tools()      # before
    tools = langchain_tools(hub)                               # after: invoke and ainvoke both work

(`raw_names=True` gives the servers' own names, as there.) Images and files a tool returns reach the
model as standard content blocks; the artifact is `{"structured_content": ..., "content": [...]}`.

The agent is rebuilt with `langchain_tools(hub)` for each user turn, so it is offered the tools the
servers have now: the demo server's `statistics` tool, turned on in the first turn, is used in the
second. A tool's error reaches the model as an error `ToolMessage`, which it reads and recovers from.
The chat model is scripted (see `agent_script.py`): no network, no API key.

Run from the repository root, with the virtualenv active (`pip install -e '.[langchain]'`):

    python examples/langchain_agent.py
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_script import FOLLOW_UP, QUESTION, ToolWatch, next_step, one_line, short_name
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from mcp_sync import MCPHub
from mcp_sync.integrations.langchain import langchain_tools

TOOL_TIMEOUT = 10.0  # seconds per call; a call that runs longer is cancelled on the server


class ScriptedChatModel(BaseChatModel):
    """A LangChain chat model whose replies come from `agent_script.next_step`."""

    tool_names: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        names = [convert_to_openai_tool(tool)["function"]["name"] for tool in tools]
        return self.model_copy(update={"tool_names": names})

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        called = {c["id"]: c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
        results: dict[str, list[tuple[str, bool]]] = {}
        for message in messages:
            if isinstance(message, ToolMessage):
                entry = (str(message.content), message.status == "error")
                results.setdefault(short_name(called[message.tool_call_id]), []).append(entry)
        last_question = [m.content for m in messages if isinstance(m, HumanMessage)][-1]
        step = next_step(self.tool_names, results, follow_up=last_question == FOLLOW_UP)
        if isinstance(step, str):
            reply = AIMessage(content=step)
        else:
            calls = [
                {"name": name, "args": args, "id": f"call_{len(messages)}_{i}", "type": "tool_call"}
                for i, (name, args) in enumerate(step)
            ]
            reply = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @property
    def _llm_type(self) -> str:
        return "scripted"


def show(messages: Sequence[BaseMessage]) -> None:
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                print(f"  -> {call['name']} {call['args']}")
        elif isinstance(message, ToolMessage):
            print(f"  <- {'ERROR ' if message.status == 'error' else ''}{one_line(str(message.content))}")
        elif isinstance(message, AIMessage):
            print(f"assistant: {message.content}")


def main() -> None:
    model = ScriptedChatModel()
    watch = ToolWatch()
    with MCPHub.from_file("examples/servers.yaml") as hub:
        hub.on_tool_added(watch)
        messages: list[BaseMessage] = []
        for question in (QUESTION, FOLLOW_UP):
            print(f"user: {question}")
            tools = langchain_tools(hub, timeout=TOOL_TIMEOUT)  # the tools as they are now
            print(f"  ({len(tools)} tools offered)")
            state = create_agent(model, tools).invoke({"messages": [*messages, HumanMessage(question)]})
            turn = state["messages"][len(messages) + 1 :]  # this turn's replies and tool results
            show(turn)
            messages = state["messages"]
            called = {short_name(c["name"]) for m in turn if isinstance(m, AIMessage) for c in m.tool_calls}
            watch.after_turn(called)  # the next turn's tools then include the change


if __name__ == "__main__":
    main()
