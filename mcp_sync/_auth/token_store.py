"""Where OAuth tokens live between runs: the `TokenStorage` protocol, and the files it defaults to.

A record holds one server URL's tokens for one OAuth client: the tokens, when the access
token expires (an absolute time, so a later run knows to refresh it first), the client's
registrations when the client registered itself (by the authorization server that issued each),
the authorization server's endpoints, the scopes a server asked for since the last sign-in, and the
DPoP key the tokens are bound to. `FileTokenStorage` keeps each record in its
own JSON file in the user's data directory, readable by the user only (files 0600, directory
0700). A host that keeps secrets elsewhere (a keyring, a vault) passes its own `TokenStorage`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["TOKEN_DIR_VARIABLE", "FileTokenStorage", "TokenStorage", "default_token_dir", "token_key"]

logger = logging.getLogger("mcp_sync")

TOKEN_DIR_VARIABLE = "MCP_SYNC_TOKEN_DIR"
"""The environment variable that overrides where `FileTokenStorage` keeps its files."""


@runtime_checkable
class TokenStorage(Protocol):
    """Keeps token records by key; called on a server's loop thread, so each call should be quick.

    A record is a JSON-ready dict (tokens, expiry, client registration). Its values are secrets:
    keep them where only the user can read them, and never log them.
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


def token_key(server_url: str, client_id: str | None) -> str:
    """The key of one server URL's tokens for one client (`None`: a client that registers itself)."""
    return f"{server_url} {client_id or '(registered)'}"


def default_token_dir() -> Path:
    """`$MCP_SYNC_TOKEN_DIR`, else `$XDG_DATA_HOME/mcp_sync/tokens`, else `~/.local/share/mcp_sync/tokens`."""
    override = os.environ.get(TOKEN_DIR_VARIABLE)
    if override:
        return Path(override).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "mcp_sync" / "tokens"


class FileTokenStorage:
    """One JSON file per record in `directory` (default `default_token_dir()`): files 0600, directory 0700."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else default_token_dir()

    def __repr__(self) -> str:
        return f"FileTokenStorage({os.fspath(self.directory)!r})"

    def path_for(self, key: str) -> Path:
        """The file of `key`: a hash of it, so that no URL or client id shapes a file name."""
        return self.directory / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"

    def load(self, key: str) -> dict[str, Any] | None:
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
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path_for(key))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path_for(key).unlink()

    def _make_directory(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):  # a directory the user does not own stays as it is
            if self.directory.stat().st_mode & 0o077:
                os.chmod(self.directory, 0o700)
