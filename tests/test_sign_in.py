"""Sign-in integrity against the OAuth fixture server (tests/servers/oauth_server.py): several processes
on one token store with rotating refresh tokens, a re-login that does not finish, forged redirects to
the loopback listener, the pasted-address reader giving standard input back, and `$BROWSER` without a
display. Real servers, real processes; the helpers and fixtures are test_remote_oauth's."""

from __future__ import annotations

import _thread
import json
import logging
import os
import pty
import signal
import stat
import subprocess
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

from mcp_sync import AuthError, MCPHub
from mcp_sync._os import waits
from tests.support import PYTHON, REPO_ROOT, EventLog, HttpServer, cli_command, wait_until
from tests.test_remote_oauth import (
    OAUTH_SERVER,
    browser,
    control,
    login_address,
    remote,
    signed_in,
    stored_record,
)

# Bound on a child process of a test (a CLI run, a small program signing in).
CHILD_TIMEOUT = 60.0


@pytest.fixture
def oauth_server(oauth_events: EventLog) -> Iterator[HttpServer]:
    with HttpServer(script=OAUTH_SERVER, events=oauth_events) as server:
        yield server


def child_env(token_dir: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "MCP_SYNC_TOKEN_DIR": os.fspath(token_dir)}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    env.pop("BROWSER", None)
    env.update(extra)
    return env


def write_config(tmp_path: Path, server: HttpServer) -> Path:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"servers": [remote(server)]}))
    return config


# -- several processes on one token store ------------------------------------------------------------------


def test_hub_whose_refresh_token_another_hub_rotated_uses_the_newer_tokens(
    oauth_server: HttpServer, token_dir: Path, oauth_events: EventLog
) -> None:
    signed_in(oauth_server)
    with MCPHub([remote(oauth_server)]) as first, MCPHub([remote(oauth_server)]) as second:
        assert first.servers["remote"].state == second.servers["remote"].state == "ready"
        control(oauth_server, "expire-access-tokens")

        assert first.call_tool("mcp__remote__echo", {"text": "first"}, timeout=20).text == "first"
        # The second hub's refresh token was rotated away by the first hub's refresh.
        assert second.call_tool("mcp__remote__echo", {"text": "second"}, timeout=20).text == "second"

        assert second.servers["remote"].state == "ready"
    assert oauth_events.count("authorized") == 1  # nobody had to sign in again


def test_hubs_starting_together_on_an_expired_token_both_connect(
    oauth_server: HttpServer, token_dir: Path, oauth_events: EventLog
) -> None:
    signed_in(oauth_server)
    [path] = token_dir.glob("*.json")
    record = json.loads(path.read_text())
    record["expires_at"] = 0  # both refresh as they connect, with the same refresh token; one is refused
    path.write_text(json.dumps(record))
    hubs = [MCPHub([remote(oauth_server)]) for _ in range(2)]
    together = threading.Barrier(len(hubs), timeout=20)

    def start(hub: MCPHub) -> None:
        together.wait()
        hub.start()

    threads = [threading.Thread(target=start, args=(hub,)) for hub in hubs]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(CHILD_TIMEOUT)

        assert [hub.servers["remote"].state for hub in hubs] == ["ready", "ready"]
        for hub in hubs:
            assert hub.call_tool("mcp__remote__echo", {"text": "ok"}, timeout=20).text == "ok"
    finally:
        for hub in hubs:
            hub.close()
    assert oauth_events.count("authorized") == 1


def test_running_hub_takes_the_tokens_of_a_sign_in_made_beside_it(
    oauth_server: HttpServer, token_dir: Path, oauth_events: EventLog
) -> None:
    signed_in(oauth_server)
    with MCPHub([remote(oauth_server)]) as hub:
        signed_in(oauth_server)  # another program signs in again: a new client registration and new tokens
        assert oauth_events.count("registered") == 2

        for _ in range(2):  # the first with the new access token, the second refreshing for the new client
            control(oauth_server, "expire-access-tokens")
            assert hub.call_tool("mcp__remote__echo", {"text": "on"}, timeout=20).text == "on"
    control(oauth_server, "expire-access-tokens")
    with MCPHub([remote(oauth_server)]) as later:  # what the store holds still goes together
        assert later.servers["remote"].state == "ready"
    assert oauth_events.count(lambda event: event.get("kind") == "refresh_token") == 0


def test_refresh_in_a_running_hub_does_not_undo_a_logout_made_beside_it(
    oauth_server: HttpServer, token_dir: Path
) -> None:
    signed_in(oauth_server)
    with MCPHub([remote(oauth_server)]) as hub:
        elsewhere = MCPHub([remote(oauth_server)])  # as `mcp-sync logout` would
        assert elsewhere.logout("remote") is True
        elsewhere.close()
        control(oauth_server, "expire-access-tokens")

        hub.call_tool("mcp__remote__echo", {"text": "refreshing"}, timeout=20)

        assert not list(token_dir.glob("*.json"))


# Seconds an access token of the short-lived server lasts: both hubs' tokens run out during a test.
SHORT_LIFETIME = 2


def test_hub_whose_token_ran_out_takes_the_tokens_another_hub_refreshed_instead_of_a_stale_refresh(
    oauth_events: EventLog, token_dir: Path
) -> None:
    lifetime = ("--access-token-lifetime", str(SHORT_LIFETIME))
    with HttpServer(*lifetime, script=OAUTH_SERVER, events=oauth_events) as server:
        signed_in(server)
        # A stored token this short-lived is refreshed as each hub connects: the second rotates the first's
        # refresh token away.
        with MCPHub([remote(server)]) as first, MCPHub([remote(server)]) as second:
            ran_out = time.time() + SHORT_LIFETIME + 0.5
            wait_until(lambda: time.time() > ran_out, timeout=SHORT_LIFETIME + 5, interval=0.1)

            assert first.call_tool("mcp__remote__echo", {"text": "first"}, timeout=20).text == "first"
            assert second.call_tool("mcp__remote__echo", {"text": "second"}, timeout=20).text == "second"
    assert oauth_events.count(lambda event: event.get("kind") == "refresh_token") == 0  # none refused
    assert oauth_events.count("authorized") == 1


def test_cli_refreshing_beside_a_running_hub_does_not_sign_the_hub_out(
    oauth_server: HttpServer, token_dir: Path, tmp_path: Path
) -> None:
    signed_in(oauth_server)
    config = write_config(tmp_path, oauth_server)
    with MCPHub([remote(oauth_server)]) as hub:
        control(oauth_server, "expire-access-tokens")
        arguments = ["mcp__remote__echo", '{"text": "cli"}']
        cli = subprocess.run(
            cli_command("call", os.fspath(config), *arguments),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=child_env(token_dir),
            cwd=REPO_ROOT,
            timeout=CHILD_TIMEOUT,
        )
        assert cli.returncode == 0, cli.stderr
        assert cli.stdout.strip() == "cli"

        assert hub.call_tool("mcp__remote__echo", {"text": "hub"}, timeout=20).text == "hub"


# -- a re-login that does not finish ---------------------------------------------------------------------


def never_opened(url: str) -> None:
    """A user who never opens the address."""


def refused(server: HttpServer) -> Any:
    def follow(url: str) -> None:
        """A user who says no: the authorization server redirects back with error=access_denied."""
        httpx2.get(url, follow_redirects=True, timeout=10)

    control(server, "refuse-sign-ins")
    return follow


@pytest.mark.parametrize("outcome", ["timeout", "refused"])
def test_re_login_that_does_not_finish_keeps_the_working_tokens(
    oauth_server: HttpServer, token_dir: Path, outcome: str
) -> None:
    signed_in(oauth_server)
    before = stored_record(token_dir)
    with MCPHub([remote(oauth_server)]) as hub:
        open_url = never_opened if outcome == "timeout" else refused(oauth_server)
        with pytest.raises(AuthError, match="did not finish" if outcome == "timeout" else "access_denied"):
            hub.login("remote", open_url=open_url, timeout=3 if outcome == "timeout" else 30)

        assert stored_record(token_dir)["tokens"] == before["tokens"]
        assert hub.servers["remote"].state == "ready"
        assert hub.call_tool("mcp__remote__echo", {"text": "still"}, timeout=20).text == "still"
    with MCPHub([remote(oauth_server)]) as later:
        assert later.servers["remote"].state == "ready"


def test_re_login_interrupted_with_ctrl_c_keeps_the_working_tokens(
    oauth_server: HttpServer, token_dir: Path, tmp_path: Path
) -> None:
    signed_in(oauth_server)
    before = stored_record(token_dir)
    config = write_config(tmp_path, oauth_server)
    command = cli_command("login", os.fspath(config), "remote", "--no-browser")
    process = subprocess.Popen(
        [*command, "--timeout", "60"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(token_dir),
        cwd=REPO_ROOT,
    )
    try:
        login_address(process)  # the sign-in is waiting for its browser: interrupt it now
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=CHILD_TIMEOUT)
    finally:
        process.kill()
        process.wait(timeout=10)

    assert process.returncode != 0
    assert "interrupted" in err
    assert stored_record(token_dir)["tokens"] == before["tokens"]
    with MCPHub([remote(oauth_server)]) as hub:
        assert hub.servers["remote"].state == "ready"


# -- the loopback listener --------------------------------------------------------------------------------


def test_redirect_with_another_state_is_refused_and_the_sign_in_goes_on(
    oauth_server: HttpServer, token_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    answers: list[int] = []

    def forger_then_user(url: str) -> None:
        """Another local process hits the listener first (with a code, an error, nothing); then the user."""
        redirect_uri = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        for query in (
            "code=forged-code-1f2e&state=forged-state-9a8b",
            "error=access_denied&state=forged-state-9a8b",
            "code=forged-code-1f2e",
        ):
            answers.append(httpx2.get(f"{redirect_uri}?{query}", timeout=10).status_code)
        browser(url)

    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with MCPHub([remote(oauth_server)]) as hub:
        hub.login("remote", open_url=forger_then_user, timeout=30)

        assert hub.servers["remote"].state == "ready"
    assert answers == [400, 400, 400]
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    ignored = [record for record in warnings if "not this sign-in's" in record.getMessage()]
    assert len(ignored) == 3
    assert not [r for r in caplog.records if "forged" in r.getMessage()]


# -- sign-in without a browser on this machine -------------------------------------------------------------

# What the user does on the machine with the browser: open the address shown. "redirect": the browser follows
# the authorization server's redirect to the loopback listener (an SSH tunnel, a forwarded port); "paste":
# it cannot reach the listener, and the user copies the address it ended on.
BROWSER_PROGRAM = textwrap.dedent(
    """
    import sys, httpx2
    url, mode = sys.argv[1], sys.argv[2]
    if mode == "redirect":
        httpx2.get(url, follow_redirects=True, timeout=10).raise_for_status()
    else:
        print(httpx2.get(url, follow_redirects=False, timeout=10).headers["location"], flush=True)
    """
)

HEADLESS_PROGRAM = textwrap.dedent(
    """
    import json, logging, sys
    from mcp_sync import MCPHub

    logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(message)s")
    hub = MCPHub([json.loads(sys.argv[1])])
    hub.login("remote", read_redirect=input, timeout=float(sys.argv[2]))
    print("signed in", flush=True)
    hub.close()
    """
)

# How long a headless sign-in waits for its browser: longer than a loaded machine needs to open the address.
HEADLESS_LOGIN_TIMEOUT = 45.0


def open_in_another_browser(url: str, mode: str) -> str:
    """Open `url` in a separate process acting as the user's browser; what it printed (the address it
    ended on, in "paste" mode)."""
    opened = subprocess.run(
        [PYTHON, "-c", BROWSER_PROGRAM, url, mode],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=CHILD_TIMEOUT,
    )
    assert opened.returncode == 0, opened.stderr
    return opened.stdout.strip()


def logged_address(process: subprocess.Popen[str]) -> str:
    """The address a `hub.login()` without `open_url` logs for the user (bounded by the login's timeout)."""
    assert process.stderr is not None
    while True:
        line = process.stderr.readline()
        assert line, "the login ended without logging an address"
        if "open this address in a browser: " in line:
            return line.split("open this address in a browser: ", 1)[1].strip()


@pytest.mark.parametrize("mode", ["redirect", "paste"])
def test_login_without_a_browser_finishes_with_the_address_it_logged(
    oauth_server: HttpServer, token_dir: Path, tmp_path: Path, mode: str
) -> None:
    process = subprocess.Popen(
        [PYTHON, "-c", HEADLESS_PROGRAM, json.dumps(remote(oauth_server)), str(HEADLESS_LOGIN_TIMEOUT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(token_dir),
        cwd=REPO_ROOT,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        address = logged_address(process)
        assert "state=" in address and "***" not in address
        ended_on = open_in_another_browser(address, mode)
        if mode == "paste":
            process.stdin.write(ended_on + "\n")
            process.stdin.flush()
        out, err = process.communicate(timeout=CHILD_TIMEOUT)
    finally:
        process.kill()
        process.wait(timeout=10)

    assert process.returncode == 0, err
    assert out.strip() == "signed in"
    assert stored_record(token_dir)["tokens"]["access_token"]


def test_cli_login_without_a_browser_finishes_with_the_address_it_printed(
    oauth_server: HttpServer, token_dir: Path, tmp_path: Path
) -> None:
    config = write_config(tmp_path, oauth_server)
    command = cli_command("login", os.fspath(config), "remote", "--no-browser")
    process = subprocess.Popen(
        [*command, "--timeout", str(HEADLESS_LOGIN_TIMEOUT)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(token_dir),
        cwd=REPO_ROOT,
    )
    try:
        open_in_another_browser(login_address(process), "redirect")
        out, err = process.communicate(timeout=CHILD_TIMEOUT)
    finally:
        process.kill()
        process.wait(timeout=10)

    assert process.returncode == 0, err
    assert "signed in to 'remote'" in out
    assert stored_record(token_dir)["tokens"]["access_token"]


def test_open_url_that_raises_fails_the_login_at_once_with_its_cause(
    oauth_server: HttpServer, token_dir: Path
) -> None:
    def broken(url: str) -> None:
        raise RuntimeError("no browser here: xdg-open is missing")

    # The login's own timeout is far beyond the test's: only the cause can end it in time.
    cause = "xdg-open is missing"
    with MCPHub([remote(oauth_server)]) as hub, pytest.raises(AuthError, match=cause) as raised:
        hub.login("remote", open_url=broken, timeout=600)

    assert "did not finish" not in str(raised.value)
    assert not list(token_dir.glob("*.json"))


# -- interpreter exit during a sign-in ----------------------------------------------------------------------

POOL_LOGIN_PROGRAM = textwrap.dedent(
    """
    import concurrent.futures, json, sys, threading
    from mcp_sync import MCPHub

    hub = MCPHub([json.loads(sys.argv[1])])
    if sys.argv[2] == "started":
        hub.start()
    shown = threading.Event()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    pool.submit(hub.login, "remote", open_url=lambda url: shown.set(), timeout=600)
    assert shown.wait(60)
    print("waiting for the browser", flush=True)
    # The program ends here, with the login still waiting on its worker thread.
    """
)

# Bound on the exit of a program whose login waits on a pool worker: the interpreter's start and a hub's
# close take seconds on a loaded machine; the login's own timeout is ten minutes.
EXIT_DURING_LOGIN_TIMEOUT = 30.0


@pytest.mark.parametrize("hub_state", ["started", "not started"])
def test_interpreter_exit_while_a_login_waits_on_a_pool_worker_ends_promptly(
    oauth_server: HttpServer, token_dir: Path, hub_state: str
) -> None:
    process = subprocess.Popen(
        [PYTHON, "-c", POOL_LOGIN_PROGRAM, json.dumps(remote(oauth_server)), hub_state],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(token_dir),
        cwd=REPO_ROOT,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "waiting for the browser"
        _, err = process.communicate(timeout=EXIT_DURING_LOGIN_TIMEOUT)
    finally:
        process.kill()
        process.wait(timeout=10)

    assert process.returncode == 0, err
    assert not list(token_dir.glob("*.json"))


def test_ctrl_c_during_a_login_waited_for_in_slices_ends_it_at_once(
    oauth_server: HttpServer, token_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Windows before Python 3.14 (a lock wait there holds Ctrl-C back): the login's wait is sliced,
    # so the interrupt ends it within a slice, not at the sign-in's timeout (600 s here).
    monkeypatch.setattr(waits, "WAIT_SLICE", 0.05)
    shown = threading.Event()

    def interrupt_once_shown() -> None:
        if shown.wait(CHILD_TIMEOUT):
            _thread.interrupt_main()

    threading.Thread(target=interrupt_once_shown, daemon=True).start()
    with MCPHub([remote(oauth_server)]) as hub, pytest.raises(KeyboardInterrupt):
        hub.login("remote", open_url=lambda url: shown.set(), timeout=600)


def test_closing_the_hub_stops_its_login_in_progress(oauth_server: HttpServer, token_dir: Path) -> None:
    hub = MCPHub([remote(oauth_server)])
    shown = threading.Event()
    outcome: list[BaseException] = []

    def login() -> None:
        try:
            hub.login("remote", open_url=lambda url: shown.set(), timeout=600)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=login)
    thread.start()
    try:
        assert shown.wait(CHILD_TIMEOUT)
    finally:
        hub.close()
        thread.join(CHILD_TIMEOUT)

    assert not thread.is_alive()
    [error] = outcome
    assert isinstance(error, AuthError) and "the hub was closed" in str(error)


# -- the server entry's own secrets during a sign-in --------------------------------------------------------

API_KEY = "entry-api-key-7d3f91c0b2"


def test_login_keeps_the_entrys_own_secrets_out_of_its_error_and_log_records(
    oauth_events: EventLog, token_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with HttpServer("--refuse-api-key", script=OAUTH_SERVER, events=oauth_events) as server:
        hub = MCPHub([remote(server, headers={"X-Api-Key": API_KEY})])  # not started: as `mcp-sync login`
        try:
            with pytest.raises(AuthError) as raised:
                hub.login("remote", open_url=browser, timeout=30)
        finally:
            hub.close()

    assert oauth_events.count(lambda event: event.get("kind") == "api_key") >= 1  # the server did repeat it
    assert "is not allowed here" in str(raised.value)
    chain: list[BaseException] = []
    error: BaseException | None = raised.value
    while error is not None and len(chain) < 10:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert not [e for e in chain if API_KEY in str(e)]
    records = [f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records]
    assert any("is not allowed here" in text for text in records)  # the DEBUG record of the failure
    assert not [text for text in records if API_KEY in text]


def test_cli_login_keeps_the_entrys_own_secrets_out_of_its_output(
    oauth_events: EventLog, token_dir: Path, tmp_path: Path
) -> None:
    with HttpServer("--refuse-api-key", script=OAUTH_SERVER, events=oauth_events) as server:
        config = tmp_path / "servers.json"
        config.write_text(json.dumps({"servers": [remote(server, headers={"X-Api-Key": "${ENTRY_KEY}"})]}))
        command = cli_command("login", os.fspath(config), "remote", "--no-browser")
        process = subprocess.Popen(
            [*command, "--timeout", str(HEADLESS_LOGIN_TIMEOUT)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(token_dir, ENTRY_KEY=API_KEY),
            cwd=REPO_ROOT,
        )
        try:
            open_in_another_browser(login_address(process), "redirect")
            out, err = process.communicate(timeout=CHILD_TIMEOUT)
        finally:
            process.kill()
            process.wait(timeout=10)

    assert process.returncode != 0
    assert "is not allowed here" in out + err
    assert API_KEY not in out + err


# -- the pasted-address reader ----------------------------------------------------------------------------

PASTE_PROGRAM = textwrap.dedent(
    """
    import json, sys
    import httpx2
    from mcp_sync import MCPHub

    def browser(url):
        httpx2.get(url, follow_redirects=True, timeout=10).raise_for_status()

    hub = MCPHub([json.loads(sys.argv[1])])
    hub.login("remote", open_url=browser, read_redirect=input, timeout=30)
    print("signed in", flush=True)
    print("next line:", input(), flush=True)
    hub.close()
    """
)


def test_paste_reader_leaves_the_next_line_to_the_program_after_a_browser_sign_in(
    oauth_server: HttpServer, token_dir: Path, tmp_path: Path
) -> None:
    stderr = tmp_path / "stderr.txt"
    with stderr.open("w") as errors:
        process = subprocess.Popen(
            [PYTHON, "-c", PASTE_PROGRAM, json.dumps(remote(oauth_server))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=child_env(token_dir),
            cwd=REPO_ROOT,
        )
    try:
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline().strip() == "signed in"  # bounded by the login's timeout
        process.stdin.write("the program's own line\n")
        process.stdin.close()
        out = process.stdout.read()  # to the end: bounded by the program's own end and pytest-timeout
        process.wait(timeout=CHILD_TIMEOUT)
    finally:
        process.kill()
        process.wait(timeout=10)

    assert process.returncode == 0, stderr.read_text()
    assert out.strip() == "next line: the program's own line"


def test_cli_login_takes_the_address_pasted_on_its_terminal(
    oauth_server: HttpServer, token_dir: Path, tmp_path: Path
) -> None:
    config = write_config(tmp_path, oauth_server)
    terminal, terminal_side = pty.openpty()
    command = cli_command("login", os.fspath(config), "remote", "--no-browser")
    try:
        process = subprocess.Popen(
            [*command, "--timeout", "30"],
            stdin=terminal_side,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(token_dir),
            cwd=REPO_ROOT,
        )
        try:
            address = login_address(process)
            # A browser on another machine: it ends on the redirect address, which the user pastes.
            redirected = httpx2.get(address, follow_redirects=False, timeout=10).headers["location"]
            os.write(terminal, redirected.encode() + b"\n")
            out, err = process.communicate(timeout=CHILD_TIMEOUT)
        finally:
            process.kill()
            process.wait(timeout=10)
    finally:
        os.close(terminal)
        os.close(terminal_side)

    assert process.returncode == 0, err
    assert "signed in to 'remote'" in out
    assert stored_record(token_dir)["tokens"]["access_token"]


# -- $BROWSER -----------------------------------------------------------------------------------------------


def test_browser_variable_opens_the_address_without_a_display(
    oauth_server: HttpServer, token_dir: Path, tmp_path: Path
) -> None:
    opened = tmp_path / "opened.txt"
    script = tmp_path / "open-url"
    script.write_text(
        f"#!{PYTHON}\n"
        "import sys, httpx2\n"
        f"open({os.fspath(opened)!r}, 'a').write(sys.argv[1] + '\\n')\n"
        "httpx2.get(sys.argv[1], follow_redirects=True, timeout=10).raise_for_status()\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    config = write_config(tmp_path, oauth_server)

    login = subprocess.run(
        cli_command("login", os.fspath(config), "remote", "--timeout", "20"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=child_env(token_dir, BROWSER=os.fspath(script)),
        cwd=REPO_ROOT,
        timeout=CHILD_TIMEOUT,
    )

    assert login.returncode == 0, login.stderr
    [url] = opened.read_text().split()
    assert url.startswith(oauth_server.url.removesuffix("/mcp") + "/authorize?")
    assert stored_record(token_dir)["tokens"]["access_token"]
