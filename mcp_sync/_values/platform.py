"""What differs between POSIX (Linux, macOS) and Windows, in one place; every other module asks here.

- a stdio server's process tree: POSIX starts it in a session of its own and sends the group
  SIGTERM, then SIGKILL after a grace; Windows puts it in a Job Object that kills its members when
  closed, and ends it with `TerminateJobObject` (Windows has no soft stop for a tree: closing the
  server's stdin, which comes first on both, is that);
- Ctrl-C in the terminal reaches no server: a new session on POSIX; on Windows no console of ours and
  a process group of its own, so no console control event does;
- a command such as `npx` is found on PATH; on Windows also as `npx.cmd`, `.bat`, `.exe` (the SDK's
  lookup), and a `.cmd`/`.bat` launcher gets a command line quoted for cmd.exe, which reads it again
  (as Rust's standard library does it: every argument reaches the server as it was given);
- `os.fork()`: hooks before and after it on POSIX; Windows has no fork, and nothing is registered;
- a caller's blocking wait (a call, a sign-in, a thread's end) is one wait, which Ctrl-C interrupts;
  on Windows before Python 3.14 a lock wait holds Ctrl-C back until it returns, so a caller there
  waits in short slices;
- the token store: a directory 0700 with files 0600; on Windows a directory whose protected ACL grants
  the current user alone, which the files in it inherit;
- ANSI on the command line: on a terminal; on Windows on a console that accepts VT sequences;
- sign-in: a browser opens on macOS and Windows, elsewhere where a display is set; a pasted address is
  read from stdin with `select` on POSIX, on a thread on Windows (its `select` takes sockets only).

The Windows side mirrors the `mcp` SDK's own (`mcp.os.win32.utilities`, through `pywin32`): its
command lookup is reused as is; its Job Object helpers are not public and bind a process to a job
kept in a private table, so the few `win32job` calls are made here, on a handle this module owns, to
kill from any thread and to ask whether a server left processes behind. As in the SDK, a process the
server starts before it has joined the job (within microseconds of its start) is outside the job.
"""

from __future__ import annotations

import codecs
import concurrent.futures
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from .errors import ConfigError

__all__ = [
    "IS_WINDOWS",
    "STDIN_SELECTABLE",
    "WAIT_SLICE",
    "ProcessTree",
    "batch_command_line",
    "describe_returncode",
    "executable_command",
    "has_desktop",
    "holds_any_text",
    "interruptible_wait",
    "join_thread",
    "make_private_directory",
    "make_private_file",
    "process_command",
    "register_at_fork",
    "stream_supports_ansi",
    "user_data_dir",
    "wait_future",
]

logger = logging.getLogger("mcp_sync")

IS_WINDOWS = sys.platform == "win32"

STDIN_SELECTABLE = not IS_WINDOWS
"""Whether `select` can wait on standard input (on Windows it takes sockets only)."""

WAIT_SLICE: float | None = 0.1 if IS_WINDOWS and sys.version_info < (3, 14) else None
"""The longest single wait of a caller's thread, or None for one wait. On Windows before Python 3.14 a
Ctrl-C does not interrupt a lock wait (the KeyboardInterrupt is raised when it returns), so a caller
there waits in slices this long and Ctrl-C takes effect within one."""

# The ENABLE_VIRTUAL_TERMINAL_PROCESSING bit of a Windows console's output mode.
_VT_PROCESSING = 0x0004
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


def register_at_fork(*, before: Callable[[], None], after_in_child: Callable[[], None]) -> None:
    """`os.register_at_fork`, where there is a fork (not on Windows: nothing to do there)."""
    hook = getattr(os, "register_at_fork", None)
    if hook is not None:
        hook(before=before, after_in_child=after_in_child)


def has_desktop() -> bool:
    """Whether a browser can open on this machine's screen: on macOS and Windows always; elsewhere when an
    X or Wayland display is set."""
    return sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )


def interruptible_wait(
    wait: Callable[[float | None], bool], timeout: float | None, *, slice_: float | None = None
) -> bool:
    """`wait(timeout)` (True once what it waits for happened), made in slices of `slice_` (default
    `WAIT_SLICE`) where a single wait would hold Ctrl-C back until it ended."""
    step = WAIT_SLICE if slice_ is None else slice_
    if step is None:
        return wait(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        remaining = step if deadline is None else min(step, max(0.0, deadline - time.monotonic()))
        if wait(remaining):
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False


def wait_future(future: concurrent.futures.Future[Any], timeout: float | None) -> bool:
    """Wait until `future` is done, up to `timeout` seconds (None: no limit); True if it is. In slices
    where Ctrl-C needs them."""

    def done_within(seconds: float | None) -> bool:
        return not concurrent.futures.wait((future,), seconds).not_done

    return interruptible_wait(done_within, timeout)


def join_thread(thread: threading.Thread, timeout: float | None) -> bool:
    """`thread.join(timeout)`, in slices where Ctrl-C needs them; True if the thread has ended."""

    def ended_within(seconds: float | None) -> bool:
        thread.join(seconds)
        return not thread.is_alive()

    return interruptible_wait(ended_within, timeout)


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


def user_data_dir() -> Path:
    """Where per-user data of this machine lives: %LOCALAPPDATA% on Windows (in the user's profile, not
    roaming: tokens stay on the machine they were issued to), else $XDG_DATA_HOME or ~/.local/share."""
    if IS_WINDOWS:
        local = os.environ.get("LOCALAPPDATA")
        return Path(local) if local else Path.home() / "AppData" / "Local"
    data_home = os.environ.get("XDG_DATA_HOME")
    return Path(data_home) if data_home else Path(os.path.expanduser("~")) / ".local" / "share"


def make_private_directory(path: Path) -> None:
    """Create `path` (and its parents) for the current user alone: mode 0700 on POSIX (tightened if
    looser); on Windows a protected ACL granting only the current user, which the files created in it
    inherit. A directory the user cannot change stays as it is."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        if IS_WINDOWS:
            _windows_private_acl(path)
        elif path.stat().st_mode & 0o077:
            os.chmod(path, 0o700)


def make_private_file(path: str | os.PathLike[str]) -> None:
    """Make a file in a private directory readable by the user alone (POSIX: 0600; on Windows it has
    the directory's ACL already)."""
    if not IS_WINDOWS:
        os.chmod(path, 0o600)


def _windows_private_acl(path: Path) -> None:
    """Replace `path`'s ACL with one entry, full control for the current user, inherited by what is
    created inside, and protected from the ACL of the folders above."""
    assert sys.platform == "win32"  # called there only; mypy elsewhere reads no further
    import ntsecuritycon
    import pywintypes
    import win32api
    import win32security

    try:
        token = win32security.OpenProcessToken(win32api.GetCurrentProcess(), win32security.TOKEN_QUERY)
        user = win32security.GetTokenInformation(token, win32security.TokenUser)[0]
        acl = win32security.ACL()
        acl.AddAccessAllowedAceEx(
            win32security.ACL_REVISION,
            ntsecuritycon.OBJECT_INHERIT_ACE | ntsecuritycon.CONTAINER_INHERIT_ACE,
            ntsecuritycon.FILE_ALL_ACCESS,
            user,
        )
        win32security.SetNamedSecurityInfo(
            os.fspath(path),
            win32security.SE_FILE_OBJECT,
            win32security.DACL_SECURITY_INFORMATION | win32security.PROTECTED_DACL_SECURITY_INFORMATION,
            None,
            None,
            acl,
            None,
        )
    except pywintypes.error as exc:
        raise OSError(f"could not make {path} private: {exc}") from exc


def holds_any_text(stream: TextIO) -> bool:
    """Whether `stream`'s encoding can write every character (UTF-8, as on a Windows console), unlike a
    code page (Windows output redirected to a file or pipe: cp1252 and the like) or ASCII."""
    try:
        name = codecs.lookup(getattr(stream, "encoding", None) or "ascii").name
    except LookupError:
        return False
    return name.startswith(("utf-8", "utf-16", "utf-32"))


def stream_supports_ansi(stream: TextIO) -> bool:
    """Whether `stream` shows ANSI sequences (an erased line, a moving bar) rather than printing them:
    a terminal on POSIX; on Windows a console whose VT processing is on or can be turned on (Windows
    10 and later; never the legacy console of older systems, nor a file or pipe)."""
    try:
        if not stream.isatty():
            return False
    except (AttributeError, ValueError, OSError):
        return False
    if sys.platform != "win32":
        return True
    import ctypes
    import msvcrt

    try:
        handle = msvcrt.get_osfhandle(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return False
    kernel32: Any = ctypes.WinDLL("kernel32", use_last_error=True)
    return _console_accepts_vt(kernel32, handle)


def _console_accepts_vt(kernel32: Any, handle: int) -> bool:
    """Turn on VT processing for the console behind `handle` if it is off; False if it cannot be."""
    import ctypes

    mode = ctypes.c_uint32()
    if not kernel32.GetConsoleMode(handle, ctypes.byref(mode)):
        return False
    if mode.value & _VT_PROCESSING:
        return True
    return bool(kernel32.SetConsoleMode(handle, mode.value | _VT_PROCESSING))
