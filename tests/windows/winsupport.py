"""Helpers for the Windows subset: fixture-server configurations, the server's event log, bounded
waits and a look at whether a process still runs (through the Win32 API, as a Windows user would)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURE_SERVER = REPO_ROOT / "tests" / "servers" / "fixture_server.py"
T = TypeVar("T")

STILL_ACTIVE = 259  # the exit code of a process that has not exited

# Generous: a Python under Wine takes seconds to import the SDK on a loaded 2-core machine.
WAIT = 60.0


def stdio_config(name: str, *flags: str, **overrides: Any) -> dict[str, Any]:
    """A stdio entry that runs the fixture server with this interpreter."""
    return {
        "server_name": name,
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(FIXTURE_SERVER), *flags],
        "connect_timeout_ms": 90_000,
        **overrides,
    }


def wait_until(check: Callable[[], T], timeout: float = WAIT, what: str = "the condition") -> T:
    """Poll `check` until it returns something true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


class Events:
    """The fixture server's `--events` file: one JSON object per line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def all(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip().endswith("}")]

    def wait_for(self, event: str, **fields: Any) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            for record in self.all():
                if record.get("event") == event and all(record.get(k) == v for k, v in fields.items()):
                    return record
            return None

        return wait_until(found, what=f"the server's {event!r} event {fields or ''}")


def process_running(pid: int) -> bool:
    """Whether the process `pid` still runs (a process that has exited may still have a handle)."""
    import pywintypes
    import win32api
    import win32con
    import win32process

    try:
        handle = win32api.OpenProcess(win32con.PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    except pywintypes.error:
        return False
    try:
        return bool(win32process.GetExitCodeProcess(handle) == STILL_ACTIVE)
    finally:
        win32api.CloseHandle(handle)


def env_with_repo() -> dict[str, str]:
    """This process's environment with the repository importable (for a child Python)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env
