"""The ready-made handlers and the agent-loop helpers for resources and prompts, without a server
where none is needed, and the read tool against a fixture server."""

from __future__ import annotations

import gc
import warnings
from types import SimpleNamespace
from typing import Any

from mcp_sync import (
    ElicitationRequest,
    MCPHub,
    ResourceContent,
    ResourceResult,
    SamplingRequest,
    ToolRegistry,
    openai_sampling,
    terminal_elicitation,
)
from tests.hub_harness import started_hub
from tests.support import stdio_config, wait_until

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "colour": {"type": "string", "enum": ["red", "green"], "default": "green"},
        "email": {"type": "string", "format": "email"},
        "subscribe": {"type": "boolean"},
    },
    "required": ["name", "age"],
}


def scripted(*answers: str) -> tuple[Any, list[str]]:
    prompts: list[str] = []
    queue = list(answers)

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        if not queue:
            raise EOFError
        return queue.pop(0)

    return answer, prompts


def test_terminal_elicitation_asks_each_field_and_validates_the_answers() -> None:
    answer, prompts = scripted("Ada", "two hundred", "36", "", "not-an-email", "ada@example.com", "y")
    response = terminal_elicitation(answer)(ElicitationRequest("srv", "Who are you?", SCHEMA))
    assert response.action == "accept"
    assert response.content == {
        "name": "Ada",
        "age": 36,
        "colour": "green",
        "email": "ada@example.com",
        "subscribe": True,
    }
    assert prompts[0].startswith("[srv] Who are you?\nName")
    assert prompts[2].startswith("enter a whole number")


def test_terminal_elicitation_accepts_a_choice_by_number() -> None:
    # Choice 1 is "red": not the field's default ("green"), which a blank answer would give.
    answer, prompts = scripted("Ada", "1", "1", "", "")
    response = terminal_elicitation(answer)(ElicitationRequest("srv", "?", SCHEMA))
    assert response.action == "accept"
    assert response.content is not None and response.content["colour"] == "red"
    assert len(prompts) == 5  # each answer accepted the first time


def test_terminal_elicitation_decline_and_end_of_input() -> None:
    declined = terminal_elicitation(scripted("!decline")[0])(ElicitationRequest("srv", "?", SCHEMA))
    ended = terminal_elicitation(scripted()[0])(ElicitationRequest("srv", "?", SCHEMA))
    assert (declined.action, ended.action) == ("decline", "cancel")


def test_openai_sampling_sends_the_messages_and_maps_the_reply() -> None:
    calls: list[dict[str, Any]] = []

    def create(**kwargs: Any) -> Any:
        calls.append(kwargs)
        message = SimpleNamespace(content="pong")
        return SimpleNamespace(
            model="gpt-test", choices=[SimpleNamespace(message=message, finish_reason="length")]
        )

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    request = SamplingRequest("srv", ({"role": "user", "content": "ping"},), 20, system_prompt="Be brief.")
    reply = openai_sampling(client, "gpt-test", temperature=0)(request)
    assert (reply.text, reply.model, reply.stop_reason) == ("pong", "gpt-test", "maxTokens")
    assert calls == [
        {
            "model": "gpt-test",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "ping"}],
            "max_tokens": 20,
            "temperature": 0,
        }
    ]


def test_resource_contents_as_chat_messages_describe_binary_parts() -> None:
    result = ResourceResult(
        "x://a",
        "srv",
        (
            ResourceContent("x://a", "text/plain", text="hello"),
            ResourceContent("x://b", "image/png", blob=b"12"),
        ),
    )
    assert result.as_chat_messages() == [
        {"role": "user", "content": "Resource x://a:\nhello"},
        {"role": "user", "content": "Resource x://b:\n[binary resource x://b: image/png, 2 bytes]"},
    ]


def test_resource_tools_offer_each_servers_resources_to_the_model() -> None:
    with started_hub(stdio_config("fx"), resource_tools=True) as hub:
        spec = next(s for s in hub.function_specs() if s["function"]["name"] == "mcp__fx__read_resource")
        assert "fixture://text/readme" in spec["function"]["description"]
        result = hub.call_tool_safe("mcp__fx__read_resource", '{"uri": "fixture://items/fig"}')
        assert result.text == "item fig"
        blob = hub.call_tool_safe("mcp__fx__read_resource", {"uri": "fixture://blob/pixel"})
        assert blob.text == "[binary: image/png, 70 bytes]"


def test_a_dropped_hubs_resource_tool_leaves_a_shared_registry_with_its_server() -> None:
    registry = ToolRegistry()
    with started_hub(stdio_config("two"), registry=registry):
        hub = MCPHub([stdio_config("one")], registry=registry, resource_tools=True)
        hub.start()
        wait_until(lambda: "mcp__one__read_resource" in registry)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)  # dropped unclosed: the scenario
            del hub
            gc.collect()
        wait_until(lambda: not [tool.name for tool in registry if tool.name.startswith("mcp__one__")], 20)


def test_resource_tools_are_off_by_default() -> None:
    with started_hub(stdio_config("fx")) as hub:
        assert "mcp__fx__read_resource" not in hub.registry
