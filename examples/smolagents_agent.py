"""A smolagents `ToolCallingAgent` calling MCP tools through mcp_sync.

The switch from `ToolCollection.from_mcp` (which goes through mcpadapt: no import with `mcp` 2.x, no
per-call timeout, no cancellation on the server, and two servers' `echo` both named `echo`):

    with ToolCollection.from_mcp(params, trust_remote_code=True) as tool_collection:   # before
    with HubToolCollection(hub) as tool_collection:                                     # after
    with HubToolCollection.from_config("servers.yaml") as tool_collection:    # or, with a hub of its own

    with MCPClient(server_parameters, structured_output=False) as tools:      # before
    with HubMCPClient("servers.yaml", raw_names=True) as tools:               # after

`tool_collection.tools` is the hub's tool list as of each access. The agent keeps the tools it was
built with, so the collection updates it: as a step callback during a run, and with
`update_agent(agent)` before the next one. As a step callback it also shows the model the images its
tools return (smolagents shows a model images only as a step's `observations_images`). The demo
server's `statistics` tool, turned on in the first turn, is used in the second. A tool's error is
raised, and the agent shows it to the model, which recovers. The model is scripted (see
`agent_script.py`): no network, no API key.

Run from the repository root, with the virtualenv active (`pip install -e '.[smolagents]'`):

    python examples/smolagents_agent.py
"""

from __future__ import annotations

import itertools
from typing import Any

from agent_script import FOLLOW_UP, QUESTION, ToolWatch, next_step, one_line, short_name
from smolagents import LogLevel, Model, ToolCallingAgent
from smolagents.memory import ActionStep
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole

from mcp_sync import MCPHub
from mcp_sync.integrations.smolagents import HubToolCollection

TOOL_TIMEOUT = 10.0  # seconds per call; a call that runs longer is cancelled on the server


class ScriptedModel(Model):
    """A smolagents model whose replies come from `agent_script.next_step`; it reads the agent's
    transcript as a model does: the calls it made, then the observations or the error that followed."""

    def __init__(self) -> None:
        super().__init__(model_id="scripted")
        self._ids = itertools.count(1)
        self._emitted: list[list[str]] = []  # the tools called by each reply, in order

    def generate(
        self, messages: list[ChatMessage], tools_to_call_from: Any = None, **kwargs: Any
    ) -> ChatMessage:
        offered = [tool.name for tool in tools_to_call_from or []]
        results: dict[str, list[tuple[str, bool]]] = {}
        replies = iter(self._emitted)
        called: list[str] = []
        follow_up = False
        for message in messages:
            text = "".join(part.get("text", "") for part in message.content or []) if message.content else ""
            if message.role == MessageRole.USER and text.startswith("New task:"):
                follow_up = FOLLOW_UP in text
            elif message.role == MessageRole.ASSISTANT:  # one per reply of ours
                called = next(replies, [])
            elif message.role == MessageRole.TOOL_RESPONSE and "Observation:\n" in text:
                observed = text.split("Observation:\n", 1)[1]
                # The observations of several calls are joined with newlines, in call order.
                lines = [observed] if len(called) == 1 else observed.split("\n")
                for name, line in zip(called, lines, strict=False):
                    results.setdefault(short_name(name), []).append((line, False))
            elif message.role == MessageRole.TOOL_RESPONSE and "Error:\n" in text:
                results.setdefault(short_name(called[0]), []).append((text.split("Error:\n", 1)[1], True))
        step = next_step(offered, results, follow_up)
        calls = [("final_answer", {"answer": step})] if isinstance(step, str) else step
        self._emitted.append([name for name, _ in calls])
        tool_calls = [
            ChatMessageToolCall(
                id=f"call_{next(self._ids):03d}",
                type="function",
                function=ChatMessageToolCallFunction(name=name, arguments=arguments),
            )
            for name, arguments in calls
        ]
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=tool_calls)


def show(steps: list[Any]) -> None:
    for step in steps:
        if not isinstance(step, ActionStep) or step.model_output_message is None:
            continue
        for call in step.model_output_message.tool_calls or []:
            if call.function.name != "final_answer":
                print(f"  -> {call.function.name} {call.function.arguments}")
        if step.error is not None:  # "Error executing tool 'name' with arguments {...}: Type: message"
            print(f"  <- ERROR {one_line(str(step.error).splitlines()[0].split('}: ', 1)[-1])}")
        elif not step.is_final_answer:
            observed = step.observations or ""
            for line in observed.splitlines() if len(step.tool_calls or ()) > 1 else [observed]:
                print(f"  <- {one_line(line)}")


def main() -> None:
    watch = ToolWatch()
    with (
        MCPHub.from_file("examples/servers.yaml") as hub,
        HubToolCollection(hub, timeout=TOOL_TIMEOUT) as tools,
    ):
        hub.on_tool_added(watch)
        agent = ToolCallingAgent(
            tools=tools.tools,
            model=ScriptedModel(),
            step_callbacks=[tools],  # after each step, offer the tools the servers have now
            verbosity_level=LogLevel.OFF,
            max_steps=8,
        )
        for turn, question in enumerate((QUESTION, FOLLOW_UP)):
            print(f"user: {question}")
            tools.update_agent(agent)  # the tools as they are now
            print(f"  ({len(agent.tools) - 1} tools offered, and final_answer)")
            seen = len(agent.memory.steps)
            answer = agent.run(question, reset=turn == 0)
            show(agent.memory.steps[seen:])
            print(f"assistant: {answer}")
            called = {
                short_name(call.name)
                for step in agent.memory.steps[seen:]
                if isinstance(step, ActionStep)
                for call in step.tool_calls or []
            }
            watch.after_turn(called)  # the next turn's tools then include the change


if __name__ == "__main__":
    main()
