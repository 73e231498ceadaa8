"""Helpers shared by tests/test_hosts.py and the host scripts in this folder.

The scripts run as modules from the repository root (``python -u -m tests.hosts.NAME``, see
`HostProcess`), import
`mcp_sync` and these helpers, and end by printing one line ``REPORT <json>`` that the test reads.
Every wait here is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from tests import support
from tests.support import REPO_ROOT, EventLog, child_pids_of, pid_alive

THREAD_PREFIX = "mcp-sync:"
REPORT_PREFIX = "REPORT "


# -- inside a host (script, forked child, kernel) ------------------------------------------------------


def mcp_threads(server: str | None = None) -> list[str]:
    """Names of this process's live ``mcp-sync:`` threads (only ``mcp-sync:<server>`` if given)."""
    names = sorted(
        thread.name
        for thread in threading.enumerate()
        if thread.is_alive() and thread.name.startswith(THREAD_PREFIX)
    )
    if server is not None:
        names = [name for name in names if name == THREAD_PREFIX + server]
    return names


def cmdline(pid: int) -> list[str]:
    """A process's command line ([] if it is gone or unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def live_children(pid: int | None = None, marker: str | None = None) -> list[int]:
    """Live (not zombie) descendants of `pid` (default: this process), optionally only those whose
    command line mentions `marker` (e.g. ``"fixture_server.py"``)."""
    found = child_pids_of(os.getpid() if pid is None else pid, recursive=True)
    return [
        child
        for child in found
        if pid_alive(child) and (marker is None or any(marker in part for part in cmdline(child)))
    ]


def poll(predicate: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate` until it is truthy (True) or `timeout` seconds pass (False); never raises."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def describe_exception(exc: BaseException) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "mro": [cls.__name__ for cls in type(exc).__mro__],
        "message": str(exc),
    }


class Probe:
    """Runs `function` on a daemon thread at once; `result(limit)` waits for it at most `limit` s.

    The result is ``{"outcome": "returned" | "raised" | "blocked", "seconds": ..., ...}`` with the
    value (a repr unless it is a str, int, float, bool or None), or the exception's type, class
    names (``mro``) and message.
    """

    def __init__(self, function: Callable[[], Any]) -> None:
        self._function = function
        self._result: dict[str, Any] = {}
        self._done = threading.Event()
        self._started = time.monotonic()
        threading.Thread(target=self._run, name="host-probe", daemon=True).start()

    def _run(self) -> None:
        try:
            value = self._function()
        except BaseException as exc:
            self._result.update(outcome="raised", **describe_exception(exc))
        else:
            plain = value is None or isinstance(value, str | int | float | bool)
            self._result.update(outcome="returned", value=value if plain else repr(value))
        self._result["seconds"] = time.monotonic() - self._started
        self._done.set()

    def result(self, limit: float) -> dict[str, Any]:
        """Wait at most `limit` more seconds."""
        if not self._done.wait(max(0.0, limit)):
            return {"outcome": "blocked", "seconds": time.monotonic() - self._started}
        return dict(self._result)


def bounded(function: Callable[[], Any], limit: float) -> dict[str, Any]:
    """Run `function` on a daemon thread and wait for it at most `limit` seconds (see `Probe`)."""
    return Probe(function).result(limit)


def report(data: dict[str, Any]) -> None:
    """Print the host's one-line JSON report for the test."""
    print(REPORT_PREFIX + json.dumps(data, default=repr), flush=True)


# -- in the test: running a host script ----------------------------------------------------------------


def kill_pids(pids: list[int]) -> None:
    """SIGKILL whichever of `pids` are alive (cleanup after a failing implementation)."""
    for pid in pids:
        if pid > 1 and pid != os.getpid() and pid_alive(pid):  # never 0 or -1: those mean groups
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def server_pids(*logs: Path) -> list[int]:
    """The pids in the ``ready`` events of fixture / hanging servers' ``--events`` files."""
    pids: list[int] = []
    for log in logs:
        pids += [int(event["pid"]) for event in EventLog(log).find("ready") if "pid" in event]
    return pids


def reap_servers(workdir: Path) -> None:
    """SIGKILL every server that recorded ``ready`` in an events file under `workdir`."""
    kill_pids(server_pids(*workdir.glob("*.jsonl")))


class HostProcess:
    """One host script (a file in this folder) run with this interpreter from the repository root.

    Its stdout is read line by line on a thread (`wait_for_line`), its stderr goes to a temporary
    file; `finish()` waits for it, bounded, and kills it (and its process group) if it is stuck.
    """

    def __init__(self, script: str, *args: str) -> None:
        # ``python -u -m tests.hosts.NAME`` from the repository root: the tests package importable and
        # the output unbuffered without a PYTHON* variable, which the host's servers would inherit and
        # which would make each of them a fresh interpreter (tests/servers/warm_launcher.py). The host
        # is warm-launched itself (`support.module_command`): forked from a parent that has the SDK
        # imported, it ends as an interpreter does. The launcher is this test process's, so a server
        # the host leaves behind outlives the host, as a real one would; a test marked
        # ``real_processes`` gets a real interpreter and real servers.
        # Started (and put in os.environ) before the copy below, or the first host would start its own.
        socket_path = support.launcher_socket() if support.warm_launching else None
        env = dict(os.environ)
        if socket_path is None:
            env["MCP_SYNC_TEST_WARM"] = "0"
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in finish())
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            support.module_command(f"tests.hosts.{Path(script).stem}", *args, unbuffered=True),
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,  # a stuck host is killed with its whole group
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        self.elapsed: float | None = None
        self.ended_at: float | None = None
        self.timed_out = False
        self.stderr = ""

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for raw in iter(self.process.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            self._queue.put(line)
        self.process.stdout.close()
        self._queue.put(None)

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_for_line(self, prefix: str, timeout: float) -> str:
        """The first line starting with `prefix` (bounded); AssertionError with the output if none."""
        for line in self.lines:
            if line.startswith(prefix):
                return line
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self._queue.get(timeout=max(remaining, 0.001)) if remaining > 0 else None
            except queue.Empty:
                line = None
            if line is None:
                raise AssertionError(
                    f"the host printed no line starting with {prefix!r} within {timeout}s "
                    f"(exit status {self.process.poll()}); stdout:\n"
                    + "\n".join(self.lines)
                    + f"\nstderr:\n{self.read_stderr()}"
                )
            if line.startswith(prefix):
                return line

    def send_signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def read_stderr(self) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def finish(self, timeout: float) -> HostProcess:
        """Wait up to `timeout` s for the host to exit; past that, SIGKILL its group (`timed_out`)."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.timed_out = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        if self.ended_at is None:
            self.ended_at = time.monotonic()
            self.elapsed = self.ended_at - self.started
        self._reader.join(5)
        self.stderr = self.read_stderr()
        self._stderr.close()
        return self

    @property
    def stdout(self) -> str:
        return "\n".join(self.lines)

    def report(self) -> dict[str, Any]:
        """The host's ``REPORT`` line, parsed; AssertionError with its output if there is none."""
        for line in reversed(self.lines):
            if line.startswith(REPORT_PREFIX):
                data: dict[str, Any] = json.loads(line[len(REPORT_PREFIX) :])
                return data
        raise AssertionError(
            f"the host printed no REPORT line (exit status {self.process.returncode}, "
            f"killed after timeout: {self.timed_out}); stdout:\n{self.stdout}\nstderr:\n{self.stderr}"
        )

    def describe(self) -> str:
        return (
            f"exit status {self.process.returncode}, {self.elapsed or 0:.1f}s, "
            f"killed after timeout: {self.timed_out}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"
        )
