"""The scripted chat generator of tests/integrations/test_haystack.py. It is a Haystack `@component`, so
it lives apart: the tests import it when they run, not when they are collected."""

from __future__ import annotations

from typing import Any

from haystack import component
from haystack.dataclasses import ChatMessage, ChatRole, ToolCall
from haystack.tools import Tool as HaystackTool

from tests.integrations.support import Step


@component
class ScriptedChatGenerator:
    """A chat generator that answers turn n with step n of its script: tool calls, or a final text.

    A step may be a function of the tool names it is offered. `offered` records the tools of each turn.
    """

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.offered: list[list[HaystackTool]] = []
        self.received: list[list[ChatMessage]] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], tools: Any = None, **kwargs: Any) -> dict[str, Any]:
        offered = list(tools or [])
        self.offered.append(offered)
        self.received.append(list(messages))
        last_user = max(i for i, message in enumerate(messages) if message.is_from(ChatRole.USER))
        turn = sum(message.is_from(ChatRole.ASSISTANT) for message in messages[last_user:])
        step = self.steps[turn] if turn < len(self.steps) else "done"
        if callable(step):
            step = step([tool.name for tool in offered])
        if isinstance(step, str):
            return {"replies": [ChatMessage.from_assistant(step)]}
        calls = [
            ToolCall(tool_name=name, arguments=args, id=f"call_{turn}_{i}")
            for i, (name, args) in enumerate(step)
        ]
        return {"replies": [ChatMessage.from_assistant(tool_calls=calls)]}
