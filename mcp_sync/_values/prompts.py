"""Prompts as the host sees them: listed prompts with their arguments, and a prompt's messages.

A prompt's public name follows the tool rule (`public_tool_name(server, raw)`), so a model
or a host can name prompts of many servers in one namespace. Plain frozen data; the
conversions from the SDK's models live here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from .naming import public_tool_name
from .resources import ResourceContent, content_from

__all__ = [
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptResult",
    "prompt_from",
    "prompt_result_from",
]


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument a prompt takes (prompt arguments are strings)."""

    name: str
    description: str | None = None
    required: bool = False
    title: str | None = None


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt a server lists, under its public name `mcp__<server>__<prompt>`."""

    name: str
    server_name: str
    raw_name: str
    description: str | None = None
    title: str | None = None
    arguments: tuple[PromptArgument, ...] = ()

    @property
    def required_arguments(self) -> list[str]:
        """The names of the arguments the prompt cannot do without."""
        return [argument.name for argument in self.arguments if argument.required]


@dataclass(frozen=True, slots=True)
class PromptMessage:
    """One message of a prompt: its role and its text; the parts that are not text stay in `content`."""

    role: str
    text: str
    content: tuple[Any, ...] = field(default=(), repr=False, compare=False, hash=False)
    """The message's content blocks as the server sent them (text, image, audio, resource, link)."""

    @property
    def resources(self) -> list[ResourceContent]:
        """Embedded resources of this message, text or binary."""
        return [
            content_from(block.resource)
            for block in self.content
            if isinstance(block, types.EmbeddedResource)
        ]


@dataclass(frozen=True, slots=True)
class PromptResult:
    """What `get_prompt` returned: a description and the messages, in order."""

    name: str
    description: str | None
    messages: tuple[PromptMessage, ...]
    raw: types.GetPromptResult | None = field(default=None, repr=False, compare=False, hash=False)

    def as_chat_messages(self) -> list[dict[str, Any]]:
        """The messages as OpenAI-style chat messages (`{"role", "content"}`), text only."""
        return [{"role": message.role, "content": message.text} for message in self.messages]


def prompt_from(server_name: str, prompt: types.Prompt) -> Prompt:
    return Prompt(
        name=public_tool_name(server_name, prompt.name),
        server_name=server_name,
        raw_name=prompt.name,
        description=prompt.description,
        title=prompt.title,
        arguments=tuple(
            PromptArgument(
                name=argument.name,
                description=argument.description,
                required=bool(argument.required),
                title=argument.title,
            )
            for argument in prompt.arguments or ()
        ),
    )


def _block_text(block: Any) -> str | None:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
        return block.resource.text
    if isinstance(block, types.ResourceLink):
        return f"[resource link: {block.name} {block.uri}]"
    return None


def prompt_result_from(public_name: str, result: types.GetPromptResult) -> PromptResult:
    messages = []
    for message in result.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        texts = [text for text in map(_block_text, blocks) if text is not None]
        messages.append(PromptMessage(role=message.role, text="\n".join(texts), content=tuple(blocks)))
    return PromptResult(
        name=public_name, description=result.description, messages=tuple(messages), raw=result
    )
