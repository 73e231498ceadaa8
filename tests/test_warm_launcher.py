"""The warm launcher (tests/servers/warm_launcher.py): a warm-launched server is a process of its own,
and the shim its client started stands in for it: pipes, exit status, signals, and death."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import (
    FIXTURE_SERVER,
    REPO_ROOT,
    WARM_SHIM,
    EventLog,
    HttpServer,
    cli_command,
    launcher_socket,
    module_command,
    pid_alive,
    python_command,
    stdio_config,
    wait_until,
    warm_server_pid,
)

DEMO_SERVER = REPO_ROOT / "examples" / "demo_server.py"

pytestmark = pytest.mark.skipif(
    os.environ.get("MCP_SYNC_TEST_WARM") == "0", reason="warm launching is off (MCP_SYNC_TEST_WARM=0)"
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


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_server_killed_by_a_signal_kills_its_shim_with_it(tmp_path: Path, signum: int) -> None:
    # As a real server's death reaches its client: a SIGKILL (an out-of-memory kill) too, whose action
    # the shim cannot set as it sets the others'.
    script = tmp_path / "dies.py"
    script.write_text(f"import os\nos.kill(os.getpid(), {int(signum)})\n")
    for warm in (False, True):
        done = subprocess.run(
            python_command(script, warm=warm), stdin=subprocess.DEVNULL, capture_output=True, timeout=30
        )
        assert done.returncode == -signum, (warm, done.returncode, done.stderr)


def test_a_script_that_cannot_be_read_fails_as_in_a_real_interpreter(tmp_path: Path) -> None:
    missing = tmp_path / "gone.py"
    warm = subprocess.run(python_command(missing, warm=True), capture_output=True, timeout=30)
    real = subprocess.run(python_command(missing, warm=False), capture_output=True, timeout=30)
    assert (warm.returncode, warm.stderr) == (real.returncode, real.stderr) == (2, real.stderr)
    assert b"can't open file" in real.stderr


def run_both(argv: list[str], **kwargs: object) -> tuple[subprocess.CompletedProcess[bytes], ...]:
    """Run `argv` (a script and its arguments) warm and in a real interpreter."""
    script, *args = argv
    return tuple(
        subprocess.run(  # type: ignore[call-overload]
            python_command(script, *args, warm=warm), capture_output=True, timeout=60, **kwargs
        )
        for warm in (True, False)
    )


def test_a_relative_script_is_the_one_in_the_servers_working_directory(tmp_path: Path) -> None:
    for name, status in (("a", 3), ("b", 4)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "srv.py").write_text(f"raise SystemExit({status})\n")
    for name, status in (("a", 3), ("b", 4)):
        warm, real = run_both(["srv.py"], cwd=tmp_path / name, stdin=subprocess.DEVNULL)
        assert warm.returncode == real.returncode == status


def test_a_signal_ignored_at_start_stays_ignored(tmp_path: Path) -> None:
    script = tmp_path / "hup.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGHUP)\nprint('survived')\n")
    ignoring = {"preexec_fn": lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)}
    warm, real = run_both([str(script)], stdin=subprocess.DEVNULL, **ignoring)
    assert (warm.returncode, warm.stdout) == (real.returncode, real.stdout) == (0, b"survived\n")


def test_a_server_whose_environment_sets_the_interpreter_up_differently_runs_cold(tmp_path: Path) -> None:
    (tmp_path / "extra_module_for_warm_test.py").write_text("VALUE = 'imported'\n")
    script = tmp_path / "uses_path.py"
    script.write_text("import extra_module_for_warm_test as m\nprint(m.VALUE)\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    warm, real = run_both([str(script)], env=env, stdin=subprocess.DEVNULL, cwd="/")
    assert warm.stdout == real.stdout == b"imported\n"


@pytest.mark.parametrize(
    "env",
    [
        {},  # what the SDK's stdio client passes (HOME, PATH, SHELL, TERM)
        {"LANG": "C"},
        {"LC_CTYPE": "POSIX", "PYTHONDONTWRITEBYTECODE": "1"},
        {"LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"},
        {"PYTHONUNBUFFERED": "0", "PYTHONDONTWRITEBYTECODE": "0"},  # read as numbers: off
    ],
    ids=["bare", "C", "POSIX-no-bytecode", "C.UTF-8-unbuffered", "flags-0"],
)
def test_a_server_with_a_bare_environment_runs_warm_set_up_as_a_real_interpreter(
    env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "state.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, locale, os, sys
            env = dict(os.environ)
            print(json.dumps({
                "warm": env.pop("MCP_SYNC_TEST_SHIM_PID", None) is not None,
                "env": env,
                "bytecode": sys.dont_write_bytecode,
                "locale": locale.setlocale(locale.LC_CTYPE),
                "streams": [(s.encoding, s.errors, s.line_buffering) for s in (sys.stdin, sys.stdout)],
                "written_through": sys.stdout.write_through,
            }))
            """
        )
    )
    # What this run sets up the interpreter with (PYTHONPATH, say) the launcher has too; only the two
    # variables each server takes from its own environment may differ.
    interpreter = {
        name: value
        for name, value in os.environ.items()
        if name.startswith("PYTHON") and name not in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")
    }
    started = {"HOME": str(tmp_path), "PATH": os.environ["PATH"], **interpreter, **env}
    warm, real = (
        json.loads(done.stdout) for done in run_both([str(script)], env=started, stdin=subprocess.PIPE)
    )
    assert (warm.pop("warm"), real.pop("warm")) == (True, False)
    assert warm == real
    assert real["locale"] == "C.UTF-8"


def test_uncaught_errors_print_as_in_a_real_interpreter(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text("def f():\n    raise ValueError('no')\nf()\n")
    warm, real = run_both([str(script)], stdin=subprocess.DEVNULL)
    assert (warm.returncode, warm.stderr) == (real.returncode, real.stderr)


def test_the_demo_server_configures_its_own_logging(tmp_path: Path) -> None:
    env = dict(os.environ, LOG_LEVEL="DEBUG")
    runs = [
        subprocess.run(
            python_command(DEMO_SERVER, warm=warm), input=INITIALIZE, capture_output=True, timeout=60, env=env
        )
        for warm in (True, False)
    ]
    assert [b"DEBUG" in run.stderr for run in runs] == [True, True]


def test_a_shim_gone_before_its_answer_leaves_the_launcher_serving(events: EventLog) -> None:
    path = launcher_socket()
    assert path is not None
    for _ in range(5):  # connect, send half a request, vanish
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as early:
            early.connect(path)
            early.sendall(b"\x00\x00\x10\x00{")
    shim = start(events=events)
    try:
        assert events.wait_for("ready", timeout=15)["client_pid"] == shim.pid
    finally:
        shim.kill()
        shim.wait(timeout=5)


def test_killing_an_http_server_waits_for_the_warm_server_itself(events: EventLog) -> None:
    server = HttpServer(events=events).start()
    try:
        forked = warm_server_pid(server.pid)
        assert forked == events.wait_for("ready")["pid"]
        server.kill()
        assert not pid_alive(forked)
    finally:
        server.close()


def test_a_warm_command_line_run_prints_and_exits_as_a_real_one(tmp_path: Path) -> None:
    config = tmp_path / "broken.json"
    config.write_text('{"mcpServers": {"x": {"command": 5}}}')
    for args in (["--version"], ["servers", str(config)], ["call", str(tmp_path / "missing.json"), "t"]):
        warm, real = (
            subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, cwd=REPO_ROOT)
            for argv in (cli_command(*args), [sys.executable, "-m", "mcp_sync", *args])
        )
        assert (warm.returncode, warm.stdout, warm.stderr) == (real.returncode, real.stdout, real.stderr)
    assert cli_command()[-2:] == ["-m", "mcp_sync"] and WARM_SHIM.name in " ".join(cli_command())


def test_a_module_the_launcher_did_not_preload_runs_cold(tmp_path: Path) -> None:
    warm = subprocess.run(
        [sys.executable, "-I", "-S", str(WARM_SHIM), launcher_socket() or "", "-m", "json.tool", "--help"],
        capture_output=True,
        timeout=60,
    )
    real = subprocess.run([sys.executable, "-m", "json.tool", "--help"], capture_output=True, timeout=60)
    assert (warm.returncode, warm.stdout) == (real.returncode, real.stdout) == (0, real.stdout)


@pytest.mark.parametrize("ending", ["return", "exit", "interrupt"])
def test_a_warm_host_starts_and_ends_as_a_real_interpreter(ending: str) -> None:
    """A host script run warm starts as ``python -u -m`` starts it and ends through the interpreter's own
    exit: atexit handlers, then its globals finalized, a daemon thread left behind, the same status (an
    uncaught KeyboardInterrupt: killed by SIGINT)."""
    warm_argv = module_command("tests.hosts.exit_probe", ending, unbuffered=True)
    real_argv = [sys.executable, "-u", "-m", "tests.hosts.exit_probe", ending]
    warm, real = (
        subprocess.run(argv, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        for argv in (warm_argv, real_argv)
    )
    assert WARM_SHIM.name in " ".join(warm_argv)
    assert (warm.returncode, warm.stdout) == (real.returncode, real.stdout)
    assert real.returncode == {"return": 0, "exit": 3, "interrupt": -signal.SIGINT}[ending]
    assert real.stdout.decode().splitlines()[1:] == ["atexit", "finalized"]
    assert warm.stderr.splitlines()[-1:] == real.stderr.splitlines()[-1:]  # the traceback's frames differ


@pytest.mark.parametrize("program", ["script", "module"])
def test_the_shim_learns_the_pid_only_once_the_program_has_its_own_process_group(program: str) -> None:
    """A signal the shim relays to the program's group as soon as it knows the pid must find that group
    (a relayed signal would be lost if the child had not yet left the launcher's)."""
    argv = (
        python_command(FIXTURE_SERVER, warm=True)
        if program == "script"
        else module_command("tests.hosts.exit_probe", "wait", unbuffered=True)
    )
    socket_path, *rest = argv[argv.index(str(WARM_SHIM)) + 1 :]
    request = json.dumps({"argv": rest, "cwd": str(REPO_ROOT), "env": dict(os.environ), "ignored": []})
    for _ in range(20):
        read, write = os.pipe()
        with socket.socket(socket.AF_UNIX) as connection, open(os.devnull, "rb") as devnull:
            connection.connect(socket_path)
            descriptors = [devnull.fileno(), write, write]
            socket.send_fds(connection, [len(request).to_bytes(4, "big") + request.encode()], descriptors)
            os.close(write)
            pid = json.loads(connection.makefile("rb").readline())["pid"]
            os.killpg(pid, 0)  # ProcessLookupError if the group did not exist yet
            os.killpg(pid, signal.SIGKILL)
        os.close(read)


def test_a_signal_to_a_warm_host_reaches_that_process_alone_as_with_a_real_one() -> None:
    """A test signals a host by its pid: the host's own children in its process group must not get it."""
    outputs = []
    for argv in (
        module_command("tests.hosts.exit_probe", "group", unbuffered=True),
        [sys.executable, "-u", "-m", "tests.hosts.exit_probe", "group"],
    ):
        process = subprocess.Popen(
            argv, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True
        )
        assert process.stdout is not None
        lines = iter(process.stdout.readline, b"")
        assert b"READY\n" in (next(lines), next(lines))  # after the REPORT line
        process.send_signal(signal.SIGINT)
        stdout, _ = process.communicate(timeout=30)
        outputs.append((stdout.decode(), process.returncode))
    assert outputs[0] == outputs[1] == ("CHILD nothing\natexit\nfinalized\n", 0)


HOST_LAUNCHER_PROBE = """
import json, os
from pathlib import Path
from tests import support
from tests.hosts._common import HostProcess

host = HostProcess("unreferenced.py", "del")  # the first host of a test process that has no launcher yet
variables = Path(f"/proc/{host.pid}/environ").read_bytes().split(b"\\0")
host.finish(timeout=90)
given = [v.decode().partition("=")[2] for v in variables if v.startswith(b"MCP_SYNC_TEST_LAUNCHER=")]
print(json.dumps({"given": given, "own": support.launcher_socket()}))
"""


def test_the_first_host_of_a_test_process_uses_that_process_s_launcher() -> None:
    """A host with a launcher of its own would have its servers killed when it exits, so a server it
    leaves behind would go unseen: the host is given its test process's launcher, started first."""
    env = {name: value for name, value in os.environ.items() if name != "MCP_SYNC_TEST_LAUNCHER"}
    done = subprocess.run(
        [sys.executable, "-c", HOST_LAUNCHER_PROBE], cwd=REPO_ROOT, env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout.decode().splitlines()[-1])
    assert seen["own"] and seen["given"] == [seen["own"]], seen
