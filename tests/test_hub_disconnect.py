"""Servers that go away: noticed promptly, tools unregistered, calls failed, others untouched."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import MCPHub, Prompt, Resource, ServerDisconnectedError, ToolCallError, ToolNotFoundError
from mcp_sync._hub.connection import ServerConnection
from mcp_sync._hub.registry import ToolRegistry
from mcp_sync._runtime.lifecycle import CONNECTION_TRANSITIONS, ConnectionState, StateMachine
from tests.hub_harness import TRANSPORTS_AND_ERAS, ToolEvents, fixture_server, started_hub
from tests.support import REPO_ROOT, EventLog, pid_alive, stdio_config, wait_until


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


class _StateWatch(StateMachine[ConnectionState]):
    """A connection's state machine that notes, at each move, what the registry held at that moment:
    what another thread reading the state and then the registry could see."""

    def __init__(self, registry: ToolRegistry, server: str, seen: list[tuple[str, list[str]]]) -> None:
        super().__init__("connecting", CONNECTION_TRANSITIONS)
        self._registry, self._server, self._seen = registry, server, seen

    def move(self, to: ConnectionState) -> bool:
        moved = super().move(to)
        if moved:
            self._seen.append((to, [tool.name for tool in self._registry.server_tools(self._server)]))
        return moved


@pytest.mark.parametrize("end", ["crash", "close"])
def test_a_server_in_an_end_state_never_shows_its_tools(end: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, list[str]]] = []
    made = ServerConnection.__init__

    def watched(
        self: ServerConnection, config: Any, registry: ToolRegistry, *rest: Any, **options: Any
    ) -> None:
        made(self, config, registry, *rest, **options)
        self._machine = _StateWatch(registry, self.name, seen)

    monkeypatch.setattr(ServerConnection, "__init__", watched)
    removed_while: list[str] = []
    with started_hub(stdio_config("dying")) as hub:
        hub.on_tool_removed(lambda tool: removed_while.append(hub.servers["dying"].state))
        assert seen == [("ready", seen[0][1])] and "mcp__dying__echo" in seen[0][1]
        if end == "crash":
            with pytest.raises(ServerDisconnectedError):
                hub.call_tool("mcp__dying__crash", timeout=10)
            wait_for_state(hub, "dying", "disconnected", timeout=5)
        else:
            hub.close()
        hub.registry.dispatcher.flush()
    final = "disconnected" if end == "crash" else "closed"
    assert seen[1] == (final, []), seen
    assert removed_while and set(removed_while) == {final}, removed_while


@pytest.mark.parametrize("end", ["crash", "close"])
def test_the_removal_of_an_ended_servers_resources_and_prompts_is_posted_after_its_state_moved(
    end: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    posted_while: list[tuple[str, str]] = []
    heard_while: list[str] = []
    with started_hub(stdio_config("dying")) as hub:
        assert hub.resources() and hub.prompts()
        dispatcher = hub.registry.dispatcher
        post = dispatcher.post

        def noted(callbacks: Any, *args: Any) -> None:
            if args and isinstance(args[0], Resource | Prompt):
                posted_while.append((type(args[0]).__name__, hub.servers["dying"].state))
            post(callbacks, *args)

        monkeypatch.setattr(dispatcher, "post", noted)
        hub.on_resource_removed(lambda resource: heard_while.append(hub.servers["dying"].state))
        hub.on_prompt_removed(lambda prompt: heard_while.append(hub.servers["dying"].state))
        if end == "crash":
            with pytest.raises(ServerDisconnectedError):
                hub.call_tool("mcp__dying__crash", timeout=10)
            wait_for_state(hub, "dying", "disconnected", timeout=5)
        else:
            hub.close()
        dispatcher.flush()
    final = "disconnected" if end == "crash" else "closed"
    assert {kind for kind, _ in posted_while} == {"Resource", "Prompt"}, posted_while
    assert {state for _, state in posted_while} == {final}, posted_while
    assert heard_while and set(heard_while) == {final}, heard_while


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


# -- a server that dies mid-call: the call and the state say how it ended ------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "how"),
    [
        pytest.param("crash", {}, "the process exited with status 3", id="exit-status"),
        pytest.param(
            "crash_by_signal", {"name": "SIGTERM"}, "the process was killed by SIGTERM", id="signal"
        ),
    ],
)
def test_a_call_whose_server_dies_says_how_it_ended_and_the_state_is_disconnected(
    tool: str, arguments: dict[str, str], how: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")
    with started_hub(stdio_config("dying", "--stderr-lines", "2")) as hub:
        with pytest.raises(ServerDisconnectedError) as raised:
            hub.call_tool(f"mcp__dying__{tool}", arguments, timeout=10)
        server = hub.servers["dying"]
        state, error = server.state, server.error  # read at once: by the time the call raises
        tools_left = [tool.name for tool in hub.registry.tools() if tool.server_name == "dying"]
    message = str(raised.value)
    assert f"disconnected during the call to mcp__dying__{tool}" in message
    assert how in message
    assert "fixture stderr line 1" in message
    assert raised.value.tool == f"mcp__dying__{tool}"
    assert state == "disconnected"
    assert isinstance(error, ServerDisconnectedError)
    assert how in str(error)
    assert not tools_left
    logged = [record.getMessage() for record in caplog.records if record.name.startswith("mcp_sync")]
    assert not [text for text in logged if "listing again" in text or "re-listing" in text], logged


def test_calls_in_flight_when_the_server_dies_say_how_it_ended(tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    with started_hub(stdio_config("dying", events=events)) as hub:
        future = hub.submit("mcp__dying__sleep", {"seconds": 30, "tag": "waiting"})
        events.wait_for("started", tag="waiting")
        with pytest.raises(ServerDisconnectedError):
            hub.call_tool("mcp__dying__crash", timeout=10)
        with pytest.raises(ServerDisconnectedError) as raised:
            future.result(timeout=5)
    assert "disconnected during the call to mcp__dying__sleep" in str(raised.value)
    assert "the process exited with status 3" in str(raised.value)


# -- a server's helper processes end with it ---------------------------------------------------------


def helper_of(events: EventLog) -> int:
    pid = int(events.wait_for("helper_started")["pid"])
    assert pid_alive(pid)
    return pid


def wait_gone(pid: int, what: str) -> None:
    wait_until(lambda: not pid_alive(pid), timeout=10, message=f"{what} (pid {pid}) is still running")


@pytest.mark.parametrize("ignores_sigterm", [False, True], ids=["helper", "helper-ignoring-sigterm"])
def test_helpers_of_a_server_that_died_are_stopped_when_the_disconnect_is_noticed(
    ignores_sigterm: bool, tmp_path: Path
) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    flags = ["--helper", "quiet", *(["--ignore-signals"] if ignores_sigterm else [])]
    with started_hub(stdio_config("srv", *flags, events=events)) as hub:
        helper = helper_of(events)
        hub.call_tool("mcp__srv__exit_later", {"delay": 0.1})
        wait_for_state(hub, "srv", "disconnected", timeout=10)
        wait_gone(helper, "the helper of a server that died")
    assert not pid_alive(helper)


@pytest.mark.parametrize("ignores_sigterm", [False, True], ids=["helper", "helper-ignoring-sigterm"])
def test_close_stops_the_helpers_of_a_server_whose_main_process_died_first(
    ignores_sigterm: bool, tmp_path: Path
) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    # The helper shares the server's stdout, so the server's death goes unnoticed until close().
    flags = ["--helper", "inherit", *(["--ignore-signals"] if ignores_sigterm else [])]
    hub = MCPHub([stdio_config("srv", *flags, events=events)]).start()
    try:
        helper = helper_of(events)
        leader = hub.servers["srv"].pid
        assert leader is not None
        hub.call_tool("mcp__srv__exit_later", {"delay": 0.1})
        wait_gone(leader, "the server")
    finally:
        hub.close()
    assert not pid_alive(helper), "the helper outlived close()"


def test_kill_stops_the_helpers_of_a_server_whose_main_process_died_first(tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    with started_hub(stdio_config("srv", "--helper", "inherit", "--ignore-signals", events=events)) as hub:
        helper = helper_of(events)
        server = hub.servers["srv"]
        assert isinstance(server, ServerConnection) and server.pid is not None
        hub.call_tool("mcp__srv__exit_later", {"delay": 0.1})
        wait_gone(server.pid, "the server")
        server.kill()
        wait_gone(helper, "the helper after kill()")


def test_helpers_of_a_server_that_died_do_not_outlive_a_script_that_never_closes(tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    script = tmp_path / "forgetful.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {os.fspath(REPO_ROOT)!r})
            from mcp_sync import MCPHub
            from tests.support import pid_alive, stdio_config, wait_until
            config = stdio_config("srv", "--helper", "inherit", "--ignore-signals", events={str(events)!r})
            hub = MCPHub([config]).start()
            leader = hub.servers["srv"].pid
            hub.call_tool("mcp__srv__exit_later", {{"delay": 0.1}})
            wait_until(lambda: not pid_alive(leader), timeout=10)
            """
        )
    )
    done = subprocess.run([sys.executable, os.fspath(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    helper = int(events.wait_for("helper_started")["pid"])
    wait_gone(helper, "the helper of a server in a script that never closed its hub")
