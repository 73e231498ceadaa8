"""Notebook display: the hub's and the registry's HTML tables, escaped; short plain reprs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_sync import MCPHub, ToolRegistry
from tests.support import demo_config

BROKEN = {"server_name": "broken", "transport": "stdio", "command": "no-such-<server>&command"}
HOSTILE = '<script>alert("x")</script> & <b>bold</b>'
ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"


@pytest.fixture(scope="module")
def hub() -> Iterator[MCPHub]:
    registry = ToolRegistry()
    registry.register_native("evil", lambda: "", description=f"{HOSTILE}\nsecond line")
    registry.register_native("plain", lambda: "", description=None)
    with MCPHub([demo_config(), BROKEN], registry=registry) as hub:
        assert hub.servers["demo"].state == "ready" and hub.servers["broken"].state == "failed"
        yield hub
    registry.close()  # a hub leaves a registry it was given open


def rows(html: str) -> list[list[str]]:
    """Each table row's cells as text (tags removed)."""
    return [
        [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", html, re.S)
    ]


def test_hub_html_shows_each_server_with_state_tool_count_and_error(hub: MCPHub) -> None:
    table = rows(hub._repr_html_())
    demo = next(row for row in table if row[0] == "demo")
    broken = next(row for row in table if row[0] == "broken")
    assert demo[1:4] == ["stdio", "ready", "8"]
    assert broken[1:4] == ["stdio", "failed", "0"]
    assert "could not start" in broken[-1]


def test_hub_html_lists_every_tool_with_its_server(hub: MCPHub) -> None:
    table = rows(hub._repr_html_())
    tools = {row[0]: row[1] for row in table if len(row) == 3}
    assert tools["mcp__demo__word_count"] == "demo"
    assert tools["evil"] == "native"
    assert set(tools) - {"tool"} == {tool.name for tool in hub.tools()}


def test_html_escapes_descriptions_and_errors(hub: MCPHub) -> None:
    for html in (hub._repr_html_(), hub.registry._repr_html_()):
        assert "<script>" not in html and "<b>bold</b>" not in html
        assert ESCAPED in html
    assert "no-such-&lt;server&gt;&amp;command" in hub._repr_html_()
    assert "no-such-<server>" not in hub._repr_html_()


def test_registry_html_shows_the_first_line_of_each_description(hub: MCPHub) -> None:
    table = {row[0]: row for row in rows(hub.registry._repr_html_())}
    assert (
        table["evil"][2] == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"
    )
    assert table["plain"][2] == ""
    assert table["mcp__demo__word_count"][2] == "Count the words, characters and lines of a text."


def test_html_of_a_hub_that_has_not_started_says_so() -> None:
    html = MCPHub([demo_config()])._repr_html_()
    assert "no servers started" in html and "no tools" in html


@pytest.mark.parametrize("target", ["hub", "registry"])
def test_plain_repr_stays_one_short_line(hub: MCPHub, target: str) -> None:
    obj: Any = hub if target == "hub" else hub.registry
    text = repr(obj)
    assert "\n" not in text and len(text) < 100
    assert "<table" not in text
