"""A warm parent for the test suite's Python servers: it imports the `mcp` SDK once, then forks each
server from there, so a fixture server answers in milliseconds instead of after ~0.7 s of imports.

Every server is still a process of its own, with its own pipes, exit status and process group. The
command a test configures runs ``warm_shim.py`` (an interpreter started with ``-I -S``, a few
milliseconds): the shim sends its stdin, stdout and stderr, its command line, working directory and
environment over a Unix socket; the launcher forks a child that starts a session of its own, takes
those three descriptors as its own 0, 1 and 2, becomes that directory and environment, and runs the
script as ``__main__``. The shim then stands in for the server towards whoever started it:

- it relays the signals it gets (SIGTERM, SIGINT, SIGHUP, ...) to the server's process group, as a
  signal to the shim's own group would have reached a real server;
- it exits as the server did: the same status, or killed by the same signal;
- if the shim itself is killed (SIGKILL cannot be relayed), the launcher sees its connection end and
  SIGKILLs the server's process group.

What a forked server cannot be is a child or a process-group member of whoever started the shim, so
tests about those (process groups, helpers, signals a server ignores) run real interpreters: see
``tests.support.python_command``.

Run as ``python warm_launcher.py SOCKET OWNER_PID``: the process forks once more and returns at once
(the server processes must not be the test process's children); the forked launcher prints ``READY``
on the inherited stdout when it listens, and exits when the process OWNER_PID ends.

The server's environment is the shim's, with ``MCP_SYNC_TEST_SHIM_PID`` naming the shim (the process
its client started; the fixture server reports it as ``client_pid``).

Protocol on a connection: the shim sends a 4-byte big-endian length and a JSON object ``{"argv",
"cwd", "env"}``, with the three descriptors attached (SCM_RIGHTS) to its first byte; the launcher
answers ``{"pid": N}`` once the server is forked and ``{"status": S}`` (``os.waitpid``'s raw status)
once it has been reaped, each on a line of its own, then closes the connection.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import traceback
import types
from dataclasses import dataclass, field
from typing import NoReturn

# Bound on reading one request: a shim sends it whole right after connecting.
REQUEST_TIMEOUT = 5.0
# Requests carry a whole environment; a larger one is refused.
MAX_REQUEST_BYTES = 4 * 1024 * 1024
# What a server in this suite imports, so that no forked server imports it again.
PRELOAD_MODULES = (
    "anyio",
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
    "mcp.server.auth.provider",
    "mcp.server.auth.routes",
    "mcp.server.auth.settings",
)
# The servers whose own module bodies are run once here (definitions only: each keeps its work in
# `main()` under ``if __name__ == "__main__"``), so their imports are warm.
PRELOAD_SCRIPTS = ("fixture_server.py", "oauth_server.py", "../../examples/demo_server.py")


@dataclass(eq=False)
class _Connection:
    """One shim: its socket and, once forked, its server's pid (and a pidfd to see it exit)."""

    sock: socket.socket
    pid: int | None = None
    pidfd: int | None = None
    reaped: bool = False
    buffer: bytearray = field(default_factory=bytearray)


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


def _receive_request(sock: socket.socket) -> tuple[dict[str, object], list[int]]:
    sock.settimeout(REQUEST_TIMEOUT)
    data = bytearray()
    fds: list[int] = []
    while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]:
        chunk, received, _, _ = socket.recv_fds(sock, 65536, 3)
        fds += received
        if not chunk:
            raise ConnectionError("the shim closed its connection before sending its request")
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            raise ConnectionError("request too large")
    sock.settimeout(None)
    return json.loads(data[4:]), fds


def _exit_status(code: object) -> int:
    """What ``sys.exit(code)`` makes the interpreter exit with."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _run_script(code: types.CodeType, argv: list[str]) -> int:
    """Run the script as a fresh interpreter would run it as ``__main__``; its exit status."""
    script = os.path.abspath(argv[0])
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(script)
    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        status = -signal.SIGINT
    except BaseException:
        sys.excepthook(*sys.exc_info())
        status = 1
    # The interpreter's own exit: non-daemon threads joined, then the atexit handlers.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    return status


def _become_server(request: dict[str, object], fds: list[int], code: types.CodeType) -> NoReturn:
    """In the forked child: take the shim's descriptors, directory and environment, run the script."""
    status = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for name in os.listdir("/proc/self/fd"):
            if int(name) > 2:
                with contextlib.suppress(OSError):
                    os.close(int(name))
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        cwd = request["cwd"]
        assert isinstance(cwd, str)
        os.chdir(cwd)
        argv = request["argv"]
        assert isinstance(argv, list)
        status = _run_script(code, [str(arg) for arg in argv])
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

    def __init__(self, listener: socket.socket, owner_pidfd: int) -> None:
        self.listener = listener
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        self.selector.register(owner_pidfd, selectors.EVENT_READ, "owner")
        self.connections: set[_Connection] = set()

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select():
                kind, data = (key.data, None) if isinstance(key.data, str) else key.data
                if kind == "accept":
                    self._accept()
                elif kind == "owner":
                    return
                elif kind == "shim":
                    self._shim_readable(data)
                elif kind == "exited":
                    self._reap(data)

    def shutdown(self) -> None:
        """The owner has gone: no server outlives it."""
        for connection in self.connections:
            if connection.pid is not None and not connection.reaped:
                with contextlib.suppress(OSError):
                    os.killpg(connection.pid, signal.SIGKILL)

    def _accept(self) -> None:
        sock, _ = self.listener.accept()
        fds: list[int] = []
        try:
            request, fds = _receive_request(sock)
            argv = request["argv"]
            assert isinstance(argv, list) and len(fds) == 3
            code = _code_of(os.path.abspath(str(argv[0])))
        except Exception as exc:
            # A script that cannot be read (gone, say): the shim runs a real interpreter, which fails
            # as it would have.
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):
                sock.sendall(json.dumps({"error": repr(exc)}).encode() + b"\n")
            sock.close()
            return
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            _become_server(request, fds, code)
        for fd in fds:
            os.close(fd)
        connection = _Connection(sock=sock, pid=pid, pidfd=os.pidfd_open(pid))
        self.connections.add(connection)
        sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        self.selector.register(sock, selectors.EVENT_READ, ("shim", connection))
        self.selector.register(connection.pidfd, selectors.EVENT_READ, ("exited", connection))

    def _shim_readable(self, connection: _Connection) -> None:
        try:
            data = connection.sock.recv(4096)
        except OSError:
            data = b""
        if data:
            return
        # The shim is gone (killed, most likely): so is its server, as with a real one killed.
        self.selector.unregister(connection.sock)
        if not connection.reaped and connection.pid is not None:
            with contextlib.suppress(OSError):
                os.killpg(connection.pid, signal.SIGKILL)
        self._forget_if_done(connection)

    def _reap(self, connection: _Connection) -> None:
        assert connection.pid is not None and connection.pidfd is not None
        _, status = os.waitpid(connection.pid, 0)
        connection.reaped = True
        self.selector.unregister(connection.pidfd)
        os.close(connection.pidfd)
        with contextlib.suppress(OSError):
            connection.sock.sendall(json.dumps({"status": status}).encode() + b"\n")
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(connection.sock)
        self._forget_if_done(connection, close=True)

    def _forget_if_done(self, connection: _Connection, close: bool = False) -> None:
        if close or connection.reaped:
            connection.sock.close()
        if connection.reaped:
            self.connections.discard(connection)


def _preload() -> None:
    import importlib
    import runpy

    for name in PRELOAD_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    here = os.path.dirname(os.path.abspath(__file__))
    for script in PRELOAD_SCRIPTS:
        path = os.path.join(here, script)
        runpy.run_path(path, run_name="_warm_preload")
        _code_of(path)


def main() -> None:
    socket_path, owner = sys.argv[1], int(sys.argv[2])
    if os.fork() > 0:
        os._exit(0)  # the starter reaps this one; the launcher is nobody's child in the tests
    owner_pidfd = os.pidfd_open(owner)
    _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    devnull = os.open(os.devnull, os.O_RDWR)
    print("READY", flush=True)
    os.dup2(devnull, 1)  # the starter's pipe: it reads READY, then end of file
    launcher = Launcher(listener, owner_pidfd)
    try:
        launcher.serve()
    finally:
        launcher.shutdown()
        with contextlib.suppress(OSError):
            os.unlink(socket_path)


if __name__ == "__main__":
    main()
