"""Resources, prompts, completions and server requests against the official server-everything."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_sync import ElicitationRequest, MCPHub, SamplingRequest, SamplingResponse
from tests.hub_harness import started_hub
from tests.support import ReferenceServers

pytestmark = pytest.mark.node


class Answers:
    """Handlers that record what they were asked."""

    def __init__(self) -> None:
        self.elicitations: list[ElicitationRequest] = []
        self.samplings: list[SamplingRequest] = []

    def elicit(self, request: ElicitationRequest) -> dict[str, Any]:
        self.elicitations.append(request)
        return {"name": "Ada Lovelace", "check": True, "email": "ada@example.com"}

    def sample(self, request: SamplingRequest) -> SamplingResponse:
        self.samplings.append(request)
        return SamplingResponse(text="forty-two", model="reference-test-model")


@pytest.fixture(scope="module")
def everything(reference_servers: ReferenceServers) -> Iterator[tuple[MCPHub, Answers]]:
    answers = Answers()
    config = reference_servers.everything_config("ev", roots=["/srv/project"], log_level="debug")
    with started_hub(config, elicitation=answers.elicit, sampling=answers.sample) as hub:
        yield hub, answers


def test_everything_resources_and_templates_are_listed(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    assert any(resource.uri.startswith("demo://resource/static/document/") for resource in hub.resources())
    templates = {template.uri_template for template in hub.resource_templates()}
    assert "demo://resource/dynamic/text/{resourceId}" in templates


def test_everything_templated_text_and_blob_resources_are_read(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    text = hub.read_resource("demo://resource/dynamic/text/1", server="ev")
    assert text.contents[0].text and text.contents[0].mime_type == "text/plain"
    blob = hub.read_resource("demo://resource/dynamic/blob/2", server="ev")
    assert blob.contents[0].blob is not None and blob.contents[0].text is None


def test_everything_prompt_with_arguments(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    prompt = next(p for p in hub.prompts() if p.raw_name == "args-prompt")
    assert prompt.name == "mcp__ev__args-prompt"
    assert {(a.name, a.required) for a in prompt.arguments} == {("city", True), ("state", False)}
    result = hub.get_prompt(prompt.name, {"city": "Paris", "state": "Texas"})
    assert result.messages[0].role == "user" and "Paris, Texas" in result.messages[0].text


def test_everything_completion_uses_the_context(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    assert hub.complete("mcp__ev__completable-prompt", "department", "Eng").values == ["Engineering"]
    names = hub.complete("mcp__ev__completable-prompt", "name", "", context={"department": "Sales"})
    assert names.values == ["David", "Eve", "Frank"]


def test_everything_elicitation_is_answered_by_the_handler(everything: tuple[MCPHub, Answers]) -> None:
    hub, answers = everything
    result = hub.call_tool("mcp__ev__trigger-elicitation-request")
    assert "Ada Lovelace" in result.text
    assert "email" in answers.elicitations[-1].requested_schema["properties"]


def test_everything_sampling_is_answered_by_the_handler(everything: tuple[MCPHub, Answers]) -> None:
    hub, answers = everything
    result = hub.call_tool("mcp__ev__trigger-sampling-request", {"prompt": "the answer?"})
    assert "forty-two" in result.text
    assert answers.samplings[-1].system_prompt == "You are a helpful test server."


def test_everything_lists_the_configured_roots(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    assert "file:///srv/project" in hub.call_tool("mcp__ev__get-roots-list").text


def test_everything_log_messages_reach_python_logging(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    logged = threading.Event()

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "level message" in record.getMessage() or "-level message" in record.getMessage():
                logged.set()

    server_logger = logging.getLogger("mcp_sync.server.ev")
    handler, level = Catch(), server_logger.level
    server_logger.addHandler(handler)
    server_logger.setLevel(logging.DEBUG)
    try:
        hub.call_tool("mcp__ev__toggle-simulated-logging")
        assert logged.wait(15)
    finally:
        hub.call_tool("mcp__ev__toggle-simulated-logging")
        server_logger.removeHandler(handler)
        server_logger.setLevel(level)


def test_everything_subscription_updates_reach_the_callback(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    updated = threading.Event()
    uri = "demo://resource/dynamic/text/1"
    unsubscribe = hub.subscribe_resource(uri, lambda changed: updated.set(), server="ev")
    try:
        hub.call_tool("mcp__ev__toggle-subscriber-updates")
        assert updated.wait(15)
    finally:
        hub.call_tool("mcp__ev__toggle-subscriber-updates")
        unsubscribe()
