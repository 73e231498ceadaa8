"""The scripted chat model of tests/integrations/test_langchain.py. It subclasses LangChain's
`BaseChatModel`, so it lives apart: the tests import it when they run, not when they are collected."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers turn n with step n of its script: tool calls, or a final text.

    A step may be a function of the tool names it is offered. `offered` records each `bind_tools`,
    `received` the messages of each turn.
    """

    steps: list[Any]
    offered: list[list[dict[str, Any]]] = Field(default_factory=list)
    received: list[list[BaseMessage]] = Field(default_factory=list)
    tool_names: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        specs = [convert_to_openai_tool(tool) for tool in tools]
        self.offered.append(specs)
        return self.model_copy(update={"tool_names": [spec["function"]["name"] for spec in specs]})

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.received.append(list(messages))
        # Turns count from the latest user message: a conversation may carry earlier turns.
        last_user = max(i for i, message in enumerate(messages) if isinstance(message, HumanMessage))
        turn = sum(isinstance(message, AIMessage) for message in messages[last_user:])
        step = self.steps[turn] if turn < len(self.steps) else "done"
        if callable(step):
            step = step(self.tool_names)
        if isinstance(step, str):
            message = AIMessage(content=step)
        else:
            message = AIMessage(
                content="",
                tool_calls=[
                    {"name": name, "args": args, "id": f"call_{turn}_{i}", "type": "tool_call"}
                    for i, (name, args) in enumerate(step)
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def _llm_type(self) -> str:
        return "scripted"
