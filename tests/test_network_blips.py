"""A network blip in front of a Streamable HTTP server is invisible, and a call in flight when its
connection breaks gets a safe answer: sent again if its tool is safe to repeat, else an error that
says it may have run. Every fault is real: a TCP proxy (`tests.fault_proxy`) between the hub and the
fixture server resets connections, refuses them for a while, or cuts a response short."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import (
    ConfigError,
    MCPHub,
    ServerDisconnectedError,
    ToolCallMayHaveRunError,
    ToolCallTimeoutError,
    ToolNotFoundError,
)
from mcp_sync._config import parse_server_entries
from mcp_sync._server.transports import BLIP_GRACE
from tests.fault_proxy import Fault, FaultProxy
from tests.hub_harness import ToolEvents
from tests.support import SERVERS_DIR, EventLog, HttpServer, http_config, wait_until
from tests.test_reconnect import States

ERAS = [pytest.param("modern", id="2026"), pytest.param("legacy", id="2025")]

ECHO = (b'"tools/call"', b'"echo"')
SLEEP = (b'"tools/call"', b'"sleep"')
ANSWERED = b'"result"'
"""In a response: the server has answered the call, so it ran it (a reset then loses the answer)."""


@dataclass
class Blips:
    """A started hub whose one server ("srv") is reached through a fault proxy."""

    hub: MCPHub
    proxy: FaultProxy
    events: EventLog
    tools: ToolEvents
    states: States

    def calls_of(self, tool: str, **arguments: Any) -> int:
        """How many times the server was asked to run `tool` with these arguments."""
        return self.events.count(
            lambda event: (
                event.get("event") == "called"
                and event.get("tool") == tool
                and all((event.get("arguments") or {}).get(k) == v for k, v in arguments.items())
            )
        )

    def assert_untouched(self) -> None:
        """No tool came or went and the server never left `ready`."""
        assert self.tools.events == []
        assert self.states.seen == []
        assert self.hub.servers["srv"].state == "ready"


@contextlib.contextmanager
def blips(tmp_path: Path, era: str, *flags: str, **overrides: Any) -> Iterator[Blips]:
    events = EventLog(tmp_path / "events.jsonl")
    with (
        HttpServer("--era", era, "--record-calls", *flags, events=events) as server,
        FaultProxy(server.port) as proxy,
    ):
        hub = MCPHub([http_config("srv", proxy.url(server.url), **overrides)])
        try:
            hub.start()
            assert hub.servers["srv"].state == "ready", hub.servers["srv"].error
            yield Blips(hub, proxy, events, ToolEvents().attach(hub), States(hub))
        finally:
            hub.close()


@contextlib.contextmanager
def logged(message: str) -> Iterator[threading.Event]:
    """An Event set when the `mcp_sync` logger emits a record containing `message`."""
    seen = threading.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if message in record.getMessage():
                seen.set()

    logger = logging.getLogger("mcp_sync")
    handler, level = Watch(logging.DEBUG), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


# -- a blip between calls ------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_connections_reset_between_calls_change_nothing(era: str, tmp_path: Path) -> None:
    with blips(tmp_path, era) as b:
        session = b.hub.servers["srv"].session_id
        assert b.hub.call_tool("mcp__srv__echo", {"text": "before"}).text == "before"
        for _ in range(3):
            # Something to reset: an event stream (opened again soon after each reset), a kept connection.
            wait_until(lambda: b.proxy.open_connections >= 1)
            assert b.proxy.reset_all() >= 1
            assert b.hub.call_tool("mcp__srv__sleep", {"seconds": 0, "tag": "x"}).text.startswith("slept")
        assert b.hub.call_tool("mcp__srv__echo", {"text": "after"}).text == "after"
        assert b.hub.servers["srv"].session_id == session  # the 2025 session is kept; 2026 has none
        assert b.calls_of("sleep", tag="x") == 3
        b.assert_untouched()


def test_the_event_stream_of_a_2025_session_is_opened_again_after_every_reset(tmp_path: Path) -> None:
    with blips(tmp_path, "legacy") as b:
        wait_until(lambda: b.proxy.count("GET") >= 1)
        for _ in range(3):  # the SDK gives the stream up after its second error in a row
            seen = b.proxy.count("GET")
            b.proxy.reset_all()
            wait_until(
                lambda seen=seen: b.proxy.count("GET") > seen, message="the stream was not opened again"
            )
        b.hub.call_tool("mcp__srv__add_tool", {"name": "fresh"})
        b.tools.wait_for(("added", "mcp__srv__fresh"))
        assert b.hub.servers["srv"].state == "ready" and b.states.seen == []


# -- a call in flight when its connection breaks --------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("tool", "arguments", "text"),
    [
        pytest.param("echo", {"text": "hi"}, "hi", id="read-only"),
        pytest.param("add", {"a": 2, "b": 3}, "5", id="idempotent"),
    ],
)
def test_a_call_safe_to_repeat_is_sent_again_when_its_connection_breaks(
    era: str, tool: str, arguments: dict[str, Any], text: str, tmp_path: Path
) -> None:
    with blips(tmp_path, era) as b:
        fault = b.proxy.add(Fault(match=(b'"tools/call"', f'"{tool}"'.encode()), response_match=ANSWERED))
        assert b.hub.call_tool(f"mcp__srv__{tool}", arguments).text == text
        assert fault.fired.is_set()
        assert b.calls_of(tool) == 2  # the server had it when the connection broke, and once more
        b.assert_untouched()


@pytest.mark.parametrize("era", ERAS)
def test_a_call_that_may_have_run_is_not_sent_again_and_says_so(era: str, tmp_path: Path) -> None:
    with blips(tmp_path, era) as b:
        fault = b.proxy.add(Fault(match=SLEEP, response_match=ANSWERED))
        with pytest.raises(ToolCallMayHaveRunError, match="may have run") as raised:
            b.hub.call_tool("mcp__srv__sleep", {"seconds": 0, "tag": "once"})
        assert fault.fired.is_set()
        assert raised.value.tool == "mcp__srv__sleep" and raised.value.replayed is False
        assert b.calls_of("sleep", tag="once") == 1
        # The failure is the call's alone: the next call on the same session succeeds.
        assert b.hub.call_tool("mcp__srv__sleep", {"seconds": 0, "tag": "next"}).text.startswith("slept")
        b.assert_untouched()


def test_a_call_that_may_have_run_tells_the_model_so(tmp_path: Path) -> None:
    with blips(tmp_path, "modern") as b:
        b.proxy.add(Fault(match=SLEEP, response_match=ANSWERED))
        result = b.hub.call_tool_safe("mcp__srv__sleep", {"seconds": 0, "tag": "model"})
        assert result.is_error and "may have run" in result.text
        assert isinstance(
            ToolCallMayHaveRunError("x"), ServerDisconnectedError
        )  # what a lost call always was
        b.assert_untouched()


@pytest.mark.parametrize("era", ERAS)
def test_a_request_that_never_reached_the_server_may_still_have_run_as_far_as_the_client_knows(
    era: str, tmp_path: Path
) -> None:
    with blips(tmp_path, era) as b:
        fault = b.proxy.add(Fault(match=SLEEP, response_bytes=None))  # reset before the server sees it
        with pytest.raises(ToolCallMayHaveRunError):
            b.hub.call_tool("mcp__srv__sleep", {"seconds": 0, "tag": "never"})
        assert fault.fired.is_set()
        assert b.calls_of("sleep", tag="never") == 0
        assert b.hub.call_tool("mcp__srv__echo", {"text": "ok"}).text == "ok"
        b.assert_untouched()


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    "body", [pytest.param((), id="event-stream"), pytest.param(("--json-response",), id="json")]
)
def test_a_response_cut_after_some_bytes_is_a_broken_connection_too(
    era: str, body: tuple[str, ...], tmp_path: Path
) -> None:
    text = "x" * 20_000
    with blips(tmp_path, era, *body) as b:
        fault = b.proxy.add(Fault(match=ECHO, response_bytes=4_000))  # past the headers, inside the body
        assert b.hub.call_tool("mcp__srv__echo", {"text": text}).text == text
        assert fault.fired.is_set()
        fault = b.proxy.add(Fault(match=ECHO, response_bytes=4_000))
        with pytest.raises(ToolCallMayHaveRunError):
            b.hub.call_tool("mcp__srv__echo", {"text": text}, replay=False)
        assert fault.fired.is_set()
        assert b.calls_of("echo") == 3
        assert b.hub.call_tool("mcp__srv__echo", {"text": "ok"}).text == "ok"
        b.assert_untouched()


def test_a_replay_whose_connection_breaks_too_is_not_sent_a_third_time(tmp_path: Path) -> None:
    with blips(tmp_path, "modern") as b:
        fault = b.proxy.add(Fault(match=ECHO, response_match=ANSWERED, times=2))
        with pytest.raises(ToolCallMayHaveRunError, match="sent again once") as raised:
            b.hub.call_tool("mcp__srv__echo", {"text": "hi"})
        assert fault.fired_count == 2 and raised.value.replayed is True
        assert b.calls_of("echo") == 2
        assert b.hub.call_tool("mcp__srv__echo", {"text": "ok"}).text == "ok"
        b.assert_untouched()


# -- the policy, overridden ---------------------------------------------------------------------------


def test_a_call_may_override_the_policy_either_way(tmp_path: Path) -> None:
    with blips(tmp_path, "legacy") as b:
        b.proxy.add(Fault(match=ECHO, response_match=ANSWERED))
        with pytest.raises(ToolCallMayHaveRunError):
            b.hub.call_tool("mcp__srv__echo", {"text": "hi"}, replay=False)
        assert b.calls_of("echo") == 1
        b.proxy.add(Fault(match=SLEEP, response_match=ANSWERED))
        future = b.hub.submit("mcp__srv__sleep", {"seconds": 0, "tag": "again"}, replay=True)
        assert future.result(timeout=30).text.startswith("slept")
        assert b.calls_of("sleep", tag="again") == 2
        b.proxy.add(Fault(match=ECHO))
        with pytest.raises(ToolCallMayHaveRunError):
            b.hub.submit("mcp__srv__echo", {"text": "no"}, replay=False).result(timeout=30)
        b.assert_untouched()


@pytest.mark.parametrize(
    ("key", "policy", "echo_replayed", "sleep_replayed"),
    [
        pytest.param("replay_calls", "never", False, False, id="never"),
        pytest.param("replayCalls", "always", True, True, id="always-camelCase"),
        pytest.param("replay_calls", "hints", True, False, id="hints"),
    ],
)
def test_a_server_may_override_the_policy(
    key: str, policy: str, echo_replayed: bool, sleep_replayed: bool, tmp_path: Path
) -> None:
    with blips(tmp_path, "modern", **{key: policy}) as b:
        assert b.hub.servers["srv"].config.replay_calls == policy  # type: ignore[union-attr]
        for tool, arguments, replayed in (
            ("echo", {"text": "hi"}, echo_replayed),
            ("sleep", {"seconds": 0, "tag": "p"}, sleep_replayed),
        ):
            b.proxy.add(Fault(match=(b'"tools/call"', f'"{tool}"'.encode()), response_match=ANSWERED))
            if replayed:
                b.hub.call_tool(f"mcp__srv__{tool}", arguments)
            else:
                with pytest.raises(ToolCallMayHaveRunError):
                    b.hub.call_tool(f"mcp__srv__{tool}", arguments)
            assert b.calls_of(tool) == (2 if replayed else 1)
        b.assert_untouched()


def test_the_replay_policy_is_checked_with_the_configuration() -> None:
    url = "http://127.0.0.1:1/mcp"
    configs = parse_server_entries([http_config("srv", url)], strict=True).configs
    assert [config.replay_calls for config in configs] == ["hints"]
    for key in ("replay_calls", "replayCalls"):
        with pytest.raises(ConfigError, match=f"field '{key}'"):
            parse_server_entries([http_config("srv", url, **{key: "sometimes"})], strict=True)


# -- refused for a while, and gone -------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_a_call_made_while_connections_are_refused_waits_for_the_server(era: str, tmp_path: Path) -> None:
    with blips(tmp_path, era) as b, logged("refused a connection; waiting") as refused:
        b.proxy.refuse()
        future = b.hub.submit("mcp__srv__sleep", {"seconds": 0, "tag": "waited"})
        assert refused.wait(10), "the call was never refused"
        assert not future.done()
        b.proxy.accept()
        assert future.result(timeout=30).text.startswith("slept")
        assert b.calls_of("sleep", tag="waited") == 1
        assert b.hub.call_tool("mcp__srv__echo", {"text": "ok"}).text == "ok"
        b.assert_untouched()


@pytest.mark.parametrize("era", ERAS)
def test_an_outage_longer_than_the_grace_disconnects_and_reconnect_brings_it_back(
    era: str, tmp_path: Path
) -> None:
    policy = {"reconnect": {"initial_delay_ms": 50, "max_delay_ms": 200, "max_attempts": 1000}}
    with blips(tmp_path, era, **policy) as b:
        b.proxy.refuse()
        with pytest.raises((ServerDisconnectedError, ToolNotFoundError)):
            b.hub.call_tool("mcp__srv__echo", {"text": "lost"}, timeout=4 * BLIP_GRACE + 10)
        b.tools.wait_for(("removed", "mcp__srv__echo"), timeout=20)
        b.states.wait_for("disconnected")
        b.proxy.accept()
        b.tools.wait_for(("added", "mcp__srv__echo"), timeout=20)
        b.states.wait_for("ready")
        assert b.hub.call_tool("mcp__srv__echo", {"text": "back"}).text == "back"


def test_an_outage_longer_than_the_grace_without_reconnect_leaves_the_server_disconnected(
    tmp_path: Path,
) -> None:
    with blips(tmp_path, "modern") as b:
        b.proxy.refuse()
        b.tools.wait_for(("removed", "mcp__srv__echo"), timeout=20)  # noticed without a call
        b.states.wait_for("disconnected")
        b.proxy.accept()
        with pytest.raises(ToolNotFoundError):
            b.hub.call_tool("mcp__srv__echo", {"text": "gone"})
        wait_until(lambda: b.hub.servers["srv"].state == "disconnected")


# -- a call run as a task -----------------------------------------------------------------------------


def test_a_task_call_whose_poll_loses_its_connection_follows_the_same_task(tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    with (
        HttpServer(script=SERVERS_DIR / "tasks_server.py", events=events) as server,
        FaultProxy(server.port) as proxy,
    ):
        hub = MCPHub([http_config("srv", proxy.url(server.url))])
        try:
            hub.start()
            tools, states = ToolEvents().attach(hub), States(hub)
            fault = proxy.add(Fault(match=(b'"tasks/get"',), response_match=ANSWERED))
            result = hub.call_tool("mcp__srv__stages", {"count": 3, "delay": 0.1, "tag": "blip"})
            assert result.text == "done 3 stages blip"
            assert fault.fired.is_set()
            assert len([event for event in events.find("run") if event.get("tag") == "blip"]) == 1
            assert len(events.find("task_created")) == 1  # the tool was never called again
            assert tools.events == [] and states.seen == []
        finally:
            hub.close()


# -- a blip at the edges of other features ----------------------------------------------------------


def test_a_call_whose_timeout_ends_while_connections_are_refused_times_out_and_the_server_stays(
    tmp_path: Path,
) -> None:
    with blips(tmp_path, "legacy") as b, logged("refused a connection; waiting") as refused:
        b.proxy.refuse()
        with pytest.raises(ToolCallTimeoutError):
            b.hub.call_tool("mcp__srv__sleep", {"seconds": 0, "tag": "late"}, timeout=BLIP_GRACE / 4)
        assert refused.is_set()
        b.proxy.accept()
        assert b.hub.call_tool("mcp__srv__echo", {"text": "ok"}).text == "ok"
        b.assert_untouched()


def test_close_while_a_call_waits_for_a_refusing_server_returns_promptly(tmp_path: Path) -> None:
    with blips(tmp_path, "modern") as b, logged("refused a connection; waiting") as refused:
        b.proxy.refuse()
        future = b.hub.submit("mcp__srv__sleep", {"seconds": 0, "tag": "closed"})
        assert refused.wait(10)
        closer = threading.Thread(target=b.hub.close, name="closer")
        closer.start()
        closer.join(BLIP_GRACE + 8)
        assert not closer.is_alive()
        with pytest.raises(ServerDisconnectedError):
            future.result(timeout=5)
        assert b.hub.state == "closed"


# -- what the grace and the session's end cover --------------------------------------------------------


def test_a_2025_call_timed_out_while_connections_are_refused_never_reaches_the_server(tmp_path: Path) -> None:
    with blips(tmp_path, "legacy") as b, logged("was cancelled before it was sent") as dropped:
        b.proxy.refuse()
        with pytest.raises(ToolCallTimeoutError):
            b.hub.call_tool("mcp__srv__sleep", {"seconds": 0, "tag": "late"}, timeout=BLIP_GRACE / 4)
        assert dropped.wait(10), "the cancelled call was still waiting to be sent"
        b.proxy.accept()
        assert b.hub.call_tool("mcp__srv__echo", {"text": "ok"}).text == "ok"
        assert b.calls_of("sleep", tag="late") == 0
        b.assert_untouched()


def test_a_2025_server_restarted_within_the_grace_is_reconnected_with_a_new_session(tmp_path: Path) -> None:
    policy = {"reconnect": {"initial_delay_ms": 50, "max_delay_ms": 200, "max_attempts": 100}}
    with (
        HttpServer("--era", "legacy", events=EventLog(tmp_path / "new.jsonl")) as restarted,
        blips(tmp_path, "legacy", **policy) as b,
    ):
        session = b.hub.servers["srv"].session_id
        b.proxy.upstream_port = restarted.port  # the new process knows nothing of the old session
        b.proxy.reset_all()
        with contextlib.suppress(ServerDisconnectedError):  # the call that met the 404
            b.hub.call_tool("mcp__srv__echo", {"text": "first"}, timeout=10)
        b.states.wait_for("disconnected")
        b.states.wait_for("ready")
        assert b.hub.call_tool("mcp__srv__echo", {"text": "after"}).text == "after"
        assert b.hub.servers["srv"].session_id not in (None, session)


@pytest.mark.parametrize("era", ERAS)
def test_a_server_gone_behind_a_proxy_that_still_accepts_is_disconnected(era: str, tmp_path: Path) -> None:
    with blips(tmp_path, era) as b:
        b.proxy.add(Fault(response_bytes=None, times=None))  # accepted, then reset: every connection
        b.proxy.reset_all()
        with contextlib.suppress(ServerDisconnectedError, ToolNotFoundError):
            b.hub.call_tool("mcp__srv__echo", {"text": "lost"}, timeout=4 * BLIP_GRACE + 10)
        b.states.wait_for("disconnected", timeout=4 * BLIP_GRACE + 10)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("what", ["resources/read", "prompts/get"])
def test_a_read_or_prompt_whose_event_stream_is_cut_is_sent_again(
    era: str, what: str, tmp_path: Path
) -> None:
    with blips(tmp_path, era) as b:
        fault = b.proxy.add(Fault(match=(f'"{what}"'.encode(),), response_bytes=300))
        if what == "resources/read":
            assert b.hub.read_resource("fixture://text/readme", server="srv").text
        else:
            assert b.hub.get_prompt(b.hub.prompts()[0].name, {"name": "x"}).messages
        assert fault.fired.is_set()
        b.assert_untouched()


def test_a_2025_event_stream_reset_before_its_answer_is_opened_again(tmp_path: Path) -> None:
    with blips(tmp_path, "legacy") as b:
        wait_until(lambda: b.proxy.count("GET") >= 1)
        fault = b.proxy.add(Fault(match=(b"GET /",), response_bytes=None, times=4))
        b.proxy.reset_all()
        wait_until(lambda: fault.fired_count >= 4, timeout=15)
        b.proxy.remove(fault)
        opened = b.proxy.count("GET")
        wait_until(
            lambda: b.proxy.count("GET") > opened, timeout=15, message="the stream was not opened again"
        )
        b.hub.call_tool("mcp__srv__add_tool", {"name": "fresh"})
        b.tools.wait_for(("added", "mcp__srv__fresh"))
        assert b.hub.servers["srv"].state == "ready" and b.states.seen == []


def test_a_2025_answer_to_the_servers_question_whose_connection_breaks_is_sent_again(tmp_path: Path) -> None:
    with blips(tmp_path, "legacy") as b:
        fault = b.proxy.add(Fault(match=(b'"action"',), response_bytes=None, times=2))
        assert b.hub.call_tool("mcp__srv__ask_name", {}, timeout=30).text
        assert fault.fired_count == 2
        b.assert_untouched()


def test_a_server_that_resets_every_connection_is_not_said_to_refuse_them(tmp_path: Path) -> None:
    policy = {"reconnect": {"initial_delay_ms": 50, "max_delay_ms": 200, "max_attempts": 1000}}
    errors: list[str] = []
    with blips(tmp_path, "legacy", **policy) as b:
        b.hub.on_server_state(lambda name, state, error: state == "failed" and errors.append(str(error)))
        b.proxy.add(Fault(response_bytes=None, times=None))  # accepted, then reset: every connection
        b.proxy.reset_all()
        b.states.wait_for("failed", timeout=4 * BLIP_GRACE + 10)
        assert errors and "nothing accepted a connection" not in errors[0]
