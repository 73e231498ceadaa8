"""The servers' requests to the client (elicitation, sampling, roots) and their log messages, answered
by plain handlers, against fixture servers on both transports and both eras."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import (
    ElicitationRequest,
    ElicitationResponse,
    MCPHub,
    SamplingRequest,
    SamplingResponse,
    ToolCallError,
    UnsupportedFeatureError,
)
from tests.hub_harness import TRANSPORTS_AND_ERAS, fixture_server, started_hub
from tests.support import EventLog, stdio_config

HANDLER_TIMEOUT = 3.0


class Script:
    """The module hub's handlers: each test says what the next answer is."""

    def __init__(self) -> None:
        self.elicit: Callable[[ElicitationRequest], Any] = lambda request: ElicitationResponse.decline()
        self.sample: Callable[[SamplingRequest], Any] = lambda request: "unused"
        self.seen: list[Any] = []
        self.threads: list[str] = []

    def on_elicitation(self, request: ElicitationRequest) -> Any:
        self.seen.append(request)
        self.threads.append(threading.current_thread().name)
        return self.elicit(request)

    def on_sampling(self, request: SamplingRequest) -> Any:
        self.seen.append(request)
        self.threads.append(threading.current_thread().name)
        return self.sample(request)


@pytest.fixture(
    scope="module", params=[p.values for p in TRANSPORTS_AND_ERAS], ids=[p.id for p in TRANSPORTS_AND_ERAS]
)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    transport, era = request.param
    events = EventLog(tmp_path_factory.mktemp("events") / "events.jsonl")
    script = Script()
    with (
        fixture_server(
            "fx", transport, era, "--elicit-defaults", events=events, roots=["/srv/data"], log_level="info"
        ) as served,
        started_hub(
            served.config,
            elicitation=script.on_elicitation,
            sampling=script.on_sampling,
            handler_timeout=HANDLER_TIMEOUT,
        ) as hub,
    ):
        yield hub, script, events, era


def test_accepted_elicitation_reaches_the_server_with_its_content(served: Any) -> None:
    hub, script, _, _ = served
    script.elicit = lambda request: {"name": "Ada", "age": 36}
    assert hub.call_tool("mcp__fx__ask_name").text == 'accept {"age": 36, "name": "Ada"}'
    request = script.seen[-1]
    assert request.message == "Who are you?"
    assert set(request.requested_schema["properties"]) == {"name", "age"}


def test_accepted_elicitation_gets_the_defaults_of_the_fields_left_out(served: Any) -> None:
    """SEP-1034: a field the answer leaves out takes its schema default; a field given keeps its value."""
    hub, script, _, _ = served
    script.elicit = lambda request: {"name": "Ada"}
    answer = hub.call_tool("mcp__fx__ask_defaults").text
    assert answer == 'accept ' + json.dumps(
        {"age": 30, "name": "Ada", "score": 95.5, "status": "active", "verified": True}, sort_keys=True
    )
    assert script.seen[-1].requested_schema["properties"]["age"]["default"] == 30


def test_declined_elicitation_reaches_the_server(served: Any) -> None:
    hub, script, _, _ = served
    script.elicit = lambda request: ElicitationResponse.decline()
    assert hub.call_tool("mcp__fx__ask_name").text == "decline"


def test_handlers_run_on_a_worker_thread(served: Any) -> None:
    hub, script, _, _ = served
    script.elicit = lambda request: ElicitationResponse.cancel()
    hub.call_tool("mcp__fx__ask_name")
    assert script.threads[-1] == "mcp-sync:elicitation:fx"


def test_handler_exception_becomes_an_error_for_the_server(
    served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    hub, script, _, _ = served

    def broken(request: ElicitationRequest) -> Any:
        raise RuntimeError("the dialog crashed")

    script.elicit = broken
    try:
        result = hub.call_tool("mcp__fx__ask_name")
    except ToolCallError as exc:  # 2026-07-28: the client ends the exchange itself
        assert "the dialog crashed" in str(exc)
    else:  # 2025: the server received the error and reported its tool's failure
        assert result.is_error
    assert "the dialog crashed" in caplog.text


def test_blocked_handler_times_out_without_stalling_other_calls(served: Any) -> None:
    hub, script, _, _ = served
    released = threading.Event()

    def blocked(request: ElicitationRequest) -> Any:
        request.cancelled.wait(HANDLER_TIMEOUT * 4)
        released.set()
        return ElicitationResponse.decline()

    script.elicit = blocked
    pending = hub.submit("mcp__fx__ask_name", timeout=30)
    assert hub.call_tool("mcp__fx__echo", {"text": "not stalled"}).text == "not stalled"
    assert released.wait(HANDLER_TIMEOUT * 4), "the handler was never told to stop"
    try:
        result = pending.result(timeout=30)
    except ToolCallError as exc:
        assert "did not answer within" in str(exc)
    else:
        assert result.is_error


def test_sampling_handler_reply_reaches_the_server(served: Any) -> None:
    hub, script, _, _ = served
    script.sample = lambda request: SamplingResponse(
        text=f"echo {request.messages[-1]['content']}", model="test-model"
    )
    assert hub.call_tool("mcp__fx__ask_sample", {"prompt": "ping"}).text == "sampled test-model: echo ping"
    request = script.seen[-1]
    assert request.system_prompt == "Answer briefly."
    assert request.model_hints == ("fixture-model",)
    assert request.as_chat_messages()[0] == {"role": "system", "content": "Answer briefly."}


def test_configured_roots_are_what_the_server_lists(served: Any) -> None:
    hub, _, _, _ = served
    hub.set_roots("fx", ["/srv/data"])
    assert hub.call_tool("mcp__fx__ask_roots").text == '["file:///srv/data"]'


def test_set_roots_changes_the_roots_and_notifies_a_2025_server(served: Any, tmp_path: Path) -> None:
    hub, _, events, era = served
    hub.set_roots("fx", [tmp_path])
    assert hub.call_tool("mcp__fx__ask_roots").text == f'["{tmp_path.as_uri()}"]'
    if era == "legacy":  # 2026-07-28 has no such notification: the server asks each time
        events.wait_for("roots_changed")
    hub.set_roots("fx", ["/srv/data"])


def test_server_log_messages_go_to_python_logging(served: Any, caplog: pytest.LogCaptureFixture) -> None:
    hub, _, _, _ = served
    with caplog.at_level(logging.DEBUG, logger="mcp_sync.server.fx"):
        hub.call_tool("mcp__fx__log", {"level": "warning", "message": "disk nearly full"})
        hub.call_tool("mcp__fx__log", {"level": "debug", "message": "below the configured level"})
    records = [r for r in caplog.records if r.name == "mcp_sync.server.fx" and "[fixture]" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in records] == [(logging.WARNING, "[fixture] disk nearly full")]


@pytest.fixture(scope="module", params=["modern", "legacy"])
def plain_hub(request: pytest.FixtureRequest) -> Iterator[MCPHub]:
    """A hub with no handlers set: elicitation declines, sampling and roots are not declared."""
    with started_hub(stdio_config("plain", "--era", request.param)) as hub:
        yield hub


def test_default_elicitation_handler_declines(plain_hub: MCPHub) -> None:
    assert plain_hub.call_tool("mcp__plain__ask_name").text == "decline"


def test_without_a_sampling_handler_sampling_is_not_declared(plain_hub: MCPHub) -> None:
    with pytest.raises(ToolCallError, match="sampling capability"):
        plain_hub.call_tool("mcp__plain__ask_sample", {"prompt": "hi"})


def test_request_without_a_handler_gets_an_error() -> None:
    # Only a handshake-era (2025) server can send a request of its own; a 2026-07-28 one cannot.
    with started_hub(stdio_config("plain", "--era", "legacy")) as hub:
        assert hub.call_tool("mcp__plain__ask_unhandled").text.startswith("refused")


def test_set_roots_without_configured_roots_is_refused(plain_hub: MCPHub) -> None:
    with pytest.raises(UnsupportedFeatureError, match="roots"):
        plain_hub.set_roots("plain", ["/tmp"])


def test_elicitation_none_declares_no_elicitation() -> None:
    with (
        started_hub(stdio_config("noel", "--era", "legacy"), elicitation=None) as hub,
        pytest.raises(ToolCallError, match="elicitation capability"),
    ):
        hub.call_tool("mcp__noel__ask_name")


# -- log messages without a configured log_level ---------------------------------------------------------


def fixture_log_records(caplog: pytest.LogCaptureFixture, server: str) -> list[tuple[int, str]]:
    return [
        (record.levelno, record.getMessage())
        for record in caplog.records
        if record.name == f"mcp_sync.server.{server}" and "[fixture]" in record.getMessage()
    ]


@pytest.mark.parametrize("level", [logging.DEBUG, logging.INFO, logging.WARNING])
def test_without_log_level_both_eras_deliver_the_records_the_servers_logger_wants(
    level: int, caplog: pytest.LogCaptureFixture
) -> None:
    delivered: dict[str, list[tuple[int, str]]] = {}
    for era in ("modern", "legacy"):
        caplog.clear()
        with (
            caplog.at_level(level, logger=f"mcp_sync.server.{era}"),
            started_hub(stdio_config(era, "--era", era)) as hub,
        ):
            for name in ("debug", "info", "warning", "error"):
                hub.call_tool(f"mcp__{era}__log", {"level": name, "message": f"a {name} message"})
            delivered[era] = fixture_log_records(caplog, era)
    expected = [
        (number, f"[fixture] a {name} message")
        for name, number in (
            ("debug", logging.DEBUG),
            ("info", logging.INFO),
            ("warning", logging.WARNING),
            ("error", logging.ERROR),
        )
        if number >= level
    ]
    assert delivered["modern"] == expected
    assert delivered["legacy"] == expected


def test_a_servers_logger_at_warning_asks_a_modern_server_for_warnings_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    with (
        caplog.at_level(logging.WARNING, logger="mcp_sync.server.fx"),
        started_hub(stdio_config("fx", "--era", "modern", events=events)) as hub,
    ):
        hub.call_tool("mcp__fx__log", {"level": "debug", "message": "not wanted"})
        hub.call_tool("mcp__fx__log", {"level": "warning", "message": "wanted"})
        records = fixture_log_records(caplog, "fx")
    assert [event["requested"] for event in events.find("logged")] == ["warning", "warning"]
    assert records == [(logging.WARNING, "[fixture] wanted")]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"sampling": "nope"}, "sampling must be a callable"),
        ({"elicitation": 42}, "elicitation must be a callable"),
        ({"sampling": {"x": "nope"}}, "sampling['x'] must be a callable or None, not str"),
        ({"elicitation": {"x": 42}}, "elicitation['x'] must be a callable or None, not int"),
    ],
)
def test_a_handler_that_is_not_callable_is_a_type_error_at_construction(options: Any, named: str) -> None:
    with pytest.raises(TypeError, match=re.escape(named)):
        MCPHub([stdio_config("x")], **options)
