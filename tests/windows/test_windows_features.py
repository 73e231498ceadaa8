"""Windows paths and the rest of the library on Windows: Streamable HTTP on 127.0.0.1, reload, the
command line, host files in their Windows locations, drive-letter paths in `cwd`, `roots` and `envFile`,
and the token store's private directory."""

from __future__ import annotations

import contextlib
import json
import locale
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from winsupport import FIXTURE_SERVER, REPO_ROOT, WAIT, env_with_repo, stdio_config

from mcp_sync import FileTokenStorage, MCPHub, load_host_entries


@pytest.fixture
def http_url() -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, str(FIXTURE_SERVER), "--transport", "http"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # bounded by the test's timeout
        assert line.startswith("LISTENING "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        server.kill()
        server.wait(WAIT)


def test_a_streamable_http_server_on_loopback_answers(http_url: str) -> None:
    with MCPHub([{"server_name": "web", "transport": "streamable-http", "url": http_url}]) as hub:
        assert hub.servers["web"].state == "ready", hub.servers["web"].error
        assert hub.call_tool("mcp__web__echo", {"text": "over http"}).text == "over http"


def test_cwd_with_a_drive_letter_and_backslashes_is_the_servers_folder(tmp_path: Path) -> None:
    folder = tmp_path / "server folder"
    folder.mkdir()
    assert str(folder)[1:3] == ":\\"  # C:\...\server folder
    with MCPHub([stdio_config("fx", cwd=str(folder))]) as hub:
        assert Path(hub.call_tool("mcp__fx__get_cwd", {}).text) == folder


def test_roots_with_a_drive_letter_reach_the_server_as_file_uris(tmp_path: Path) -> None:
    with MCPHub([stdio_config("fx", roots=[str(tmp_path), "file:///D:/data"])]) as hub:
        roots = json.loads(hub.call_tool("mcp__fx__ask_roots", {}).text)
    drive = str(tmp_path)[0]
    assert roots[0].startswith(f"file:///{drive}:/") and "\\" not in roots[0]
    assert roots[1] == "file:///D:/data"


def test_reload_keeps_an_unchanged_server_and_starts_a_new_one(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    first = stdio_config("one")
    config.write_text(json.dumps({"servers": [first]}), encoding="utf-8")
    with MCPHub.from_file(str(config)) as hub:
        assert hub.servers["one"].state == "ready", hub.servers["one"].error
        kept = hub.servers["one"]
        config.write_text(json.dumps({"servers": [first, stdio_config("two")]}), encoding="utf-8")
        hub.reload()
        assert hub.servers["one"] is kept
        assert hub.servers["two"].state == "ready", hub.servers["two"].error
        assert hub.call_tool("mcp__two__add", {"a": 1, "b": 1}).text == "2"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line with its output in a pipe, in the console's code page as on Windows."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_sync", *args],
        env=env_with_repo(),
        capture_output=True,
        text=True,
        encoding=locale.getpreferredencoding(False),
        errors="replace",
        cwd=REPO_ROOT,
        timeout=WAIT * 2,
        stdin=subprocess.DEVNULL,
    )


def test_the_command_line_lists_tools_and_says_failures_with_exit_codes(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"servers": [stdio_config("fx")]}), encoding="utf-8")
    listed = _cli("tools", str(config))
    assert listed.returncode == 0, listed.stderr
    assert "mcp__fx__echo" in listed.stdout
    assert "\x1b" not in listed.stdout + listed.stderr  # not a console: no ANSI
    called = _cli("call", str(config), "mcp__fx__echo", json.dumps({"text": "caf\u00e9 \u2713 \u4f60\u597d"}))
    assert called.returncode == 0, called.stderr
    assert called.stdout.startswith("caf\u00e9 ")  # what the code page lacks is replaced, not fatal
    missing = _cli("tools", str(tmp_path / "nowhere.json"))
    assert missing.returncode == 2, (missing.stdout, missing.stderr)
    assert "nowhere.json" in missing.stderr


def test_json_output_in_a_code_page_carries_every_character(tmp_path: Path) -> None:
    # Output to a pipe is in the ANSI code page, which lacks most of this text: JSON escapes it.
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"servers": [stdio_config("fx")]}), encoding="utf-8")
    text = "caf\u00e9 \u2713 \u4f60\u597d"
    called = _cli("call", str(config), "mcp__fx__echo", json.dumps({"text": text}), "--json")
    assert called.returncode == 0, called.stderr
    assert text in json.dumps(json.loads(called.stdout), ensure_ascii=False)


def test_an_error_on_stderr_in_a_code_page_keeps_what_it_lacks_as_escapes(tmp_path: Path) -> None:
    missing = _cli("tools", str(tmp_path / "\u65e5\u672c" / "servers.json"))
    assert missing.returncode == 2, (missing.stdout, missing.stderr)
    assert "\\u65e5\\u672c" in missing.stderr  # Python's backslashreplace, not "?"


def test_host_files_are_found_in_their_windows_locations(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    profile = tmp_path / "Users" / "ann"
    appdata = profile / "AppData" / "Roaming"
    desktop = appdata / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    env_file = profile / "secrets.env"
    env_file.write_text("API_TOKEN=from-env-file\n", encoding="utf-8")
    desktop.write_text(
        json.dumps({"mcpServers": {"desk": {"command": "python", "args": ["C:\\tools\\server.py"]}}}),
        encoding="utf-8",
    )
    vscode = appdata / "Code" / "User" / "mcp.json"
    vscode.parent.mkdir(parents=True)
    vscode.write_text(
        json.dumps({"servers": {"code": {"command": "python", "envFile": str(env_file)}}}), encoding="utf-8"
    )
    monkeypatch.setenv("APPDATA", str(appdata))
    monkeypatch.setenv("USERPROFILE", str(profile))  # what `~` is on Windows
    desk = load_host_entries("claude-desktop")
    assert [config.server_name for config in desk.configs] == ["desk"]
    assert desk.configs[0].args == ("C:\\tools\\server.py",)
    code = load_host_entries("vscode")
    assert code.configs[0].env["API_TOKEN"] == "from-env-file"


def test_claude_code_local_scope_is_found_under_the_forward_slash_key_claude_code_writes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    profile, project = tmp_path / "Users" / "ann", tmp_path / "app"
    profile.mkdir(parents=True)
    project.mkdir()
    servers = {"shared": {"command": "python"}, "declined": {"command": "python"}}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    key = project.resolve().as_posix()  # `C:/.../app`, as Claude Code keys it on Windows
    record = {"mcpServers": {"mine": {"command": "python"}}, "disabledMcpjsonServers": ["declined"]}
    (profile / ".claude.json").write_text(json.dumps({"projects": {key: record}}), encoding="utf-8")
    monkeypatch.setenv("USERPROFILE", str(profile))

    entries = load_host_entries("claude-code", project)

    enabled = {config.server_name: config.enabled for config in entries.configs}
    assert enabled == {"shared": True, "declined": False, "mine": True}


def test_the_token_store_directory_gets_an_acl_for_the_user_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Wine accepts an ACL but does not keep it (reading it back gives Wine's default), so the ACL is
    # checked as it is handed to Windows; the real call is still made, and must succeed.
    import ntsecuritycon
    import win32api
    import win32security

    applied: list[tuple[str, int, object]] = []
    real = win32security.SetNamedSecurityInfo

    def spy(
        path: str, kind: int, info: int, owner: object, group: object, dacl: object, sacl: object
    ) -> None:
        real(path, kind, info, owner, group, dacl, sacl)
        applied.append((path, info, dacl))

    monkeypatch.setattr(win32security, "SetNamedSecurityInfo", spy)
    store = FileTokenStorage(tmp_path / "tokens")
    store.save("https://example.test/mcp client", {"tokens": {"access_token": "secret"}})
    assert store.load("https://example.test/mcp client") is not None
    [(path, info, acl)] = applied
    assert Path(path) == store.directory
    assert info & win32security.PROTECTED_DACL_SECURITY_INFORMATION  # nothing inherited from above
    token = win32security.OpenProcessToken(win32api.GetCurrentProcess(), win32security.TOKEN_QUERY)
    user = win32security.ConvertSidToStringSid(
        win32security.GetTokenInformation(token, win32security.TokenUser)[0]
    )
    entries = [acl.GetAce(index) for index in range(acl.GetAceCount())]  # type: ignore[attr-defined]
    assert [win32security.ConvertSidToStringSid(sid) for _header, _mask, sid in entries] == [user]
    (_type, flags), mask, _sid = entries[0]
    assert mask == ntsecuritycon.FILE_ALL_ACCESS
    assert flags & ntsecuritycon.OBJECT_INHERIT_ACE  # the token files inherit it


def test_the_default_token_store_is_in_local_app_data(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("MCP_SYNC_TOKEN_DIR", raising=False)
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path))
    assert FileTokenStorage().directory == tmp_path / "mcp_sync" / "tokens"
    assert os.fspath(FileTokenStorage().directory).startswith(str(tmp_path))


def test_ctrl_c_in_a_login_ends_it_within_a_slice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A server that accepts the sign-in's first request and never answers it: the login waits. A
    # console's Ctrl-C raises SIGINT from the console's own thread; a lock wait holds it back until it
    # returns, so without slices the login would end only at its timeout (600 s).
    monkeypatch.setenv("MCP_SYNC_TOKEN_DIR", str(tmp_path / "tokens"))
    listener = socket.create_server(("127.0.0.1", 0))
    accepted = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            held.append(listener.accept()[0])
            accepted.set()

    threading.Thread(target=accept, daemon=True).start()

    def ctrl_c_once_asked() -> None:
        if accepted.wait(WAIT):
            signal.raise_signal(signal.SIGINT)

    threading.Thread(target=ctrl_c_once_asked, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    hub = MCPHub([{"server_name": "remote", "transport": "streamable-http", "url": url, "auth": "oauth"}])
    try:
        with pytest.raises(KeyboardInterrupt):
            hub.login("remote", open_url=lambda address: None, timeout=600)
    finally:
        hub.close()
        listener.close()
        for connection in held:
            connection.close()
