"""Helpers shared by the mcp_sync tests: fixture-server launch configs, an HTTP launcher,
the server-side event log, and bounded polling / process checks.

Import as ``from tests.support import ...`` (``tests`` is a package).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar

from mcp import StdioServerParameters

from mcp_sync._config.child_env import environment_snapshot

REPO_ROOT = Path(__file__).resolve().parent.parent
TESTS_DIR = REPO_ROOT / "tests"
SERVERS_DIR = TESTS_DIR / "servers"
FIXTURE_SERVER = SERVERS_DIR / "fixture_server.py"
"""The configurable 2.x-SDK fixture server (flags and tools: see its module docstring)."""
HANGING_SERVER = SERVERS_DIR / "hanging_server.py"
"""A stdio process that reads stdin and never answers (``--ignore-signals``, ``--events PATH``)."""
LEGACY_V1_SERVER = SERVERS_DIR / "legacy_v1_server.py"
"""The 1.x-SDK server; run it with the ``legacy_v1_python`` fixture's interpreter."""
PYTHON = sys.executable
REFERENCE_SERVERS_DIR = TESTS_DIR / "reference_servers"
WARM_LAUNCHER = SERVERS_DIR / "warm_launcher.py"
"""Imports the SDK once and forks the suite's Python servers (see its module docstring)."""
WARM_SHIM = SERVERS_DIR / "warm_shim.py"
"""The command of a warm-launched server: hands its pipes to the launcher and stands in for the server."""
EVERYTHING_ENTRY = Path("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
FAST_CLOCK = Path("fast_clock.mjs")
"""The Node preload (beside the reference servers' package.json) that runs server-everything's clock
`FAST_CLOCK_FACTOR` times faster: see `ReferenceServers.everything_argv`."""
FAST_CLOCK_FACTOR = 10
"""How many times sooner the fast server-everything's timers fire: its research stages and task
pollInterval take 0.1 s instead of 1 s."""
FILESYSTEM_ENTRY = Path("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")

T = TypeVar("T")
PathLike = str | os.PathLike[str]


def _events_args(events: EventLog | PathLike | None) -> list[str]:
    return [] if events is None else ["--events", os.fspath(events)]


# --- warm launching ---------------------------------------------------------------------------------
#
# A Python server spends ~0.7 s of CPU importing the SDK before it can answer; most tests start one or
# more. `python_command` starts the suite's own servers through the warm launcher instead: each is
# still a process of its own (its own pipes, exit status, process group, signals relayed), forked from
# a parent that has the SDK imported. Tests about the server process itself (its process group, the
# helpers it starts, signals it ignores) get a real interpreter: the flags below, or the test marker
# ``real_processes``. ``MCP_SYNC_TEST_WARM=0`` turns warm launching off for a whole run.
#
# The state below belongs to the test process that started the launcher (its owner): the launcher ends
# with it, killing what it forked and removing its folder. Subprocesses and forked children of the
# owner reuse its launcher (the socket is in the environment, and inherited with this module); a
# launcher that failed to start fails the test that asked for it, and the next one tries again.

REAL_PROCESS_FLAGS = frozenset({"--helper", "--ignore-signals"})
"""Fixture-server flags whose tests are about the server's own process: never warm-launched."""
LAUNCHER_SOCKET_ENV = "MCP_SYNC_TEST_LAUNCHER"
"""The launcher's socket, inherited by the test's subprocesses (a CLI run, a host script): they use it too."""
LAUNCHER_START_TIMEOUT = 30.0
"""Bound on the launcher's start (it imports the SDK and the fixture servers' modules)."""

_launcher_lock = threading.Lock()
_launcher_socket: str | None = None
warm_launching = True
"""Cleared for a test marked ``real_processes`` (tests/conftest.py); each test sets it again."""


def _start_launcher() -> str:
    directory = tempfile.mkdtemp(prefix="mcp-sync-warm-")
    path = os.path.join(directory, "launcher.sock")
    process = subprocess.Popen(
        [PYTHON, os.fspath(WARM_LAUNCHER), path, str(os.getpid())],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None
    # The launcher forks and its first process exits at once; the forked one says READY when listening.
    ready: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: ready.put(process.stdout.readline()), daemon=True).start()  # type: ignore[union-attr]
    try:
        line = ready.get(timeout=LAUNCHER_START_TIMEOUT)
    except queue.Empty:
        line = b""
    process.wait(timeout=LAUNCHER_START_TIMEOUT)
    process.stdout.close()
    if line.strip() != b"READY":
        raise RuntimeError(f"the warm launcher did not start (it printed {line!r})")
    return path


WARM_SCRIPTS = ("examples/demo_server.py",)
"""Servers that samples, examples and CLI runs start as ``python <script>`` (from the repository root):
the ``python`` of `python_path()` runs them warm."""

_PYTHON_WRAPPER = """#!/bin/sh
# `python <script>` for a server of this repository runs it warm (see tests/support.py);
# anything else is the real interpreter.
case "$1" in
    {patterns}) exec "{python}" -I -S "{shim}" "{socket}" "$@" ;;
esac
exec "{python}" "$@"
"""


def _python_wrapper_dir(socket_path: str) -> str:
    """The folder (beside the launcher's socket) holding the ``python`` wrapper for `socket_path`."""
    directory = os.path.join(os.path.dirname(socket_path), "bin")
    wrapper = os.path.join(directory, "python")
    with _launcher_lock:
        if os.path.exists(wrapper):
            return directory
        os.makedirs(directory, exist_ok=True)
        patterns = "|".join(f"{script}|*/{script}" for script in WARM_SCRIPTS)
        text = _PYTHON_WRAPPER.format(patterns=patterns, python=PYTHON, shim=WARM_SHIM, socket=socket_path)
        temporary = f"{wrapper}.{os.getpid()}.{threading.get_ident()}"  # processes share the folder
        with open(temporary, "w") as file:
            file.write(text)
        os.chmod(temporary, 0o755)
        os.replace(temporary, wrapper)
    return directory


def python_path(path: str | None = None) -> str:
    """`path` (default: this process's PATH) with this interpreter's folder first, as a shell with the
    virtualenv active has it: ``python`` is this interpreter. Where warm launching is on, a ``python``
    that runs `WARM_SCRIPTS` warm comes before it."""
    folders = [os.fspath(Path(PYTHON).parent)]
    socket_path = launcher_socket() if warm_launching else None
    if socket_path is not None:
        folders.insert(0, _python_wrapper_dir(socket_path))
    return os.pathsep.join([*folders, os.environ.get("PATH", "") if path is None else path])


def launcher_socket() -> str | None:
    """The warm launcher's socket (started on first use, one per test process), or None when warm
    launching is off."""
    global _launcher_socket
    if os.environ.get("MCP_SYNC_TEST_WARM", "1") == "0" or not hasattr(os, "pidfd_open"):
        return None
    with _launcher_lock:
        if _launcher_socket is None:
            inherited = os.environ.get(LAUNCHER_SOCKET_ENV)
            if inherited and os.path.exists(inherited):
                _launcher_socket = inherited
            else:
                _launcher_socket = _start_launcher()
                os.environ[LAUNCHER_SOCKET_ENV] = _launcher_socket
        return _launcher_socket


def warm_server_pid(shim_pid: int) -> int | None:
    """The pid of the server a warm-launched shim stands in for (the launcher records it), or None when
    `shim_pid` is no shim of this test process's launcher."""
    socket_path = _launcher_socket
    if socket_path is None:
        return None
    try:
        return int(Path(socket_path).parent.joinpath("pids", str(shim_pid)).read_text())
    except (OSError, ValueError):
        return None


def python_command(
    script: PathLike, *args: str, python: PathLike = PYTHON, warm: bool | None = None
) -> list[str]:
    """The command line that runs `script` with `args`: through the warm launcher where it may
    (this interpreter, no flag in `REAL_PROCESS_FLAGS`, the test not marked ``real_processes``),
    else ``[python, script, *args]``. `warm` forces the choice."""
    if warm is None:
        warm = (
            warm_launching
            and os.fspath(python) == PYTHON
            and not REAL_PROCESS_FLAGS.intersection(args)
        )
    socket_path = launcher_socket() if warm else None
    if socket_path is None:
        return [os.fspath(python), os.fspath(script), *args]
    return [os.fspath(python), "-I", "-S", os.fspath(WARM_SHIM), socket_path, os.fspath(script), *args]


def module_command(module: str, *args: str, unbuffered: bool = False) -> list[str]:
    """``python [-u] -m MODULE ARGS`` (the command line, a host script of tests/hosts): through the warm
    launcher where warm launching is on (a fresh interpreter spends ~1 s of CPU importing the SDK before
    the program can start; the launcher has it imported), else a real interpreter. The run is a process
    of its own either way: its own pipes, exit status and signals (see `python_command`), and it ends as
    an interpreter does."""
    options = ["-u"] if unbuffered else []
    socket_path = launcher_socket() if warm_launching else None
    if socket_path is None:
        return [PYTHON, *options, "-m", module, *args]
    return [PYTHON, "-I", "-S", os.fspath(WARM_SHIM), socket_path, *options, "-m", module, *args]


def cli_command(*args: str) -> list[str]:
    """``python -m mcp_sync ARGS``, warm where it may be (`module_command`)."""
    return module_command("mcp_sync", *args)


DEMO_SERVER = REPO_ROOT / "examples" / "demo_server.py"
"""The bundled demo server (`examples/servers.yaml` runs it)."""


def demo_config(name: str = "demo") -> dict[str, Any]:
    """The demo server over stdio, started with this interpreter (warm-launched where it may be)."""
    return {"server_name": name, "transport": "stdio", **command_entry(DEMO_SERVER)}


def command_entry(script: PathLike = FIXTURE_SERVER, *args: str) -> dict[str, Any]:
    """``{"command": ..., "args": [...]}`` running `script` with `args` as `python_command` does: the
    part of a server entry a host file (Cursor, Claude Desktop, VS Code, ...) holds."""
    command, *arguments = python_command(script, *args)
    return {"command": command, "args": arguments}


def stdio_config(
    name: str,
    *flags: str,
    events: EventLog | PathLike | None = None,
    script: PathLike = FIXTURE_SERVER,
    **overrides: Any,
) -> dict[str, Any]:
    """An mcp_sync stdio server entry that runs the fixture server with `flags`.

    ``{"server_name": name, "transport": "stdio", "command": PYTHON, "args": [...]}``;
    `events` adds ``--events PATH``; `overrides` (``env``, ``cwd``, timeouts, ...) are
    merged in last. `script` runs another server file (e.g. `HANGING_SERVER`).
    """
    command = command_entry(script, *flags, *_events_args(events))
    config: dict[str, Any] = {"server_name": name, "transport": "stdio", **command}
    config.update(overrides)
    return config


def http_config(name: str, url: str, **overrides: Any) -> dict[str, Any]:
    """An mcp_sync Streamable HTTP server entry for `url` (e.g. ``HttpServer.url``)."""
    config: dict[str, Any] = {"server_name": name, "transport": "streamable-http", "url": url}
    config.update(overrides)
    return config


def stdio_params(
    *flags: str,
    events: EventLog | PathLike | None = None,
    script: PathLike = FIXTURE_SERVER,
    python: PathLike = PYTHON,
    env: dict[str, str] | None = None,
    cwd: PathLike | None = None,
) -> StdioServerParameters:
    """`StdioServerParameters` for the raw `mcp.Client` (same command line as `stdio_config`)."""
    command, *args = python_command(script, *flags, *_events_args(events), python=python)
    return StdioServerParameters(
        command=command,
        args=args,
        env=env,
        cwd=os.fspath(cwd) if cwd is not None else None,
    )


class EventLog:
    """The fixture server's ``--events`` file: one JSON object per line, appended server-side.

    Pass an `EventLog` wherever a path is wanted (it is ``os.PathLike``).
    """

    def __init__(self, path: PathLike) -> None:
        self.path = Path(path)

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return os.fspath(self.path)

    def __repr__(self) -> str:
        return f"EventLog({os.fspath(self.path)!r})"

    def events(self) -> list[dict[str, Any]]:
        """All complete events written so far (a line still being written is left out)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        out: list[dict[str, Any]] = []
        for line in text.splitlines(keepends=True):
            if not line.endswith("\n"):
                break
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    @staticmethod
    def _matcher(
        what: str | Callable[[dict[str, Any]], bool], tag: str | None
    ) -> Callable[[dict[str, Any]], bool]:
        def matches(event: dict[str, Any]) -> bool:
            if tag is not None and event.get("tag") != tag:
                return False
            if isinstance(what, str):
                return event.get("event") == what
            return bool(what(event))

        return matches

    def find(
        self, what: str | Callable[[dict[str, Any]], bool], tag: str | None = None
    ) -> list[dict[str, Any]]:
        """Events matching an event name (or predicate) and, if given, a tag."""
        matches = self._matcher(what, tag)
        return [event for event in self.events() if matches(event)]

    def count(self, what: str | Callable[[dict[str, Any]], bool], tag: str | None = None) -> int:
        return len(self.find(what, tag))

    def wait_for(
        self,
        what: str | Callable[[dict[str, Any]], bool],
        tag: str | None = None,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Poll until an event matches (by name or predicate, and tag); return the first match.

        Raises AssertionError after `timeout` seconds, listing the events seen.
        """
        matches = self._matcher(what, tag)
        deadline = time.monotonic() + timeout
        while True:
            seen = self.events()
            for event in seen:
                if matches(event):
                    return event
            if time.monotonic() >= deadline:
                wanted = what if isinstance(what, str) else getattr(what, "__name__", "predicate")
                raise AssertionError(
                    f"no event {wanted!r}"
                    + (f" with tag {tag!r}" if tag is not None else "")
                    + f" within {timeout}s in {self.path}; saw: {seen!r}"
                )
            time.sleep(0.02)


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str | None = None,
) -> T:
    """Poll `predicate` until it returns a truthy value and return that value.

    Raises AssertionError after `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(message or f"condition {predicate!r} not met within {timeout}s")
        time.sleep(interval)


def assert_stopped_if_started(events: EventLog, tag: str, barrier: Callable[[], object]) -> None:
    """After a call of the fixture's ``sleep`` with `tag` timed out: if the server started it, the
    server was told to stop it (its ``cancelled`` event comes).

    Whether a call reached the server before a short timeout ran out depends on the machine's load (a
    call that never left needs no cancelling); the promise is that none keeps running. `barrier` makes a
    later call on the same connection, after which the server has read whatever the timed-out call sent.
    """
    barrier()
    if events.find("started", tag=tag):
        events.wait_for("cancelled", tag=tag)


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name, or None if there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return raw[raw.rfind(")") + 2 :].split()


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (a zombie has exited; it awaits reaping)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = _proc_stat(pid)
    if stat is None:
        return os.path.exists(f"/proc/{pid}") or not os.path.isdir("/proc")
    return stat[0] != "Z"


def child_pids_of(pid: int, recursive: bool = False) -> list[int]:
    """Pids whose parent is `pid` (all descendants if `recursive`), found via /proc.

    Zombies are included: a child that exited but was never reaped is a leak too.
    """
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _proc_stat(int(entry))
        if stat is None:
            continue
        parents.setdefault(int(stat[1]), []).append(int(entry))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            if recursive:
                todo.append(child)
    return sorted(found)


def process_group_members(pgid: int) -> list[int]:
    """Pids of the processes in process group `pgid` (zombies included), found via /proc."""
    members: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _proc_stat(int(entry))
        if stat is not None and int(stat[2]) == pgid:
            members.append(int(entry))
    return sorted(members)


def exception_texts(exc: BaseException) -> list[str]:
    """Every text an exception carries, for a leak check: for it and each exception it leads to
    (``__cause__``, ``__context__``, the members of a group, exceptions among its attributes), its
    str, repr, arguments and notes; and the whole formatted traceback of the chain."""
    texts = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        texts += [str(current), repr(current), *map(repr, current.args)]
        texts += [str(note) for note in getattr(current, "__notes__", ())]
        linked: list[object] = [current.__cause__, current.__context__]
        if isinstance(current, BaseExceptionGroup):
            linked += current.exceptions
        for value in vars(current).values():
            linked += list(value.values()) if isinstance(value, dict) else [value]
            if isinstance(value, str):
                texts.append(value)
        todo += [item for item in linked if isinstance(item, BaseException)]
    return texts


class HttpServer:
    """Runs a server with ``--transport http --port 0`` as a subprocess, for ``with`` blocks.

    Waits (bounded by `startup_timeout`) for its ``LISTENING <port>`` line, then exposes
    `url` (``http://127.0.0.1:<port>/mcp``), `port`, `pid`, `kill()` (SIGKILL, for "server
    went away" tests) and `stop()`. Leaving the block terminates and reaps it (bounded).
    ``transport="sse"`` runs the legacy SSE mode instead (`url` then ends in ``/sse``).
    Runs the fixture server by default; for the 1.x server pass
    ``script=LEGACY_V1_SERVER, python=legacy_v1_python``. Its stderr goes to a temporary
    file (`stderr_text()`), never to a pipe that could fill up.
    """

    def __init__(
        self,
        *flags: str,
        events: EventLog | PathLike | None = None,
        script: PathLike = FIXTURE_SERVER,
        python: PathLike = PYTHON,
        env: dict[str, str] | None = None,
        cwd: PathLike | None = None,
        startup_timeout: float = 20.0,
        transport: str = "http",
    ) -> None:
        self.transport = transport
        self.argv = python_command(
            script, "--transport", transport, "--port", "0", *flags, *_events_args(events), python=python
        )
        self._env = env
        self._cwd = cwd
        self._startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.port: int | None = None

    @property
    def process(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise RuntimeError("HttpServer is not started")
        return self._process

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("HttpServer is not listening")
        return f"http://127.0.0.1:{self.port}/{'sse' if self.transport == 'sse' else 'mcp'}"

    def _pump_stdout(self, stream: IO[bytes]) -> None:
        # Reads the child's stdout to the end so it can never block on a full pipe.
        for raw in iter(stream.readline, b""):
            self._lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        stream.close()
        self._lines.put(None)

    def stderr_text(self) -> str:
        """What the server has written to stderr so far."""
        if self._stderr is None:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def start(self) -> HttpServer:
        # Kept open across start() / stop(); close() releases it.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self._process = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=self._env,
            cwd=self._cwd,
            start_new_session=True,
        )
        assert self._process.stdout is not None
        threading.Thread(target=self._pump_stdout, args=(self._process.stdout,), daemon=True).start()
        deadline = time.monotonic() + self._startup_timeout
        while self.port is None:
            remaining = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(remaining, 0.0)) if remaining > 0 else None
            except queue.Empty:
                line = None
            if line is None:
                self.stop()
                stderr = self.stderr_text()
                self.close()
                raise RuntimeError(
                    f"server did not print LISTENING within {self._startup_timeout}s "
                    f"(exit status {self.process.poll()}): {self.argv!r}\nstderr:\n{stderr}"
                )
            if line.startswith("LISTENING "):
                self.port = int(line.split()[1])
        return self

    def kill(self) -> None:
        """SIGKILL the server and reap it: the server goes away without a goodbye. A warm-launched
        server goes with its shim (the launcher kills it): this waits until it has gone too."""
        if self._process is None:
            return
        server = warm_server_pid(self._process.pid)
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL cannot be ignored
            self._process.wait(timeout=5)
        if server is not None:
            wait_until(lambda: not pid_alive(server), timeout=5, message=f"server {server} outlived kill()")

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, wait up to `timeout` seconds, then SIGKILL; always reaps."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def close(self) -> None:
        """Release the stderr file (after `stop()`; `__exit__` does both)."""
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> HttpServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        self.close()


@dataclass(frozen=True)
class ReferenceServers:
    """Launch commands for the official npm reference servers over stdio (the
    ``reference_servers`` fixture returns one, installed)."""

    root: Path
    node: str

    @property
    def everything_command(self) -> list[str]:
        """``[node, .../server-everything/dist/index.js, "stdio"]``."""
        return self.everything_argv()

    def everything_argv(self, transport: str = "stdio", *, fast: bool = False) -> list[str]:
        """The command line of server-everything over `transport` (``"stdio"`` or ``"streamableHttp"``).

        `fast` starts the same published server with `FAST_CLOCK` preloaded (``node --import``): the
        timers its own code sets fire `FAST_CLOCK_FACTOR` times sooner (the research query's four 1 s
        stages, the async tools' 1 s polls of the client, its log and update intervals), and the
        pollInterval it gives a task is divided likewise, so a client polls in step. The SDK's timers
        (request timeouts, a task's ttl) keep real time. The server goes through the same states in the
        same order, sooner: for tests of what it does, not of how long it takes. A test that must act on a
        task while it runs (cancel it, time out, cut the connection) needs the real stages: the task's
        length is its margin.
        """
        preload = self.fast_clock_options if fast else []
        return [self.node, *preload, str(self.root / EVERYTHING_ENTRY), transport]

    @property
    def fast_clock_options(self) -> list[str]:
        """The options of ``node`` that preload `FAST_CLOCK` with its factor: ``["--import", URL]``."""
        return ["--import", f"{(self.root / FAST_CLOCK).as_uri()}?factor={FAST_CLOCK_FACTOR}"]

    def filesystem_command(self, *directories: str | os.PathLike[str]) -> list[str]:
        """``[node, .../server-filesystem/dist/index.js, dir, ...]``: serves only those directories."""
        if not directories:
            raise ValueError("server-filesystem needs at least one allowed directory")
        return [self.node, str(self.root / FILESYSTEM_ENTRY), *map(os.fspath, directories)]

    def everything_params(self) -> StdioServerParameters:
        command, *args = self.everything_command
        return StdioServerParameters(command=command, args=args)

    def filesystem_params(self, *directories: str | os.PathLike[str]) -> StdioServerParameters:
        command, *args = self.filesystem_command(*directories)
        return StdioServerParameters(command=command, args=args)

    def everything_config(self, name: str, *, fast: bool = False, **overrides: Any) -> dict[str, Any]:
        """An mcp_sync stdio entry for server-everything (`fast`: on its fast clock, `everything_argv`)."""
        command, *args = self.everything_argv(fast=fast)
        return {"server_name": name, "transport": "stdio", "command": command, "args": args, **overrides}

    def filesystem_config(
        self, name: str, *directories: str | os.PathLike[str], **overrides: Any
    ) -> dict[str, Any]:
        """An mcp_sync stdio entry for server-filesystem over `directories`."""
        command, *args = self.filesystem_command(*directories)
        return {"server_name": name, "transport": "stdio", "command": command, "args": args, **overrides}


def run_in_repo(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a command from the repository root as a shell with the virtualenv active would: `python`
    (the examples' server command) is this interpreter. Output captured, no stdin, bounded. Safe from a
    thread pool: the environment is copied as the library copies a server's (`environment_snapshot`)."""
    env = environment_snapshot()
    env["PATH"] = python_path(env.get("PATH", ""))
    return subprocess.run(
        argv,
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def fixture_flags(**flags: Any) -> list[str]:
    """Turn keyword flags into fixture command-line flags: ``tools=5, ignore_signals=True``
    gives ``["--tools", "5", "--ignore-signals"]`` (False / None are left out)."""
    out: list[str] = []
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is not None and value is not False:
            out += [flag, str(value)]
    return out


__all__: Sequence[str] = [
    "DEMO_SERVER",
    "FAST_CLOCK_FACTOR",
    "FIXTURE_SERVER",
    "HANGING_SERVER",
    "LEGACY_V1_SERVER",
    "PYTHON",
    "REFERENCE_SERVERS_DIR",
    "REPO_ROOT",
    "EventLog",
    "HttpServer",
    "ReferenceServers",
    "assert_stopped_if_started",
    "child_pids_of",
    "cli_command",
    "command_entry",
    "demo_config",
    "exception_texts",
    "fixture_flags",
    "http_config",
    "launcher_socket",
    "pid_alive",
    "process_group_members",
    "python_command",
    "python_path",
    "run_in_repo",
    "stdio_config",
    "stdio_params",
    "wait_until",
    "warm_server_pid",
]


class Records(logging.Handler):
    """Every record any logger emits, formatted (message and traceback) as a handler would write it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.name, self.format(record)))

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)
