"""Operations on one hub from several threads at once, and interrupted half way: `reload()` while
`start()` runs, a sign-out's reconnection racing a `reload()`, and Ctrl-C inside `reload()`.

Each race is made to happen, not hoped for: a server held in its start-up (`--hold-start`), or a hook
that pauses one thread (or raises `KeyboardInterrupt` in it) at the chosen step while the other acts;
and a real SIGINT to a script (tests/hosts/interrupt_reload.py) while its reload stops a server.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import MCPHub
from mcp_sync._hub import servers
from mcp_sync._hub.connection import ServerConnection
from mcp_sync._hub.reload import ReloadPlan, ReloadResult
from tests.hosts._common import HostProcess, reap_servers
from tests.support import EventLog, HttpServer, http_config, stdio_config, wait_until

# Waits for a server's event, a thread, or a state: generous, since each ends at an event.
EVENT_TIMEOUT = 30.0
# The interrupted script's whole run: a start, a reload, the recovery and a close, each bounded there.
HOST_TIMEOUT = 120.0


def run_in_thread(target: Callable[[], object], name: str) -> tuple[threading.Thread, list[BaseException]]:
    """Run `target` on a thread; the list receives what it raised, if anything."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread, raised


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, EventLog]]:
    """A file whose creation lets a `--hold-start` server go on, and that server's event log; the file
    is created at the end whatever happened, so no server is left holding."""
    release = tmp_path / "release"
    yield release, EventLog(tmp_path / "held.jsonl")
    release.touch()


# -- reload() while start() runs -----------------------------------------------------------------------


def test_reload_during_start_starts_the_server_it_adds(held: tuple[Path, EventLog]) -> None:
    release, events = held
    slow = stdio_config("slow", "--hold-start", str(release), events=events)
    hub = MCPHub([slow])
    starter, raised = run_in_thread(hub.start, "test-start")
    try:
        events.wait_for("holding", timeout=EVENT_TIMEOUT)
        result = hub.reload([slow, stdio_config("added")])
        release.touch()
        starter.join(EVENT_TIMEOUT)
        assert not starter.is_alive() and not raised, raised
        assert result.started == ("added",)
        states = {name: server.state for name, server in hub.servers.items()}
        assert states == {"slow": "ready", "added": "ready"}
        assert hub.call_tool("mcp__added__echo", {"text": "hi"}).text == "hi"
    finally:
        hub.close()


def test_reload_during_start_changes_the_server_start_was_connecting(held: tuple[Path, EventLog]) -> None:
    release, events = held
    slow = stdio_config("slow", "--hold-start", str(release), events=events)
    hub = MCPHub([slow])
    starter, raised = run_in_thread(hub.start, "test-start")
    try:
        events.wait_for("holding", timeout=EVENT_TIMEOUT)
        result = hub.reload([stdio_config("slow", exclude_tools=["blocks"])])  # not held
        release.touch()
        starter.join(EVENT_TIMEOUT)
        assert not starter.is_alive() and not raised, raised
        assert result.restarted == ("slow",)
        assert hub.servers["slow"].state == "ready"
        assert list(hub.servers["slow"].config.exclude_tools or ()) == ["blocks"]
        assert "mcp__slow__echo" in hub.registry and "mcp__slow__blocks" not in hub.registry
    finally:
        hub.close()


def test_reload_during_start_removes_the_server_start_was_connecting(held: tuple[Path, EventLog]) -> None:
    release, events = held
    slow = stdio_config("slow", "--hold-start", str(release), events=events)
    hub = MCPHub([slow, stdio_config("other")])
    starter, raised = run_in_thread(hub.start, "test-start")
    try:
        events.wait_for("holding", timeout=EVENT_TIMEOUT)
        hub.reload([stdio_config("other")])
        starter.join(EVENT_TIMEOUT)
        assert not starter.is_alive() and not raised, raised
        assert {name: server.state for name, server in hub.servers.items()} == {"other": "ready"}
        assert hub.state == "running"
    finally:
        hub.close()


# -- a sign-out's reconnection racing reload() -----------------------------------------------------------


@pytest.fixture
def web() -> Iterator[HttpServer]:
    with HttpServer() as server:
        yield server


def pause_after_stopping(
    monkeypatch: pytest.MonkeyPatch, thread_name: str
) -> tuple[threading.Event, threading.Event]:
    """Make the thread named `thread_name` pause right after it has stopped connections (the step
    between stopping a server and starting its replacement); returns (paused, go_on)."""
    paused, go_on = threading.Event(), threading.Event()
    stop = servers.ServerSet._stop

    def stop_then_pause(self: servers.ServerSet, connections: list[ServerConnection], *, abort: bool) -> None:
        stop(self, connections, abort=abort)
        if threading.current_thread().name == thread_name:
            paused.set()
            assert go_on.wait(EVENT_TIMEOUT), "the test never let the paused thread go on"

    monkeypatch.setattr(servers.ServerSet, "_stop", stop_then_pause)
    return paused, go_on


def test_logout_racing_a_reload_that_removes_the_server_does_not_bring_it_back(
    web: HttpServer, token_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = http_config("remote", web.url, auth="oauth")
    with MCPHub([remote, stdio_config("local")]) as hub:
        paused, go_on = pause_after_stopping(monkeypatch, "test-logout")
        logout, raised = run_in_thread(lambda: hub.logout("remote"), "test-logout")
        assert paused.wait(EVENT_TIMEOUT)
        hub.reload([stdio_config("local")])
        go_on.set()
        logout.join(EVENT_TIMEOUT)
        assert not logout.is_alive() and not raised, raised
        assert list(hub.servers) == ["local"]
        assert not [tool for tool in hub.tools() if tool.server_name == "remote"]


def test_logout_racing_a_reload_that_changes_the_server_runs_the_new_entry(
    web: HttpServer, token_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = http_config("remote", web.url, auth="oauth")
    with MCPHub([remote]) as hub:
        paused, go_on = pause_after_stopping(monkeypatch, "test-logout")
        logout, raised = run_in_thread(lambda: hub.logout("remote"), "test-logout")
        assert paused.wait(EVENT_TIMEOUT)
        hub.reload([{**remote, "tool_call_timeout_ms": 4321}])
        go_on.set()
        logout.join(EVENT_TIMEOUT)
        assert not logout.is_alive() and not raised, raised
        assert hub.servers["remote"].config.tool_call_timeout == pytest.approx(4.321)


# -- Ctrl-C inside reload() -----------------------------------------------------------------------------


def interrupt_reload_at(monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    """Raise `KeyboardInterrupt` in the thread in `reload()` at `step`: once it has stopped the
    connections it replaces ("stopped"), while it waits for their replacements ("waiting"), or once they
    are ready, as it makes its result ("ready": a Ctrl-C that lands as the last wait ends)."""
    if step == "ready":

        def interrupted_result(self: ReloadPlan, launched: object) -> ReloadResult:
            raise KeyboardInterrupt

        monkeypatch.setattr(ReloadPlan, "result", interrupted_result)
    elif step == "stopped":
        stop = servers.ServerSet._stop

        def stop_then_interrupt(
            self: servers.ServerSet, connections: list[ServerConnection], *, abort: bool
        ) -> None:
            stop(self, connections, abort=abort)
            if connections:
                raise KeyboardInterrupt

        monkeypatch.setattr(servers.ServerSet, "_stop", stop_then_interrupt)
    else:

        def interrupted_wait(connections: list[ServerConnection]) -> bool:
            raise KeyboardInterrupt

        monkeypatch.setattr(servers, "_wait_ready", interrupted_wait)


def wait_ready(hub: MCPHub, *names: str) -> None:
    wait_until(
        lambda: sorted(hub.servers) == sorted(names) and all(hub.servers[n].state == "ready" for n in names),
        timeout=EVENT_TIMEOUT,
        message=f"servers: {dict(hub.servers)}",
    )


@pytest.mark.parametrize("step", ["stopped", "waiting", "ready"])
def test_ctrl_c_during_reload_keeps_a_changed_server_on_its_previous_entry(
    monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    changed, kept = stdio_config("changed"), stdio_config("kept")
    with MCPHub([changed, kept]) as hub:
        untouched = hub.servers["kept"]
        interrupt_reload_at(monkeypatch, step)
        with pytest.raises(KeyboardInterrupt):
            hub.reload([{**changed, "tool_call_timeout_ms": 4321}, kept])
        monkeypatch.undo()
        assert hub.state == "running"
        # Going back does not wait: a replacement that was already ready is stopped, then the previous
        # entry starts again.
        wait_until(
            lambda: (
                hub.servers["changed"].state == "ready"
                and hub.servers["changed"].config.tool_call_timeout == 60.0
            ),  # the previous entry
            timeout=EVENT_TIMEOUT,
            message=f"changed: {hub.servers['changed']!r}",
        )
        wait_ready(hub, "changed", "kept")
        assert hub.servers["kept"] is untouched
        assert hub.call_tool("mcp__changed__echo", {"text": "back"}).text == "back"


@pytest.mark.parametrize("step", ["stopped", "waiting", "ready"])
def test_ctrl_c_during_reload_brings_back_a_removed_server_and_stops_an_added_one(
    monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    removed = stdio_config("removed")
    with MCPHub([removed]) as hub:
        interrupt_reload_at(monkeypatch, step)
        with pytest.raises(KeyboardInterrupt):
            hub.reload([stdio_config("added")])
        monkeypatch.undo()
        wait_ready(hub, "removed")
        assert hub.call_tool("mcp__removed__echo", {"text": "back"}).text == "back"
        assert "mcp__added__echo" not in hub.registry


def test_ctrl_c_during_reload_stops_a_server_whose_previous_entry_was_invalid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The previous configuration held an entry that could not be used: the server the interrupted reload
    started for that name stops, and the name is failed again, as before the reload."""
    with MCPHub([stdio_config("a"), {**stdio_config("x"), "no_such_key": 1}]) as hub:
        assert hub.servers["x"].state == "failed"
        interrupt_reload_at(monkeypatch, "waiting")
        with pytest.raises(KeyboardInterrupt):
            hub.reload([stdio_config("a"), stdio_config("x")])
        monkeypatch.undo()
        wait_until(lambda: hub.servers["x"].state == "failed", timeout=EVENT_TIMEOUT)
        assert "no_such_key" in str(hub.servers["x"].error)
        assert not [tool.name for tool in hub.registry if tool.server_name == "x"]
        assert hub.call_tool("mcp__a__echo", {"text": "still"}).text == "still"


def test_a_reload_after_an_interrupted_one_applies_its_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    first = stdio_config("first")
    with MCPHub([first]) as hub:
        interrupt_reload_at(monkeypatch, "stopped")
        with pytest.raises(KeyboardInterrupt):
            hub.reload([{**first, "tool_call_timeout_ms": 4321}])
        monkeypatch.undo()
        wait_ready(hub, "first")
        result = hub.reload([{**first, "tool_call_timeout_ms": 4321}])
        assert result.restarted == ("first",)
        assert hub.servers["first"].config.tool_call_timeout == pytest.approx(4.321)


# -- a real Ctrl-C inside reload(), in a script ---------------------------------------------------------


@pytest.fixture(scope="module")
def interrupted_reload(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """tests/hosts/interrupt_reload.py, sent SIGINT once its reload() has begun stopping the server
    whose entry changed."""
    workdir = tmp_path_factory.mktemp("interrupt-reload")
    events = EventLog(workdir / "changed.jsonl")
    host = HostProcess("interrupt_reload.py", os.fspath(workdir))
    try:
        host.wait_for_line("RELOADING", timeout=EVENT_TIMEOUT)
        events.wait_for(lambda event: event.get("event") in ("stdin_closed", "signal"), timeout=EVENT_TIMEOUT)
        host.send_signal(signal.SIGINT)
        host.finish(timeout=HOST_TIMEOUT)
        yield host.report()
    finally:
        if host.ended_at is None:
            host.finish(timeout=0)
        reap_servers(workdir)


def test_a_real_ctrl_c_during_reload_raises_keyboard_interrupt(interrupted_reload: dict[str, Any]) -> None:
    assert interrupted_reload["reload"]["outcome"] == "KeyboardInterrupt", interrupted_reload


def test_a_real_ctrl_c_during_reload_brings_the_changed_server_back_on_its_previous_entry(
    interrupted_reload: dict[str, Any],
) -> None:
    assert interrupted_reload["recovered"], interrupted_reload
    assert interrupted_reload["servers"] == {"changed": "ready", "kept": "ready"}, interrupted_reload
    assert interrupted_reload["changed_timeout"] == 60.0, interrupted_reload
    assert interrupted_reload["echo"] == "back", interrupted_reload
    assert interrupted_reload["kept_same_process"], interrupted_reload


@pytest.mark.parametrize("step", ["stopped", "waiting"])
def test_ctrl_c_during_reload_leaves_a_crashed_server_with_an_invalid_entry_failed(
    web: HttpServer, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """A crashed server whose entry became invalid is failed; a reload that makes its entry valid and
    changes another server, interrupted, puts both back as they were: the crashed one failed on its
    invalid entry (the server the reload started for it stops), the other ready on its previous entry."""
    alpha, remote = stdio_config("alpha"), http_config("remote", web.url)
    broken = {**alpha, "no_such_key": 1}
    with MCPHub([alpha, remote]) as hub:
        hub.reload([broken, remote])  # alpha runs on: its running server is kept
        assert hub.call_tool("mcp__alpha__exit_later", {"delay": 0.2}).text == "ok"
        wait_until(lambda: hub.servers["alpha"].state == "disconnected", timeout=EVENT_TIMEOUT)
        hub.reload([broken, remote])  # a crashed server is not kept: alpha is failed
        assert hub.servers["alpha"].state == "failed"
        previous = hub.servers["remote"]
        interrupt_reload_at(monkeypatch, step)
        with pytest.raises(KeyboardInterrupt):
            hub.reload([alpha, {**remote, "tool_call_timeout_ms": 4321}])
        monkeypatch.undo()
        wait_until(
            lambda: hub.servers["alpha"].state == "failed" and hub.servers["remote"].state == "ready",
            timeout=EVENT_TIMEOUT,
        )
        assert "no_such_key" in str(hub.servers["alpha"].error)
        assert hub.servers["remote"] is not previous
        assert hub.servers["remote"].config.tool_call_timeout == 60.0  # the previous entry
        assert hub.call_tool("mcp__remote__echo", {"text": "back"}).text == "back"
