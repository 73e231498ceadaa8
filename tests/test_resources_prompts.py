"""Resources, templates, prompts and completions of fixture servers, on both transports and both eras."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import (
    AmbiguousResourceError,
    MCPHub,
    Prompt,
    PromptNotFoundError,
    Resource,
    ResourceNotFoundError,
    ToolCallCancelledError,
    UnsupportedFeatureError,
)
from tests.hub_harness import TRANSPORTS_AND_ERAS, fixture_server, started_hub
from tests.support import EventLog, stdio_config, wait_until


class Recorder:
    """Listener events, waited for instead of slept on."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self._condition = threading.Condition()

    def __call__(self, kind: str) -> Any:
        def record(item: Resource | Prompt | str) -> None:
            key = item if isinstance(item, str) else getattr(item, "uri", None) or getattr(item, "name", "")
            with self._condition:
                self.events.append((kind, key))
                self._condition.notify_all()

        return record

    def wait_for(self, event: tuple[str, str], timeout: float = 10.0) -> None:
        with self._condition:
            found = self._condition.wait_for(lambda: event in self.events, timeout)
        assert found, f"no {event} within {timeout}s; saw {self.events}"


@pytest.fixture(
    scope="module", params=[p.values for p in TRANSPORTS_AND_ERAS], ids=[p.id for p in TRANSPORTS_AND_ERAS]
)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    transport, era = request.param
    events = EventLog(tmp_path_factory.mktemp("events") / "events.jsonl")
    with fixture_server("fx", transport, era, events=events) as served, started_hub(served.config) as hub:
        yield hub, events


def test_resources_and_templates_are_listed_with_their_server(served: Any) -> None:
    hub, _ = served
    assert {(r.uri, r.server_name, r.mime_type) for r in hub.resources()} == {
        ("fixture://text/readme", "fx", "text/plain"),
        ("fixture://blob/pixel", "fx", "image/png"),
    }
    templates = {t.uri_template: t for t in hub.resource_templates()}
    assert {"fixture://items/{item}", "fixture://slow/{tag}"} <= set(templates)
    assert templates["fixture://items/{item}"].server_name == "fx"


def test_read_resource_returns_text_and_binary_with_mime_types(served: Any) -> None:
    hub, _ = served
    text = hub.read_resource("fixture://text/readme")
    assert text.text == "fixture readme"
    assert text.contents[0].mime_type == "text/plain"
    blob = hub.read_resource("fixture://blob/pixel").contents[0]
    assert blob.mime_type == "image/png"
    assert blob.blob is not None and blob.blob.startswith(b"\x89PNG")


def test_templated_uri_is_read_when_the_server_is_named(served: Any) -> None:
    hub, _ = served
    with pytest.raises(ResourceNotFoundError, match="server="):
        hub.read_resource("fixture://items/pear")
    assert hub.read_resource("fixture://items/pear", server="fx").text == "item pear"


def test_cancelled_read_is_cancelled_on_the_server(served: Any) -> None:
    hub, events = served
    cancel = threading.Event()
    tag = f"cancel-{id(cancel)}"
    threading.Thread(target=lambda: (events.wait_for("started", tag=tag), cancel.set()), daemon=True).start()
    with pytest.raises(ToolCallCancelledError):
        hub.read_resource(f"fixture://slow/{tag}", server="fx", cancel=cancel)
    events.wait_for("cancelled", tag=tag)


def test_resource_callbacks_follow_a_resource_list_change(served: Any) -> None:
    hub, _ = served
    recorder = Recorder()
    unsubscribe = [hub.on_resource_added(recorder("added")), hub.on_resource_removed(recorder("removed"))]
    hub.call_tool("mcp__fx__add_resource", {"name": "late", "text": "late text"})
    recorder.wait_for(("added", "fixture://dynamic/late"))
    assert hub.read_resource("fixture://dynamic/late").text == "late text"
    hub.call_tool("mcp__fx__remove_resource", {"name": "late"})
    recorder.wait_for(("removed", "fixture://dynamic/late"))
    for stop in unsubscribe:
        stop()
    assert recorder.events == [("added", "fixture://dynamic/late"), ("removed", "fixture://dynamic/late")]


def test_subscribed_resource_update_reaches_the_callback(served: Any) -> None:
    hub, _ = served
    recorder = Recorder()
    unsubscribe = hub.subscribe_resource("fixture://text/readme", recorder("updated"))
    try:
        hub.call_tool("mcp__fx__announce_update", {"uri": "fixture://text/readme"})
        recorder.wait_for(("updated", "fixture://text/readme"))
    finally:
        unsubscribe()


def test_prompts_are_namespaced_and_describe_their_arguments(served: Any) -> None:
    hub, _ = served
    prompts = {prompt.name: prompt for prompt in hub.prompts()}
    greet = prompts["mcp__fx__greet"]
    assert (greet.server_name, greet.raw_name) == ("fx", "greet")
    assert [(a.name, a.required) for a in greet.arguments] == [("name", True), ("style", False)]


def test_get_prompt_returns_roles_text_and_embedded_resources(served: Any) -> None:
    hub, _ = served
    assert hub.get_prompt("mcp__fx__greet", {"name": "Ada"}).messages[0].text == "Hello, Ada! (plain)"
    review = hub.get_prompt("mcp__fx__review", {"code": "x = 1"})
    assert [message.role for message in review.messages] == ["user", "user", "assistant"]
    assert review.messages[1].resources[0].text == "fixture readme"
    assert review.as_chat_messages()[2] == {"role": "assistant", "content": "I will review it."}


def test_unknown_prompt_is_a_clear_error(served: Any) -> None:
    hub, _ = served
    with pytest.raises(PromptNotFoundError, match="mcp__fx__nope"):
        hub.get_prompt("mcp__fx__nope")


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("mcp__fx__gret", "did you mean mcp__fx__greet"),
        ("review", "did you mean mcp__fx__review? (prompts are called by their public names)"),
    ],
)
def test_a_misspelt_prompt_gets_a_did_you_mean(served: Any, typed: str, suggested: str) -> None:
    hub, _ = served
    with pytest.raises(PromptNotFoundError) as info:
        hub.get_prompt(typed)
    assert str(info.value).startswith(f"unknown prompt {typed!r}: {suggested}")


def test_prompt_callbacks_follow_a_prompt_list_change(served: Any) -> None:
    hub, _ = served
    recorder = Recorder()
    hub.on_prompt_added(recorder("added"))
    hub.on_prompt_removed(recorder("removed"))
    hub.call_tool("mcp__fx__add_prompt", {"name": "later"})
    recorder.wait_for(("added", "mcp__fx__later"))
    assert hub.get_prompt("mcp__fx__later").messages[0].text == "prompt later"
    hub.call_tool("mcp__fx__remove_prompt", {"name": "later"})
    recorder.wait_for(("removed", "mcp__fx__later"))


def test_completion_of_a_prompt_argument_and_a_template_variable(served: Any) -> None:
    hub, _ = served
    assert hub.complete("mcp__fx__greet", "style", "p").values == ["plain", "pirate"]
    assert hub.complete("fixture://items/{item}", "item", "ap").values == ["apple", "apricot"]


def test_uri_listed_by_two_servers_needs_the_server_named() -> None:
    with started_hub(stdio_config("one"), stdio_config("two")) as hub:
        with pytest.raises(AmbiguousResourceError, match="'one', 'two'"):
            hub.read_resource("fixture://text/readme")
        assert hub.read_resource("fixture://text/readme", server="two").server_name == "two"


def test_paged_resource_and_prompt_listings_are_walked_to_the_end() -> None:
    with started_hub(stdio_config("paged", "--resources", "25", "--page-size", "4")) as hub:
        assert len(hub.resources()) == 27
        assert len(hub.prompts()) == 2


def test_server_without_subscriptions_refuses_a_subscription_clearly() -> None:
    with (
        started_hub(stdio_config("nosub", "--no-subscribe")) as hub,
        pytest.raises(UnsupportedFeatureError, match="subscriptions"),
    ):
        hub.subscribe_resource("fixture://text/readme", print)


def test_resources_and_prompts_false_bridges_neither() -> None:
    with started_hub(stdio_config("bare", resources=False, prompts=False)) as hub:
        assert hub.resources() == [] and hub.prompts() == []
        with pytest.raises(UnsupportedFeatureError, match="resources: false"):
            hub.read_resource("fixture://text/readme", server="bare")


def test_a_servers_resources_and_prompts_go_when_it_disconnects() -> None:
    hub = MCPHub([stdio_config("gone")])
    with hub:
        recorder = Recorder()
        hub.on_resource_removed(recorder("removed"))
        hub.on_prompt_removed(recorder("removed"))
        hub.call_tool("mcp__gone__exit_later", {"delay": 0.1})
        recorder.wait_for(("removed", "fixture://text/readme"))
        recorder.wait_for(("removed", "mcp__gone__greet"))
        assert hub.resources() == [] and hub.prompts() == []


# -- each kind of entry is listed and kept on its own ----------------------------------------------------


@pytest.mark.parametrize(("transport", "era"), TRANSPORTS_AND_ERAS)
def test_a_server_that_has_no_template_listing_keeps_its_resources(
    transport: str, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")
    with (
        fixture_server("fx", transport, era, "--refuse-method", "resources/templates/list") as served,
        started_hub(served.config) as hub,
    ):
        assert {r.uri for r in hub.resources()} == {"fixture://text/readme", "fixture://blob/pixel"}
        assert hub.resource_templates() == []
        assert {p.name for p in hub.prompts()} == {"mcp__fx__greet", "mcp__fx__review"}
        assert hub.read_resource("fixture://text/readme").text == "fixture readme"
    assert not [
        r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "list" in r.getMessage()
    ]
    assert any("does not list resource templates" in r.getMessage() for r in caplog.records)


def test_a_failed_template_listing_is_logged_for_templates_alone(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")
    with started_hub(stdio_config("fx", "--fail-method", "resources/templates/list")) as hub:
        assert {r.uri for r in hub.resources()} == {"fixture://text/readme", "fixture://blob/pixel"}
        assert hub.resource_templates() == []
        assert {p.name for p in hub.prompts()} == {"mcp__fx__greet", "mcp__fx__review"}
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "listing the resource templates of server 'fx' failed" in errors[0], errors
    assert "resources/templates/list failed on purpose" in errors[0]


def test_a_failed_resource_listing_keeps_the_templates_and_a_change_lists_them_again(tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    with started_hub(stdio_config("fx", "--fail-method", "resources/list", events=events)) as hub:
        assert hub.resources() == []
        assert [t.uri_template for t in hub.resource_templates()] != []
        hub.call_tool("mcp__fx__add_resource", {"name": "late", "text": "x"})
        wait_until(
            lambda: len([e for e in events.events() if e["event"] == "method_failed"]) >= 2,
            timeout=10,
            message="the announced change was not listed again",
        )
        assert [t.uri_template for t in hub.resource_templates()] != []
