"""A warm parent for the test suite's Python servers: it imports the `mcp` SDK once, then forks each
server from there, so a fixture server answers in milliseconds instead of after ~0.7 s of imports.

Every server is still a process of its own, with its own pipes, exit status and process group. The
command a test configures runs ``warm_shim.py`` (an interpreter started with ``-I -S``, a few
milliseconds): the shim sends its stdin, stdout and stderr, its command line, working directory,
environment and the signals it was started with ignored over a Unix socket; the launcher forks a child
that starts a session of its own, takes those three descriptors as its own 0, 1 and 2, becomes that
directory and environment, and runs the script (or a module, ``[-u] -m NAME``: the command line) as
``__main__``. A host script of tests/hosts (``-u -m tests.hosts.NAME``) runs from the launcher's top
level once the child has left the launcher's frames, so that it ends as ``python -m`` does, through the
interpreter's own exit. The shim then stands in for the server towards whoever started it:

- it relays the signals it gets (SIGTERM, SIGINT, SIGHUP, ...) to the server's process group, as a
  signal to the shim's own group would have reached a real server, and to a module run's process
  alone, as a signal to its pid reaches a real program (one that comes before the child has detached,
  a session of its own and a fresh interpreter's signal handlers, is relayed once it has);
- it exits as the server did: the same status, or killed by the same signal;
- if the shim itself is killed (SIGKILL cannot be relayed), the launcher sees its connection end and
  SIGKILLs the server's process group; this comes a moment after the shim's death, so a test that
  checks the server's own pid right after killing its client's child is marked ``real_processes``.

What a forked server cannot be is a child or a process-group member of whoever started the shim, nor
a fresh interpreter: tests about those (process groups, helpers, signals a server ignores) run real
interpreters (``tests.support.python_command``), and so does a server whose environment sets up the
interpreter differently from the launcher's (a ``PYTHON*`` variable read at start-up, the locale; the
shim is told to run it cold). ``PYTHONUNBUFFERED`` and ``PYTHONDONTWRITEBYTECODE`` each server takes
from its own environment; ``sys.flags`` stays the launcher's (``subprocess`` passes its ``-B`` on to a
server's own Python children).

The server's environment is the shim's, with ``MCP_SYNC_TEST_SHIM_PID`` naming the shim (the process
its client started; the fixture server reports it as ``client_pid``). For each server the launcher
writes its pid to ``<socket's folder>/pids/<shim pid>``, so a test can wait for the server itself.

Run as ``python warm_launcher.py SOCKET OWNER_PID``: the process forks once more and returns at once
(the server processes must not be the test process's children); the forked launcher prints ``READY``
on the inherited stdout when it listens, and exits when the process OWNER_PID ends, killing what it
started and removing the socket's folder. Every warm process shares the launcher's hash seed (``str``
hashes), where real interpreters each draw one.

Protocol on a connection: the shim sends a 4-byte big-endian length and a JSON object ``{"argv",
"cwd", "env", "ignored"}``, with the three descriptors attached (SCM_RIGHTS) to its first byte; the
launcher answers ``{"pid": N}`` once the server is forked (or ``{"error": ...}``: the shim then runs a
real interpreter) and ``{"status": S}`` (``os.waitpid``'s raw status) once it has been reaped, each on
a line of its own, then closes the connection. No step of one connection blocks the others.
"""

from __future__ import annotations

import ast
import atexit
import builtins
import contextlib
import gc
import importlib
import importlib.util
import io
import json
import os
import select
import selectors
import shutil
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import types
from dataclasses import dataclass, field
from typing import Any, NoReturn

# Bound on a forked child's detaching (`_detach`: a few system calls) before its pid goes to the shim.
DETACH_TIMEOUT = 10.0
# Requests carry a whole environment; a larger one is refused.
MAX_REQUEST_BYTES = 4 * 1024 * 1024
# What a server in this suite imports, so that no forked server imports it again (with the imports of
# `PRELOAD_SCRIPTS`).
PRELOAD_MODULES = (
    "anyio",
    "anyio._backends._asyncio",
    "anyio.streams.stapled",
    "anyio.streams.tls",
    "pkgutil",
    "rich.console",
    "rich.logging",
    "uvicorn",
    "uvicorn.lifespan.on",
    "uvicorn.loops.asyncio",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.websockets.auto",
    "starlette.applications",
    "starlette.routing",
    "starlette.responses",
    "mcp",
    "mcp.server.mcpserver",
    "mcp.server.stdio",
    "mcp.server.sse",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
)
# Modules run as ``python [-u] -m NAME`` (the command line under test, the host scripts of tests/hosts),
# with what a run of the command line imports: each name and the modules under it.
MAIN_MODULES = ("mcp_sync", "tests.hosts")
# The modules that end through the interpreter's own exit (`_ModuleRun`): the host scripts, whose subject
# is how a program ends. The rest end as a server does: threads joined and atexit handlers, then at once
# (a forked child's module teardown costs ~70 ms of CPU).
REAL_EXIT_MODULES = ("tests.hosts",)
PRELOAD_CLI_MODULES = (
    "mcp_sync._cli.commands",
    "mcp_sync._cli.tasks",
    "mcp_sync._hub.hub",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    # What a session's one-time warm-up imports (mcp_sync._server.warm_up).
    "jsonschema.exceptions",
    "jsonschema.validators",
    "referencing.exceptions",
)
# The servers whose top-level imports are run here (only the imports: a module body may configure
# logging or other process state the server must set up itself).
PRELOAD_SCRIPTS = (
    "fixture_server.py",
    "oauth_server.py",
    "tasks_server.py",
    "raw_tasks_server.py",
    "task_requests_server.py",
    "status_server.py",
    "../../examples/demo_server.py",
)
# What every server of a kind builds alike, built here once after the imports (``module:function``, the
# module imported by one of `PRELOAD_SCRIPTS`): the fixture server's tool models (~50 ms a server).
PRELOAD_BUILDS = ("fixture_app:build_tool_models",)
# Signals a server starts with as a fresh interpreter has them (unless its shim was started with one
# ignored): the launcher's own handlers are not the server's.
_RESET_SIGNALS = (
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
    signal.SIGINT,
)


@dataclass(eq=False)
class _Connection:
    """One shim: its socket, its request as it arrives, and once forked its server (pid and pidfd)."""

    sock: socket.socket
    data: bytearray = field(default_factory=bytearray)
    fds: list[int] = field(default_factory=list)
    pid: int | None = None
    pidfd: int | None = None
    reaped: bool = False
    closed: bool = False

    def request(self) -> dict[str, Any] | None:
        """The request once it has arrived whole, else None."""
        if len(self.data) < 4:
            return None
        (length,) = struct.unpack(">I", self.data[:4])
        if len(self.data) < 4 + length:
            return None
        request = json.loads(self.data[4 : 4 + length])
        assert isinstance(request, dict)
        return request

    def send(self, message: dict[str, Any]) -> bool:
        """Send one line to the shim; False if it has gone."""
        try:
            self.sock.sendall(json.dumps(message).encode() + b"\n")
        except OSError:
            return False
        return True

    def kill_server(self) -> None:
        """SIGKILL the server and its process group, also before the server has made its group."""
        if self.pid is None or self.reaped:
            return
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)


_compiled: dict[tuple[str, int, int], types.CodeType] = {}


def _code_of(script: str) -> types.CodeType:
    """The script compiled once per version of the file (compiling fixture_server.py costs ~20 ms)."""
    stat = os.stat(script)
    key = (script, stat.st_mtime_ns, stat.st_size)
    code = _compiled.get(key)
    if code is None:
        with open(script, "rb") as source:
            code = compile(source.read(), script, "exec", dont_inherit=True)
        _compiled[key] = code
    return code


@dataclass(frozen=True)
class _Program:
    """What a request runs: a script's code, or a module by name (``-m``), and its arguments."""

    code: types.CodeType | str
    args: list[str]
    unbuffered: bool  # ``-u`` came first

    @classmethod
    def of(cls, argv: list[Any], cwd: str) -> _Program:
        """A script (a relative path is the shim's), or ``[-u] -m NAME`` for a name of `MAIN_MODULES`."""
        argv = [str(arg) for arg in argv]
        unbuffered = argv[0] == "-u"
        if unbuffered:
            argv = argv[1:]
        if argv[0] == "-m":
            name = argv[1]
            if not any(name == main or name.startswith(f"{main}.") for main in MAIN_MODULES):
                raise ValueError(f"-m {name}: only {MAIN_MODULES} run warm")
            return cls(name, argv[2:], unbuffered)
        if unbuffered:
            raise ValueError("-u runs warm for a module only")
        return cls(_code_of(os.path.join(cwd, argv[0])), argv, unbuffered)


ADOPTED_SETTINGS = ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")
"""Start-up variables a forked server takes from its own environment (`_take_over`): a client that
starts its server with a bare environment (the SDK's stdio client passes only HOME, PATH, SHELL and
TERM) still gets a warm one."""


def _env_flag(env: dict[str, str], name: str) -> bool:
    """A start-up flag as the interpreter reads it from `env` (CPython's ``_Py_get_env_flag``): unset or
    empty is off, an integer is on unless 0, anything else is on."""
    value = env.get(name)
    if not value:
        return False
    try:
        return int(value) != 0
    except ValueError:
        return True


def _coerces_locale(env: dict[str, str]) -> bool:
    """Whether an interpreter started with `env` coerces the C locale to C.UTF-8 (PEP 538): LC_ALL is
    unset and LC_CTYPE's locale (LC_CTYPE, else LANG) is C. (The shim is such an interpreter: the
    environment it sends already holds the ``LC_CTYPE=C.UTF-8`` that coercion sets.)"""
    return not env.get("LC_ALL") and (env.get("LC_CTYPE") or env.get("LANG") or "C") in ("C", "POSIX")


def _ctype_locale(env: dict[str, str]) -> str:
    """The LC_CTYPE locale an interpreter started with `env` runs in (LC_ALL, else LC_CTYPE, else LANG)."""
    if _coerces_locale(env):
        return "C.UTF-8"
    return env.get("LC_ALL") or env.get("LC_CTYPE") or env["LANG"]


def _interpreter_settings(env: dict[str, str]) -> dict[str, str]:
    """What the interpreter reads from `env` at start-up and a forked server cannot change: the
    ``PYTHON*`` variables but `ADOPTED_SETTINGS` (PYTHONPATH, PYTHONHASHSEED, PYTHONIOENCODING, ...) and
    the locale, which sets the standard streams' encoding."""
    settings = {
        name: value
        for name, value in env.items()
        if name.startswith("PYTHON") and name not in ADOPTED_SETTINGS
    }
    settings["LC_CTYPE locale"] = _ctype_locale(env)
    return settings


def _exit_status(code: object) -> int:
    """What ``sys.exit(code)`` makes the interpreter exit with."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _fresh_stdio(unbuffered: bool) -> None:
    """Standard streams made as the interpreter makes them at start-up, on the server's descriptors
    (``-u`` or ``PYTHONUNBUFFERED``: stdout written through, as stderr always is)."""
    encoding, errors = sys.stdout.encoding, sys.stdout.errors
    sys.stdin = sys.__stdin__ = open(  # noqa: SIM115
        0, encoding=encoding, errors=errors, newline="\n", closefd=False
    )
    if unbuffered:
        sys.stdout = sys.__stdout__ = io.TextIOWrapper(
            open(1, "wb", buffering=0, closefd=False),  # noqa: SIM115
            encoding=encoding,
            errors=errors,
            write_through=True,
        )
    else:
        sys.stdout = sys.__stdout__ = open(  # noqa: SIM115
            1, "w", buffering=1 if os.isatty(1) else -1, encoding=encoding, errors=errors, closefd=False
        )
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        open(2, "wb", buffering=0, closefd=False),  # noqa: SIM115
        encoding=encoding,
        errors="backslashreplace",
        line_buffering=not unbuffered,
        write_through=True,
    )


def _run_main(program: _Program) -> None:
    """Run a script's code, or a module (``python -m``), as ``__main__``: a new module that stays in
    ``sys.modules``, as the interpreter leaves it."""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    if isinstance(program.code, str):
        sys.path[0] = os.getcwd()
        spec = importlib.util.find_spec(program.code)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(f"{program.code}.__main__")  # a package runs its __main__
        if spec is None or spec.loader is None or spec.origin is None:
            raise ModuleNotFoundError(f"No module named {program.code!r}")
        main.__spec__, main.__loader__, main.__package__ = spec, spec.loader, spec.parent
        main.__file__ = spec.origin
        code = spec.loader.get_code(spec.name)  # type: ignore[attr-defined]
        sys.argv = [spec.origin, *program.args]
    else:
        code = program.code
        main.__file__ = code.co_filename
        sys.argv = list(program.args)
        sys.path[0] = os.path.dirname(code.co_filename)
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _run_script(program: _Program) -> int:
    """Run the script as a fresh interpreter would run it as ``__main__``; its exit status."""
    try:
        _run_main(program)
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException as exc:
        # As the interpreter reports it: from the script's own frame on, not this file's.
        frames = exc.__traceback__
        while frames is not None and frames.tb_frame.f_code.co_filename == __file__:
            frames = frames.tb_next
        exc = exc.with_traceback(frames)
        sys.excepthook(type(exc), exc, exc.__traceback__)
        status = -signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 1
    # The interpreter's own exit: non-daemon threads joined, then the atexit handlers.
    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except BaseException:
        print("Exception ignored in: <module 'threading'>", file=sys.stderr)
        traceback.print_exc()
    atexit._run_exitfuncs()
    return status


def _detach(request: dict[str, Any], ready: int) -> None:
    """First thing in the forked child: a session (so a process group) of its own and the signal
    handlers of a fresh interpreter (the signals the shim was started with ignored stay ignored), then a
    byte on `ready`. The launcher tells the shim the child's pid only after that, so a signal the shim
    relays to the child's group always finds it, set up as a fresh interpreter is."""
    os.setsid()
    for signum in _RESET_SIGNALS:
        default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
        signal.signal(signum, signal.SIG_IGN if signum in request["ignored"] else default)
    os.write(ready, b"\0")
    os.close(ready)


def _take_over(request: dict[str, Any], fds: list[int], program: _Program) -> None:
    """In the forked child, once detached (`_detach`): the shim's descriptors, directory and
    environment (its time zone too), and every other descriptor closed."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2:
            with contextlib.suppress(OSError):
                os.close(int(name))
    os.environ.clear()
    os.environ.update(request["env"])
    sys.dont_write_bytecode = _env_flag(request["env"], "PYTHONDONTWRITEBYTECODE")
    time.tzset()
    os.chdir(request["cwd"])
    _fresh_stdio(program.unbuffered or _env_flag(request["env"], "PYTHONUNBUFFERED"))


class _ModuleRun(BaseException):
    """Raised in a forked child that runs a module (``-m``), to leave the launcher's frames: the module
    then runs from the launcher's top level (`run`), and the process ends as ``python -m`` ends, through
    the interpreter's own exit (threads joined, atexit handlers, objects finalized, the exit status or
    the signal of an uncaught KeyboardInterrupt)."""

    def __init__(self, request: dict[str, Any], fds: list[int], program: _Program) -> None:
        super().__init__()
        self.request, self.fds, self.program = request, fds, program

    def run(self) -> None:
        _take_over(self.request, self.fds, self.program)
        # The server's variable: nothing the program starts is the shim's server.
        os.environ.pop("MCP_SYNC_TEST_SHIM_PID", None)
        _run_main(self.program)


def _become_server(request: dict[str, Any], fds: list[int], program: _Program) -> NoReturn:
    """In the forked child: take over the shim's descriptors and the rest (`_take_over`), run the
    script, exit as the interpreter would (its threads joined, atexit), then at once."""
    status = 1
    try:
        _take_over(request, fds, program)
        status = _run_script(program)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        if status < 0:
            signal.signal(-status, signal.SIG_DFL)
            os.kill(os.getpid(), -status)
        os._exit(status)


class Launcher:
    """The accept loop: one selector over the listening socket, the owner, every shim and server."""

    def __init__(self, listener: socket.socket, owner_pidfd: int, pids_dir: str) -> None:
        self.listener = listener
        self.pids_dir = pids_dir
        self.settings = _interpreter_settings(dict(os.environ))
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ, ("accept", None))
        self.selector.register(owner_pidfd, selectors.EVENT_READ, ("owner", None))
        self.connections: set[_Connection] = set()

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select():
                kind, connection = key.data
                if kind == "accept":
                    self._accept()
                elif kind == "owner":
                    return
                elif kind == "shim":
                    self._shim_readable(connection)
                elif kind == "exited":
                    self._reap(connection)

    def shutdown(self) -> None:
        """The owner has gone: no server outlives it."""
        for connection in self.connections:
            connection.kill_server()

    def _accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        sock.setblocking(False)
        connection = _Connection(sock=sock)
        self.connections.add(connection)
        self.selector.register(sock, selectors.EVENT_READ, ("shim", connection))

    def _shim_readable(self, connection: _Connection) -> None:
        try:
            chunk, fds, _, _ = socket.recv_fds(connection.sock, 65536, 3)
        except BlockingIOError:
            return
        except OSError:
            chunk, fds = b"", []
        connection.fds += fds
        if connection.pid is None and chunk:
            connection.data += chunk
            try:
                request = connection.request()
            except ValueError:
                request = {}
            if request is not None and len(connection.data) <= MAX_REQUEST_BYTES:
                self._spawn(connection, request)
            elif len(connection.data) > MAX_REQUEST_BYTES:
                self._refuse(connection, "request too large")
            return
        if chunk:
            return  # the shim says nothing after its request
        # The shim has gone (killed, most likely): so does its server, as a real one killed would.
        connection.kill_server()
        self._close(connection)

    def _refuse(self, connection: _Connection, why: str) -> None:
        """Answer with an error (the shim then runs a real interpreter) and forget the connection."""
        connection.send({"error": why})
        self._close(connection)

    def _spawn(self, connection: _Connection, request: dict[str, Any]) -> None:
        try:
            argv, env, cwd = request["argv"], request["env"], request["cwd"]
            assert isinstance(argv, list) and argv and isinstance(env, dict) and isinstance(cwd, str)
            assert len(connection.fds) == 3, "the shim's three descriptors did not arrive"
            if _interpreter_settings(env) != self.settings:
                raise ValueError("the server's environment sets the interpreter up differently")
            program = _Program.of(argv, cwd)
            request.setdefault("ignored", [])
        except Exception as exc:
            self._refuse(connection, repr(exc))
            return
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        ready, detached = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready)
            _detach(request, detached)
            if isinstance(program.code, str) and program.code.startswith(REAL_EXIT_MODULES):
                fds = connection.fds
                self._forget()
                raise _ModuleRun(request, fds, program)
            _become_server(request, connection.fds, program)
        os.close(detached)
        select.select([ready], [], [], DETACH_TIMEOUT)  # a byte, or end of file if the child died first
        os.close(ready)
        for fd in connection.fds:
            os.close(fd)
        connection.fds = []
        connection.pid, connection.pidfd = pid, os.pidfd_open(pid)
        self.selector.register(connection.pidfd, selectors.EVENT_READ, ("exited", connection))
        shim = env.get("MCP_SYNC_TEST_SHIM_PID")
        if shim:
            with contextlib.suppress(OSError), open(os.path.join(self.pids_dir, shim), "w") as record:
                record.write(str(pid))
        if not connection.send({"pid": pid}):
            connection.kill_server()
            self._close(connection)

    def _forget(self) -> None:
        """In a forked child: close what the launcher holds, through the objects that hold it (a
        descriptor closed under an object would be closed again when the object goes), and drop it."""
        self.selector.close()
        self.listener.close()
        for connection in self.connections:
            connection.sock.close()
            if connection.pidfd is not None:
                os.close(connection.pidfd)
        self.connections = set()

    def _reap(self, connection: _Connection) -> None:
        assert connection.pid is not None and connection.pidfd is not None
        _, status = os.waitpid(connection.pid, 0)
        connection.reaped = True
        self.selector.unregister(connection.pidfd)
        os.close(connection.pidfd)
        connection.pidfd = None
        if not connection.closed:
            connection.send({"status": status})
            self._close(connection)
        self.connections.discard(connection)

    def _close(self, connection: _Connection) -> None:
        """Stop listening to the shim; the connection is forgotten once its server is reaped too."""
        if not connection.closed:
            connection.closed = True
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(connection.sock)
            connection.sock.close()
            for fd in connection.fds:
                os.close(fd)
            connection.fds = []
        if connection.pid is None or connection.reaped:
            self.connections.discard(connection)


def _preload() -> None:
    """Import what the servers import (`PRELOAD_MODULES`, and the top-level imports of each script), then
    build `PRELOAD_BUILDS`."""
    for name in (*PRELOAD_MODULES, *PRELOAD_CLI_MODULES):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    here = os.path.dirname(os.path.abspath(__file__))
    for script in PRELOAD_SCRIPTS:
        path = os.path.normpath(os.path.join(here, script))
        with open(path, "rb") as source:
            tree = ast.parse(source.read(), path)
        imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
        sys.path.insert(0, os.path.dirname(path))
        try:
            for node in imports:
                if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                    continue
                with contextlib.suppress(ImportError):
                    exec(compile(ast.Module([node], []), path, "exec"), {})
        finally:
            sys.path.pop(0)
        _code_of(path)
    for entry in PRELOAD_BUILDS:
        module, function = entry.split(":")
        getattr(sys.modules[module], function)()


def main() -> None:
    socket_path, owner = sys.argv[1], int(sys.argv[2])
    if os.fork() > 0:
        os._exit(0)  # the starter reaps this one; the launcher is nobody's child in the tests
    owner_pidfd = os.pidfd_open(owner)
    folder = os.path.dirname(socket_path)
    pids_dir = os.path.join(folder, "pids")
    os.makedirs(pids_dir, exist_ok=True)
    # The checkout this launcher belongs to comes first, as it does for a program run from its root:
    # the `mcp_sync` preloaded here is the one its tests and host scripts import.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    launcher_pid = os.getpid()
    try:
        _preload()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(socket_path)
        listener.listen(64)
        devnull = os.open(os.devnull, os.O_RDWR)
        print("READY", flush=True)
        os.dup2(devnull, 1)  # the starter's pipe: it reads READY, then end of file
        gc.freeze()  # what the children inherit is never collected there: no copy of each page for it
        launcher = Launcher(listener, owner_pidfd, pids_dir)
        try:
            launcher.serve()
        finally:
            if os.getpid() == launcher_pid:  # not a child leaving for its module (`_ModuleRun`)
                launcher.shutdown()
    finally:
        if os.getpid() == launcher_pid:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except _ModuleRun as leaving:
        module_run: _ModuleRun | None = leaving.with_traceback(None)
    else:
        module_run = None
    if module_run is not None:
        module_run.run()  # here, not in the handler: the module's exceptions have no context of ours
