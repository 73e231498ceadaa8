"""The scripted models of tests/integrations/test_smolagents.py. They subclass smolagents' `Model`, so
they live apart: the tests import them when they run, not when they are collected."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smolagents import Model
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    get_tool_json_schema,
)

from tests.integrations.support import Step


class ScriptedModel(Model):
    """Answers step n of a run with step n of its script: tool calls, or a final answer (a string).

    A step may be a function of the tool names it is offered. `offered` records the specs of each step,
    `received` its messages.
    """

    def __init__(self, *steps: Step) -> None:
        super().__init__(model_id="scripted")
        self.steps = list(steps)
        self.offered: list[list[dict[str, Any]]] = []
        self.received: list[list[ChatMessage]] = []

    def generate(self, messages: Any, tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:
        self.received.append(list(messages))
        specs = [get_tool_json_schema(tool) for tool in tools_to_call_from or []]
        turn = len(self.offered)
        self.offered.append(specs)
        step = self.steps[turn] if turn < len(self.steps) else "done"
        if callable(step):
            step = step([spec["function"]["name"] for spec in specs])
        if isinstance(step, str):
            step = [("final_answer", {"answer": step})]
        calls = [
            ChatMessageToolCall(
                id=f"call_{turn}_{i}",
                type="function",
                function=ChatMessageToolCallFunction(name=name, arguments=arguments),
            )
            for i, (name, arguments) in enumerate(step)
        ]
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=calls)


class ScriptedCoder(Model):
    """A code-writing model for `CodeAgent`: step n of a run answers with the code of step n.

    A step may be a function of the system prompt the model is shown. `prompts` records each step's.
    """

    def __init__(self, *steps: str | Callable[[str], str]) -> None:
        super().__init__(model_id="scripted-coder")
        self.steps = list(steps)
        self.prompts: list[str] = []

    def generate(self, messages: Any, stop_sequences: Any = None, **kwargs: Any) -> ChatMessage:
        first = messages[0].content
        prompt = first if isinstance(first, str) else "".join(part.get("text", "") for part in first)
        self.prompts.append(prompt)
        turn = len(self.prompts) - 1
        step = self.steps[turn] if turn < len(self.steps) else 'final_answer("out of script")'
        code = step(prompt) if callable(step) else step
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"Thought: next.\n<code>\n{code}\n</code>")
