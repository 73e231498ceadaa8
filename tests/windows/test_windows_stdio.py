"""A hub over a stdio fixture server on Windows: start, call, timeout, cancel and Ctrl-C reaching the
server, a crash noticed, and no process left by close, by interpreter exit, or of a server's child."""

from __future__ import annotations

import _thread
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from winsupport import WAIT, Events, env_with_repo, process_running, stdio_config, wait_until

import mcp_sync
from mcp_sync import MCPHub, ServerDisconnectedError, ToolCallCancelledError, ToolCallTimeoutError, _os
from mcp_sync._os import processes, waits


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Events:
    return Events(tmp_path_factory.mktemp("events") / "events.jsonl")


@pytest.fixture(scope="module")
def hub(events: Events) -> Iterator[MCPHub]:
    with MCPHub([stdio_config("fx", "--events", str(events.path))]) as started:
        assert started.servers["fx"].state == "ready", started.servers["fx"].error
        yield started


def test_the_package_imports_with_no_fork_hooks() -> None:
    assert sys.platform == "win32"
    assert not hasattr(os, "register_at_fork")
    assert mcp_sync.MCPHub is MCPHub
    assert _os.IS_WINDOWS and processes.IS_WINDOWS
    assert waits.WAIT_SLICE is not None  # Python 3.11: lock waits cannot take Ctrl-C


def test_a_stdio_server_starts_and_answers_a_call(hub: MCPHub) -> None:
    result = hub.call_tool("mcp__fx__add", {"a": 2, "b": 3})
    assert result.text == "5"
    assert not result.is_error


def test_a_timeout_cancels_the_request_on_the_server(hub: MCPHub, events: Events) -> None:
    with pytest.raises(ToolCallTimeoutError):
        hub.call_tool("mcp__fx__sleep", {"seconds": 60, "tag": "timeout"}, timeout=3.0)
    events.wait_for("cancelled", tag="timeout")


def test_a_cancel_event_cancels_the_request_on_the_server(hub: MCPHub, events: Events) -> None:
    cancel = threading.Event()
    waiter = threading.Thread(target=lambda: (events.wait_for("started", tag="cancel"), cancel.set()))
    waiter.start()
    with pytest.raises(ToolCallCancelledError):
        hub.call_tool("mcp__fx__sleep", {"seconds": 60, "tag": "cancel"}, cancel=cancel)
    waiter.join(WAIT)
    events.wait_for("cancelled", tag="cancel")


def test_ctrl_c_in_a_call_without_timeout_ends_it_and_cancels_it_on_the_server(
    hub: MCPHub, events: Events
) -> None:
    # What a Ctrl-C in the console does to the main thread (a console control event cannot be sent
    # under Wine): the interrupt is raised once the waiting thread runs Python again, within a slice.
    def interrupt_once_started() -> None:
        events.wait_for("started", tag="ctrl-c")
        _thread.interrupt_main()

    threading.Thread(target=interrupt_once_started, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        hub.call_tool("mcp__fx__sleep", {"seconds": 60, "tag": "ctrl-c"})
    assert time.monotonic() - started < 45  # not the whole 60 s sleep
    events.wait_for("cancelled", tag="ctrl-c")
    assert hub.call_tool("mcp__fx__echo", {"text": "still here"}).text == "still here"


def test_a_server_that_crashes_is_noticed(tmp_path: Path) -> None:
    with MCPHub([stdio_config("crashy")]) as hub:
        with pytest.raises(ServerDisconnectedError):
            hub.call_tool("mcp__crashy__crash", {})
        wait_until(lambda: hub.servers["crashy"].state == "disconnected", what="the disconnected state")
        assert "exited with status 3" in str(hub.servers["crashy"].error)
        assert hub.tools() == []


def test_close_ends_a_server_that_ignores_stdin_and_its_child_process(tmp_path: Path) -> None:
    events = Events(tmp_path / "events.jsonl")
    hub = MCPHub(
        [stdio_config("stubborn", "--events", str(events.path), "--helper", "quiet", "--ignore-signals")]
    )
    with hub:
        assert hub.servers["stubborn"].state == "ready", hub.servers["stubborn"].error
        server = events.wait_for("ready")["pid"]
        helper = events.wait_for("helper_started")["pid"]
        assert process_running(server) and process_running(helper)
    assert not process_running(server)
    wait_until(lambda: not process_running(helper), what="the server's child process to end")


def test_interpreter_exit_without_close_leaves_no_process(tmp_path: Path) -> None:
    events = Events(tmp_path / "events.jsonl")
    config = stdio_config("left", "--events", str(events.path), "--helper", "quiet")
    script = textwrap.dedent(
        f"""
        from mcp_sync import MCPHub
        hub = MCPHub([{config!r}])
        hub.start()
        assert hub.servers["left"].state == "ready", hub.servers["left"].error
        print("started", flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env_with_repo(), capture_output=True, text=True, timeout=WAIT * 2
    )
    assert done.returncode == 0, done.stderr
    assert "started" in done.stdout
    server = events.wait_for("ready")["pid"]
    helper = events.wait_for("helper_started")["pid"]
    wait_until(lambda: not process_running(server) and not process_running(helper), what="no process left")


def test_a_host_process_killed_outright_takes_its_servers_with_it(tmp_path: Path) -> None:
    # No exit hook runs in a process ended by TerminateProcess; its Job Objects' handles close with it,
    # and a job that kills on close ends the server and its child (POSIX has no such guarantee).
    events = Events(tmp_path / "events.jsonl")
    config = stdio_config("orphan", "--events", str(events.path), "--helper", "quiet")
    script = textwrap.dedent(
        f"""
        import sys
        from mcp_sync import MCPHub
        hub = MCPHub([{config!r}])
        hub.start()
        print(hub.servers["orphan"].state, flush=True)
        sys.stdin.read()
        """
    )
    host = subprocess.Popen(
        [sys.executable, "-c", script],
        env=env_with_repo(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert host.stdout is not None
        assert host.stdout.readline().strip() == "ready"
        server = events.wait_for("ready")["pid"]
        helper = events.wait_for("helper_started")["pid"]
        assert process_running(server) and process_running(helper)
    finally:
        host.kill()
        host.wait(WAIT)
    wait_until(lambda: not process_running(server) and not process_running(helper), what="no process left")


def test_a_command_given_without_its_cmd_extension_starts_as_npx_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # `npx`, `uvx` and other launchers are `.cmd` scripts on Windows; host files name them bare.
    launcher = tmp_path / "fixture-launcher.cmd"
    launcher.write_text(f'@"{sys.executable}" "{stdio_config("x")["args"][0]}" %*\r\n', encoding="utf-8")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    config = {**stdio_config("launched"), "command": "fixture-launcher", "args": []}
    with MCPHub([config]) as hub:
        assert hub.servers["launched"].state == "ready", hub.servers["launched"].error
        assert hub.call_tool("mcp__launched__add", {"a": 20, "b": 22}).text == "42"


# Arguments cmd.exe reads as syntax, quotes, spaces and more: through a .cmd launcher each must reach the
# server as given (a launcher that passes them on as `%*`, as npx.cmd and uvx's do).
_CMD_SYNTAX_ARGUMENTS = [
    "a&b",
    "x|y",
    "<in>",
    "c^d",
    'say "hi"',
    "bang!",
    "two words",
    "(paren)",
    "semi;colon,comma=eq",
    "trail\\",
    'a\\"b',
    "",
    "caf\u00e9 \u2713",
    "https://host/mcp?x=1&y=2",
]


def test_arguments_with_cmd_syntax_reach_a_server_started_through_a_cmd_launcher(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "launch & run (x)"
    folder.mkdir()
    record = tmp_path / "argv.json"
    recorder = tmp_path / "record_argv.py"
    recorder.write_text(
        textwrap.dedent(
            f"""
            import json, runpy, sys
            with open(sys.argv[1], "w", encoding="utf-8") as out:
                json.dump(sys.argv[2:], out)
            sys.argv = [{str(stdio_config("x")["args"][0])!r}]
            runpy.run_path(sys.argv[0], run_name="__main__")
            """
        ),
        encoding="utf-8",
    )
    launcher = folder / "fixture-launcher.cmd"
    launcher.write_text(f'@"{sys.executable}" "{recorder}" %*\r\n', encoding="utf-8")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    config = {
        **stdio_config("launched"),
        "command": "fixture-launcher",
        "args": [str(record), *_CMD_SYNTAX_ARGUMENTS],
    }
    with MCPHub([config]) as hub:
        assert hub.servers["launched"].state == "ready", hub.servers["launched"].error
        assert hub.call_tool("mcp__launched__add", {"a": 20, "b": 22}).text == "42"
    assert json.loads(record.read_text(encoding="utf-8")) == _CMD_SYNTAX_ARGUMENTS


def test_a_percent_sign_passes_cmd_exe_unexpanded(tmp_path: Path) -> None:
    # Under Wine, cmd.exe expands a batch file's `%*` once more, which Windows does not, so a `%` is
    # shown here through cmd.exe's own pass: the line a batch launcher gets, with a program after /c.
    dump = tmp_path / "dump_argv.py"
    dump.write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n", encoding="utf-8")
    arguments = [
        "50%",
        "%PATH%",
        "%cd%",
        "%%",
        "%NOPE%",
        "https://host/mcp?x=1&y=2%20z",
        "%2F%3D",
        "%PATH:~0,2%",
    ]
    line = processes.batch_command_line(sys.executable, [str(dump), *arguments])
    done = subprocess.run(line, shell=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=WAIT)
    assert json.loads(done.stdout) == arguments, done.stderr


def test_an_argument_a_cmd_launcher_cannot_pass_fails_that_server_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    launcher = tmp_path / "fixture-launcher.cmd"
    launcher.write_text(f'@"{sys.executable}" "{stdio_config("x")["args"][0]}" %*\r\n', encoding="utf-8")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    config = {**stdio_config("launched"), "command": "fixture-launcher", "args": ["--events", "two\nlines"]}
    with MCPHub([config]) as hub:
        assert hub.servers["launched"].state == "failed"
        error = str(hub.servers["launched"].error)
    assert "argument 2 holds a line break" in error and "fixture-launcher.cmd" in error
    assert "two" not in error


def test_ctrl_c_in_a_subscription_the_server_holds_ends_it_within_a_slice(tmp_path: Path) -> None:
    # Without slices the wait for the server's acknowledgement would last its whole timeout (600 s).
    events = Events(tmp_path / "events.jsonl")
    config = stdio_config(
        "held", "--hold-subscriptions", "--events", str(events.path), tool_call_timeout_ms=600_000
    )
    with MCPHub([config]) as hub:

        def interrupt_once_held() -> None:
            events.wait_for("listen_held")
            _thread.interrupt_main()

        threading.Thread(target=interrupt_once_held, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            hub.subscribe_resource("fixture://text/readme", print)
