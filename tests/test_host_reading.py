"""Host files read as each host reads them: JSON with comments as the editors parse it, `.env` files
as VS Code and Cursor parse them, names the hosts accept, keys they ignore, files without servers,
one broken file among several, each host's variables, project folders, inputs asked once, and the
hosts' fallback from Streamable HTTP to legacy SSE (against real servers on 127.0.0.1).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import (
    ConfigError,
    HostInput,
    HttpServerConfig,
    MCPHub,
    SseServerConfig,
    StdioServerConfig,
    load_config_entries,
    load_host_entries,
    parse_server_entries,
)
from mcp_sync._config.secrets import secrets_of
from mcp_sync._values.naming import SERVER_NAME_MAX_LENGTH, server_name_from_host, server_names_from_host
from tests.support import EventLog, HttpServer, Records, command_entry

START_TIMEOUT = 60.0  # a stdio or HTTP server starting on a loaded 2-core machine: "does not hang"
DEPRECATION = "uses the legacy SSE transport (deprecated in MCP 2025-03-26)"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def by_name(entries: Any) -> dict[str, Any]:
    return {entry.server_name: entry for entry in entries.entries}


# --------------------------------------------------------------------------- JSON with comments


GEMINI_TOOL_FILTERING = """{
  "mcpServers": {
    "filteredServer": {
      "command": "python",
      "args": ["-m", "my_mcp_server"],
      "includeTools": ["safe_tool", "file_reader", "data_processor"],
      // "excludeTools": ["dangerous_tool", "file_deleter"],
      "timeout": 30000
    }
  }
}
"""


def test_gemini_docs_tool_filtering_example_loads_with_its_commented_out_line(tmp_path: Path) -> None:
    path = write(tmp_path / "settings.json", GEMINI_TOOL_FILTERING)

    [config] = load_config_entries(path, environ={}).entries

    assert isinstance(config, StdioServerConfig)
    assert config.include_tools == ("safe_tool", "file_reader", "data_processor")
    assert config.exclude_tools == ()


def test_a_comma_before_a_comment_with_brackets_is_a_trailing_comma_only_when_it_is(tmp_path: Path) -> None:
    text = (
        '{"mcpServers": {\n  "a": {"command": "x", "args": ["[y]"]}, // see [docs]\n'
        '  "b": {"command": "z"},\n}}'
    )

    entries = load_config_entries(write(tmp_path / "mcp.json", text), environ={})

    assert [config.server_name for config in entries.configs] == ["a", "b"]


def test_a_json_file_with_a_mistake_is_reported_as_json_never_read_as_yaml(tmp_path: Path) -> None:
    path = write(
        tmp_path / "mcp.json", '{\n  // "x": 1\n  "mcpServers": {"a": {"command": "x"}}\n  "more": 1\n}'
    )

    with pytest.raises(ConfigError) as info:
        load_config_entries(path, environ={})

    assert str(info.value) == f"{path}: not valid JSON at line 4, column 3: unexpected character"


# --------------------------------------------------------------------------- .env files


def test_env_file_values_are_read_as_vscode_reads_them(tmp_path: Path) -> None:
    write(
        tmp_path / "project" / ".env",
        "TOKEN=\"abc\" # note\nTICKED=`x y`\nexport PLAIN=value # comment\nSINGLE='${NOT_EXPANDED}'\n",
    )
    path = write(
        tmp_path / "project" / ".vscode" / "mcp.json",
        json.dumps(
            {"servers": {"s": {"type": "stdio", "command": "x", "envFile": "${workspaceFolder}/.env"}}}
        ),
    )

    [config] = load_config_entries(path, environ={}).configs

    assert isinstance(config, StdioServerConfig)
    assert dict(config.env) == {
        "TOKEN": "abc",
        "TICKED": "x y",
        "PLAIN": "value",
        "SINGLE": "${NOT_EXPANDED}",
    }


# --------------------------------------------------------------------------- what a file holds


def test_vscode_file_with_servers_and_mcp_servers_loads_both_as_vscode_migrates_them(tmp_path: Path) -> None:
    text = json.dumps({"servers": {"a": {"command": "x"}}, "mcpServers": {"b": {"command": "y"}}})
    path = write(tmp_path / "project" / ".vscode" / "mcp.json", text)

    entries = load_config_entries(path, environ={})

    assert [config.server_name for config in entries.configs] == ["a", "b"]


@pytest.mark.parametrize(
    ("host", "relative", "text"),
    [
        ("gemini", ".gemini/settings.json", '{"theme": "Default", "selectedAuthType": "oauth-personal"}'),
        ("codex", ".codex/config.toml", 'model = "o3"\n[tui]\nnotifications = true\n'),
        ("cursor", ".cursor/mcp.json", "{}"),
        ("claude-code", ".claude.json", '{"numStartups": 3, "projects": {}}'),
    ],
)
def test_a_host_file_without_servers_is_zero_servers(
    tmp_path: Path, host: str, relative: str, text: str
) -> None:
    write(tmp_path / relative, text)

    entries = load_host_entries(host, home=tmp_path, environ={})

    assert entries.entries == ()


def test_a_broken_project_file_keeps_the_users_servers(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    write(home / ".cursor" / "mcp.json", json.dumps({"mcpServers": {"mine": {"command": "x"}}}))
    broken = write(project / ".cursor" / "mcp.json", '{"mcpServers": {"half": {"command": ')

    entries = load_host_entries("cursor", project, home=home, environ={})

    assert [config.server_name for config in entries.configs] == ["mine"]
    [invalid] = entries.invalid
    assert invalid.server_name == os.fspath(broken)
    assert str(invalid.error).startswith(f"{broken}: not valid JSON at line 1")


def test_a_broken_file_still_raises_when_strict(tmp_path: Path) -> None:
    write(tmp_path / ".cursor" / "mcp.json", "{")

    with pytest.raises(ConfigError, match="not valid JSON"):
        load_host_entries("cursor", home=tmp_path, environ={}, strict=True)


def test_a_project_folder_that_does_not_exist_is_a_config_error(tmp_path: Path) -> None:
    write(tmp_path / ".cursor" / "mcp.json", "{}")

    with pytest.raises(ConfigError, match="does not exist or is not a directory"):
        load_host_entries("cursor", tmp_path / "no-such-project", home=tmp_path, environ={})


# --------------------------------------------------------------------------- server names


@pytest.mark.parametrize(
    "name",
    [
        "io.github.upstash/context7",
        "Dev Box MCP",
        "@21st-dev/magic",
        "Zillow Documentation",
        "日本語",
        "x" * 40,
    ],
)
def test_a_name_the_host_accepts_becomes_a_valid_server_name(name: str) -> None:
    made = server_name_from_host(name)

    assert made == server_name_from_host(name)
    assert 1 <= len(made) <= SERVER_NAME_MAX_LENGTH
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in made)


def test_names_that_normalise_alike_stay_distinct() -> None:
    assert server_name_from_host("a b") != server_name_from_host("a.b")
    assert server_name_from_host("a b") != "a_b"
    assert server_name_from_host("x" * 40) != server_name_from_host("x" * 41)


def test_a_name_written_as_another_names_normalised_form_loads_under_a_name_of_its_own() -> None:
    written = server_name_from_host("Dev Box")  # copied from `hub.servers` into a second entry

    entries = parse_server_entries({"mcpServers": {"Dev Box": {"command": "x"}, written: {"command": "y"}}})

    assert not entries.invalid
    names = [config.server_name for config in entries.configs]
    assert names[0] == written and names[1] != written
    assert [config.original_name for config in entries.configs] == ["Dev Box", written]


def test_names_from_different_files_of_one_host_do_not_clash(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "shop"
    written = server_name_from_host("Dev Box")
    write(home / ".cursor" / "mcp.json", json.dumps({"mcpServers": {"Dev Box": {"command": "x"}}}))
    write(project / ".cursor" / "mcp.json", json.dumps({"mcpServers": {written: {"command": "y"}}}))

    entries = load_host_entries("cursor", project, home=home, environ={})

    assert not entries.invalid
    assert len({config.server_name for config in entries.configs}) == 2


def test_server_names_from_host_hash_a_chain_of_written_normalised_forms() -> None:
    first = "Dev Box"
    second = server_name_from_host(first)
    third = server_name_from_host(second, hashed=True)

    names = server_names_from_host([first, second, third, "context7"])

    assert len(set(names.values())) == 4
    assert names["context7"] == "context7"
    assert all(len(name) <= SERVER_NAME_MAX_LENGTH for name in names.values())


def test_a_valid_name_is_kept_as_it_is() -> None:
    assert server_name_from_host("context7") == "context7"


def test_vscode_gallery_names_load_and_keep_their_original_name(tmp_path: Path) -> None:
    servers = {
        "io.github.upstash/context7": {"type": "stdio", "command": "npx", "args": ["@upstash/context7-mcp"]},
        "microsoft/playwright-mcp": {"type": "stdio", "command": "npx", "args": ["@playwright/mcp"]},
    }
    path = write(tmp_path / "p" / ".vscode" / "mcp.json", json.dumps({"servers": servers}))

    configs = load_config_entries(path, environ={}).configs

    assert [config.original_name for config in configs] == list(servers)
    assert [config.server_name for config in configs] == [server_name_from_host(name) for name in servers]


def test_hub_servers_show_the_original_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = command_entry()
    write(tmp_path / ".cursor" / "mcp.json", json.dumps({"mcpServers": {"Dev Box MCP": server}}))
    monkeypatch.setenv("HOME", os.fspath(tmp_path))

    hub = MCPHub.from_host("cursor")
    try:
        hub.start()
        [(name, connection)] = hub.servers.items()
        state = connection.state
    finally:
        hub.close()

    assert (name, connection.original_name, state) == (
        server_name_from_host("Dev Box MCP"),
        "Dev Box MCP",
        "ready",
    )


def test_a_connection_error_names_the_server_as_its_file_wrote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = {"command": os.fspath(tmp_path / "no-such-server")}
    write(tmp_path / ".cursor" / "mcp.json", json.dumps({"mcpServers": {"Dev Box MCP": entry}}))
    monkeypatch.setenv("HOME", os.fspath(tmp_path))

    hub = MCPHub.from_host("cursor")
    try:
        hub.start()
        [connection] = hub.servers.values()
        error = str(connection.error)
    finally:
        hub.close()

    assert error.startswith(
        f"server '{server_name_from_host('Dev Box MCP')}' (named 'Dev Box MCP' in its file) could not start: "
    ), error


# --------------------------------------------------------------------------- keys


def test_keys_claude_code_and_cursor_write_do_not_refuse_the_entry(tmp_path: Path) -> None:
    servers = {
        "a": {"command": "x", "_comment": "why", "disabledTools": ["drop_db"]},
        "b": {"url": "https://h/mcp", "defer_loading": True, "headersHelper": "./token.sh"},
    }
    entries = load_config_entries(
        write(tmp_path / "mcp.json", json.dumps({"mcpServers": servers})), environ={}
    )

    a, b = entries.configs
    assert a.exclude_tools == ("drop_db",)
    assert isinstance(b, HttpServerConfig)


CODEX_KEYS = """
[mcp_servers.docs]
type = "http"
url = "https://h/mcp"
supports_parallel_tool_calls = true
default_tools_approval_mode = "approve"

[mcp_servers.docs.tools.search]
approval_mode = "prompt"

[mcp_servers.docs.oauth]
client_id = "abc"

[mcp_servers.fs]
command = "npx"
env_vars = ["PLAIN", { name = "TABLED", source = "local" }]
"""


def test_codex_keys_codex_accepts_load(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", CODEX_KEYS)

    docs, fs = load_config_entries(path, environ={"PLAIN": "p", "TABLED": "t"}).configs

    assert isinstance(docs, HttpServerConfig)
    assert isinstance(fs, StdioServerConfig)
    assert dict(fs.env) == {"PLAIN": "p", "TABLED": "t"}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("startup_timeout_sec = inf", "field 'startup_timeout_sec': must be a positive number of seconds"),
        ("tool_timeout_sec = nan", "field 'tool_timeout_sec': must be a positive number of seconds"),
        ("tool_timeout_sec = 1e300", "field 'tool_timeout_sec': must be at most"),
        ('env = "X"', "field 'env': must be a table"),
    ],
)
def test_codex_values_codex_refuses_fail_that_entry_alone(tmp_path: Path, line: str, problem: str) -> None:
    text = (
        f'[mcp_servers.bad]\ncommand = "x"\nenv_vars = ["A"]\n{line}\n\n[mcp_servers.good]\ncommand = "y"\n'
    )

    entries = load_config_entries(write(tmp_path / "config.toml", text), environ={"A": "a"})

    assert [config.server_name for config in entries.configs] == ["good"]
    [bad] = entries.invalid
    assert problem in str(bad.error)


def test_codex_env_vars_are_forwarded_as_they_are(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", '[mcp_servers.fs]\ncommand = "x"\nenv_vars = ["ONE", "TWO"]\n')

    [config] = load_config_entries(
        path, environ={"ONE": "pa${HOME}ss", "TWO": "pa${ss", "HOME": "/h"}
    ).configs

    assert isinstance(config, StdioServerConfig)
    assert dict(config.env) == {"ONE": "pa${HOME}ss", "TWO": "pa${ss"}


# --------------------------------------------------------------------------- variables


def test_gemini_expands_a_bare_dollar_variable_as_gemini_does(tmp_path: Path) -> None:
    servers = {
        "s": {"command": "x", "env": {"API_KEY": "$MY_TOKEN", "KEPT": "pa$UNSET", "BRACED": "${MY_TOKEN}"}}
    }
    write(tmp_path / ".gemini" / "settings.json", json.dumps({"mcpServers": servers}))

    [config] = load_host_entries("gemini", home=tmp_path, environ={"MY_TOKEN": "t0k"}).configs

    assert isinstance(config, StdioServerConfig)
    assert dict(config.env) == {"API_KEY": "t0k", "KEPT": "pa$UNSET", "BRACED": "t0k"}


def test_gemini_bare_dollar_credential_is_a_secret_like_its_braced_form(tmp_path: Path) -> None:
    token = "ghp_R7dK2mQ9vX4pL8sT1wZ6yB3nC5"
    servers = {"gh": {"command": "gh-mcp", "args": ["--token", "$GITHUB_TOKEN"]}}
    write(tmp_path / ".gemini" / "settings.json", json.dumps({"mcpServers": servers}))

    [config] = load_host_entries("gemini", home=tmp_path, environ={"GITHUB_TOKEN": token}).configs

    assert isinstance(config, StdioServerConfig)
    assert config.args == ("--token", token)
    assert token in secrets_of(config)


def test_other_hosts_keep_a_bare_dollar_as_written(tmp_path: Path) -> None:
    write(
        tmp_path / ".cursor" / "mcp.json",
        json.dumps({"mcpServers": {"s": {"command": "x", "env": {"P": "$MY_TOKEN"}}}}),
    )

    [config] = load_host_entries("cursor", home=tmp_path, environ={"MY_TOKEN": "t0k"}).configs

    assert isinstance(config, StdioServerConfig)
    assert dict(config.env) == {"P": "$MY_TOKEN"}


def test_cursor_honours_workspace_folder_user_home_and_env_file(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "shop"
    write(project / ".env.mcp", 'API_KEY="k3y" # from the env file\n')
    server = {
        "command": "${userHome}/bin/server",
        "args": ["${workspaceFolder}/data", "${workspaceFolderBasename}"],
        "envFile": "${workspaceFolder}/.env.mcp",
    }
    write(project / ".cursor" / "mcp.json", json.dumps({"mcpServers": {"s": server}}))

    [config] = load_host_entries("cursor", project, home=home, environ={}).configs

    assert isinstance(config, StdioServerConfig)
    assert config.command == f"{home}/bin/server"
    assert config.args == (f"{project}/data", "shop")
    assert dict(config.env) == {"API_KEY": "k3y"}


# --------------------------------------------------------------------------- project folders


def test_a_project_server_starts_in_the_project_folder(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    servers = {
        "plain": {"command": "python", "args": ["tools/server.py"]},
        "sub": {"command": "x", "cwd": "tools"},
    }
    write(project / ".mcp.json", json.dumps({"mcpServers": servers}))

    plain, sub = load_host_entries("claude-code", project, home=tmp_path / "home", environ={}).configs

    assert isinstance(plain, StdioServerConfig)
    assert isinstance(sub, StdioServerConfig)
    assert (plain.cwd, sub.cwd) == (os.fspath(project), os.fspath(project / "tools"))


USER_FILES = {
    "gemini": (".gemini/settings.json", json.dumps({"mcpServers": {"fs": {"command": "x", "args": ["."]}}})),
    "codex": (".codex/config.toml", '[mcp_servers.fs]\ncommand = "x"\nargs = ["."]\n'),
    "cursor": (".cursor/mcp.json", json.dumps({"mcpServers": {"fs": {"command": "x", "args": ["."]}}})),
}


@pytest.mark.parametrize("host", sorted(USER_FILES))
def test_a_user_file_without_a_project_starts_its_servers_where_the_caller_runs(
    tmp_path: Path, host: str
) -> None:
    place, text = USER_FILES[host]
    write(tmp_path / place, text)

    [config] = load_host_entries(host, home=tmp_path, environ={}).configs

    assert isinstance(config, StdioServerConfig)
    assert config.cwd is None


@pytest.mark.parametrize("host", sorted(USER_FILES))
def test_a_user_file_given_by_its_path_has_no_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    monkeypatch.setenv("HOME", os.fspath(tmp_path))
    place, text = USER_FILES[host]

    [config] = load_config_entries(write(tmp_path / place, text), environ={}).configs

    assert isinstance(config, StdioServerConfig)
    assert config.cwd is None


def test_a_user_file_with_a_project_starts_its_servers_in_the_project(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "shop"
    project.mkdir()
    place, text = USER_FILES["gemini"]
    write(home / place, text)

    [config] = load_host_entries("gemini", project, home=home, environ={}).configs

    assert isinstance(config, StdioServerConfig)
    assert config.cwd == os.fspath(project)


def test_workspace_folder_in_a_user_file_without_a_project_is_not_the_home_folder(tmp_path: Path) -> None:
    servers = {"fs": {"command": "x", "args": ["${workspaceFolder}"]}}
    write(tmp_path / ".cursor" / "mcp.json", json.dumps({"mcpServers": servers}))

    [invalid] = load_host_entries("cursor", home=tmp_path, environ={}).invalid

    expected = "field 'args[0]' references ${workspaceFolder}, which names the project folder"
    assert expected in str(invalid.error)


def test_claude_code_local_scope_is_found_through_a_symlinked_project(tmp_path: Path) -> None:
    real, link, home = tmp_path / "real", tmp_path / "link", tmp_path / "home"
    real.mkdir()
    link.symlink_to(real)
    local = {"projects": {os.fspath(real): {"mcpServers": {"mine": {"command": "x"}}}}}
    write(home / ".claude.json", json.dumps(local))

    entries = load_host_entries("claude-code", link, home=home, environ={})

    assert [config.server_name for config in entries.configs] == ["mine"]


# --------------------------------------------------------------------------- inputs


def test_an_input_used_three_times_is_asked_once_and_not_again_on_reload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "p"
    document = {
        "inputs": [{"id": "key", "type": "promptString", "password": True}],
        "servers": {
            "s": {
                "type": "stdio",
                "command": "x",
                "args": ["${input:key}"],
                "env": {"A": "${input:key}", "B": "${input:key}"},
            }
        },
    }
    write(project / ".vscode" / "mcp.json", json.dumps(document))
    monkeypatch.setenv("HOME", os.fspath(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", os.fspath(tmp_path / "config"))
    asked: list[str] = []

    def ask(item: HostInput) -> str:
        asked.append(item.id)
        return "v"

    hub = MCPHub.from_host("vscode", project, inputs=ask)
    try:
        hub.reload()
    finally:
        hub.close()

    assert asked == ["key"]


# --------------------------------------------------------------------------- SSE fallback


@pytest.fixture
def sse_server(events: EventLog) -> Iterator[HttpServer]:
    with HttpServer(events=events, transport="sse") as server:
        yield server


def start_gemini(home: Path, monkeypatch: pytest.MonkeyPatch, entry: dict[str, Any]) -> tuple[str, list[str]]:
    """Start a hub from a Gemini settings file with one server `s`; its state and its tools."""
    write(home / ".gemini" / "settings.json", json.dumps({"mcpServers": {"s": entry}}))
    monkeypatch.setenv("HOME", os.fspath(home))
    hub = MCPHub.from_host("gemini")
    try:
        hub.start()
        return hub.servers["s"].state, sorted(tool.name for tool in hub.tools())
    finally:
        hub.close()


def test_a_url_without_a_type_falls_back_to_sse_as_the_host_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sse_server: HttpServer, records: Records
) -> None:
    state, tools = start_gemini(tmp_path, monkeypatch, {"url": sse_server.url})

    assert state == "ready"
    assert "mcp__s__echo" in tools
    assert records.text().count(DEPRECATION) == 1


def test_a_url_without_a_type_on_a_streamable_http_server_stays_streamable_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http_server: Callable[..., HttpServer], records: Records
) -> None:
    state, _ = start_gemini(tmp_path, monkeypatch, {"url": http_server().url})

    assert state == "ready"
    assert DEPRECATION not in records.text()


def test_when_neither_transport_answers_the_error_is_what_streamable_http_was_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http_server: Callable[..., HttpServer]
) -> None:
    write(
        tmp_path / ".gemini" / "settings.json",
        json.dumps({"mcpServers": {"s": {"url": http_server().url + "/nope"}}}),
    )
    monkeypatch.setenv("HOME", os.fspath(tmp_path))

    hub = MCPHub.from_host("gemini")
    try:
        hub.start()
        state, error = hub.servers["s"].state, str(hub.servers["s"].error)
    finally:
        hub.close()

    assert state == "failed"
    assert "HTTP 404 Not Found from POST" in error


def test_a_fallback_that_fails_logs_no_sse_deprecation_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http_server: Callable[..., HttpServer], records: Records
) -> None:
    # A wrong path: 404 to the POST, so SSE is tried, and 404 to its GET: the server uses no SSE at all.
    state, _ = start_gemini(tmp_path, monkeypatch, {"url": http_server().url + "/nope"})

    assert state == "failed"
    assert DEPRECATION not in records.text()


def test_our_own_streamable_http_entry_never_falls_back(sse_server: HttpServer, records: Records) -> None:
    hub = MCPHub([{"server_name": "s", "transport": "streamable-http", "url": sse_server.url}])
    try:
        hub.start()
        state = hub.servers["s"].state
    finally:
        hub.close()

    assert state == "failed"
    assert DEPRECATION not in records.text()


def test_vscode_http_type_marks_the_fallback_and_sse_type_is_sse(tmp_path: Path) -> None:
    servers = {"h": {"type": "http", "url": "https://h/mcp"}, "s": {"type": "sse", "url": "https://h/sse"}}
    path = write(tmp_path / "p" / ".vscode" / "mcp.json", json.dumps({"servers": servers}))

    h, s = load_config_entries(path, environ={}).configs

    assert isinstance(h, HttpServerConfig) and h.sse_fallback
    assert isinstance(s, SseServerConfig)


def test_claude_code_http_type_does_not_fall_back(tmp_path: Path) -> None:
    text = json.dumps({"mcpServers": {"h": {"type": "http", "url": "https://h/mcp"}}})

    [config] = load_config_entries(write(tmp_path / ".mcp.json", text), environ={}).configs

    assert isinstance(config, HttpServerConfig) and not config.sse_fallback


def test_a_skipped_key_is_logged_by_name_never_its_value(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")
    text = json.dumps({"mcpServers": {"s": {"command": "x", "_secretish": "hunter2-value"}}})

    load_config_entries(write(tmp_path / "mcp.json", text), environ={})

    assert "_secretish" in caplog.text
    assert "hunter2-value" not in caplog.text


@pytest.mark.parametrize(
    "place", [".claude.json", ".claude/settings.json", "project/.claude/settings.local.json"]
)
def test_claude_code_leaves_off_a_project_server_the_user_turned_down(tmp_path: Path, place: str) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    servers = {"kept": {"command": "x"}, "declined": {"command": "y"}}
    write(project / ".mcp.json", json.dumps({"mcpServers": servers}))
    rejected = {"disabledMcpjsonServers": ["declined"]}
    if place == ".claude.json":
        write(home / ".claude.json", json.dumps({"projects": {os.fspath(project): rejected}}))
    elif place.startswith("project/"):
        write(project / place.removeprefix("project/"), json.dumps(rejected))
    else:
        write(home / place, json.dumps(rejected))

    configs = load_host_entries("claude-code", project, home=home, environ={}).configs

    assert {config.server_name: config.enabled for config in configs} == {"kept": True, "declined": False}


def test_an_input_used_in_several_places_of_a_file_is_asked_once(tmp_path: Path) -> None:
    document = {
        "inputs": [{"id": "key", "type": "promptString"}],
        "servers": {
            "a": {"type": "stdio", "command": "x", "env": {"K": "${input:key}"}},
            "b": {"type": "stdio", "command": "y", "args": ["${input:key}", "${input:key}"]},
        },
    }
    path = write(tmp_path / "p" / ".vscode" / "mcp.json", json.dumps(document))
    asked: list[str] = []

    def ask(item: HostInput) -> str:
        asked.append(item.id)
        return "v"

    load_config_entries(path, environ={}, inputs=ask)

    assert asked == ["key"]


def test_a_gemini_file_given_by_path_expands_its_dollar_variables(tmp_path: Path) -> None:
    path = write(
        tmp_path / ".gemini" / "settings.json", json.dumps({"mcpServers": {"s": {"command": "$TOOL"}}})
    )

    [config] = load_config_entries(path, environ={"TOOL": "/bin/tool"}).configs

    assert isinstance(config, StdioServerConfig)
    assert config.command == "/bin/tool"


def test_a_broken_claude_json_is_one_failed_entry_and_the_project_servers_load(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    broken = write(home / ".claude.json", '{"mcpServers": ')
    write(project / ".mcp.json", json.dumps({"mcpServers": {"team": {"command": "x"}}}))

    entries = load_host_entries("claude-code", project, home=home, environ={})

    assert [config.server_name for config in entries.configs] == ["team"]
    assert [entry.server_name for entry in entries.invalid] == [os.fspath(broken)]


def test_codex_bearer_token_is_the_authorization_header_and_a_secret(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config.toml", '[mcp_servers.api]\nurl = "https://h/mcp"\nbearer_token = "tok-123"\n'
    )

    [config] = load_config_entries(path, environ={}).configs

    assert isinstance(config, HttpServerConfig)
    assert config.headers["Authorization"] == "Bearer tok-123"
    assert "tok-123" not in repr(config)


def test_codex_values_are_read_as_written_without_variables(tmp_path: Path) -> None:
    text = '[mcp_servers.fs]\ncommand = "x"\nargs = ["${HOME}/data", "${input:key}"]\nenv = { T = "$${X}" }\n'
    path = write(tmp_path / "config.toml", text)

    [config] = load_config_entries(path, environ={"HOME": "/h"}).configs

    assert isinstance(config, StdioServerConfig)
    assert (config.args, dict(config.env)) == (("${HOME}/data", "${input:key}"), {"T": "$${X}"})
