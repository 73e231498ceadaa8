"""Per-user files: where a user's data lives, and a directory and files for that user alone (POSIX
modes; on Windows a protected ACL the files inherit)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from . import IS_WINDOWS

__all__ = ["make_private_directory", "make_private_file", "user_data_dir"]


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
