"""Where OAuth tokens live between runs: the `TokenStorage` protocol, and the files it defaults to.

A record holds one server URL's tokens for one OAuth client: the tokens, when the access
token expires (an absolute time, so a later run knows to refresh it first), the client's
registrations when the client registered itself (by the authorization server that issued each),
the authorization server's endpoints, the scopes a server asked for since the last sign-in, and the
DPoP key the tokens are bound to. `FileTokenStorage` keeps each record in its
own JSON file in the user's data directory, readable by the user only (files 0600, directory
0700; on Windows the directory's ACL grants the user alone, see `_os.files`). A host that
keeps secrets elsewhere (a keyring, a vault) passes its own `TokenStorage`.

Several processes may share a store, so a record only ever changes by one `update(key, change)`: the
record is read, changed and written back as one step, under a lock of all the processes (`filelock`, on
every platform) for `FileTokenStorage`. A refresh in one process and a step-up in another then cannot
undo each other (a lost refresh token is a lost sign-in when refresh tokens rotate).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from filelock import FileLock

from .._os.files import make_private_directory, make_private_file, user_data_dir

__all__ = [
    "TOKEN_DIR_VARIABLE",
    "FileTokenStorage",
    "RecordChange",
    "TokenStorage",
    "default_token_dir",
    "token_key",
    "update_record",
]

logger = logging.getLogger("mcp_sync")

TOKEN_DIR_VARIABLE = "MCP_SYNC_TOKEN_DIR"
"""The environment variable that overrides where `FileTokenStorage` keeps its files."""

# How long an update waits for another process's update of the same record (each takes milliseconds:
# a lock held this long belongs to a process that hung).
_LOCK_TIMEOUT = 30.0

RecordChange = Callable[[dict[str, Any]], dict[str, Any] | None]
"""Given the stored record (a copy; `{}` if none), returns the record to store, or None to leave it be."""


@runtime_checkable
class TokenStorage(Protocol):
    """Keeps token records by key; called on a server's loop thread, so each call should be quick.

    A record is a JSON-ready dict (tokens, expiry, client registration). Its values are secrets:
    keep them where only the user can read them, and never log them.

    A storage shared between processes should also have `update(key, change)`: read the record (`{}` if
    none), call `change` with it, store what it returns (None: nothing to store) and return the record
    stored, all in one step no other process's update interleaves with (`FileTokenStorage.update`). Without
    it, a change is a `load` and a `save`, one step only within this process.
    """

    def load(self, key: str) -> dict[str, Any] | None:
        """The record saved under `key`, or None."""
        ...

    def save(self, key: str, record: dict[str, Any]) -> None:
        """Replace the record under `key`."""
        ...

    def delete(self, key: str) -> None:
        """Forget the record under `key`; no error if there is none."""
        ...


# Serialises the updates of storages without their own `update`, within this process.
_fallback_update_lock = threading.Lock()


def update_record(storage: TokenStorage, key: str, change: RecordChange) -> dict[str, Any] | None:
    """Change the record under `key` in one step: the storage's own `update` when it has one, else `load`,
    `change` and `save` under a lock of this process. Returns the record stored after it (None: none)."""
    own = getattr(storage, "update", None)
    if callable(own):
        result: dict[str, Any] | None = own(key, change)
        return result
    with _fallback_update_lock:
        current = storage.load(key)
        changed = change(dict(current or {}))
        if changed is None:
            return current
        storage.save(key, changed)
        return changed


def token_key(server_url: str, client_id: str | None) -> str:
    """The key of one server URL's tokens for one client (`None`: a client that registers itself)."""
    return f"{server_url} {client_id or '(registered)'}"


def default_token_dir() -> Path:
    """`$MCP_SYNC_TOKEN_DIR`, else `$XDG_DATA_HOME/mcp_sync/tokens`, else `~/.local/share/mcp_sync/tokens`
    (on Windows `%LOCALAPPDATA%\\mcp_sync\\tokens`)."""
    override = os.environ.get(TOKEN_DIR_VARIABLE)
    if override:
        return Path(override).expanduser()
    return user_data_dir() / "mcp_sync" / "tokens"


class FileTokenStorage:
    """One JSON file per record in `directory` (default `default_token_dir()`): files 0600, directory 0700."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else default_token_dir()
        # A lock object per record file: re-entrant within a thread, exclusive between threads and processes.
        self._locks: dict[Path, FileLock] = {}
        self._locks_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FileTokenStorage({os.fspath(self.directory)!r})"

    def path_for(self, key: str) -> Path:
        """The file of `key`: a hash of it, so that no URL or client id shapes a file name."""
        return self.directory / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        """The record saved under `key`, or None (also for a file that holds no valid record)."""
        path = self.path_for(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            record = json.loads(text)
        except ValueError:
            logger.warning("ignoring the unreadable token file %s; sign in again", path)
            return None
        if not isinstance(record, dict) or record.get("key") != key:
            return None
        return record

    def save(self, key: str, record: dict[str, Any]) -> None:
        """Replace the record under `key`, atomically, readable by this user alone."""
        self._make_directory()
        data = json.dumps({**record, "key": key}, indent=1).encode()
        # Written whole to a private temporary file, then renamed over: a reader never sees half a record,
        # and the file is never readable by others, not even for a moment.
        descriptor, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tokens-", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            make_private_file(temporary)
            os.replace(temporary, self.path_for(key))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def update(self, key: str, change: RecordChange) -> dict[str, Any] | None:
        """Read, change and write the record under `key` as one step, under a lock of every process using
        this directory; returns the record stored after it."""
        self._make_directory()
        with self._lock_for(key):
            current = self.load(key)
            changed = change(dict(current or {}))
            if changed is None:
                return current
            self.save(key, changed)
            return changed

    def delete(self, key: str) -> None:
        """Forget the record under `key`; no error if there is none."""
        if not self.directory.is_dir():
            return
        with self._lock_for(key), contextlib.suppress(FileNotFoundError):
            self.path_for(key).unlink()

    def _lock_for(self, key: str) -> FileLock:
        """The cross-process lock of `key`'s record: a file beside it (no secret in it)."""
        path = self.path_for(key).with_suffix(".lock")
        with self._locks_lock:
            lock = self._locks.get(path)
            if lock is None:
                lock = self._locks[path] = FileLock(path, timeout=_LOCK_TIMEOUT, mode=0o600)
            return lock

    def _make_directory(self) -> None:
        make_private_directory(self.directory)
