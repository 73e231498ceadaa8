"""The files MCP hosts already keep, read as they are: one realistic sample per host (tests/data/hosts/),
mapped key by key; the keys mcp_sync cannot honour named in a warning; and `MCPHub.from_host`,
which finds a host's files in a home directory laid out per platform (never the real home).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import (
    ConfigError,
    HostInput,
    HttpServerConfig,
    MCPHub,
    StdioServerConfig,
    UnresolvedInputError,
    load_config_entries,
    load_host_entries,
)
from mcp_sync._config import host_config_files
from mcp_sync._config.hosts.codex import CodexFormat
from mcp_sync._config.hosts.mcp_servers import McpServersFormat
from mcp_sync._config.hosts.vscode import VsCodeFormat
from mcp_sync._config.raw import RawEntry
from mcp_sync._config.secrets import secrets_of
from tests.support import REPO_ROOT, Records, command_entry

SAMPLES = REPO_ROOT / "tests" / "data" / "hosts"
SECRET = "pplx-s3cr3t-Zq8x-input-value"
START_TIMEOUT = 60.0  # starting two stdio servers on a loaded 2-core machine: "does not hang"


def load(name: str, environ: dict[str, str] | None = None, **options: Any) -> dict[str, Any]:
    """The sample's entries by name: a config, or the `InvalidServerEntry` saying why not."""
    entries = load_config_entries(SAMPLES / name, environ=environ or {}, **options)
    return {entry.server_name: entry for entry in entries.entries}


def mapped(format: Any, name: str, settings: dict[str, Any]) -> dict[str, Any]:
    """What a host format makes of one entry, before validation (the mapped raw entry)."""
    entry = RawEntry(f"x.{name}", settings, name, format=format)
    problems: list[str] = []
    out: dict[str, Any] = format.to_ours(entry, format.prepare(entry, settings, "x"), problems)
    assert problems == []
    return out


# --------------------------------------------------------------------------- Claude


def test_claude_desktop_file_maps_command_args_and_env() -> None:
    servers = load("claude_desktop_config.json", {"GITHUB_TOKEN": "ghp_token_value"})

    github = servers["github"]
    assert isinstance(github, StdioServerConfig)
    assert (github.command, github.args[:3]) == ("docker", ("run", "-i", "--rm"))
    assert dict(github.env) == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_token_value"}
    assert isinstance(servers["filesystem"], StdioServerConfig)


def test_claude_code_mcp_json_maps_stdio_and_http_entries() -> None:
    servers = load("mcp.json", {"AIRTABLE_API_KEY": "key-1234", "API_KEY": "tok-5678"})

    api = servers["api"]
    assert isinstance(api, HttpServerConfig)
    assert (api.url, dict(api.headers)) == (
        "https://api.example.com/mcp",
        {"Authorization": "Bearer tok-5678"},
    )
    assert isinstance(servers["airtable"], StdioServerConfig)


@pytest.mark.parametrize("format", [McpServersFormat, VsCodeFormat])
def test_a_legacy_sse_entry_maps_to_the_sse_transport(format: Any) -> None:
    settings = {"type": "sse", "url": "https://mcp.asana.com/sse", "headers": {"X-A": "1"}}

    assert mapped(format, "asana", settings) == {
        "server_name": "asana",
        "transport": "sse",
        "url": "https://mcp.asana.com/sse",
        "headers": {"X-A": "1"},
    }


def test_claude_code_scopes_merge_local_over_project_over_user(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "shop"
    project.mkdir()
    home.mkdir()
    document = json.loads((SAMPLES / "claude.json").read_text())
    document["projects"] = {str(project): document["projects"]["/home/me/shop"]}
    (home / ".claude.json").write_text(json.dumps(document))
    shutil.copy(SAMPLES / "mcp.json", project / ".mcp.json")
    environ = {"AIRTABLE_API_KEY": "k", "API_KEY": "t"}

    user_only = load_host_entries("claude-code", home=home, environ=environ)
    merged = load_host_entries("claude-code", project, home=home, environ=environ)

    assert sorted(e.server_name for e in user_only.entries) == ["notes", "sentry"]
    names = {entry.server_name: entry for entry in merged.entries}
    assert sorted(names) == ["airtable", "api", "asana", "notes", "sentry"]
    notes = names["notes"]
    assert isinstance(notes, StdioServerConfig) and notes.args == ("--project", "shop")  # the local scope


# --------------------------------------------------------------------------- Cursor, Gemini CLI, Windsurf


def test_cursor_file_maps_env_references_and_its_auth_object() -> None:
    servers = load("cursor_mcp.json", {"PGPASSWORD": "pg-pass-1", "LINEAR_CLIENT_SECRET": "lin-secret-1"})

    linear = servers["linear"]
    assert isinstance(linear, HttpServerConfig) and linear.auth is not None
    assert (linear.auth.type, linear.auth.client_id, linear.auth.scopes) == (
        "oauth",
        "cursor-client",
        ("read", "write"),
    )
    postgres = servers["postgres"]
    assert isinstance(postgres, StdioServerConfig) and dict(postgres.env) == {"PGPASSWORD": "pg-pass-1"}


def test_gemini_file_maps_http_url_timeout_and_tool_filters(records: Records) -> None:
    servers = load("gemini_settings.json", {"DB_CONNECTION_STRING": "db://x", "MY_TOKEN": "tok"})

    http = servers["httpServer"]
    assert isinstance(http, HttpServerConfig)
    assert (http.url, http.tool_call_timeout_ms) == ("http://localhost:3000/mcp", 5000)
    tools = servers["pythonTools"]
    assert isinstance(tools, StdioServerConfig)
    assert (tools.cwd, tools.tool_call_timeout_ms, tools.exclude_tools) == (
        "./mcp-servers/python",
        15000,
        ("delete_everything",),
    )


def test_windsurf_server_url_is_the_streamable_http_endpoint() -> None:
    servers = load(
        "windsurf_mcp_config.json", {"GOOGLE_MAPS_API_KEY": "maps-key", "FIGMA_TOKEN": "figma-tok"}
    )

    figma = servers["figma"]
    assert isinstance(figma, HttpServerConfig)
    assert (figma.url, dict(figma.headers), figma.enabled) == (
        "https://mcp.figma.com/mcp",
        {"Authorization": "Bearer figma-tok"},
        True,
    )


# --------------------------------------------------------------------------- VS Code


def vscode_project(tmp_path: Path) -> Path:
    """A workspace with the sample as .vscode/mcp.json and the sample dotenv file as .env."""
    (tmp_path / ".vscode").mkdir()
    shutil.copy(SAMPLES / "vscode_mcp.json", tmp_path / ".vscode" / "mcp.json")
    shutil.copy(SAMPLES / "vscode.env", tmp_path / ".env")
    return tmp_path


def test_vscode_servers_map_types_workspace_folder_and_env_file(tmp_path: Path) -> None:
    project = vscode_project(tmp_path)

    entries = load_config_entries(
        project / ".vscode" / "mcp.json", environ={}, inputs={"perplexity-key": SECRET}
    )

    servers = {entry.server_name: entry for entry in entries.entries}
    perplexity = servers["Perplexity"]
    assert isinstance(perplexity, StdioServerConfig)
    # envFile's variables, with the entry's own env winning.
    assert dict(perplexity.env) == {"PERPLEXITY_REGION": "eu", "PERPLEXITY_API_KEY": SECRET}
    mydev = servers["mydev"]
    assert isinstance(mydev, StdioServerConfig) and mydev.args == (f"{project}/build/index.js",)
    github = servers["github"]
    assert isinstance(github, HttpServerConfig) and github.url == "https://api.githubcopilot.com/mcp/"


def test_vscode_input_from_a_handler_is_a_registered_secret(tmp_path: Path) -> None:
    project = vscode_project(tmp_path)
    asked: list[HostInput] = []

    def handler(item: HostInput) -> str:
        asked.append(item)
        return SECRET

    entries = load_config_entries(project / ".vscode" / "mcp.json", environ={}, inputs=handler)

    [item] = {item.id: item for item in asked}.values()
    assert (item.id, item.description, item.password) == ("perplexity-key", "Perplexity API Key", True)
    perplexity = next(e for e in entries.configs if e.server_name == "Perplexity")
    assert perplexity.input_secrets == {SECRET}
    assert SECRET in secrets_of(perplexity)
    assert SECRET not in repr(perplexity)


def test_vscode_input_from_the_environment(tmp_path: Path) -> None:
    project = vscode_project(tmp_path)

    entries = load_config_entries(project / ".vscode" / "mcp.json", environ={"PERPLEXITY_KEY": SECRET})

    perplexity = next(e for e in entries.configs if e.server_name == "Perplexity")
    assert isinstance(perplexity, StdioServerConfig) and perplexity.env["PERPLEXITY_API_KEY"] == SECRET


def test_vscode_unresolved_input_is_a_typed_error_naming_the_input(tmp_path: Path) -> None:
    project = vscode_project(tmp_path)
    path = project / ".vscode" / "mcp.json"

    entries = load_config_entries(path, environ={})
    with pytest.raises(UnresolvedInputError) as strict:
        load_config_entries(path, environ={}, strict=True)

    invalid = next(entry for entry in entries.invalid if entry.server_name == "Perplexity")
    assert isinstance(invalid.error, UnresolvedInputError)
    assert invalid.error.input_ids == ("perplexity-key",)
    assert "${input:perplexity-key}" in str(invalid.error) and "PERPLEXITY_KEY" in str(invalid.error)
    assert strict.value.input_ids == ("perplexity-key",)


def test_vscode_keys_it_cannot_honour_are_named_in_a_warning(tmp_path: Path, records: Records) -> None:
    project = vscode_project(tmp_path)

    load_config_entries(project / ".vscode" / "mcp.json", environ={}, inputs={"perplexity-key": SECRET})

    warnings = [line for name, line in records.lines if name == "mcp_sync.config" and "WARNING" in line]
    assert any("servers.mydev" in line and "ignoring 'dev'" in line for line in warnings), warnings


def test_our_own_format_still_refuses_input_references() -> None:
    from mcp_sync import parse_server_entries

    with pytest.raises(ConfigError, match="malformed"):
        parse_server_entries(
            [{"server_name": "a", "command": "x", "args": ["${input:key}"]}], environ={}, strict=True
        )


# --------------------------------------------------------------------------- Codex


def test_codex_config_toml_maps_every_server_key(records: Records) -> None:
    environ = {
        "FIGMA_OAUTH_TOKEN": "figma-oauth-1",
        "TRACE_ID": "trace-9",
        "HTTPS_PROXY": "http://proxy:3128",
    }

    servers = load("codex_config.toml", environ)

    context7 = servers["context7"]
    assert isinstance(context7, StdioServerConfig)
    assert dict(context7.env) == {"HTTPS_PROXY": "http://proxy:3128", "LOG_LEVEL": "info"}
    assert (context7.cwd, context7.connect_timeout_ms, context7.tool_call_timeout_ms) == (
        "/srv/context7",
        20_000,
        90_500,
    )
    assert context7.include_tools == ("resolve-library-id", "get-library-docs")
    figma = servers["figma"]
    assert isinstance(figma, HttpServerConfig)
    assert dict(figma.headers) == {
        "X-Figma-Region": "us-east-1",
        "X-Trace": "trace-9",
        "Authorization": "Bearer figma-oauth-1",
    }
    assert (figma.exclude_tools, figma.connect_timeout_ms) == (("delete_file",), 15_000)
    assert servers["old"].enabled is False  # type: ignore[union-attr]
    assert any("mcp_servers.old" in line and "ignoring 'scopes'" in line for _, line in records.lines)


def test_codex_unset_bearer_token_variable_fails_that_server_naming_it() -> None:
    servers = load("codex_config.toml", {})

    assert isinstance(servers["context7"], StdioServerConfig)
    assert "FIGMA_OAUTH_TOKEN" in str(servers["figma"].error)  # type: ignore[union-attr]


def test_codex_timeouts_in_seconds_become_milliseconds() -> None:
    out = mapped(
        CodexFormat, "s", {"url": "https://h/mcp", "startup_timeout_sec": 2.5, "tool_timeout_sec": 30}
    )

    assert (out["connect_timeout_ms"], out["tool_call_timeout_ms"]) == (2500, 30_000)


# --------------------------------------------------------------------------- finding a host's files


PLATFORM_LAYOUTS = {
    # platform -> (the environment, the user-level files, relative to the temporary root)
    "linux": (
        {},
        {
            "vscode": "home/.config/Code/User/mcp.json",
            "claude-desktop": "home/.config/Claude/claude_desktop_config.json",
        },
    ),
    "darwin": (
        {},
        {
            "vscode": "home/Library/Application Support/Code/User/mcp.json",
            "claude-desktop": "home/Library/Application Support/Claude/claude_desktop_config.json",
        },
    ),
    "win32": (
        {"APPDATA": "{root}/Roaming"},
        {
            "vscode": "Roaming/Code/User/mcp.json",
            "claude-desktop": "Roaming/Claude/claude_desktop_config.json",
        },
    ),
}
SAME_EVERYWHERE = {
    "cursor": "home/.cursor/mcp.json",
    "gemini": "home/.gemini/settings.json",
    "windsurf": "home/.codeium/windsurf/mcp_config.json",
    "codex": "home/.codex/config.toml",
    "claude-code": "home/.claude.json",
}


@pytest.mark.parametrize("platform", sorted(PLATFORM_LAYOUTS))
def test_each_host_user_file_is_found_on_each_platform(tmp_path: Path, platform: str) -> None:
    environ_template, layout = PLATFORM_LAYOUTS[platform]
    environ = {key: value.format(root=tmp_path) for key, value in environ_template.items()}
    for host, relative in {**layout, **SAME_EVERYWHERE}.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")

        [found] = host_config_files(host, home=tmp_path / "home", environ=environ, platform=platform)

        assert found.path == path, host


@pytest.mark.parametrize(
    ("host", "relative"),
    [
        ("claude-code", ".mcp.json"),
        ("cursor", ".cursor/mcp.json"),
        ("vscode", ".vscode/mcp.json"),
        ("codex", ".codex/config.toml"),
        ("gemini", ".gemini/settings.json"),
    ],
)
def test_a_project_file_is_found_with_project(tmp_path: Path, host: str, relative: str) -> None:
    project = tmp_path / "project"
    (project / relative).parent.mkdir(parents=True)
    (project / relative).write_text("{}")

    files = host_config_files(host, project, home=tmp_path / "home", environ={}, platform="linux")

    assert [(file.path, file.scope) for file in files] == [(project / relative, "project")]


def test_codex_home_comes_from_codex_home(tmp_path: Path) -> None:
    (tmp_path / "codex-home").mkdir()
    (tmp_path / "codex-home" / "config.toml").write_text("")

    [found] = host_config_files("codex", home=tmp_path, environ={"CODEX_HOME": str(tmp_path / "codex-home")})

    assert found.path == tmp_path / "codex-home" / "config.toml"


def test_no_file_found_is_a_config_error_naming_where_it_looked(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    with pytest.raises(ConfigError) as info:
        load_host_entries("cursor", tmp_path / "project", home=tmp_path, environ={})

    assert f"no cursor configuration found; looked for {tmp_path / '.cursor' / 'mcp.json'}" in str(info.value)
    assert str(tmp_path / "project" / ".cursor" / "mcp.json") in str(info.value)


def test_an_unknown_host_is_a_config_error_listing_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown host 'zed'; known hosts: claude-desktop, claude-code"):
        MCPHub.from_host("zed")


@pytest.mark.parametrize(("typed", "suggested"), [("vscod", "vscode"), ("claude desktop", "claude-desktop")])
def test_a_misspelt_host_gets_a_did_you_mean(typed: str, suggested: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_host_entries(typed)
    assert str(info.value).startswith(f"unknown host '{typed}'; did you mean {suggested}? known hosts: ")


def test_from_host_starts_the_servers_and_a_bad_entry_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".cursor").mkdir(parents=True)
    (project / ".cursor").mkdir(parents=True)
    server = command_entry()
    user = {"mcpServers": {"alpha": server, "shared": {"command": "not-this-one"}}}
    own = {"mcpServers": {"shared": server, "broken": {"type": "websocket", "url": "wss://h/ws"}}}
    (home / ".cursor" / "mcp.json").write_text(json.dumps(user))
    (project / ".cursor" / "mcp.json").write_text(json.dumps(own))
    monkeypatch.setenv("HOME", os.fspath(home))
    monkeypatch.setenv("USERPROFILE", os.fspath(home))

    hub = MCPHub.from_host("cursor", project)
    try:
        hub.start()
        states = {name: server.state for name, server in hub.servers.items()}
    finally:
        hub.close()

    assert states == {"alpha": "ready", "shared": "ready", "broken": "failed"}
