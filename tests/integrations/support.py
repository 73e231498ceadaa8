"""Shared pieces of the framework adapter tests: two fixture servers in one hub on either transport, a
schema with every feature an adapter must keep, and a native tool that echoes its arguments back."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcp_sync import MCPHub, ToolResult
from tests.hub_harness import ToolEvents, started_hub
from tests.support import EventLog, HttpServer, http_config, stdio_config

TRANSPORTS = [pytest.param("stdio", id="stdio"), pytest.param("http", id="http")]

Calls = list[tuple[str, dict[str, Any]]]
"""The tool calls of one turn of a scripted model: (name, arguments) pairs."""
Step = Calls | str | Callable[[list[str]], Calls | str]
"""One turn of a scripted model: tool calls, a final text, or a function of the tool names it is offered."""

RESEARCH_SERVER = "ref"
RESEARCH_TOOL = f"mcp__{RESEARCH_SERVER}__simulate-research-query"
"""The reference server's tool that requires a task (four stages of a second each, of 0.1 s on the
fast clock of `research_hub`)."""
RESEARCH_REPORT = "# Research Report: tides"
"""How its result starts for `{"topic": "tides"}`."""

RICH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Book a trip.",
    "properties": {
        "city": {"type": "string", "description": "Where to go."},
        "mode": {"type": "string", "enum": ["train", "plane"], "description": "How to travel."},
        "travellers": {
            "type": "array",
            "description": "Who travels.",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Full name."},
                    "age": {"type": "integer", "minimum": 0},
                },
                "required": ["name"],
            },
        },
        "home": {"$ref": "#/$defs/Address", "description": "Where the travellers live."},
        "notes": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    },
    "required": ["city", "mode", "travellers"],
    "$defs": {
        "Address": {
            "type": "object",
            "description": "A postal address.",
            "properties": {
                "street": {"type": "string", "description": "Street and number."},
                "country": {"type": "string", "enum": ["FR", "DE"]},
            },
            "required": ["street"],
        }
    },
}
"""Descriptions, required fields, an enum, an array of nested objects, a `$ref`, an optional nullable."""

RICH_ARGUMENTS = {
    "city": "Lyon",
    "mode": "train",
    "travellers": [{"name": "Ada", "age": 36}],
    "home": {"street": "1 Main St", "country": "FR"},
}


def register_rich_tool(hub: MCPHub, name: str = "book_trip") -> None:
    """A native tool with `RICH_SCHEMA` that answers with the JSON of the arguments it received."""
    hub.registry.register_native(
        name,
        lambda **arguments: json.dumps(arguments, sort_keys=True),
        description="Book a trip for a group.",
        input_schema=RICH_SCHEMA,
    )


PNG_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""The 1x1 PNG of the fixture server's `blocks` tool (text "first", "second", this image, "third")."""
PNG = base64.b64decode(PNG_BASE64)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "  # the start of a WAV file: the adapters pass bytes on unread
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
MEDIA_CONTENT: tuple[types.ContentBlock, ...] = (
    types.TextContent(type="text", text="the recording"),
    types.AudioContent(type="audio", data=base64.b64encode(WAV).decode(), mime_type="audio/wav"),
    types.EmbeddedResource(
        type="resource",
        resource=types.BlobResourceContents(
            uri="file:///report.pdf", blob=base64.b64encode(PDF).decode(), mime_type="application/pdf"
        ),
    ),
    types.EmbeddedResource(
        type="resource",
        resource=types.BlobResourceContents(uri="file:///pixel.png", blob=PNG_BASE64, mime_type="image/png"),
    ),
)
"""Text, audio, an embedded PDF and an embedded PNG, as the native tool `media` returns them."""


def register_media_tool(hub: MCPHub, name: str = "media") -> None:
    """A native tool whose result holds `MEDIA_CONTENT`: the blocks no fixture server tool returns."""
    hub.registry.register_native(
        name,
        lambda: ToolResult(text="the recording", content=MEDIA_CONTENT),
        description="Return a recording, a report and a picture.",
    )


@dataclass
class TwoServers:
    """Fixture servers `a` (recording events) and `b` in one started hub; both list the same raw names."""

    hub: MCPHub
    events: EventLog
    transport: str
    tool_events: ToolEvents


@contextlib.contextmanager
def two_servers(transport: str, directory: Path) -> Iterator[TwoServers]:
    events = EventLog(directory / "a-events.jsonl")
    with contextlib.ExitStack() as stack:
        if transport == "stdio":
            configs = [stdio_config("a", events=events), stdio_config("b")]
        else:
            https = [HttpServer(events=events), HttpServer()]
            for http in https:
                stack.callback(http.close)
                stack.callback(http.stop)
            with ThreadPoolExecutor(len(https)) as pool:  # each start waits for its server to listen
                list(pool.map(HttpServer.start, https))
            configs = [http_config("a", https[0].url), http_config("b", https[1].url)]
        hub = stack.enter_context(started_hub(*configs))
        assert {name: server.state for name, server in hub.servers.items()} == {"a": "ready", "b": "ready"}
        yield TwoServers(hub, events, transport, ToolEvents().attach(hub))


_ids = itertools.count(1)


def unique(prefix: str) -> str:
    """A name no other test in the run uses (tool names added to shared servers, sleep tags)."""
    return f"{prefix}{next(_ids)}"


def new_task_ids(hub: MCPHub, before: set[str]) -> list[str]:
    """The ids of the research server's tasks that are not in `before` (tasks made since it was read)."""
    return [info.task_id for info in hub.list_tasks(RESEARCH_SERVER) if info.task_id not in before]


def task_ids(hub: MCPHub) -> set[str]:
    return {info.task_id for info in hub.list_tasks(RESEARCH_SERVER)}


KITE = "mcp__fx__kite"
"""A tool the fixture server adds on request (`kite_hub`), to pin and then remove (`remove_kite`)."""


@contextlib.contextmanager
def kite_hub() -> Iterator[MCPHub]:
    """A hub with the fixture server `fx`, which has added the tool `KITE`."""
    with MCPHub([stdio_config("fx")]) as hub:
        added = threading.Event()
        hub.on_tool_added(lambda tool: tool.name == KITE and added.set())
        hub.call_tool("mcp__fx__add_tool", {"name": "kite"})
        assert added.wait(20)
        yield hub


def remove_kite(hub: MCPHub) -> None:
    """Have the fixture server remove `KITE`, and wait until the registry has let it go."""
    gone = threading.Event()
    hub.on_tool_removed(lambda tool: tool.name == KITE and gone.set())
    hub.call_tool("mcp__fx__remove_tool", {"name": "kite"})
    assert gone.wait(20)
