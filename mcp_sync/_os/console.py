"""The terminal and the desktop: what a stream's encoding holds, whether it shows ANSI sequences (on
Windows a console with VT processing), whether standard input can be waited on with `select`, and
whether a browser can open."""

from __future__ import annotations

import codecs
import os
import sys
from typing import Any, TextIO

from . import IS_WINDOWS

__all__ = ["STDIN_SELECTABLE", "has_desktop", "holds_any_text", "stream_supports_ansi"]

STDIN_SELECTABLE = not IS_WINDOWS
"""Whether `select` can wait on standard input (on Windows it takes sockets only)."""

# The ENABLE_VIRTUAL_TERMINAL_PROCESSING bit of a Windows console's output mode.
_VT_PROCESSING = 0x0004


def has_desktop() -> bool:
    """Whether a browser can open on this machine's screen: on macOS and Windows always; elsewhere when an
    X or Wayland display is set."""
    return sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )


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
