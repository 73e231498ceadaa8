"""The hub against servers it did not write: the official npm reference servers and a 1.x-SDK server."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import MCPHub, ToolCallCancelledError, ToolCallTimeoutError, public_tool_name
from tests.hub_harness import ToolEvents, started_hub
from tests.support import LEGACY_V1_SERVER, EventLog, HttpServer, ReferenceServers


@pytest.fixture(scope="module")
def everything(reference_servers: ReferenceServers) -> Iterator[MCPHub]:
    with started_hub(reference_servers.everything_config("everything")) as hub:
        yield hub


@pytest.mark.node
def test_everything_server_tools_are_namespaced(everything: MCPHub) -> None:
    names = {tool.raw_name: tool.name for tool in everything.servers["everything"].tools}
    assert names["echo"] == "mcp__everything__echo"
    assert names["get-tiny-image"] == "mcp__everything__get-tiny-image"
    assert all(name == public_tool_name("everything", raw) for raw, name in names.items())


@pytest.mark.node
def test_everything_server_echo_round_trip(everything: MCPHub) -> None:
    result = everything.call_tool("mcp__everything__echo", {"message": "hello"})
    assert not result.is_error
    assert "hello" in result.text


@pytest.mark.node
def test_everything_server_image_is_offered_and_text_kept(everything: MCPHub) -> None:
    result = everything.call_tool("mcp__everything__get-tiny-image")
    assert not result.is_error
    assert result.text  # the tool's text blocks, joined
    [image] = result.images
    assert image.mime_type == "image/png"
    assert image.data.startswith(b"\x89PNG")


@pytest.mark.node
def test_everything_server_bad_arguments_come_back_as_an_error_result(everything: MCPHub) -> None:
    result = everything.call_tool("mcp__everything__get-sum", {"a": "not a number"})
    assert result.is_error


@pytest.mark.node
def test_everything_server_long_operation_reports_progress_and_can_be_cancelled(everything: MCPHub) -> None:
    progressed = threading.Event()
    cancel = threading.Event()

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progressed.set()
        cancel.set()

    with pytest.raises(ToolCallCancelledError):
        everything.call_tool(
            "mcp__everything__trigger-long-running-operation",
            {"duration": 30, "steps": 30},
            cancel=cancel,
            progress=on_progress,
        )
    assert progressed.is_set()
    assert everything.call_tool("mcp__everything__echo", {"message": "still usable"}).text


@pytest.mark.node
def test_filesystem_server_reads_a_file_by_its_raw_name(
    reference_servers: ReferenceServers, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("contents of a", encoding="utf-8")
    with started_hub(reference_servers.filesystem_config("fs", tmp_path)) as hub:
        result = hub.call_tool("mcp__fs__read_text_file", {"path": str(tmp_path / "a.txt")})
        denied = hub.call_tool("mcp__fs__read_text_file", {"path": "/etc/hostname"})
    assert result.text == "contents of a"
    assert denied.is_error


def v1_stdio_config(python: Path, name: str, events: EventLog | None = None) -> dict[str, Any]:
    args = [str(LEGACY_V1_SERVER)] + (["--events", str(events)] if events is not None else [])
    return {"server_name": name, "transport": "stdio", "command": str(python), "args": args}


def test_v1_server_over_stdio_calls_and_times_out(legacy_v1_python: Path, events: EventLog) -> None:
    with started_hub(v1_stdio_config(legacy_v1_python, "v1", events)) as hub:
        assert hub.servers["v1"].protocol_version != "2026-07-28"
        assert hub.call_tool("mcp__v1__echo", {"text": "old sdk"}).text == "old sdk"
        with pytest.raises(ToolCallTimeoutError):
            hub.call_tool("mcp__v1__sleep", {"seconds": 30, "tag": "v1"}, timeout=0.5)
        events.wait_for("cancelled", tag="v1")


def test_v1_server_over_stdio_announces_tool_changes(legacy_v1_python: Path) -> None:
    with started_hub(v1_stdio_config(legacy_v1_python, "v1")) as hub:
        tools = ToolEvents().attach(hub)
        hub.call_tool("mcp__v1__add_tool", {"name": "late"})
        tools.wait_for(("added", "mcp__v1__late"))
        hub.call_tool("mcp__v1__remove_tool", {"name": "late"})
        tools.wait_for(("removed", "mcp__v1__late"))


def test_published_sqlite_server_without_templates_keeps_its_resources_and_prompts(
    legacy_v1_python: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """mcp-server-sqlite (PyPI, on the 1.x SDK) lists memo://insights and answers
    resources/templates/list with "method not found", as a 1.x server without templates does."""
    caplog.set_level(logging.DEBUG, logger="mcp_sync")
    sqlite = legacy_v1_python.parent / "mcp-server-sqlite"
    config = {
        "server_name": "sqlite",
        "transport": "stdio",
        "command": str(sqlite),
        "args": ["--db-path", str(tmp_path / "test.db")],
    }
    with started_hub(config) as hub:
        assert [(r.uri, r.server_name) for r in hub.resources()] == [("memo://insights", "sqlite")]
        assert hub.resource_templates() == []
        assert [p.name for p in hub.prompts()] == ["mcp__sqlite__mcp-demo"]
        assert "No business insights" in hub.read_resource("memo://insights").text
        assert "mcp__sqlite__list_tables" in hub.registry
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("does not list resource templates" in r.getMessage() for r in caplog.records)


def test_v1_server_over_http_calls_and_cancels(legacy_v1_python: Path, events: EventLog) -> None:
    with HttpServer(events=events, script=LEGACY_V1_SERVER, python=legacy_v1_python) as http:
        config = {"server_name": "v1web", "transport": "streamable-http", "url": http.url}
        with started_hub(config) as hub:
            assert hub.call_tool("mcp__v1web__echo", {"text": "over http"}).text == "over http"
            cancel = threading.Event()
            threading.Thread(target=lambda: (events.wait_for("started", tag="h"), cancel.set())).start()
            with pytest.raises(ToolCallCancelledError):
                hub.call_tool("mcp__v1web__sleep", {"seconds": 30, "tag": "h"}, cancel=cancel)
            events.wait_for("cancelled", tag="h")
