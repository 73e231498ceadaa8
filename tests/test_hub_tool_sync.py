"""Keeping the registry in step with each server's tool list, on both protocol eras."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcp_sync import MCPHub, ToolAnnotations, ToolListError
from mcp_sync._server import tool_sync
from tests.hub_harness import TRANSPORTS_AND_ERAS, ToolEvents, fixture_server, started_hub
from tests.support import SERVERS_DIR, EventLog, stdio_config, wait_until


@pytest.mark.parametrize(("transport", "era"), TRANSPORTS_AND_ERAS)
def test_tools_added_and_removed_on_the_server_reach_listeners(transport: str, era: str) -> None:
    with fixture_server("fx", transport, era) as served, started_hub(served.config) as hub:
        events = ToolEvents().attach(hub)
        hub.call_tool("mcp__fx__add_tool", {"name": "fresh"})
        events.wait_for(("added", "mcp__fx__fresh"))
        assert hub.call_tool("mcp__fx__fresh", {"text": "new tool"}).text == "new tool"
        hub.call_tool("mcp__fx__remove_tool", {"name": "fresh"})
        events.wait_for(("removed", "mcp__fx__fresh"))
        assert "mcp__fx__fresh" not in hub.registry


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_burst_of_announcements_is_coalesced(era: str, tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    with started_hub(stdio_config("fx", "--era", era, events=events)) as hub:
        tools = ToolEvents().attach(hub)
        # This call's announcement starts a re-list, which the server holds (for up to 60 s)...
        hub.call_tool("mcp__fx__delay_listings", {"seconds": 60})
        events.wait_for("list_tools_delayed")
        # ... while a burst of 51 announcements arrives; then the held listing is let go.
        hub.call_tool("mcp__fx__announce", {"n": 50})
        hub.call_tool("mcp__fx__add_tool", {"name": "marker"})
        hub.call_tool("mcp__fx__delay_listings", {"seconds": 0, "announce": False})
        tools.wait_for(("added", "mcp__fx__marker"))
    # After the initial sync: the held re-list, then one for the whole burst. Announcements only mark
    # the tools dirty, and a re-list in flight leaves one more for after it, whatever the burst's size.
    relists = events.count("list_tools") - 1
    assert relists == 2, f"{relists} re-lists for one announcement and a burst of 51"


def test_every_page_of_a_paginated_listing_is_registered() -> None:
    with started_hub(stdio_config("big", "--tools", "250", "--page-size", "40")) as hub:
        assert len([tool for tool in hub.servers["big"].tools if tool.raw_name.startswith("t")]) == 250
        assert hub.call_tool("mcp__big__t00249", {"value": "last page"}).text == "last page"


def test_descriptions_and_schemas_pass_through_untouched() -> None:
    with started_hub(stdio_config("fx")) as hub:
        tool = hub.registry.get("mcp__fx__add")
        assert tool is not None
        assert tool.input_schema["properties"].keys() == {"a", "b"}
        assert tool.input_schema["required"] == ["a", "b"]
        assert (tool.server_name, tool.raw_name) == ("fx", "add")


@pytest.mark.parametrize(("transport", "era"), TRANSPORTS_AND_ERAS)
def test_the_servers_hints_about_a_tool_reach_its_tool(transport: str, era: str) -> None:
    with fixture_server("fx", transport, era) as served, started_hub(served.config) as hub:
        echo, add, crash, sleep = (
            hub.registry.get(f"mcp__fx__{name}") for name in ("echo", "add", "crash", "sleep")
        )
        assert echo is not None and add is not None and crash is not None and sleep is not None
        assert echo.title == "Echo"
        assert echo.annotations == ToolAnnotations(title="Echo", read_only_hint=True, open_world_hint=False)
        assert (echo.annotations.read_only, echo.annotations.idempotent, echo.annotations.destructive) == (
            True,
            True,
            False,
        )
        assert add.annotations is not None
        assert (add.annotations.idempotent, add.annotations.destructive) == (True, False)
        assert crash.annotations is not None and crash.annotations.destructive
        assert not crash.annotations.idempotent
        assert sleep.annotations is None and sleep.title is None


def test_listing_that_repeats_a_name_fails_the_server_loudly(caplog: pytest.LogCaptureFixture) -> None:
    with started_hub(stdio_config("dup", "--duplicate-listing"), stdio_config("ok")) as hub:
        server = hub.servers["dup"]
        assert server.state == "failed"
        assert isinstance(server.error, ToolListError)
        assert hub.servers["ok"].state == "ready"
    assert "more than once" in caplog.text


def test_endless_cursor_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # A lower bound reaches the same state without a thousand round trips; the real bound and the time
    # it takes are tests/test_reliability_listings.py's.
    monkeypatch.setattr(tool_sync, "MAX_LIST_PAGES", 20)
    with started_hub(stdio_config("endless", "--endless-cursor")) as hub:
        server = hub.servers["endless"]
        assert server.state == "failed"
        assert isinstance(server.error, ToolListError)
        assert "tools/list" in str(server.error)


def test_failed_resync_keeps_the_previous_generation(caplog: pytest.LogCaptureFixture) -> None:
    with started_hub(stdio_config("fx")) as hub:
        before = {tool.name for tool in hub.tools()}
        hub.call_tool("mcp__fx__break_listing")  # the server now lists "echo" twice
        wait_until(lambda: "more than once" in caplog.text, timeout=10)
        assert {tool.name for tool in hub.tools()} == before
        assert hub.servers["fx"].state == "ready"


def test_other_servers_keep_their_names_when_one_resyncs() -> None:
    with started_hub(stdio_config("a"), stdio_config("b")) as hub:
        b_tools = {tool.name: tool for tool in hub.servers["b"].tools}
        events = ToolEvents().attach(hub)
        hub.call_tool("mcp__a__add_tool", {"name": "more"})
        events.wait_for(("added", "mcp__a__more"))
        assert {tool.name: tool for tool in hub.servers["b"].tools} == b_tools
        assert all(hub.registry.get(name) is tool for name, tool in b_tools.items())


def test_hub_tools_lists_every_server_sorted() -> None:
    with started_hub(stdio_config("b"), stdio_config("a")) as hub:
        names = [tool.name for tool in hub.tools()]
    assert names == sorted(names)
    assert "mcp__a__echo" in names
    assert "mcp__b__echo" in names


def test_hub_without_servers_still_serves_native_tools() -> None:
    with MCPHub() as hub:
        hub.registry.register_native("ping", lambda: "pong")
        assert [tool.name for tool in hub.tools()] == ["ping"]


def test_servers_without_subscriptions_connect_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # A 2.x server built without a subscription bus answers `subscriptions/listen` with "method not
    # found" (the hostile server without --subscriptions); a 2025-era server has no such method at all.
    caplog.set_level(logging.DEBUG)
    plain = stdio_config(
        "plain", "--tool", "echo", "--prompt", "hello", script=SERVERS_DIR / "hostile_server.py"
    )
    with started_hub(plain, stdio_config("handshake", "--era", "legacy"), stdio_config("modern")) as hub:
        assert {name: server.state for name, server in hub.servers.items()} == dict.fromkeys(
            ("plain", "handshake", "modern"), "ready"
        )
        assert "mcp__plain__hello" in [prompt.name for prompt in hub.prompts()]
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []
    assert "server 'plain' does not offer subscriptions/listen: its tool changes" in caplog.text
    assert (
        "server 'plain' does not offer subscriptions/listen: its resource and prompt changes" in caplog.text
    )
