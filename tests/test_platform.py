"""The Windows paths of the operating-system boundary (`mcp_sync._os`) that a Windows Python under Wine
cannot show (console control events, console modes) or that every platform must get right (drive-letter
roots, the command line's encodings), run everywhere. The rest of Windows is tested with a Windows
Python: tests/windows/."""

from __future__ import annotations

import _thread
import concurrent.futures
import io
import json
import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import ConfigError, MCPHub, StdioServerConfig
from mcp_sync._cli import _replace_unencodable
from mcp_sync._cli.output import print_json
from mcp_sync._os import console, files, fork, processes, waits
from tests.support import EventLog, stdio_config

# --- Ctrl-C: a caller's wait, where a lock wait would hold it back ----------------------------------


class _CountingLock:
    """A held lock that records how long each wait on it may last."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.waits: list[float | None] = []

    def wait(self, seconds: float | None) -> bool:
        self.waits.append(seconds)
        return self.lock.acquire(timeout=-1 if seconds is None else seconds)


def test_a_wait_without_a_timeout_is_made_in_slices_where_ctrl_c_needs_them() -> None:
    held = _CountingLock()
    threading.Timer(0.3, held.lock.release).start()
    assert waits.interruptible_wait(held.wait, None, slice_=0.05)
    assert len(held.waits) > 1
    assert all(seconds is not None and seconds <= 0.05 for seconds in held.waits)


def test_a_wait_in_slices_gives_up_at_its_timeout() -> None:
    held = _CountingLock()
    started = time.monotonic()
    assert not waits.interruptible_wait(held.wait, 0.2, slice_=0.05)
    assert time.monotonic() - started >= 0.2
    assert all(seconds is not None and seconds <= 0.05 for seconds in held.waits)


def test_a_wait_is_one_wait_where_ctrl_c_interrupts_a_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits, "WAIT_SLICE", None)
    held = _CountingLock()
    threading.Timer(0.1, held.lock.release).start()
    assert waits.interruptible_wait(held.wait, None)
    assert held.waits == [None]


def test_only_windows_before_python_3_14_waits_in_slices() -> None:
    expected = sys.platform == "win32" and sys.version_info < (3, 14)
    assert (waits.WAIT_SLICE is not None) == expected


@pytest.mark.real_processes
def test_ctrl_c_during_a_call_waited_for_in_slices_cancels_it_on_the_server(
    monkeypatch: pytest.MonkeyPatch, events: EventLog
) -> None:
    # The Windows path (a console's Ctrl-C makes Python raise KeyboardInterrupt in the main thread once
    # it runs Python code again): the call's wait is sliced, so the interrupt ends it within a slice.
    monkeypatch.setattr(waits, "WAIT_SLICE", 0.05)
    with MCPHub([stdio_config("fx", events=events)]) as hub:

        def interrupt_once_started() -> None:
            events.wait_for("started", tag="ctrl-c")
            _thread.interrupt_main()

        threading.Thread(target=interrupt_once_started, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            hub.call_tool("mcp__fx__sleep", {"seconds": 30, "tag": "ctrl-c"})
        events.wait_for("cancelled", tag="ctrl-c")
        assert hub.call_tool("mcp__fx__echo", {"text": "after"}).text == "after"


@pytest.mark.real_processes
def test_ctrl_c_during_a_subscription_the_server_has_not_acknowledged_ends_it_in_slices(
    monkeypatch: pytest.MonkeyPatch, events: EventLog
) -> None:
    # The server holds the subscription's acknowledgement; without slices the wait would last the
    # subscription's whole timeout (600 s here) before the interrupt could be raised.
    monkeypatch.setattr(waits, "WAIT_SLICE", 0.05)
    config = stdio_config("fx", "--hold-subscriptions", events=events, tool_call_timeout_ms=600_000)
    with MCPHub([config]) as hub:

        def interrupt_once_held() -> None:
            events.wait_for("listen_held")
            _thread.interrupt_main()

        threading.Thread(target=interrupt_once_held, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            hub.subscribe_resource("fixture://text/readme", print)


def test_a_future_is_waited_for_in_slices_where_ctrl_c_needs_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits, "WAIT_SLICE", 0.05)
    future: concurrent.futures.Future[None] = concurrent.futures.Future()
    threading.Timer(0.3, future.set_result, (None,)).start()
    slices: list[float | None] = []
    real_wait = concurrent.futures.wait

    def recording_wait(futures: Any, timeout: float | None = None) -> Any:
        slices.append(timeout)
        return real_wait(futures, timeout)

    monkeypatch.setattr(concurrent.futures, "wait", recording_wait)
    assert waits.wait_future(future, None)
    assert len(slices) > 1 and all(seconds is not None and seconds <= 0.05 for seconds in slices)


def test_a_thread_is_joined_in_slices_where_ctrl_c_needs_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits, "WAIT_SLICE", 0.05)
    release = threading.Event()
    thread = threading.Thread(target=release.wait, args=(60,))
    thread.start()
    joins: list[float | None] = []
    real_join = thread.join

    def recording_join(timeout: float | None = None) -> None:
        joins.append(timeout)
        if len(joins) == 3:
            release.set()
        real_join(timeout)

    monkeypatch.setattr(thread, "join", recording_join)
    assert waits.join_thread(thread, None)
    assert len(joins) >= 3 and all(seconds is not None and seconds <= 0.05 for seconds in joins)


# --- a server's process on Windows: no console event reaches it -------------------------------------


def test_a_windows_server_gets_no_console_and_a_process_group_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A console control event (Ctrl-C, Ctrl-Break) goes to the processes attached to that console;
    # a process started with no window has a console of its own, and a new group ignores Ctrl-C.
    monkeypatch.setattr(processes, "IS_WINDOWS", True)
    options = processes.ProcessTree.start_options()
    assert options == {"creationflags": 0x08000000 | 0x00000200}
    assert "start_new_session" not in options


def test_a_posix_server_leads_a_session_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "IS_WINDOWS", False)
    assert processes.ProcessTree.start_options() == {"start_new_session": True}


def test_a_windows_command_is_found_with_its_script_extension(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    script = tmp_path / "npx.cmd"
    script.write_text("@echo off\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(processes, "IS_WINDOWS", True)
    assert processes.executable_command("npx") == str(script)


def test_a_cmd_launcher_gets_a_command_line_for_cmd_exe_and_a_program_its_argument_list(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    script = tmp_path / "npx.cmd"
    script.write_text("@echo off\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(processes, "IS_WINDOWS", True)
    assert processes.process_command("npx", ["mcp-remote", "https://h/mcp?a=1&b=2"]) == (
        f'"{script}" mcp-remote "https://h/mcp?a=1&b=2"'
    )
    assert processes.process_command(sys.executable, ["a&b"]) == [sys.executable, "a&b"]


@pytest.mark.parametrize(
    ("argument", "written"),
    [
        ("plain-1.0/x:y@z", "plain-1.0/x:y@z"),  # nothing cmd.exe reads: as it is
        ("a&b|c<d>e^f", '"a&b|c<d>e^f"'),  # cmd.exe's syntax: inside quotes
        ("two words", '"two words"'),
        ("", '""'),  # kept as an argument
        ('say "hi"', '"say ""hi"""'),  # a quote doubled
        ('a\\"b', '"a\\\\""b"'),  # the backslashes before a quote doubled too
        ("trail\\", '"trail\\\\"'),  # and before the closing quote
        ("C:\\dir\\file", "C:\\dir\\file"),  # elsewhere a backslash is itself
        ("50%", '"50%%cd:~,%"'),  # no `%NAME%` can form: an empty substring of CD follows each `%`
        ("%PATH%", '"%%cd:~,%PATH%%cd:~,%"'),
        ("https://h/mcp?y=2%20z", '"https://h/mcp?y=2%%cd:~,%20z"'),
        ("bang!", '"bang!"'),
    ],
)
def test_a_batch_launchers_argument_is_quoted_for_cmd_exe_as_rust_does(argument: str, written: str) -> None:
    assert processes.batch_command_line("C:\\node\\npx.cmd", [argument]) == f'"C:\\node\\npx.cmd" {written}'


@pytest.mark.parametrize("argument", ["two\nlines", "a\rb", "nul\0"])
def test_an_argument_cmd_exe_cannot_pass_is_refused_naming_its_position_not_its_value(argument: str) -> None:
    with pytest.raises(ConfigError, match=r"argument 2 holds a (line break|NUL character)") as raised:
        processes.batch_command_line("C:\\node\\npx.cmd", ["ok", argument])
    assert "npx.cmd" in str(raised.value)
    assert argument not in str(raised.value)


def test_no_fork_hooks_are_registered_where_there_is_no_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "register_at_fork")
    fork.register_at_fork(before=lambda: None, after_in_child=lambda: None)  # does nothing


def test_a_windows_status_code_is_shown_in_hex() -> None:
    assert processes.describe_returncode(0xC000013A) == "exited with status 0xC000013A"
    assert processes.describe_returncode(3) == "exited with status 3"


# --- the console: ANSI only where it is shown, output the encoding cannot hold ----------------------


class _FakeKernel32:
    """A console's output mode, as GetConsoleMode and SetConsoleMode see it."""

    def __init__(self, mode: int, settable: bool) -> None:
        self.mode = mode
        self.settable = settable

    def GetConsoleMode(self, handle: int, mode: Any) -> int:
        mode._obj.value = self.mode
        return 1

    def SetConsoleMode(self, handle: int, mode: int) -> int:
        if not self.settable:
            return 0
        self.mode = mode
        return 1


def test_a_windows_console_gets_vt_processing_turned_on_for_ansi() -> None:
    kernel32 = _FakeKernel32(mode=0x0003, settable=True)
    assert console._console_accepts_vt(kernel32, 7)
    assert kernel32.mode == 0x0007


def test_a_legacy_windows_console_gets_no_ansi() -> None:
    assert not console._console_accepts_vt(_FakeKernel32(mode=0x0003, settable=False), 7)


def test_a_handle_that_is_no_console_gets_no_ansi() -> None:
    class NoConsole:
        def GetConsoleMode(self, handle: int, mode: Any) -> int:
            return 0

    assert not console._console_accepts_vt(NoConsole(), 7)


def test_a_stream_that_is_not_a_terminal_gets_no_ansi() -> None:
    assert not console.stream_supports_ansi(io.StringIO())


def test_output_a_code_page_cannot_hold_is_replaced_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="cp1252")
    monkeypatch.setattr(sys, "stdout", stream)
    _replace_unencodable()
    print("ok ✓ 你好", file=stream)
    stream.flush()
    assert raw.getvalue().decode("cp1252").startswith("ok ? ??")


def test_json_output_a_code_page_cannot_hold_is_escaped_not_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="cp1252"))
    _replace_unencodable()
    print_json({"text": "caf\u00e9 \u2713 \u4f60\u597d"})
    sys.stdout.flush()
    assert json.loads(raw.getvalue().decode("cp1252")) == {"text": "caf\u00e9 \u2713 \u4f60\u597d"}


def test_json_output_in_utf8_keeps_its_characters_readable(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="utf-8"))
    print_json({"text": "caf\u00e9 \u2713"})
    sys.stdout.flush()
    assert "caf\u00e9 \u2713" in raw.getvalue().decode("utf-8")


def test_json_output_of_a_lone_surrogate_is_escaped_on_a_utf8_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="utf-8"))
    print_json({"text": "a\ud800b \u2713"})
    sys.stdout.flush()
    assert json.loads(raw.getvalue().decode("utf-8")) == {"text": "a\ud800b \u2713"}


def test_stderr_keeps_its_lossless_backslash_escapes_in_a_code_page(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="cp1252", errors="backslashreplace")
    monkeypatch.setattr(sys, "stderr", stream)
    _replace_unencodable()
    print("mcp-sync: /tmp/\u65e5\u672c/servers.json", file=stream)
    stream.flush()
    assert "/tmp/\\u65e5\\u672c/" in raw.getvalue().decode("cp1252")


# --- paths with drive letters -------------------------------------------------------------------------


def test_a_root_given_as_a_windows_file_uri_is_kept_as_written() -> None:
    config = StdioServerConfig(
        server_name="fx", command="python", roots=["file:///C:/Users/ann/project", "file:///D:/data"]
    )
    assert config.roots == ("file:///C:/Users/ann/project", "file:///D:/data")


def test_the_token_store_defaults_to_local_app_data_on_windows(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(files, "IS_WINDOWS", True)
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path))
    assert files.user_data_dir() == tmp_path
