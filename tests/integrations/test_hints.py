"""What every adapter does with the server's hints about a tool and with a tool that runs as a task: the
hints reach the framework where it has a place for them (LangChain's `metadata`) and every adapter's
`include=` filter, and a tool's call gets the adapter's timeout or none, so that the hub's default
applies (which lets a task run as long as it lives)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import MCPHub, Tool, ToolCallTimeoutError, function_spec
from tests.hub_harness import started_hub
from tests.integrations.support import TwoServers
from tests.support import SERVERS_DIR, EventLog, stdio_config

TASKS_SERVER = SERVERS_DIR / "tasks_server.py"
FRAMEWORKS = ["langchain", "llamaindex", "haystack", "dspy", "smolagents"]


def adapter_tools(framework: str, hub: MCPHub, include: Callable[[Tool], bool] | None = None) -> list[Any]:
    """The hub's tools as `framework`'s adapter makes them."""
    if framework == "langchain":
        from mcp_sync.integrations.langchain import langchain_tools

        return list(langchain_tools(hub, include=include))
    if framework == "llamaindex":
        from mcp_sync.integrations.llamaindex import llamaindex_tools

        return list(llamaindex_tools(hub, include=include))
    if framework == "haystack":
        from mcp_sync.integrations.haystack import HubToolset

        return list(HubToolset(hub, include=include))
    if framework == "dspy":
        from mcp_sync.integrations.dspy import dspy_tools

        return list(dspy_tools(hub, include=include))
    from mcp_sync.integrations.smolagents import smolagents_tools

    return list(smolagents_tools(hub, include=include))


def framework_name(tool: Any) -> str:
    return str(
        tool.metadata.name if hasattr(tool, "metadata") and hasattr(tool.metadata, "name") else tool.name
    )


def call_through(framework: str, tool: Any, arguments: dict[str, Any]) -> Any:
    """A blocking call of one adapter tool, the way its framework makes it."""
    if framework == "langchain":
        return tool.invoke(arguments)
    if framework == "llamaindex":
        return tool.call(**arguments)
    if framework == "haystack":
        return tool.invoke(**arguments)
    return tool(**arguments)


# -- the hints -----------------------------------------------------------------------------------------


def test_langchain_tools_carry_the_hints_in_their_metadata(servers: TwoServers) -> None:
    from mcp_sync.integrations.langchain import langchain_tools

    tools = {tool.name: tool for tool in langchain_tools(servers.hub)}
    assert tools["mcp__a__echo"].metadata == {
        "mcp_sync_name": "mcp__a__echo",
        "server_name": "a",
        "title": "Echo",
        "readOnlyHint": True,
        "openWorldHint": False,
    }
    assert tools["mcp__a__add"].metadata == {
        "mcp_sync_name": "mcp__a__add",
        "server_name": "a",
        "idempotentHint": True,
        "destructiveHint": False,
    }
    crash = tools["mcp__b__crash"].metadata
    assert crash is not None and crash["destructiveHint"] is True
    assert tools["mcp__a__sleep"].metadata == {"mcp_sync_name": "mcp__a__sleep", "server_name": "a"}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_adapter_offers_what_a_filter_on_the_hints_keeps(servers: TwoServers, framework: str) -> None:
    def read_only(tool: Tool) -> bool:
        return tool.annotations is not None and tool.annotations.read_only

    names = sorted(framework_name(tool) for tool in adapter_tools(framework, servers.hub, include=read_only))
    assert names == ["mcp__a__echo", "mcp__b__echo"]


def test_the_function_spec_stays_the_openai_shape(servers: TwoServers) -> None:
    echo = servers.hub.registry.get("mcp__a__echo")
    assert echo is not None and echo.annotations is not None
    spec = function_spec(echo)
    assert set(spec) == {"type", "function"}
    assert set(spec["function"]) == {"name", "description", "parameters"}


# -- a task tool's timeout -----------------------------------------------------------------------------


class Timeouts:
    """The hub's `call_tool` and `submit`, noting the timeout each call was given."""

    def __init__(self, hub: MCPHub, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[float | None] = []
        call_tool, submit = hub.call_tool, hub.submit

        def noted_call(name: str, arguments: Any = None, **options: Any) -> Any:
            self.seen.append(options.get("timeout"))
            return call_tool(name, arguments, **options)

        def noted_submit(name: str, arguments: Any = None, **options: Any) -> Any:
            self.seen.append(options.get("timeout"))
            return submit(name, arguments, **options)

        monkeypatch.setattr(hub, "call_tool", noted_call)
        monkeypatch.setattr(hub, "submit", noted_submit)


@pytest.fixture(scope="module")
def tasks_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MCPHub]:
    """The tasks fixture server (2026-07-28, the tasks extension) with no timeout in its entry."""
    events = tmp_path_factory.mktemp("tasks") / "events.jsonl"
    with started_hub(stdio_config("t", script=TASKS_SERVER, events=events)) as hub:
        yield hub


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_adapter_leaves_a_task_tools_timeout_to_the_hub(
    tasks_hub: MCPHub, framework: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    timeouts = Timeouts(tasks_hub, monkeypatch)
    (stages,) = adapter_tools(framework, tasks_hub, include=lambda tool: tool.raw_name == "stages")
    result = call_through(framework, stages, {"count": 2, "delay": 0.05, "tag": framework})
    assert f"done 2 stages {framework}" in str(result)
    assert timeouts.seen == [None]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_plain_tool_of_a_server_with_tasks_called_through_an_adapter_keeps_the_servers_timeout(
    tasks_hub: MCPHub, framework: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    timeouts = Timeouts(tasks_hub, monkeypatch)
    (plain,) = adapter_tools(framework, tasks_hub, include=lambda tool: tool.raw_name == "plain_slow")
    assert tasks_hub.registry.get("mcp__t__plain_slow").task_support == "optional"  # the server decides
    result = call_through(framework, plain, {"seconds": 0.01})
    assert "slept" in str(result)
    assert timeouts.seen == [None]


def test_an_async_task_tool_call_through_an_adapter_leaves_its_timeout_to_the_hub(
    tasks_hub: MCPHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_sync.integrations.langchain import langchain_tool

    timeouts = Timeouts(tasks_hub, monkeypatch)
    stages = langchain_tool(tasks_hub, "mcp__t__stages")
    result = asyncio.run(stages.ainvoke({"count": 2, "delay": 0.05, "tag": "async"}))
    assert "done 2 stages async" in str(result)
    assert timeouts.seen == [None]


def test_the_adapters_own_timeout_bounds_a_task_tool(
    tasks_hub: MCPHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_sync.integrations.dspy import dspy_tool

    timeouts = Timeouts(tasks_hub, monkeypatch)
    stages = dspy_tool(tasks_hub, "mcp__t__stages", timeout=0.3)
    with pytest.raises(ToolCallTimeoutError):
        stages(count=50, delay=0.2, tag="own-timeout")
    assert timeouts.seen == [0.3]


def test_the_servers_timeout_bounds_an_adapters_call_until_its_task_is_created(tmp_path: Path) -> None:
    from mcp_sync.integrations.smolagents import smolagents_tool

    events = EventLog(tmp_path / "events.jsonl")
    config = stdio_config(
        "t", "--gates", str(tmp_path), script=TASKS_SERVER, events=events, tool_call_timeout_ms=300
    )
    with started_hub(config) as hub:
        gated, plain = smolagents_tool(hub, "mcp__t__gated"), smolagents_tool(hub, "mcp__t__plain_slow")
        with pytest.raises(ToolCallTimeoutError):
            gated(tag="withheld", hold=["create"])  # the server holds back its answer: no task yet
        with pytest.raises(ToolCallTimeoutError):
            plain(seconds=60)  # answered plainly, never with a task
        stages = smolagents_tool(hub, "mcp__t__stages")
        assert "done 4 stages outlives" in str(stages(count=4, delay=0.25, tag="outlives"))


def test_a_plain_tool_keeps_the_servers_timeout(servers: TwoServers, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sync.integrations.haystack import haystack_tool

    timeouts = Timeouts(servers.hub, monkeypatch)
    assert haystack_tool(servers.hub, "mcp__a__echo").invoke(text="plain") == "plain"
    assert timeouts.seen == [None]
