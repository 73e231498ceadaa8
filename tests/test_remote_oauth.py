"""Signing in to a Streamable HTTP server behind OAuth: a real authorization server and a protected MCP
server on 127.0.0.1 (tests/servers/oauth_server.py), a test "browser" that follows the authorization URL
to the one-shot listener, and tokens stored, reused, refreshed and kept out of every log record."""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_sync import (
    FileTokenStorage,
    MCPHub,
    SignInRequiredError,
)
from tests.support import REPO_ROOT, SERVERS_DIR, EventLog, HttpServer, cli_command, http_config, stdio_config

OAUTH_SERVER = SERVERS_DIR / "oauth_server.py"
MACHINE_ID = "reporting-service"
MACHINE_SECRET = "machine-secret-4f1d9c2b7e"


@pytest.fixture
def oauth_server(oauth_events: EventLog) -> Iterator[HttpServer]:
    flags = ("--client-id", MACHINE_ID, "--client-secret", MACHINE_SECRET)
    with HttpServer(*flags, script=OAUTH_SERVER, events=oauth_events) as server:
        yield server


def remote(server: HttpServer, **overrides: Any) -> dict[str, Any]:
    return http_config("remote", server.url, **{"auth": "oauth", "connect_timeout_ms": 10_000, **overrides})


def browser(url: str) -> None:
    """A user who approves: follow the authorization URL's redirects, down to the one-shot listener."""
    response = httpx2.get(url, follow_redirects=True, timeout=10)
    assert response.status_code == 200, response.text


def control(server: HttpServer, action: str) -> None:
    """Tell the authorization server to expire its access tokens or revoke its refresh tokens."""
    httpx2.post(server.url.removesuffix("/mcp") + f"/test/{action}", timeout=10).raise_for_status()


def signed_in(server: HttpServer, **overrides: Any) -> None:
    hub = MCPHub([remote(server, **overrides)])
    hub.login("remote", open_url=browser, timeout=30)
    hub.close()


def stored_record(token_dir: Path) -> dict[str, Any]:
    [path] = token_dir.glob("*.json")
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def test_server_without_a_token_fails_saying_how_to_sign_in(
    oauth_server: HttpServer, token_dir: Path
) -> None:
    with MCPHub([remote(oauth_server)]) as hub:
        server = hub.servers["remote"]
        assert server.state == "failed"
        assert isinstance(server.error, SignInRequiredError)
        assert "hub.login('remote')" in str(server.error)
        assert "mcp-sync login CONFIG remote" in str(server.error)


def test_first_sign_in_stores_a_token_only_the_user_can_read(
    oauth_server: HttpServer, token_dir: Path
) -> None:
    with MCPHub([remote(oauth_server)]) as hub:
        hub.login("remote", open_url=browser, timeout=30)

        assert hub.servers["remote"].state == "ready"
        assert hub.call_tool("mcp__remote__echo", {"text": "hi"}).text == "hi"
    [path] = token_dir.glob("*.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_dir.stat().st_mode) == 0o700
    assert stored_record(token_dir)["tokens"]["access_token"]


def test_second_hub_uses_the_stored_token_without_a_browser(
    oauth_server: HttpServer, token_dir: Path, oauth_events: EventLog
) -> None:
    signed_in(oauth_server)

    with MCPHub([remote(oauth_server)]) as hub:
        assert hub.servers["remote"].state == "ready"
        assert (
            hub.call_tool("mcp__remote__whoami").text == stored_record(token_dir)["client_info"]["client_id"]
        )
    assert oauth_events.count("authorized") == 1


def test_stored_token_past_its_expiry_is_refreshed_before_use(
    oauth_server: HttpServer, token_dir: Path, oauth_events: EventLog
) -> None:
    signed_in(oauth_server)
    [path] = token_dir.glob("*.json")
    record = json.loads(path.read_text())
    record["expires_at"] = 0  # as if the access token expired while nothing ran
    path.write_text(json.dumps(record))

    with MCPHub([remote(oauth_server)]) as hub:
        assert hub.servers["remote"].state == "ready"
    assert oauth_events.find(lambda event: event.get("grant") == "refresh_token")
    assert oauth_events.count(lambda event: event.get("kind") == "access_token") == 0  # never sent expired


def test_access_token_refused_mid_session_is_refreshed_on_the_401(
    oauth_server: HttpServer, token_dir: Path, oauth_events: EventLog
) -> None:
    signed_in(oauth_server)
    with MCPHub([remote(oauth_server)]) as hub:
        control(oauth_server, "expire-access-tokens")

        assert hub.call_tool("mcp__remote__echo", {"text": "still here"}, timeout=20).text == "still here"
        assert hub.servers["remote"].state == "ready"
    assert oauth_events.find(lambda event: event.get("grant") == "refresh_token")


def test_revoked_refresh_token_asks_to_sign_in_again(oauth_server: HttpServer, token_dir: Path) -> None:
    signed_in(oauth_server)
    control(oauth_server, "revoke-refresh-tokens")
    control(oauth_server, "expire-access-tokens")

    with MCPHub([remote(oauth_server)]) as hub:
        error = hub.servers["remote"].error
        assert hub.servers["remote"].state == "failed"
        assert isinstance(error, SignInRequiredError)
        assert "sign in again" in str(error)
        assert "hub.login('remote')" in str(error)


def test_revoked_sign_in_mid_session_fails_the_call_saying_sign_in_again(
    oauth_server: HttpServer, token_dir: Path
) -> None:
    signed_in(oauth_server)
    with MCPHub([remote(oauth_server)]) as hub:
        control(oauth_server, "revoke-refresh-tokens")
        control(oauth_server, "expire-access-tokens")

        with pytest.raises(SignInRequiredError, match="sign in again"):
            hub.call_tool("mcp__remote__echo", {"text": "hello?"}, timeout=20)


def test_redirect_address_pasted_back_completes_the_sign_in(
    oauth_server: HttpServer, token_dir: Path
) -> None:
    redirected: list[str] = []
    arrived = threading.Event()

    def remote_browser(url: str) -> None:
        """A browser on another machine: it ends on the redirect address, which never reaches us."""
        response = httpx2.get(url, follow_redirects=False, timeout=10)
        redirected.append(response.headers["location"])
        arrived.set()

    def paste() -> str:
        assert arrived.wait(20)  # the user reads the address off the browser, then pastes it
        return redirected[0]

    with MCPHub([remote(oauth_server, auth={"type": "oauth", "redirect_port": free_port()})]) as hub:
        hub.login("remote", open_url=remote_browser, read_redirect=paste, timeout=30)

        assert hub.servers["remote"].state == "ready"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_logout_forgets_the_tokens_and_the_server_needs_a_sign_in(
    oauth_server: HttpServer, token_dir: Path
) -> None:
    with MCPHub([remote(oauth_server)]) as hub:
        hub.login("remote", open_url=browser, timeout=30)

        assert hub.logout("remote") is True

        assert not list(token_dir.glob("*.json"))
        assert isinstance(hub.servers["remote"].error, SignInRequiredError)


def test_client_credentials_connect_without_a_user(
    oauth_server: HttpServer, token_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPORTING_SECRET", MACHINE_SECRET)
    auth = {
        "type": "client_credentials",
        "client_id": MACHINE_ID,
        "client_secret": "${REPORTING_SECRET}",
        "issuer": oauth_server.url.removesuffix("/mcp"),
    }
    config = http_config("remote", oauth_server.url, auth=auth, connect_timeout_ms=10_000)

    with MCPHub([config]) as hub:
        assert hub.servers["remote"].state == "ready"
        assert hub.call_tool("mcp__remote__whoami").text == MACHINE_ID


def test_wrong_client_secret_fails_the_server_without_showing_it(
    oauth_server: HttpServer, token_dir: Path
) -> None:
    auth = {
        "type": "client_credentials",
        "client_id": MACHINE_ID,
        "client_secret": "not-the-secret-5a5a",
        "issuer": oauth_server.url.removesuffix("/mcp"),
    }
    config = http_config("remote", oauth_server.url, auth=auth, connect_timeout_ms=10_000)

    with MCPHub([config]) as hub:
        assert hub.servers["remote"].state == "failed"
        assert "not-the-secret-5a5a" not in str(hub.servers["remote"].error)


def test_a_host_auth_object_signs_the_requests(http_server: Callable[..., HttpServer]) -> None:
    class Signature(httpx2.Auth):
        def auth_flow(self, request: httpx2.Request) -> Iterator[httpx2.Request]:
            request.headers["X-Signature"] = "signed-by-the-host"
            yield request

    server = http_server()
    with MCPHub([http_config("signed", server.url)], auth={"signed": Signature()}) as hub:
        assert hub.call_tool("mcp__signed__get_header", {"name": "x-signature"}).text == "signed-by-the-host"


def test_host_auth_for_a_stdio_server_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Streamable HTTP server"):
        MCPHub([stdio_config("local")], auth={"local": httpx2.BasicAuth("a", "b")})


class RecordingStorage(FileTokenStorage):
    """The default files, remembering every token value ever saved (to look for them in the log)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.values: set[str] = set()

    def save(self, key: str, record: dict[str, Any]) -> None:
        tokens = record.get("tokens") or {}
        self.values.update(v for k, v in tokens.items() if k in ("access_token", "refresh_token"))
        super().save(key, record)


class Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(logging.Formatter("%(name)s %(message)s").format(record))


def login_address(process: subprocess.Popen[str]) -> str:
    """The authorization address a `mcp-sync login --no-browser` prints on stderr (bounded by the login's
    own --timeout and pytest-timeout)."""
    assert process.stderr is not None
    address = ""
    while not address.startswith("http"):
        line = process.stderr.readline()
        assert line, "the login ended without printing an address"
        address = line.strip()
    return address


def test_tokens_never_appear_in_any_log_record(oauth_server: HttpServer, tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path / "tokens")
    handler = Everything()
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        with MCPHub([remote(oauth_server)], token_storage=storage) as hub:
            hub.login("remote", open_url=browser, timeout=30)
            control(oauth_server, "expire-access-tokens")
            hub.call_tool("mcp__remote__echo", {"text": "after a refresh"}, timeout=20)
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)

    assert len(storage.values) >= 4  # two access tokens and two refresh tokens
    assert len(handler.lines) > 50  # the HTTP clients' debug records were seen
    leaks = [line for line in handler.lines for token in storage.values if token in line]
    assert not leaks


def test_cli_login_prints_the_address_and_stores_the_token(oauth_server: HttpServer, tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"servers": [remote(oauth_server)]}))
    env = {**os.environ, "MCP_SYNC_TOKEN_DIR": os.fspath(tmp_path / "tokens")}
    env.pop("DISPLAY", None)
    command = cli_command("login", os.fspath(config), "remote", "--no-browser")
    process = subprocess.Popen(
        [*command, "--timeout", "30"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )
    try:
        browser(login_address(process))
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait(timeout=10)

    assert process.returncode == 0, err
    assert "signed in to 'remote'" in out
    assert list((tmp_path / "tokens").glob("*.json"))
