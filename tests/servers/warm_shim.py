"""The command of a warm-launched test server: hands this process's stdin, stdout and stderr to the
warm launcher (``warm_launcher.py``), which forks the server with them, then stands in for the server.

Run as ``python -I -S warm_shim.py SOCKET SCRIPT [ARGS...]`` (or ``... SOCKET [-u] -m MODULE
[ARGS...]``). It relays the signals it gets to the server's process group (to a module run's process
alone) and exits as the server did (the same status, or killed by the same signal).
When the launcher cannot be reached, it runs the script in a real interpreter instead (exec), so a
test never fails for want of the launcher.
"""

# Only the interpreter's own extension modules, not the Python modules over them: a server start runs
# this once, and json, socket, signal, struct and os (with the re, enum and collections they import)
# would more than double its start-up.
import _json
import _signal
import _socket
import _struct
import posix
import sys

# Signals relayed to the server's process group; SIGKILL and SIGSTOP cannot be caught (for SIGKILL the
# launcher kills the server when this process's connection ends).
RELAYED = (
    _signal.SIGTERM,
    _signal.SIGINT,
    _signal.SIGHUP,
    _signal.SIGQUIT,
    _signal.SIGUSR1,
    _signal.SIGUSR2,
    _signal.SIGALRM,
    _signal.SIGCONT,
)
# Bound on connecting to the launcher and hearing the server's pid.
CONNECT_TIMEOUT = 10.0


def _run_cold(argv: list[str], pending: list[int]) -> None:
    """Become the server in a real interpreter; a signal that came first ends this process as it would
    have ended a server that had not started."""
    for signum in pending:
        _signal.signal(signum, _signal.SIG_DFL)
        posix.kill(posix.getpid(), signum)
    posix.execv(sys.executable, [sys.executable, *argv])


def _to_json(value: object) -> str:
    """`value` (str, int, or a list or str-keyed dict of them) as JSON, as ``json.dumps`` writes it."""
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value)  # type: ignore[no-any-return]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_to_json(item) for item in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{_to_json(key)}: {_to_json(item)}" for key, item in value.items()) + "}"


def _messages(sock: _socket.socket):  # type: ignore[no-untyped-def]
    """The launcher's lines, each ``{"NAME": VALUE}`` (`warm_launcher._Connection.send`), as (NAME, VALUE)
    pairs; VALUE is an int but for "error"."""
    buffer = b""
    while True:
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            name, _, value = line.strip(b"{}").partition(b": ")
            name = name.strip(b'"')
            yield name.decode(), value.decode() if name == b"error" else int(value)
        chunk = sock.recv(4096)
        if not chunk:
            return
        buffer += chunk


def _exit_as(status: int) -> None:
    code = posix.waitstatus_to_exitcode(status)
    sys.stdout.flush()
    if code < 0:
        if -code not in (_signal.SIGKILL, _signal.SIGSTOP):  # their action cannot be changed
            _signal.signal(-code, _signal.SIG_DFL)
        posix.kill(posix.getpid(), -code)
        code = 128 - code
    posix._exit(code)


def _environment() -> dict[str, str]:
    """This process's environment as ``os.environ`` decodes it."""
    encoding = sys.getfilesystemencoding()
    return {
        key.decode(encoding, "surrogateescape"): value.decode(encoding, "surrogateescape")
        for key, value in posix.environ.items()
    }


def main() -> None:
    socket_path, *argv = sys.argv[1:]
    env = dict(_environment(), MCP_SYNC_TEST_SHIM_PID=str(posix.getpid()))
    # A signal this process was started with ignored stays ignored, here and in the server (as an
    # interpreter started that way keeps it ignored).
    ignored = [int(signum) for signum in RELAYED if _signal.getsignal(signum) == _signal.SIG_IGN]
    request = _to_json({"argv": argv, "cwd": posix.getcwd(), "env": env, "ignored": ignored}).encode()
    # Relaying starts before the server runs: a signal that comes before its pid is known is relayed
    # once it is (the server may be quick to do what the signal answers).
    server: list[int] = []
    pending: list[int] = []

    # A module run (the command line, a host script) is a program a test signals by its pid: only that
    # process gets the signal, as a real one would. A server gets it with its process group (its
    # helpers), as when its client signals the group of the process it started.
    module_run = "-m" in argv[:2]

    def relay(signum: int, _frame: object) -> None:
        if not server:
            pending.append(signum)
            return
        try:
            if module_run:
                posix.kill(server[0], signum)
            else:
                posix.killpg(server[0], signum)
        except OSError:
            pass

    for signum in RELAYED:
        if signum not in ignored:
            _signal.signal(signum, relay)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    descriptors = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _struct.pack("3i", 0, 1, 2))]
    try:
        sock.connect(socket_path)
        sock.sendmsg([_struct.pack(">I", len(request)) + request], descriptors)
        messages = _messages(sock)
        name, pid = next(messages)
    except (OSError, StopIteration, ValueError):
        name, pid = "", 0
    if name != "pid":
        sock.close()
        _run_cold(argv, pending)
        return
    sock.settimeout(None)
    # Hold no end of the server's pipes: their ends are the server's alone, as a real server's are.
    devnull = posix.open("/dev/null", posix.O_RDWR)
    for fd in (0, 1, 2):
        posix.dup2(devnull, fd)
    server.append(pid)
    for signum in pending:
        relay(signum, None)
    for name, value in messages:
        if name == "status":
            _exit_as(value)
    # The launcher went away without a status: take the server with us.
    try:  # noqa: SIM105 (contextlib is not imported: see the imports)
        posix.killpg(pid, _signal.SIGKILL)
    except OSError:
        pass
    posix._exit(1)


if __name__ == "__main__":
    main()
