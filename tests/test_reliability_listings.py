"""Reliability: hostile tool listings.

Repeated names, endless cursors, ten thousand tools, a megabyte of description, names that are
long, dotted or not ASCII, and a server whose tool is spelled like another server's namespace.
"""

from __future__ import annotations

import logging
import re
import time

import pytest

from mcp_sync import ConfigError, MCPHub, ToolListError, public_tool_name
from tests.hub_harness import ToolEvents, fixture_server, started_hub
from tests.servers.hostile_server import description_text
from tests.support import SERVERS_DIR, stdio_config, wait_until

HOSTILE_SERVER = SERVERS_DIR / "hostile_server.py"
PUBLIC_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def hostile_config(name: str, *flags: str, **overrides: object) -> dict[str, object]:
    return stdio_config(name, *flags, script=HOSTILE_SERVER, **overrides)


def error_records(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.levelno >= logging.ERROR
        and record.name.startswith("mcp_sync")
        and text in record.getMessage()
    ]


# -- a listing that repeats a name ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transport", "era"),
    [pytest.param("stdio", "legacy", id="stdio-2025"), pytest.param("http", "modern", id="http-2026")],
)
def test_listing_that_turns_invalid_keeps_the_previous_generation(
    transport: str, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="mcp_sync")
    with fixture_server("fx", transport, era) as served, started_hub(served.config) as hub:
        before = {tool.name: tool for tool in hub.servers["fx"].tools}
        hub.call_tool("mcp__fx__break_listing")  # from now on the server lists "echo" twice
        wait_until(lambda: error_records(caplog, "more than once"), timeout=10)
        # A change announced while the listing is invalid is not applied either: the old generation stays.
        hub.call_tool("mcp__fx__add_tool", {"name": "unseen"})
        wait_until(lambda: len(error_records(caplog, "more than once")) >= 2, timeout=10)
        assert "mcp__fx__unseen" not in hub.registry
        after = {tool.name: tool for tool in hub.servers["fx"].tools}
        assert after.keys() == before.keys()
        assert all(after[name] is tool for name, tool in before.items())  # the very same registrations
        assert hub.servers["fx"].state == "ready"
        assert hub.call_tool("mcp__fx__echo", {"text": "old generation"}).text == "old generation"


# -- an endless cursor ------------------------------------------------------------------------------


def test_endless_cursor_fails_the_server_with_a_tool_list_error_in_bounded_time() -> None:
    endless = stdio_config("endless", "--era", "legacy", "--endless-cursor", connect_timeout_ms=60_000)
    started = time.monotonic()
    with started_hub(endless, stdio_config("bystander")) as hub:
        elapsed = time.monotonic() - started
        server = hub.servers["endless"]
        assert server.state == "failed"
        assert isinstance(server.error, ToolListError), repr(server.error)
        assert "pages" in str(server.error)
        assert not server.tools
        assert hub.call_tool("mcp__bystander__echo", {"text": "fine"}).text == "fine"
    assert elapsed < 30, f"an endless cursor took {elapsed:.1f}s to give up on"


# -- ten thousand tools -----------------------------------------------------------------------------


def test_ten_thousand_tools_over_twenty_pages_are_all_registered() -> None:
    # The hostile server pages a listing it built once; the fixture server rebuilds all 10,000 tools
    # for every page (about a second a page), which would time the server, not the hub.
    big = hostile_config("big", "--tools", "10000", "--page-size", "500")
    started = time.monotonic()
    with started_hub(big, stdio_config("bystander")) as hub:
        elapsed = time.monotonic() - started
        server = hub.servers["big"]
        assert server.state == "ready", repr(server)
        assert {tool.raw_name for tool in server.tools} == {f"t{i:05d}" for i in range(10_000)}
        assert all(hub.registry.get(tool.name) is tool for tool in server.tools)
        assert len(hub.registry) == 10_000 + len(hub.servers["bystander"].tools)
        assert hub.call_tool("mcp__big__t00000", {"text": "first"}).text == "t00000|first"
        assert hub.call_tool("mcp__big__t09999", {"text": "last"}).text == "t09999|last"
    assert elapsed < 30, f"connecting to a server with 10,000 tools took {elapsed:.1f}s"


# -- huge descriptions ------------------------------------------------------------------------------


def test_one_megabyte_description_passes_through_untouched() -> None:
    size = 1 << 20
    with started_hub(
        hostile_config("big", "--description-bytes", str(size)), stdio_config("bystander")
    ) as hub:
        tool = hub.registry.get("mcp__big__big_description")
        assert tool is not None, repr(hub.servers["big"])
        assert tool.description is not None
        assert len(tool.description) == size
        assert tool.description == description_text(size)
        assert hub.call_tool("mcp__big__big_description", {"text": "hi"}).text == "big|hi"
        assert hub.call_tool("mcp__bystander__echo", {"text": "fine"}).text == "fine"


# -- names ------------------------------------------------------------------------------------------

HOSTILE_NAMES = [
    ("a.b" * 43)[:128],  # 128 characters, dots all the way
    ("ñandú.日本語.émoji😀.ß" + "z" * 128)[:128],  # non-ASCII, one character outside the BMP
    "x.y",
    "x:y",  # differs from the one above only in a character that is not allowed
    "x_y",  # what both of them normalise to, before the hash suffix
    "dotted.name/with spaces\tand\u00a0odd whitespace",
    "n" * 1000,
]


def assert_public_names(server: str, names: list[str], hub: MCPHub) -> dict[str, str]:
    """Each raw name's public name: the documented function's, valid, unique, mapped back to the raw name."""
    public = {raw: public_tool_name(server, raw) for raw in names}
    assert len(set(public.values())) == len(names), public
    for raw, name in public.items():
        assert PUBLIC_NAME.fullmatch(name), name
        tool = hub.registry.get(name)
        assert tool is not None, f"{raw!r} is not registered as {name}"
        assert (tool.server_name, tool.raw_name) == (server, raw)
    return public


def test_hostile_names_added_at_run_time_get_valid_public_names_and_reach_the_server() -> None:
    with started_hub(stdio_config("fx")) as hub:
        tools = ToolEvents().attach(hub)
        for raw in HOSTILE_NAMES:
            assert not hub.call_tool("mcp__fx__add_tool", {"name": raw}).is_error
        for raw in HOSTILE_NAMES:
            tools.wait_for(("added", public_tool_name("fx", raw)))
        public = assert_public_names("fx", HOSTILE_NAMES, hub)
        for raw, name in public.items():
            result = hub.call_tool(name, {"text": f"reached {raw}"})
            assert (result.text, result.is_error) == (f"reached {raw}", False)


def test_hostile_names_in_the_first_listing_reach_the_server_as_their_raw_names() -> None:
    flags = [flag for raw in HOSTILE_NAMES for flag in ("--tool", raw)]
    with started_hub(hostile_config("hx", *flags)) as hub:
        assert hub.servers["hx"].state == "ready", repr(hub.servers["hx"])
        public = assert_public_names("hx", HOSTILE_NAMES, hub)
        for raw, name in public.items():
            # The server replies with the raw name it was called by: exactly the one listed.
            assert hub.call_tool(name, {"text": "hello"}).text == f"{raw}|hello"


# -- a tool spelled like another server's namespace -------------------------------------------------
# Server "a" lists "b__x" and server "a__b" lists "x": both are mcp__a__b__x. The registry's
# documented rule: a name another owner already holds rolls the newcomer's generation back (zero
# tools, loudly). Which server is the newcomer is decided by which one lists first; the tests below
# assert the rule and that exactly one owner wins, not which one wins when both start together.

CONTESTED = "mcp__a__b__x"


def namespace_rivals() -> dict[str, dict[str, object]]:
    return {
        "a": hostile_config("a", "--tool", "b__x", "--tool", "own"),
        "a__b": hostile_config("a__b", "--tool", "x"),
    }


@pytest.mark.parametrize("first", ["a", "a__b"])
def test_overlapping_server_names_are_decided_by_configuration_order_not_timing(
    first: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="mcp_sync")
    rivals = namespace_rivals()
    second = "a__b" if first == "a" else "a"
    assert public_tool_name("a", "b__x") == public_tool_name("a__b", "x") == CONTESTED
    with started_hub(rivals[first], rivals[second]) as hub:
        assert hub.servers[first].state == "ready"
        assert hub.servers[second].state == "failed"
        assert isinstance(hub.servers[second].error, ConfigError)
        assert "overlap" in str(hub.servers[second].error)
        assert error_records(caplog, "overlap")
        expected = "b__x|call" if first == "a" else "x|call"
        assert hub.call_tool(CONTESTED, {"text": "call"}).text == expected


@pytest.mark.parametrize("first", ["a", "a__b"])
def test_reload_adding_an_overlapping_server_leaves_the_first_untouched(
    first: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="mcp_sync")
    rivals = namespace_rivals()
    second = "a__b" if first == "a" else "a"
    with started_hub(rivals[first]) as hub:
        held = {tool.name: tool for tool in hub.servers[first].tools}
        hub.reload([rivals[first], rivals[second]])
        assert hub.servers[second].state == "failed"
        assert isinstance(hub.servers[second].error, ConfigError)
        assert hub.servers[second].tools == []
        now = {tool.name: tool for tool in hub.servers[first].tools}
        assert now.keys() == held.keys()
        assert all(now[name] is tool for name, tool in held.items())
        expected = "b__x|call" if first == "a" else "x|call"
        assert hub.call_tool(CONTESTED, {"text": "call"}).text == expected


def test_resync_that_collides_rolls_back_the_whole_generation(caplog: pytest.LogCaptureFixture) -> None:
    # The RFC's case: a host tool already holds a name in the server's namespace.
    caplog.set_level(logging.ERROR, logger="mcp_sync")
    hub = MCPHub([stdio_config("a")])
    hub.registry.register_native(CONTESTED, lambda text: f"native|{text}")
    with hub:
        tools = ToolEvents().attach(hub)
        a_tools = [tool.name for tool in hub.servers["a"].tools]
        holder = hub.registry.get(CONTESTED)
        # Server "a" now also lists "b__x", which is mcp__a__b__x: taken by the host's own tool.
        hub.call_tool("mcp__a__add_tool", {"name": "b__x"})
        for name in a_tools:
            tools.wait_for(("removed", name))
        assert hub.servers["a"].tools == []  # zero tools, not the old generation nor a partial one
        # The rollback is announced first, then logged: wait for the record rather than race it.
        wait_until(lambda: error_records(caplog, "already taken"), timeout=10)
        assert hub.registry.get(CONTESTED) is holder
        assert hub.call_tool(CONTESTED, {"text": "still mine"}).text == "native|still mine"
        assert ("added", CONTESTED) not in tools.events
