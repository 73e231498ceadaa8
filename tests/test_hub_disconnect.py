"""Servers that go away: noticed promptly, tools unregistered, calls failed, others untouched."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mcp_sync import MCPHub, ServerDisconnectedError, ToolCallError, ToolNotFoundError
from tests.hub_harness import TRANSPORTS_AND_ERAS, ToolEvents, fixture_server, started_hub
from tests.support import EventLog, stdio_config, wait_until


def wait_for_state(hub: MCPHub, server: str, state: str, timeout: float) -> None:
    wait_until(
        lambda: hub.servers[server].state == state,
        timeout=timeout,
        message=f"{server} did not become {state} within {timeout}s: {hub.servers[server]!r}",
    )


@pytest.mark.parametrize(("transport", "era"), TRANSPORTS_AND_ERAS)
def test_crash_during_a_call_fails_it_and_unregisters_the_tools(transport: str, era: str) -> None:
    with (
        fixture_server("dying", transport, era) as served,
        started_hub(served.config, stdio_config("other")) as hub,
    ):
        events = ToolEvents().attach(hub)
        with pytest.raises(ServerDisconnectedError):
            hub.call_tool("mcp__dying__crash", timeout=10)
        wait_for_state(hub, "dying", "disconnected", timeout=5)
        events.wait_for(("removed", "mcp__dying__echo"))
        assert hub.servers["dying"].error is not None
        with pytest.raises(ToolNotFoundError):
            hub.call_tool("mcp__dying__echo", {"text": "anyone?"})
        assert hub.servers["other"].state == "ready"
        assert hub.call_tool("mcp__other__echo", {"text": "fine"}).text == "fine"


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_stdio_server_that_dies_while_idle_is_noticed_without_a_call(era: str, tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    with started_hub(stdio_config("idle", "--era", era, events=events)) as hub:
        tools = ToolEvents().attach(hub)
        hub.call_tool("mcp__idle__exit_later", {"delay": 0.2})
        events.wait_for("exit_scheduled")
        wait_for_state(hub, "idle", "disconnected", timeout=10)  # noticed with no call made
        tools.wait_for(("removed", "mcp__idle__echo"))
        assert "closed its connection" in str(hub.servers["idle"].error)


@pytest.mark.parametrize(
    "era",
    [
        pytest.param("modern", id="listen-stream-2026"),
        # A 2025-era server keeps a GET stream open; the SDK retries it after its reconnect delay
        # (1 s), and the refused connection is what shows the server is gone.
        pytest.param("legacy", id="get-stream-2025"),
    ],
)
def test_http_server_that_goes_away_is_noticed_through_its_open_stream(era: str) -> None:
    with fixture_server("web", "http", era) as served, started_hub(served.config) as hub:
        assert served.http is not None
        served.http.kill()
        wait_for_state(hub, "web", "disconnected", timeout=5)  # no call is made
        assert "mcp__web__echo" not in hub.registry


def test_http_server_gone_is_noticed_at_the_next_call_at_the_latest() -> None:
    with fixture_server("web", "http", "legacy") as served, started_hub(served.config) as hub:
        assert served.http is not None
        served.http.kill()
        with pytest.raises((ServerDisconnectedError, ToolCallError, ToolNotFoundError)):
            hub.call_tool("mcp__web__echo", {"text": "hello?"}, timeout=10)
        wait_for_state(hub, "web", "disconnected", timeout=5)
        assert "mcp__web__echo" not in hub.registry


def test_calls_in_flight_fail_promptly_when_the_server_dies(tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    with started_hub(stdio_config("dying", events=events)) as hub:
        futures = [hub.submit("mcp__dying__sleep", {"seconds": 30, "tag": f"s{i}"}) for i in range(5)]
        for i in range(5):
            events.wait_for("started", tag=f"s{i}")
        threading.Thread(target=lambda: hub.submit("mcp__dying__crash")).start()
        for future in futures:
            with pytest.raises(ServerDisconnectedError):
                future.result(timeout=5)
