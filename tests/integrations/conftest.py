"""Fixtures of the framework adapter tests, shared by every framework's module so that each transport's
servers start once. Package-scoped: they are closed before the rest of the suite, whose tests check that
no server thread or process outlives its hub."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcp_sync import MCPHub
from tests.integrations.support import (
    RESEARCH_SERVER,
    TRANSPORTS,
    TwoServers,
    register_media_tool,
    register_rich_tool,
    two_servers,
)
from tests.support import ReferenceServers


@pytest.fixture(scope="package", params=TRANSPORTS)
def servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoServers]:
    """Fixture servers `a` and `b` in one hub, over stdio or Streamable HTTP."""
    with two_servers(request.param, tmp_path_factory.mktemp(request.param)) as served:
        yield served


@pytest.fixture(scope="package")
def rich_hub() -> Iterator[MCPHub]:
    """A hub without servers; its native tool `book_trip` has `RICH_SCHEMA` and echoes its arguments."""
    with MCPHub([]) as hub:
        register_rich_tool(hub)
        yield hub


@pytest.fixture(scope="package")
def media_hub() -> Iterator[MCPHub]:
    """A hub without servers; its native tool `media` returns text, audio, a PDF and a PNG resource."""
    with MCPHub([]) as hub:
        register_media_tool(hub)
        yield hub


@pytest.fixture(scope="package")
def research_hub(reference_servers: ReferenceServers) -> Iterator[MCPHub]:
    """The official reference server over stdio: its `simulate-research-query` runs only as a task. On its
    fast clock (`ReferenceServers.everything_argv`): the task's four stages take 0.1 s each."""
    with MCPHub([reference_servers.everything_config(RESEARCH_SERVER, fast=True)]) as hub:
        yield hub


@pytest.fixture(scope="package")
def research_hub_real_clock(reference_servers: ReferenceServers) -> Iterator[MCPHub]:
    """The same on its real clock: the task lasts four seconds, the margin of a test that stops it."""
    with MCPHub([reference_servers.everything_config(RESEARCH_SERVER)]) as hub:
        yield hub
