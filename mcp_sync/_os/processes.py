"""A stdio server's process: the command that starts it (on Windows a `.cmd`/`.bat` launcher's line for
cmd.exe), its process tree (a POSIX session, a Windows Job Object), and how its exit reads."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._values.errors import ConfigError
from . import IS_WINDOWS

__all__ = [
    "ProcessTree",
    "batch_command_line",
    "describe_returncode",
    "executable_command",
    "process_command",
]

logger = logging.getLogger("mcp_sync")

# Windows process creation: no console window of its own (the SDK's choice), and a process group of
# its own, so that no console control event (Ctrl-C, Ctrl-Break) of the user's console reaches it.
_CREATE_NO_WINDOW = 0x08000000
_CREATE_NEW_PROCESS_GROUP = 0x00000200
# The exit code Windows reports for a process that has not exited.
_STILL_ACTIVE = 259
# Windows launchers that run in cmd.exe, which parses their command line a second time.
_BATCH_SUFFIXES = (".bat", ".cmd")
# ASCII a batch argument may hold unquoted (Rust's list); any other ASCII punctuation or space is quoted.
_BATCH_UNQUOTED = frozenset("#$*+-./:?@\\_")
# `%` in a batch launcher's argument: cmd.exe replaces `%NAME%` with a variable's value, quoted or not.
# Written `%%cd:~,%` (Rust's way): an empty substring of CD, a variable that always exists, follows
# the `%`, so what comes after it can never be read as a variable's name (command extensions, on by
# default, read `:~,`).
_BATCH_PERCENT = "%%cd:~,%"


def executable_command(command: str) -> str:
    """The program to start for `command`: on Windows `npx` may be `npx.cmd` (the SDK's lookup)."""
    if not IS_WINDOWS:
        return command
    from mcp.os.win32.utilities import get_windows_executable_command

    return get_windows_executable_command(command)


def process_command(command: str, args: Sequence[str]) -> list[str] | str:
    """What starts `command` with `args` (for `anyio.open_process`): the program and its arguments; on
    Windows, for a `.cmd` or `.bat` launcher (npx, uvx), a command line for the shell (cmd.exe) that
    passes every argument on unchanged (see `batch_command_line`)."""
    program = executable_command(command)
    if IS_WINDOWS and program.lower().endswith(_BATCH_SUFFIXES):
        return batch_command_line(program, args)
    return [program, *args]


def batch_command_line(script: str, args: Sequence[str]) -> str:
    """The command line that runs the batch file `script` with `args` under `cmd.exe /c`, each argument
    arriving as given, built as Rust's std::process builds it. cmd.exe reads `& | < > ^ ( )` outside
    quotes as syntax, so an argument is quoted unless it is plain, and a `"` in it is doubled (with the
    backslashes before it); it replaces `%NAME%` with a variable's value, quoted or not, so a `%` is
    followed by an empty expansion (`_BATCH_PERCENT`). A line break ends cmd.exe's command and cannot
    be passed: `ConfigError` names that argument (by position: its value may be a secret).

    The line is started as a shell command (`anyio.open_process` with a string), so cmd.exe runs it as
    `%ComSpec% /c "<line>"` (Lib/subprocess.py, `_execute_child`) with the registry's defaults: an
    AutoRun command runs first, and delayed expansion, if the registry turns it on, reads `!NAME!`.
    Rust starts a batch file with `/e:ON /v:OFF /d` (library/std/src/sys/pal/windows/process.rs);
    giving cmd.exe those switches needs a command line passed as it is, which neither the string form
    (a shell of its own first) nor the list form (each item quoted with backslashes, which cmd.exe
    does not read) of a process start gives."""
    parts = ['"' + script.replace("%", _BATCH_PERCENT) + '"']
    for position, arg in enumerate(args, start=1):
        if "\r" in arg or "\n" in arg or "\0" in arg:
            what = "a NUL character" if "\0" in arg else "a line break"
            raise ConfigError(
                f"argument {position} holds {what}, which cmd.exe cannot pass to {Path(script).name} "
                "(a batch launcher): start the program it runs directly instead"
            )
        parts.append(_batch_argument(arg))
    return " ".join(parts)


def _batch_argument(arg: str) -> str:
    quote = (
        not arg
        or arg.endswith("\\")
        or any(
            (char.isascii() and not char.isalnum() and char not in _BATCH_UNQUOTED) or not char.isprintable()
            for char in arg
        )
    )
    text: list[str] = ['"'] if quote else []
    backslashes = 0
    for char in arg:
        if char == "\\":
            backslashes += 1
        else:
            if char == '"':
                text.append("\\" * backslashes + '"')  # 2n backslashes, then the quote doubled
            backslashes = 0
        text.append(_BATCH_PERCENT if char == "%" else char)
    if quote:
        text.append("\\" * backslashes + '"')  # 2n backslashes before the closing quote
    return "".join(text)


def describe_returncode(code: int) -> str:
    """'exited with status 3', 'was killed by SIGKILL', or on Windows 'exited with status 0xC000013A'
    for an NTSTATUS code (a crash, or the end of a console)."""
    if code < 0 and not IS_WINDOWS:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    if code >= 0xC0000000:
        return f"exited with status {code:#010X}".replace("0X", "0x")
    return f"exited with status {code}"


class ProcessTree:
    """A server's process and every process it starts, ended together, from any thread.

    POSIX: the server leads a new session; its group id is its pid, and the group lives while any
    member does. Windows: a Job Object, which kills its members when its handle closes (also when this
    process ends, however it ends). Once seen empty the tree is never signalled again (on POSIX its id
    may then be reused)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self._gone = False
        self._job: Any = None  # Windows: the Job Object's handle

    @staticmethod
    def start_options() -> dict[str, Any]:
        """What `subprocess` / `anyio.open_process` needs to start the server as the tree's root."""
        if IS_WINDOWS:
            return {"creationflags": _CREATE_NO_WINDOW | _CREATE_NEW_PROCESS_GROUP}
        return {"start_new_session": True}

    def adopt(self, pid: int) -> None:
        """Take the started server as the tree's root (Windows: put it in a new job)."""
        self.pid = pid
        if IS_WINDOWS:
            self._job = _windows_job_for(pid)

    @property
    def has_soft_stop(self) -> bool:
        """Whether the tree can be asked to stop before it is killed (SIGTERM); Windows cannot."""
        return not IS_WINDOWS

    def terminate(self) -> bool:
        """Ask every process of the tree to stop (SIGTERM; Windows: kill); False if none is left."""
        return self._signal(hard=False)

    def kill(self) -> bool:
        """Kill every process of the tree now; False if none is left (or none can be killed)."""
        return self._signal(hard=True)

    def alive(self) -> bool:
        """Whether any process of the tree is left."""
        if self.pid is None or self._gone:
            return False
        if not IS_WINDOWS:
            return self._killpg(0)
        self._gone = not _windows_job_alive(self._job, self.pid)
        return not self._gone

    def close(self) -> None:
        """Let go of the tree (Windows: close the job, which kills what is still in it)."""
        job, self._job = self._job, None
        if job is not None:
            with contextlib.suppress(Exception):
                job.Close()

    def _signal(self, *, hard: bool) -> bool:
        if self.pid is None or self._gone:
            return False
        if not IS_WINDOWS:
            return self._killpg(signal.SIGKILL if hard else signal.SIGTERM)
        if not _windows_job_alive(self._job, self.pid):
            self._gone = True
            return False
        _windows_job_kill(self._job, self.pid)
        return True

    def _killpg(self, signum: int) -> bool:
        assert self.pid is not None
        try:
            os.killpg(self.pid, signum)
        except ProcessLookupError:
            self._gone = True
            return False
        except PermissionError:  # a member changed its user: not ours to stop
            return False
        return True


def _windows_job_for(pid: int) -> Any:
    """A Job Object that kills its members when closed, with `pid` in it; None if that failed (then
    only the process itself can be ended)."""
    assert sys.platform == "win32"  # called there only; mypy elsewhere reads no further
    import pywintypes
    import win32api
    import win32con
    import win32job

    job = None
    try:
        job = win32job.CreateJobObject(None, "")
        info = win32job.QueryInformationJobObject(job, win32job.JobObjectExtendedLimitInformation)
        info["BasicLimitInformation"]["LimitFlags"] |= win32job.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        win32job.SetInformationJobObject(job, win32job.JobObjectExtendedLimitInformation, info)
        handle = win32api.OpenProcess(win32con.PROCESS_SET_QUOTA | win32con.PROCESS_TERMINATE, False, pid)
        try:
            win32job.AssignProcessToJobObject(job, handle)
        finally:
            win32api.CloseHandle(handle)
        return job
    except pywintypes.error:
        logger.warning("could not put process %d in a Job Object; only it will be ended", pid, exc_info=True)
        if job is not None:
            with contextlib.suppress(pywintypes.error):
                job.Close()
        return None


def _windows_job_alive(job: Any, pid: int) -> bool:
    assert sys.platform == "win32"  # called there only; mypy elsewhere reads no further
    import pywintypes
    import win32api
    import win32con
    import win32job
    import win32process

    if job is not None:
        try:
            info = win32job.QueryInformationJobObject(job, win32job.JobObjectBasicAccountingInformation)
        except pywintypes.error:
            return False
        return bool(info["ActiveProcesses"])
    try:  # no job: the process alone
        handle = win32api.OpenProcess(win32con.PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    except pywintypes.error:
        return False
    try:
        return bool(win32process.GetExitCodeProcess(handle) == _STILL_ACTIVE)
    finally:
        win32api.CloseHandle(handle)


def _windows_job_kill(job: Any, pid: int) -> None:
    assert sys.platform == "win32"  # called there only; mypy elsewhere reads no further
    import pywintypes
    import win32job

    if job is not None:
        with contextlib.suppress(pywintypes.error):
            win32job.TerminateJobObject(job, 1)
    with contextlib.suppress(OSError):  # no job, or the job failed: the process itself
        os.kill(pid, signal.SIGTERM)  # TerminateProcess on Windows
