"""The token store between processes: a refresh in one process and a step-up in another, interleaved the
way that lost the refresh before (the step-up read the record, the refresh stored its rotated tokens, the
step-up wrote back what it had read), in real processes on one `FileTokenStorage`, against the OAuth
fixture server (tests/servers/oauth_server.py) with rotating refresh tokens."""

from __future__ import annotations

import json
import multiprocessing
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import FileTokenStorage, MCPHub, SignInRequiredError
from tests.support import EventLog, HttpServer
from tests.test_remote_oauth import OAUTH_SERVER, control, remote, signed_in, stored_record

WRITE_SCOPE = "notes:write"
# Bound on each step of a child process (starting a hub, a refresh, a call).
STEP_TIMEOUT = 30.0


class PausingStorage(FileTokenStorage):
    """The step-up's store: once armed, its first read waits until the refresh in the other process has
    stored its tokens or has begun a change of the store (whichever comes first), so that the two meet
    inside the step-up's read-change-write."""

    def __init__(self, directory: Path, read: Event, other_moved: Event) -> None:
        super().__init__(directory)
        self.armed = False
        self._read = read
        self._other_moved = other_moved

    def load(self, key: str) -> dict[str, Any] | None:
        record = super().load(key)
        if self.armed:
            self.armed = False
            self._read.set()
            assert self._other_moved.wait(STEP_TIMEOUT), "the refresh never reached the store"
        return record


class SignallingStorage(FileTokenStorage):
    """The refresh's store: says when it begins a change of the store, and when it has stored a record."""

    def __init__(self, directory: Path, moved: Event) -> None:
        super().__init__(directory)
        self._moved = moved

    def update(self, key: str, change: Any) -> dict[str, Any] | None:
        self._moved.set()
        return super().update(key, change)

    def save(self, key: str, record: dict[str, Any]) -> None:
        super().save(key, record)
        self._moved.set()


def step_up(
    config: dict[str, Any], directory: str, ready: Event, go: Event, read: Event, moved: Event
) -> None:
    """A hub whose call is refused for want of a scope: it stores the scope for the next sign-in."""
    storage = PausingStorage(Path(directory), read, moved)
    with MCPHub([config], token_storage=storage) as hub:
        assert hub.servers["remote"].state == "ready"
        ready.set()
        assert go.wait(STEP_TIMEOUT)
        storage.armed = True
        with pytest.raises(SignInRequiredError, match=WRITE_SCOPE):
            hub.call_tool("mcp__remote__echo", {"text": "needs more scope"}, timeout=STEP_TIMEOUT)


def refresh(config: dict[str, Any], directory: str, moved: Event) -> None:
    """A hub that starts on an expired token: it refreshes it (the server rotates the refresh token)."""
    with MCPHub([config], token_storage=SignallingStorage(Path(directory), moved)) as hub:
        assert hub.servers["remote"].state == "ready", hub.servers["remote"].error


def test_step_up_in_one_process_and_refresh_in_another_both_stay_stored(
    oauth_events: EventLog, token_dir: Path
) -> None:
    context = multiprocessing.get_context("spawn")
    ready, go, read, moved = (context.Event() for _ in range(4))
    with HttpServer("--call-scope", WRITE_SCOPE, script=OAUTH_SERVER, events=oauth_events) as server:
        signed_in(server)
        config = remote(server)
        stepping = context.Process(target=step_up, args=(config, str(token_dir), ready, go, read, moved))
        refreshing = context.Process(target=refresh, args=(config, str(token_dir), moved))
        try:
            stepping.start()
            assert ready.wait(STEP_TIMEOUT * 2), "the step-up process did not start its hub"
            [path] = token_dir.glob("*.json")
            record = json.loads(path.read_text())
            record["expires_at"] = 0  # the refreshing hub refreshes as it connects
            path.write_text(json.dumps(record))

            go.set()
            assert read.wait(STEP_TIMEOUT), "the step-up never read the store"
            refreshing.start()
            refreshing.join(STEP_TIMEOUT * 2)
            stepping.join(STEP_TIMEOUT * 2)
        finally:
            for process in (stepping, refreshing):
                if process.is_alive():
                    process.kill()
                    process.join(10)

        assert (stepping.exitcode, refreshing.exitcode) == (0, 0)
        stored = stored_record(token_dir)
        assert stored["required_scope"] == WRITE_SCOPE  # the step-up's change
        # The refresh's change: the stored refresh token is the rotated one, which still works.
        control(server, "expire-access-tokens")
        with MCPHub([config]) as later:
            assert later.servers["remote"].state == "ready", later.servers["remote"].error
    assert oauth_events.count(lambda event: event.get("kind") == "refresh_token") == 0
