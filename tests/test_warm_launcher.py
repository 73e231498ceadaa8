"""The warm launcher (tests/servers/warm_launcher.py): a warm-launched server is a process of its own,
and the shim its client started stands in for it: pipes, exit status, signals, and death."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import (
    FIXTURE_SERVER,
    WARM_SHIM,
    EventLog,
    launcher_socket,
    pid_alive,
    python_command,
    stdio_config,
    wait_until,
)

INITIALIZE = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
    b'"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}\n'
)


def start(*flags: str, events: EventLog) -> subprocess.Popen[bytes]:
    argv = python_command(FIXTURE_SERVER, *flags, "--events", str(events), warm=True)
    return subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


def test_stdio_config_runs_the_shim_with_the_servers_command_line(events: EventLog) -> None:
    config = stdio_config("fx", "--era", "legacy", events=events)
    assert config["command"] == sys.executable
    assert config["args"] == [
        "-I",
        "-S",
        str(WARM_SHIM),
        launcher_socket(),
        str(FIXTURE_SERVER),
        "--era",
        "legacy",
        "--events",
        str(events),
    ]


def test_flags_about_the_servers_own_process_get_a_real_interpreter() -> None:
    assert python_command(FIXTURE_SERVER, "--helper", "quiet") == [
        sys.executable,
        str(FIXTURE_SERVER),
        "--helper",
        "quiet",
    ]


@pytest.mark.real_processes
def test_a_test_marked_real_processes_gets_a_real_interpreter() -> None:
    assert python_command(FIXTURE_SERVER) == [sys.executable, str(FIXTURE_SERVER)]


def test_the_server_is_a_process_of_its_own_session_speaking_on_the_shims_pipes(events: EventLog) -> None:
    shim = start("--era", "legacy", events=events)
    try:
        ready = events.wait_for("ready", timeout=15)
        server = int(ready["pid"])
        assert ready["client_pid"] == shim.pid != server
        assert os.getsid(server) == os.getpgid(server) == server
        assert shim.stdin is not None and shim.stdout is not None
        shim.stdin.write(INITIALIZE)
        shim.stdin.flush()
        assert b'"serverInfo"' in shim.stdout.readline()
        shim.stdin.close()  # the server's stdin ends: it exits, and the shim with its status
        assert shim.wait(timeout=15) == 0
        wait_until(lambda: not pid_alive(server), timeout=5)
    finally:
        shim.kill()
        shim.wait(timeout=5)


def test_a_signal_to_the_shim_reaches_the_server_and_the_shim_dies_of_it(events: EventLog) -> None:
    shim = start(events=events)
    try:
        server = int(events.wait_for("ready", timeout=15)["pid"])
        shim.send_signal(signal.SIGTERM)
        assert shim.wait(timeout=15) == -signal.SIGTERM
        wait_until(lambda: not pid_alive(server), timeout=5)
    finally:
        shim.kill()
        shim.wait(timeout=5)


def test_a_shim_killed_takes_its_server_with_it(events: EventLog) -> None:
    shim = start(events=events)
    server = int(events.wait_for("ready", timeout=15)["pid"])
    shim.kill()
    assert shim.wait(timeout=5) == -signal.SIGKILL
    wait_until(lambda: not pid_alive(server), timeout=5)


def test_the_servers_exit_status_is_the_shims(events: EventLog, tmp_path: Path) -> None:
    script = tmp_path / "exits.py"
    script.write_text("import sys\nprint('bye', file=sys.stderr)\nsys.exit(7)\n")
    done = subprocess.run(
        python_command(script, warm=True), stdin=subprocess.DEVNULL, capture_output=True, timeout=30
    )
    assert (done.returncode, done.stderr) == (7, b"bye\n")


def test_a_script_that_cannot_be_read_fails_as_in_a_real_interpreter(tmp_path: Path) -> None:
    missing = tmp_path / "gone.py"
    warm = subprocess.run(python_command(missing, warm=True), capture_output=True, timeout=30)
    real = subprocess.run(python_command(missing, warm=False), capture_output=True, timeout=30)
    assert (warm.returncode, warm.stderr) == (real.returncode, real.stderr) == (2, real.stderr)
    assert b"can't open file" in real.stderr
