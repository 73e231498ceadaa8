"""The command of a warm-launched test server: hands this process's stdin, stdout and stderr to the
warm launcher (``warm_launcher.py``), which forks the server with them, then stands in for the server.

Run as ``python -I -S warm_shim.py SOCKET SCRIPT [ARGS...]`` (or ``... SOCKET [-u] -m MODULE
[ARGS...]``). It relays the signals it gets to the server's process group (to a module run's process
alone) and exits as the server did (the same status, or killed by the same signal).
When the launcher cannot be reached, it runs the script in a real interpreter instead (exec), so a
test never fails for want of the launcher.
"""

import contextlib
import json
import os
import signal
import socket
import struct
import sys

# Signals relayed to the server's process group; SIGKILL and SIGSTOP cannot be caught (for SIGKILL the
# launcher kills the server when this process's connection ends).
RELAYED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
    signal.SIGCONT,
)
# Bound on connecting to the launcher and hearing the server's pid.
CONNECT_TIMEOUT = 10.0


def _run_cold(argv: list[str], pending: list[int]) -> None:
    """Become the server in a real interpreter; a signal that came first ends this process as it would
    have ended a server that had not started."""
    for signum in pending:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    python = os.path.join(os.path.dirname(sys.executable), os.path.basename(sys.executable))
    os.execv(python, [python, *argv])


def _lines(sock: socket.socket):  # type: ignore[no-untyped-def]
    buffer = b""
    while True:
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)
        chunk = sock.recv(4096)
        if not chunk:
            return
        buffer += chunk


def _exit_as(status: int) -> None:
    code = os.waitstatus_to_exitcode(status)
    sys.stdout.flush()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code)


def main() -> None:
    socket_path, *argv = sys.argv[1:]
    env = dict(os.environ, MCP_SYNC_TEST_SHIM_PID=str(os.getpid()))
    # A signal this process was started with ignored stays ignored, here and in the server (as an
    # interpreter started that way keeps it ignored).
    ignored = [int(signum) for signum in RELAYED if signal.getsignal(signum) is signal.SIG_IGN]
    request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": env, "ignored": ignored}).encode()
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
        with contextlib.suppress(OSError):
            if module_run:
                os.kill(server[0], signum)
            else:
                os.killpg(server[0], signum)

    for signum in RELAYED:
        if signum not in ignored:
            signal.signal(signum, relay)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        sock.connect(socket_path)
        socket.send_fds(sock, [struct.pack(">I", len(request)) + request], [0, 1, 2])
        lines = _lines(sock)
        first = next(lines)
    except (OSError, StopIteration, ValueError):
        first = {}
    if "pid" not in first:
        sock.close()
        _run_cold(argv, pending)
        return
    pid = first["pid"]
    sock.settimeout(None)
    # Hold no end of the server's pipes: their ends are the server's alone, as a real server's are.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    server.append(pid)
    for signum in pending:
        relay(signum, None)
    for message in lines:
        if "status" in message:
            _exit_as(message["status"])
    # The launcher went away without a status: take the server with us.
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    os._exit(1)


if __name__ == "__main__":
    main()
