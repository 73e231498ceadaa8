"""Starting, closing and reloading a hub: isolation, bounds, and nothing left behind."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from mcp_sync import (
    ConfigError,
    MCPHub,
    ReloadResult,
    ServerDisconnectedError,
    ServerStartError,
    Tool,
    ToolRegistry,
)
from tests.hub_harness import ToolEvents, started_hub
from tests.support import HANGING_SERVER, EventLog, child_pids_of, pid_alive, stdio_config, wait_until

MISSING_COMMAND = {"server_name": "broken", "transport": "stdio", "command": "mcp-sync-no-such-command"}


@pytest.fixture
def new_threads() -> Callable[[], list[str]]:
    """The mcp-sync threads started since the test began (another test's shared registry may keep one)."""
    before = set(threading.enumerate())

    def started_since() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("mcp-sync:") and t not in before]

    return started_since


def server_pid(hub: MCPHub, server: str) -> int:
    return int(hub.call_tool(f"mcp__{server}__pid").text)


def test_start_connects_every_server() -> None:
    with started_hub(stdio_config("a"), stdio_config("b", "--era", "legacy")) as hub:
        assert {name: server.state for name, server in hub.servers.items()} == {"a": "ready", "b": "ready"}
        assert "mcp__a__echo" in hub.registry
        assert "mcp__b__echo" in hub.registry


def test_failing_server_is_isolated() -> None:
    with started_hub(MISSING_COMMAND, stdio_config("good")) as hub:
        broken = hub.servers["broken"]
        assert broken.state == "failed"
        assert "mcp-sync-no-such-command" in str(broken.error)
        assert hub.servers["good"].state == "ready"
        assert hub.call_tool("mcp__good__echo", {"text": "fine"}).text == "fine"


def test_required_server_failure_raises_naming_every_failure(new_threads: Callable[[], list[str]]) -> None:
    hub = MCPHub(
        [
            {**MISSING_COMMAND, "required": True},
            {**MISSING_COMMAND, "server_name": "broken2", "required": True},
            stdio_config("good"),
        ]
    )
    with pytest.raises(ServerStartError) as raised:
        hub.start()
    assert set(raised.value.failures) == {"broken", "broken2"}
    assert "broken:" in str(raised.value)
    assert "broken2:" in str(raised.value)
    assert new_threads() == []


def test_server_that_never_answers_the_handshake_fails_at_its_connect_deadline() -> None:
    config = stdio_config("mute", script=HANGING_SERVER, connect_timeout_ms=500)
    before = set(child_pids_of(os.getpid()))
    with started_hub(config) as hub:
        server = hub.servers["mute"]
        assert server.state == "failed"
        assert isinstance(server.error, TimeoutError)
        assert "connect_timeout_ms" in str(server.error)
    assert set(child_pids_of(os.getpid())) <= before


def test_close_is_bounded_for_a_server_that_ignores_signals(
    tmp_path: Path, new_threads: Callable[[], list[str]]
) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    hub = MCPHub([stdio_config("stubborn", "--ignore-signals", events=events)]).start()
    pid = server_pid(hub, "stubborn")
    started = time.monotonic()
    hub.close()
    assert time.monotonic() - started < 10  # the SDK's own stop takes ~4 s; ours kills after 6 s
    wait_until(lambda: not pid_alive(pid), timeout=5, message=f"server {pid} survived close()")
    assert new_threads() == []


def _pipe_fds(pid: int | str, fd: str | None = None) -> set[str]:
    """The pipes (``pipe:[inode]``) process `pid` (or ``self``) holds open, or only its descriptor `fd`."""
    folder = Path(f"/proc/{pid}/fd")
    links: set[str] = set()
    for entry in folder.iterdir() if fd is None else [folder / fd]:
        with contextlib.suppress(OSError):
            links.add(os.readlink(entry))
    return {link for link in links if link.startswith("pipe:")}


@pytest.mark.real_processes  # the server's own process, and a helper that left its process group
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads the open pipes from /proc")
def test_a_second_close_of_a_connecting_server_lets_the_first_close_its_pipes(tmp_path: Path) -> None:
    # A helper in a session of its own holds the server's stderr open, so that closing the transport waits
    # for it (bounded) after the server has died: the second close comes while the first is at work.
    events = EventLog(tmp_path / "slow.jsonl")
    helper_file = tmp_path / "helper.pid"
    server = stdio_config("slow", "--hold-start", str(tmp_path / "never"), events=events)
    script = 'setsid sleep 120 </dev/null >/dev/null & echo $! > "$0"; exec "$@"'
    config = {
        **server,
        "command": "sh",
        "args": ["-c", script, str(helper_file), server["command"], *server["args"]],
        "connect_timeout_ms": 120_000,
    }
    hub = MCPHub([config])

    def start() -> None:
        with contextlib.suppress(Exception):  # the close preempts it
            hub.start()

    starter = threading.Thread(target=start, name="test-start", daemon=True)
    helper = 0
    try:
        starter.start()
        server_pid = int(events.wait_for("holding")["pid"])
        helper = int(wait_until(lambda: helper_file.exists() and helper_file.read_text().strip()))
        stderr_pipe = _pipe_fds(helper, "2")
        assert stderr_pipe, "the helper does not hold the server's stderr"
        connection = hub._servers._connections["slow"]
        connection.close(abort=True)
        wait_until(lambda: not pid_alive(server_pid))  # killed: the transport is closing now
        connection.close(abort=True)
        hub.close()
        starter.join(30)
        assert not starter.is_alive()
        assert not _pipe_fds("self") & stderr_pipe, "close() returned with the server's stderr pipe open"
    finally:
        hub.close()
        if helper:
            with contextlib.suppress(ProcessLookupError):
                os.kill(helper, 9)


def test_close_leaves_no_thread_and_no_child_process(new_threads: Callable[[], list[str]]) -> None:
    before = set(child_pids_of(os.getpid()))
    hub = MCPHub([stdio_config("a"), stdio_config("b", "--era", "legacy")]).start()
    pids = [server_pid(hub, "a"), server_pid(hub, "b")]
    hub.close()
    assert new_threads() == []
    assert not any(pid_alive(pid) for pid in pids)
    assert set(child_pids_of(os.getpid())) <= before


def test_close_is_idempotent_and_works_from_another_thread(new_threads: Callable[[], list[str]]) -> None:
    hub = MCPHub([stdio_config("a")]).start()
    raised: list[BaseException] = []

    def close_elsewhere() -> None:
        try:
            hub.close()
        except BaseException as exc:  # a thread's exception is otherwise lost: keep it for the test
            raised.append(exc)

    closer = threading.Thread(target=close_elsewhere, name="test-closer")
    closer.start()
    closer.join(15)
    assert not closer.is_alive(), "close() from another thread did not return"
    assert raised == [], f"close() from another thread raised {raised!r}"
    assert hub.state == "closed"
    hub.close()
    assert hub.servers == {}
    assert new_threads() == []


def test_close_fails_calls_in_flight(tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    hub = MCPHub([stdio_config("a", events=events)]).start()
    future = hub.submit("mcp__a__sleep", {"seconds": 30, "tag": "inflight"})
    events.wait_for("started", tag="inflight")
    hub.close()
    with pytest.raises(ServerDisconnectedError):
        future.result(timeout=5)


def test_script_that_never_closes_exits_cleanly_and_leaves_no_server(tmp_path: Path) -> None:
    script = tmp_path / "forgetful.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {os.fspath(Path(__file__).parent.parent)!r})
            from mcp_sync import MCPHub
            from tests.support import stdio_config
            hub = MCPHub([stdio_config("a"), stdio_config("b", "--ignore-signals")]).start()
            print(hub.call_tool("mcp__a__pid").text, hub.call_tool("mcp__b__pid").text, flush=True)
            """
        )
    )
    done = subprocess.run([sys.executable, os.fspath(script)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    pids = [int(pid) for pid in done.stdout.split()]
    wait_until(
        lambda: not any(pid_alive(pid) for pid in pids), timeout=5, message="a server outlived its host"
    )


def test_reload_keeps_unchanged_servers_and_reconnects_changed_ones() -> None:
    keep, change, drop = stdio_config("keep"), stdio_config("change"), stdio_config("drop")
    with started_hub(keep, change, drop) as hub:
        keep_pid, change_pid = server_pid(hub, "keep"), server_pid(hub, "change")
        keep_tool = hub.registry.get("mcp__keep__echo")
        hub.reload([keep, {**change, "tool_call_timeout_ms": 1234}, stdio_config("new")])
        assert sorted(hub.servers) == ["change", "keep", "new"]
        assert all(server.state == "ready" for server in hub.servers.values())
        assert server_pid(hub, "keep") == keep_pid
        assert hub.registry.get("mcp__keep__echo") is keep_tool
        assert server_pid(hub, "change") != change_pid
        assert "mcp__drop__echo" not in hub.registry
        assert hub.call_tool("mcp__new__echo", {"text": "hi"}).text == "hi"


def test_reload_rereads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "servers.yaml"
    path.write_text(yaml.safe_dump({"servers": [stdio_config("a")]}))
    hub = MCPHub.from_file(path)
    with hub:
        path.write_text(yaml.safe_dump({"servers": [stdio_config("a"), stdio_config("b")]}))
        hub.reload()
        assert sorted(hub.servers) == ["a", "b"]
        assert hub.call_tool("mcp__b__echo", {"text": "from file"}).text == "from file"


def test_reload_reconnects_a_disconnected_server() -> None:
    config = stdio_config("a")
    with started_hub(config) as hub:
        hub.submit("mcp__a__crash")
        wait_until(lambda: hub.servers["a"].state == "disconnected", timeout=5)
        hub.reload([config])
        assert hub.servers["a"].state == "ready"
        assert hub.call_tool("mcp__a__echo", {"text": "back"}).text == "back"


# -- reload with an invalid entry ------------------------------------------------------------------


def write_servers(path: Path, *entries: dict[str, object]) -> None:
    path.write_text(yaml.safe_dump({"servers": list(entries)}))


def test_reload_keeps_a_running_server_whose_entry_gains_an_unknown_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "servers.yaml"
    write_servers(path, stdio_config("a"), stdio_config("b"))
    with MCPHub.from_file(path) as hub:
        a_pid, b_pid = server_pid(hub, "a"), server_pid(hub, "b")
        a_tool, a_connection = hub.registry.get("mcp__a__echo"), hub.servers["a"]
        write_servers(path, {**stdio_config("a"), "colour": "blue"}, stdio_config("b", "--tools", "1"))
        with caplog.at_level(logging.WARNING, logger="mcp_sync"):
            result = hub.reload()
        assert hub.servers["a"] is a_connection and a_connection.state == "ready"
        assert hub.registry.get("mcp__a__echo") is a_tool
        assert server_pid(hub, "a") == a_pid
        assert hub.call_tool("mcp__a__echo", {"text": "still here"}).text == "still here"
        assert isinstance(result, ReloadResult) and list(result.kept) == ["a"]
        assert isinstance(result.kept["a"], ConfigError)
        assert "unknown key 'colour'" in str(result.kept["a"])
        # The valid entries are applied as usual.
        assert (result.restarted, result.started, result.stopped) == (("b",), (), ())
        assert server_pid(hub, "b") != b_pid and "mcp__b__t00000" in hub.registry
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING and "'a'" in r.getMessage()]
    assert "unknown key 'colour'" in warning.getMessage()


def test_reload_keeps_a_running_server_whose_entry_references_an_unset_variable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("MCP_SYNC_TEST_UNSET", raising=False)
    secret = "sk-reload-secret-4242"
    config = stdio_config("a", env={"API_TOKEN": secret})
    with started_hub(config) as hub:
        a_pid = server_pid(hub, "a")
        broken = stdio_config("a", env={"API_TOKEN": secret, "REGION": "${MCP_SYNC_TEST_UNSET}"})
        with caplog.at_level(logging.WARNING, logger="mcp_sync"):
            result = hub.reload([broken, stdio_config("new")])
        assert hub.servers["a"].state == "ready" and server_pid(hub, "a") == a_pid
        assert "${MCP_SYNC_TEST_UNSET}, which is not set" in str(result.kept["a"])
        assert "env.REGION" in str(result.kept["a"])
        assert result.started == ("new",)
        assert hub.call_tool("mcp__new__echo", {"text": "hi"}).text == "hi"
    assert "MCP_SYNC_TEST_UNSET" in caplog.text
    assert secret not in caplog.text and secret not in repr(result)


def test_strict_reload_rejects_the_whole_configuration_and_changes_nothing() -> None:
    a, b = stdio_config("a"), stdio_config("b")
    with started_hub(a, b) as hub:
        pids = {name: server_pid(hub, name) for name in ("a", "b")}
        tools = hub.tools()
        with pytest.raises(ConfigError) as raised:
            hub.reload(
                [
                    {**a, "colour": "blue"},
                    {**b, "tool_call_timeout_ms": 1234},
                    stdio_config("c"),
                    {**stdio_config("d"), "comand": "x"},
                ],
                strict=True,
            )
        message = str(raised.value)
        assert "unknown key 'colour'" in message and "unknown key 'comand'" in message
        assert "servers[0]" in message and "servers[3]" in message
        assert sorted(hub.servers) == ["a", "b"]
        assert {name: server_pid(hub, name) for name in ("a", "b")} == pids
        assert hub.tools() == tools
        # A later reload of the same configuration changes nothing either: b's change was not taken.
        assert hub.reload([a, b]).unchanged == ("a", "b")


def test_reload_applies_a_kept_servers_entry_once_it_is_fixed(tmp_path: Path) -> None:
    path = tmp_path / "servers.yaml"
    write_servers(path, stdio_config("a"))
    with MCPHub.from_file(path) as hub:
        first_pid = server_pid(hub, "a")
        write_servers(path, {**stdio_config("a"), "colour": "blue"})
        assert list(hub.reload().kept) == ["a"]
        assert list(hub.reload().kept) == ["a"]  # still invalid: still kept, still the first process
        assert server_pid(hub, "a") == first_pid
        write_servers(path, stdio_config("a"))
        fixed = hub.reload()
        assert (fixed.unchanged, dict(fixed.kept)) == (("a",), {})
        assert server_pid(hub, "a") == first_pid
        write_servers(path, {**stdio_config("a"), "colour": "blue"})
        hub.reload()
        write_servers(path, stdio_config("a", "--tools", "1"))
        changed = hub.reload()
        assert (changed.restarted, dict(changed.kept)) == (("a",), {})
        assert server_pid(hub, "a") != first_pid
        assert "mcp__a__t00000" in hub.registry


def test_reload_of_a_file_that_cannot_be_read_raises_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "servers.yaml"
    write_servers(path, stdio_config("a"))
    with MCPHub.from_file(path) as hub:
        a_pid = server_pid(hub, "a")
        write_servers(path, stdio_config("a"), stdio_config("b"))
        path.write_text(path.read_text() + "  - [unclosed\n")
        with pytest.raises(ConfigError, match="not valid YAML or JSON"):
            hub.reload()
        path.unlink()
        with pytest.raises(ConfigError, match="cannot read the config file"):
            hub.reload()
        assert sorted(hub.servers) == ["a"]
        assert hub.servers["a"].state == "ready" and server_pid(hub, "a") == a_pid
        write_servers(path, stdio_config("a"), stdio_config("b"))
        assert hub.reload().started == ("b",)


def test_reload_shows_an_invalid_entry_for_a_server_that_was_not_running_as_failed() -> None:
    with started_hub(MISSING_COMMAND, stdio_config("a")) as hub:
        assert hub.servers["broken"].state == "failed"
        result = hub.reload(
            [{**MISSING_COMMAND, "colour": "red"}, stdio_config("a"), {**stdio_config("new"), "colour": "x"}]
        )
        assert dict(result.kept) == {}
        assert sorted(result.invalid) == ["broken", "new"]
        for name in ("broken", "new"):
            assert hub.servers[name].state == "failed"
            assert isinstance(hub.servers[name].error, ConfigError)
            assert "unknown key 'colour'" in str(hub.servers[name].error)
        assert (result.unchanged, result.stopped) == (("a",), ("broken",))


def test_two_hubs_on_one_registry_cannot_share_a_server_name() -> None:
    registry = ToolRegistry()
    with (
        started_hub(stdio_config("a"), registry=registry),
        started_hub(stdio_config("a"), registry=registry) as hub,
    ):
        assert hub.servers["a"].state == "failed"
        assert isinstance(hub.servers["a"].error, ConfigError)
        assert "mcp__a__echo" in registry  # the first hub's tools are untouched and still callable
        assert hub.call_tool("mcp__a__echo", {"text": "first hub's"}).text == "first hub's"
    registry.close()


def test_a_second_entry_with_the_same_server_name_fails_alone() -> None:
    with started_hub(stdio_config("a"), stdio_config("a", "--tools", "1")) as hub:
        assert hub.servers["a"].state == "ready"
        assert "mcp__a__echo" in hub.registry and "mcp__a__t00000" not in hub.registry  # the first one runs
        duplicate = hub.servers["servers[1]"]
        assert duplicate.state == "failed" and isinstance(duplicate.error, ConfigError)
        assert "duplicate server_name 'a': servers[0] and servers[1]" in str(duplicate.error)


def test_listener_that_calls_back_into_the_hub_does_not_deadlock() -> None:
    answers: list[str] = []
    answered = threading.Event()
    with started_hub(stdio_config("a")) as hub:

        def on_added(tool: Tool) -> None:
            answers.append(hub.call_tool("mcp__a__echo", {"text": tool.name}).text)
            hub.tools()
            answered.set()

        hub.on_tool_added(on_added)
        hub.call_tool("mcp__a__add_tool", {"name": "extra"})
        assert answered.wait(10)
    assert answers == ["mcp__a__extra"]


def test_server_state_changes_reach_state_listeners() -> None:
    seen: list[tuple[str, str]] = []
    closed = threading.Event()
    hub = MCPHub([stdio_config("a")])
    hub.on_server_state(
        lambda name, state, error: (seen.append((name, state)), state == "closed" and closed.set())
    )
    with hub:
        pass
    assert closed.wait(5)
    assert seen == [("a", "ready"), ("a", "closed")]


def test_child_environment_drops_credentials_and_keeps_explicit_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_KEY", "parent-secret")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    config = stdio_config("a", env={"EXPLICIT_TOKEN": "given"}, cwd=os.fspath(Path(__file__).parent))
    with started_hub(config) as hub:

        def env(name: str) -> str:
            return hub.call_tool("mcp__a__get_env", {"name": name}).text

        assert env("MY_API_KEY") == "<unset>"
        assert env("PLAIN_SETTING") == "visible"
        assert env("EXPLICIT_TOKEN") == "given"
        assert hub.call_tool("mcp__a__get_cwd").text == os.fspath(Path(__file__).parent)


def test_child_stderr_goes_to_the_logger_not_the_terminal(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    with (
        caplog.at_level("DEBUG", logger="mcp_sync.server.noisy"),
        started_hub(stdio_config("noisy", "--stderr-lines", "3")),
    ):
        wait_until(lambda: "fixture stderr line 2" in caplog.text, timeout=5)
    assert "fixture stderr line" not in capfd.readouterr().err


def test_include_and_exclude_filters_pick_the_tools() -> None:
    config = stdio_config("a", include_tools=["echo", "add", "sleep"], exclude_tools=["sleep"])
    with started_hub(config) as hub:
        assert [tool.raw_name for tool in hub.servers["a"].tools] == ["add", "echo"]


def test_hub_events_recorder_sees_removal_on_close() -> None:
    hub = MCPHub([stdio_config("a")]).start()
    events = ToolEvents().attach(hub)
    hub.close()
    events.wait_for(("removed", "mcp__a__echo"), timeout=5)


def test_exit_waits_for_a_stuck_server_once(tmp_path: Path) -> None:
    # The exit hook is registered twice (before the thread-pool join, and `atexit` as a fallback); a hub
    # is closed, and its stuck connection waited for, by the first of them only.
    script = tmp_path / "stuck.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            sys.path.insert(0, {os.fspath(Path(__file__).parent.parent)!r})
            from mcp_sync import MCPHub
            from mcp_sync._hub import servers
            from mcp_sync._hub.connection import ServerConnection
            from tests.support import stdio_config

            servers._EXIT_CLOSE_TIMEOUT = 0.5  # how often it is waited out is the subject, not how long
            wait = ServerConnection.wait

            def reported(self, timeout):
                print("WAITS FOR", self.name, flush=True)
                return wait(self, timeout)

            ServerConnection.wait = reported
            hub = MCPHub([stdio_config("a")]).start()
            hub.servers["a"].call_soon(time.sleep, 30)  # its loop thread is stuck
            """
        )
    )
    done = subprocess.run([sys.executable, os.fspath(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["WAITS FOR a"], done.stdout


_DAEMONIZING_SERVER = """
import subprocess, sys, time
helper = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True
)  # out of the server's process group, holding its stdout and stderr
with open(sys.argv[1], "w") as f:
    f.write(str(helper.pid))
time.sleep(120)  # never answers
"""


def test_closing_a_server_whose_pipes_outlive_it_leaves_nothing_for_the_garbage_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper out of the server's process group keeps its stdout open after the server is killed: the
    pipes are closed when the connection ends, not left to asyncio's finalizer on a closed loop."""
    unraisable: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(f"{u.exc_type}: {u.exc_value}"))
    script = tmp_path / "daemonizing.py"
    script.write_text(_DAEMONIZING_SERVER)
    helper_file = tmp_path / "helper.pid"
    config = {
        "server_name": "daemon",
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(script), str(helper_file)],
        "connect_timeout_ms": 60_000,
    }
    hub = MCPHub([config])
    starter = threading.Thread(target=lambda: _ignore_errors(hub.start), name="starter", daemon=True)
    starter.start()
    helper = 0
    try:
        wait_until(lambda: helper_file.exists() and helper_file.read_text() != "", timeout=20)
        helper = int(helper_file.read_text())
        hub.close()
        starter.join(10)
        gc.collect()
        assert unraisable == []
    finally:
        hub.close()
        if helper and pid_alive(helper):
            os.kill(helper, 9)


def _ignore_errors(function: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):  # start() raises: the hub was closed while it was starting
        function()
