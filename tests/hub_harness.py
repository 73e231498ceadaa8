"""Shared pieces of the hub tests: starting fixture servers on either transport and era."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcp_sync import MCPHub, Tool
from tests.support import EventLog, HttpServer, http_config, stdio_config

TRANSPORTS_AND_ERAS = [
    pytest.param("stdio", "modern", id="stdio-2026"),
    pytest.param("stdio", "legacy", id="stdio-2025"),
    pytest.param("http", "modern", id="http-2026"),
    pytest.param("http", "legacy", id="http-2025"),
]


@dataclass
class Served:
    """One fixture server as a hub config, and its HTTP process when it has one."""

    config: dict[str, Any]
    http: HttpServer | None = None


@contextlib.contextmanager
def fixture_server(
    name: str, transport: str, era: str, *flags: str, events: EventLog | None = None, **overrides: Any
) -> Iterator[Served]:
    """A fixture server of the given transport and era, ready to put in a hub's config."""
    era_flags = ("--era", era, *flags)
    if transport == "stdio":
        yield Served(stdio_config(name, *era_flags, events=events, **overrides))
        return
    with HttpServer(*era_flags, events=events) as http:
        yield Served(http_config(name, http.url, **overrides), http)


@contextlib.contextmanager
def started_hub(*configs: dict[str, Any], **kwargs: Any) -> Iterator[MCPHub]:
    hub = MCPHub(configs, **kwargs)
    hub.start()
    try:
        yield hub
    finally:
        hub.close()


@dataclass
class ToolEvents:
    """Records a hub's tool listener events; tests wait on them instead of sleeping."""

    events: list[tuple[str, str]] = field(default_factory=list)
    _condition: threading.Condition = field(default_factory=threading.Condition)

    def attach(self, hub: MCPHub) -> ToolEvents:
        hub.on_tool_added(self._recorder("added"))
        hub.on_tool_removed(self._recorder("removed"))
        return self

    def _recorder(self, kind: str) -> Callable[[Tool], None]:
        def record(tool: Tool) -> None:
            with self._condition:
                self.events.append((kind, tool.name))
                self._condition.notify_all()

        return record

    def wait_for(self, event: tuple[str, str], timeout: float = 10.0) -> None:
        with self._condition:
            found = self._condition.wait_for(lambda: event in self.events, timeout)
        assert found, f"no {event} within {timeout}s; saw {self.events}"
