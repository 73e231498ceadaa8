"""The host settings that switch servers off, gate them on trust or migrate them, read as each host reads
them: each case a file shaped as its host writes it, laid out where the host reads it, with the host's
own docs or source named beside it.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import pytest

from mcp_sync import (
    HostInput,
    HttpServerConfig,
    MCPHub,
    StdioServerConfig,
    load_config_entries,
    load_host_entries,
)
from mcp_sync._cli.inputs import _ask
from mcp_sync._config.hosts.claude import local_scope
from tests.support import REPO_ROOT, Records, command_entry


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def names(entries: Any) -> dict[str, bool]:
    """Each valid server's name and whether it is enabled."""
    return {config.server_name: config.enabled for config in entries.configs}


# --------------------------------------------------------------------------- a repeated JSON key

# Claude Desktop's file with one `env` key twice: `JSON.parse` keeps the last value, and Claude
# Desktop runs the server with it.
CLAUDE_DESKTOP_REPEATED_ENV = """{
  "mcpServers": {
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_old-token-value"},
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_new-token-value"}
    }
  }
}
"""
# VS Code's file with one server pasted twice (and a comment): its jsonc-parser keeps the last.
VSCODE_PASTED_TWICE = """{
  // pasted from the gallery twice
  "servers": {
    "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
    "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch", "--ignore-robots-txt"]},
  }
}
"""


def test_a_repeated_key_in_a_claude_desktop_file_keeps_the_last_value_and_warns_without_it(
    tmp_path: Path, records: Records
) -> None:
    home = tmp_path / "home"
    write(home / ".config" / "Claude" / "claude_desktop_config.json", CLAUDE_DESKTOP_REPEATED_ENV)

    [config] = load_host_entries("claude-desktop", home=home, environ={}, platform="linux").entries

    assert isinstance(config, StdioServerConfig)
    assert config.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_new-token-value"}
    [warning] = [line for _, line in records.lines if " WARNING " in line]
    assert "the key 'mcpServers.github.env' is given more than once; the last one is read" in warning
    assert "token-value" not in records.text()


@pytest.mark.parametrize("host", ["gemini", "claude-code"])
def test_a_repeated_key_in_a_host_file_read_for_several_settings_is_warned_about_once(
    tmp_path: Path, records: Records, host: str
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    if host == "gemini":
        write(home / ".gemini" / "settings.json", '{"mcp": {"excluded": [], "excluded": ["x"]}}')
    else:  # read for the servers the user turned down, and for the local scope's servers
        record = '{"disabledMcpjsonServers": [], "disabledMcpjsonServers": ["x"]}'
        write(home / ".claude.json", f'{{"projects": {{{json.dumps(os.fspath(project))}: {record}}}}}')
    environ = {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": os.fspath(tmp_path / "none.json")}

    load_host_entries(host, project, home=home, environ=environ, platform="linux")

    assert len([line for _, line in records.lines if "more than once" in line]) == 1


@pytest.mark.parametrize("through", ["load_host_entries", "load_config_entries"])
def test_a_vscode_server_pasted_twice_loads_once_with_its_last_settings(tmp_path: Path, through: str) -> None:
    project = tmp_path / "project"
    path = write(project / ".vscode" / "mcp.json", VSCODE_PASTED_TWICE)

    if through == "load_host_entries":
        entries = load_host_entries("vscode", project, home=tmp_path / "home", environ={}, platform="linux")
    else:
        entries = load_config_entries(path, environ={})

    assert [config.server_name for config in entries.configs] == ["fetch", "time"]
    assert entries.configs[0].args == ("mcp-server-fetch", "--ignore-robots-txt")


# --------------------------------------------------------------------------- `timeout`, where it is read

# Cline's habit, copied into other hosts' files: `timeout` in seconds.
CLINE_STYLE = {"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-filesystem"], "timeout": 60}}}


@pytest.mark.parametrize(
    ("host", "place"),
    [
        ("claude-desktop", ".config/Claude/claude_desktop_config.json"),
        ("cursor", ".cursor/mcp.json"),
        ("windsurf", ".codeium/windsurf/mcp_config.json"),
        ("claude-code", ".claude.json"),
    ],
)
def test_timeout_in_a_host_that_does_not_read_it_is_ignored(tmp_path: Path, host: str, place: str) -> None:
    home = tmp_path / "home"
    write(home / place, json.dumps(CLINE_STYLE))

    [config] = load_host_entries(host, home=home, environ={}, platform="linux").configs

    assert config.tool_call_timeout_ms == StdioServerConfig(server_name="d", command="x").tool_call_timeout_ms


def test_timeout_in_a_gemini_file_is_its_call_timeout_in_milliseconds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    entry = {"command": "x", "timeout": 15000}
    write(home / ".gemini" / "settings.json", json.dumps({"mcpServers": {"fs": entry}}))

    [config] = load_host_entries("gemini", home=home, environ={}, platform="linux").configs

    assert config.tool_call_timeout_ms == 15000


def test_cursor_file_given_by_path_ignores_timeout_too(tmp_path: Path) -> None:
    path = write(tmp_path / "project" / ".cursor" / "mcp.json", json.dumps(CLINE_STYLE))

    [config] = load_config_entries(path, environ={}).configs

    assert config.tool_call_timeout_ms == StdioServerConfig(server_name="d", command="x").tool_call_timeout_ms


@pytest.mark.parametrize("timeout", [60, "60", " 60 ", 0.5])
def test_a_seconds_timeout_in_a_file_of_no_known_host_is_ignored_whether_number_or_string(
    tmp_path: Path, records: Records, timeout: Any
) -> None:
    entry = {"command": "x", "timeout": timeout}
    path = write(tmp_path / "cline_mcp_settings.json", json.dumps({"mcpServers": {"s": entry}}))

    [config] = load_config_entries(path, environ={}).configs

    assert config.tool_call_timeout_ms == StdioServerConfig(server_name="d", command="x").tool_call_timeout_ms
    assert "mcpServers.s: ignoring 'timeout'" in records.text()


# --------------------------------------------------------------------------- VS Code's pickString options

# Options as objects, per VS Code's `PickStringInputInfo` (`options: (string | {value, label?})[]`).
VSCODE_PICK_OBJECTS = {
    "inputs": [
        {
            "type": "pickString",
            "id": "region",
            "description": "Region",
            "options": [{"label": "Europe", "value": "eu"}, {"value": "us"}, "ap"],
            "default": "eu",
        }
    ],
    "servers": {"api": {"type": "stdio", "command": "srv", "env": {"REGION": "${input:region}"}}},
}


def test_a_pick_string_option_object_shows_its_label_and_passes_its_value(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / ".vscode" / "mcp.json", json.dumps(VSCODE_PICK_OBJECTS))
    asked: list[HostInput] = []

    def pick_europe(item: HostInput) -> str:
        asked.append(item)
        return next(option for option in item.options if item.label_of(option) == "Europe")

    [config] = load_host_entries(
        "vscode", project, home=tmp_path / "home", environ={}, inputs=pick_europe, platform="linux"
    ).configs

    assert config.env == {"REGION": "eu"}
    [item] = asked
    assert item.options == ("eu", "us", "ap")
    assert [item.label_of(option) for option in item.options] == ["Europe", "us", "ap"]


def test_a_pick_string_option_object_left_to_its_default_passes_the_value(tmp_path: Path) -> None:
    path = write(tmp_path / "project" / ".vscode" / "mcp.json", json.dumps(VSCODE_PICK_OBJECTS))

    [config] = load_config_entries(path, environ={}).configs

    assert config.env == {"REGION": "eu"}


@pytest.mark.parametrize(
    ("options", "labels", "answer", "expected"),
    [
        (("a", "b"), ("2", "1"), "1", "a"),  # a number is the listed line's, whatever the labels say
        (("prod", "staging"), ("staging", "prod"), "staging", "prod"),  # what is shown before what is not
        (("prod", "prod-eu"), ("Production", "Prod (EU)"), "Prod (EU)", "prod-eu"),
    ],
)
def test_the_cli_picks_by_listed_number_then_label_then_value(
    options: tuple[str, ...], labels: tuple[str, ...], answer: str, expected: str
) -> None:
    item = HostInput("env", "Environment", type="pickString", options=options, option_labels=labels)

    assert _ask(item, io.StringIO(answer + "\n"), io.StringIO()) == expected


def test_two_pick_string_options_with_one_value_keep_their_own_labels() -> None:
    labels = ("Production", "Prod (EU)")
    item = HostInput("env", "Environment", type="pickString", options=("prod", "prod"), option_labels=labels)
    stderr = io.StringIO()

    assert _ask(item, io.StringIO("2\n"), stderr) == "prod"
    assert "1) Production\n" in stderr.getvalue() and "2) Prod (EU)\n" in stderr.getvalue()
    assert [item.label_at(index) for index in range(2)] == list(labels)


@pytest.mark.parametrize("answer", ["1", "Europe", "eu"])
def test_the_cli_lists_pick_string_labels_and_takes_a_number_label_or_value(answer: str) -> None:
    labels = ("Europe", "us")
    item = HostInput("region", "Region", type="pickString", options=("eu", "us"), option_labels=labels)
    stderr = io.StringIO()

    chosen = _ask(item, io.StringIO(answer + "\n"), stderr)

    assert chosen == "eu"
    assert "1) Europe\n" in stderr.getvalue() and "'value'" not in stderr.getvalue()


# --------------------------------------------------------------------------- VS Code's `mcpServers`

# A `.vscode/mcp.json` written with the other hosts' key: VS Code's configMcpDiscovery moves it into
# `servers` (`servers: {...servers, ...mcpServers}`) and runs its servers.
VSCODE_ONLY_MCP_SERVERS = {"mcpServers": {"memory": {"command": "npx", "args": ["-y", "server-memory"]}}}
VSCODE_BOTH_KEYS = {
    "servers": {
        "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
        "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
    },
    "mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=Europe/Paris"]},
        "docs": {"url": "https://example.com/mcp"},
    },
}


def load_vscode(tmp_path: Path, document: Any, through: str) -> Any:
    project = tmp_path / "project"
    path = write(project / ".vscode" / "mcp.json", json.dumps(document))
    if through == "load_host_entries":
        return load_host_entries("vscode", project, home=tmp_path / "home", environ={}, platform="linux")
    return load_config_entries(path, environ={})


@pytest.mark.parametrize("through", ["load_host_entries", "load_config_entries"])
def test_a_vscode_file_with_only_mcp_servers_loads_its_servers(tmp_path: Path, through: str) -> None:
    entries = load_vscode(tmp_path, VSCODE_ONLY_MCP_SERVERS, through)

    assert names(entries) == {"memory": True}


@pytest.mark.parametrize("through", ["load_host_entries", "load_config_entries"])
def test_a_vscode_file_with_both_keys_keeps_both_and_mcp_servers_wins_a_shared_name(
    tmp_path: Path, through: str
) -> None:
    entries = load_vscode(tmp_path, VSCODE_BOTH_KEYS, through)

    configs = {config.server_name: config for config in entries.configs}
    assert list(configs) == ["fetch", "time", "docs"]
    assert configs["time"].args == ("mcp-server-time", "--local-timezone=Europe/Paris")


def test_a_vscode_url_without_a_type_is_http_with_the_sse_fallback(tmp_path: Path) -> None:
    entries = load_vscode(tmp_path, VSCODE_BOTH_KEYS, "load_host_entries")

    [docs] = [config for config in entries.configs if config.server_name == "docs"]
    assert isinstance(docs, HttpServerConfig) and docs.sse_fallback


# --------------------------------------------------------------------------- an unset variable, host by host

# VS Code forwards optional settings with `${env:NAME}`: its resolver makes an unset one "" (VS Code
# issue #46436), so the server starts without a proxy or a CA bundle.
VSCODE_OPTIONAL_PROXY = {
    "servers": {
        "github": {
            "type": "stdio",
            "command": "docker",
            "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"],
            "env": {"HTTPS_PROXY": "${env:HTTPS_PROXY}", "NODE_EXTRA_CA_CERTS": "${env:NODE_EXTRA_CA_CERTS}"},
        }
    }
}


def test_an_unset_env_variable_in_a_vscode_file_is_empty_as_in_vscode(tmp_path: Path) -> None:
    entries = load_vscode(tmp_path, VSCODE_OPTIONAL_PROXY, "load_host_entries")

    [config] = entries.entries
    assert isinstance(config, StdioServerConfig)
    assert config.env == {"HTTPS_PROXY": "", "NODE_EXTRA_CA_CERTS": ""}


def test_a_set_env_variable_in_a_vscode_file_is_its_value(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / ".vscode" / "mcp.json", json.dumps(VSCODE_OPTIONAL_PROXY))
    environ = {"HTTPS_PROXY": "http://proxy:3128"}

    [config] = load_host_entries("vscode", project, home=tmp_path / "home", environ=environ).configs

    assert config.env == {"HTTPS_PROXY": "http://proxy:3128", "NODE_EXTRA_CA_CERTS": ""}


def test_a_plain_dollar_brace_name_is_no_vscode_variable_and_is_passed_as_written(
    tmp_path: Path, records: Records
) -> None:
    document = {"servers": {"s": {"type": "stdio", "command": "x", "args": ["--token=${GITHUB_TOKEN}"]}}}

    [config] = load_vscode(tmp_path, document, "load_host_entries").configs

    assert config.args == ("--token=${GITHUB_TOKEN}",)
    assert "${GITHUB_TOKEN} is not a variable VS Code reads; it is passed as written" in records.text()


def test_a_vscode_env_variable_with_a_shell_default_is_its_name_only_as_in_vscode(
    tmp_path: Path, records: Records
) -> None:
    # VS Code's evaluateSingleVariable splits `env:MODE:-prod` at ':' and reads MODE: no default.
    env = {"PROXY": "${env:HTTPS_PROXY:-http://fallback:3128}", "MODE": "${env:MODE:-prod}"}
    document = {"servers": {"s": {"type": "stdio", "command": "x", "env": env}}}
    project = tmp_path / "project"
    write(project / ".vscode" / "mcp.json", json.dumps(document))

    for environ in ({}, {"MODE": ""}, {"MODE": "dev"}):
        [config] = load_host_entries("vscode", project, home=tmp_path / "home", environ=environ).configs
        assert config.env == {"PROXY": "", "MODE": environ.get("MODE", "")}
    assert "${env:MODE:-...} has no default in VS Code, which reads only MODE" in records.text()
    assert "fallback" not in records.text()


# Gemini CLI's resolveEnvVarsInString: an unset `${NAME}` or `$NAME` stays as written, `:-` takes the
# default only when the variable is unset, and `${env:NAME}` is not one of its spellings.
GEMINI_VARIABLES = {
    "mcpServers": {
        "db": {
            "command": "db-server",
            "args": ["${DB_URL}", "$DB_USER", "${DB_SCHEMA:-public}", "${DB_ROLE:-reader}", "${env:DB_URL}"],
        }
    }
}


def test_gemini_keeps_an_unset_variable_as_written_and_a_default_is_for_unset_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".gemini" / "settings.json", json.dumps(GEMINI_VARIABLES))

    [config] = load_host_entries("gemini", home=home, environ={"DB_ROLE": ""}, platform="linux").entries

    assert isinstance(config, StdioServerConfig)
    assert config.args == ("${DB_URL}", "$DB_USER", "public", "", "${env:DB_URL}")


# Claude Code's `.mcp.json`: `${VAR}` and `${VAR:-default}` only; an unset one without a default fails.
CLAUDE_CODE_VARIABLES = {
    "mcpServers": {
        "api": {
            "type": "http",
            "url": "${API_BASE_URL:-https://api.example.com}/mcp",
            "headers": {"X-Env": "${env:DEPLOY_ENV}"},
        },
        "needs-key": {"command": "srv", "env": {"API_KEY": "${API_KEY}"}},
    }
}


def test_claude_code_takes_defaults_reads_no_env_prefix_and_fails_an_unset_one(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / ".mcp.json", json.dumps(CLAUDE_CODE_VARIABLES))

    environ = {"DEPLOY_ENV": "prod"}
    entries = load_host_entries("claude-code", project, home=tmp_path / "home", environ=environ)

    [api] = entries.configs
    assert isinstance(api, HttpServerConfig)
    assert api.url == "https://api.example.com/mcp"
    assert api.headers == {"X-Env": "${env:DEPLOY_ENV}"}
    [failed] = entries.invalid
    assert failed.server_name == "needs-key"
    assert "references ${API_KEY}, which is not set" in str(failed.error)


def test_our_own_yaml_keeps_its_strict_rule_for_an_unset_variable(tmp_path: Path) -> None:
    text = "servers:\n  - {server_name: s, command: x, env: {P: '${env:P}'}}\n"
    path = write(tmp_path / "servers.yaml", text)

    [failed] = load_config_entries(path, environ={}).invalid

    assert "references ${P}, which is not set" in str(failed.error)


# --------------------------------------------------------------------------- Gemini CLI: what it leaves off

# `/mcp disable` and docs/tools/mcp-server.md ("Global MCP settings"): `mcp.excluded` servers and
# those not in `mcp.allowed` are never connected.
GEMINI_EXCLUDED = {
    "mcp": {"excluded": ["old-db"]},
    "mcpServers": {
        "docs": {"httpUrl": "https://docs.example.com/mcp"},
        "old-db": {"command": "db-server", "args": ["--legacy"]},
    },
}
GEMINI_ALLOWED = {
    "mcp": {"allowed": ["docs"]},
    "mcpServers": {
        "docs": {"httpUrl": "https://docs.example.com/mcp"},
        "shell": {"command": "shell-server"},
        "browser": {"command": "npx", "args": ["-y", "browser-server"]},
    },
}


def gemini_home(tmp_path: Path, document: Any) -> Path:
    home = tmp_path / "home"
    write(home / ".gemini" / "settings.json", json.dumps(document))
    return home


def test_gemini_does_not_start_a_server_in_mcp_excluded_and_says_why(
    tmp_path: Path, records: Records
) -> None:
    home = gemini_home(tmp_path, GEMINI_EXCLUDED)

    entries = load_host_entries("gemini", home=home, environ={}, platform="linux")

    assert names(entries) == {"docs": True, "old-db": False}
    assert "mcpServers.old-db: left off, as gemini leaves it: it is in Gemini CLI's mcp.excluded list" in (
        records.text()
    )


def test_gemini_starts_only_the_servers_in_mcp_allowed(tmp_path: Path) -> None:
    home = gemini_home(tmp_path, GEMINI_ALLOWED)

    entries = load_host_entries("gemini", home=home, environ={}, platform="linux")

    assert names(entries) == {"docs": True, "shell": False, "browser": False}


def test_a_gemini_file_given_by_path_applies_its_own_mcp_lists(tmp_path: Path) -> None:
    path = write(tmp_path / "project" / ".gemini" / "settings.json", json.dumps(GEMINI_EXCLUDED))

    entries = load_config_entries(path, environ={})

    assert names(entries) == {"docs": True, "old-db": False}


def test_the_users_gemini_exclusion_leaves_off_a_project_server_too(tmp_path: Path) -> None:
    home = gemini_home(tmp_path, {"mcp": {"excluded": ["Shell"]}})
    project = tmp_path / "project"
    write(home / ".gemini" / "trustedFolders.json", json.dumps({os.fspath(project): "TRUST_FOLDER"}))
    write(project / ".gemini" / "settings.json", json.dumps({"mcpServers": {"shell": {"command": "sh-mcp"}}}))

    entries = load_host_entries("gemini", project, home=home, environ={}, platform="linux")

    assert names(entries) == {"shell": False}  # compared as Gemini CLI compares names: in lower case


def test_gemini_mcp_disable_leaves_the_server_off(tmp_path: Path) -> None:
    # `b` says `enabled: true` in our own key: still left off, and still listed (disabled).
    servers = {"a": {"command": "x"}, "b": {"command": "y", "enabled": True}}
    home = gemini_home(tmp_path, {"mcpServers": servers})
    write(home / ".gemini" / "mcp-server-enablement.json", json.dumps({"b": {"enabled": False}}))

    entries = load_host_entries("gemini", home=home, environ={}, platform="linux")

    assert names(entries) == {"a": True, "b": False}


def test_gemini_cli_home_and_the_system_settings_file_are_read(tmp_path: Path) -> None:
    gemini_cli_home, system = tmp_path / "gemini-home", tmp_path / "etc" / "settings.json"
    user = {"mcpServers": {"a": {"command": "user"}}}
    write(gemini_cli_home / ".gemini" / "settings.json", json.dumps(user))
    write(system, json.dumps({"mcpServers": {"a": {"command": "system"}, "b": {"command": "y"}}}))
    environ = {
        "GEMINI_CLI_HOME": os.fspath(gemini_cli_home),
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": os.fspath(system),
    }

    entries = load_host_entries("gemini", home=tmp_path / "home", environ=environ, platform="linux")

    assert {config.server_name: config.command for config in entries.configs} == {"a": "system", "b": "y"}


def test_an_untrusted_gemini_workspaces_allow_list_does_not_switch_the_users_off(tmp_path: Path) -> None:
    servers = {"approved": {"command": "a"}, "other": {"command": "b"}}
    home = gemini_home(tmp_path, {"mcp": {"allowed": ["approved"]}, "mcpServers": servers})
    project = tmp_path / "Downloads" / "cloned"  # no trustedFolders.json: not trusted
    write(project / ".gemini" / "settings.json", json.dumps({"mcp": {"allowed": ["nothing-here"]}}))
    environ = {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": os.fspath(tmp_path / "no-system.json")}

    entries = load_host_entries("gemini", project, home=home, environ=environ, platform="linux")

    assert names(entries) == {"approved": True, "other": False}


def test_gemini_allow_lists_sharing_no_name_start_no_server(tmp_path: Path) -> None:
    servers = {"approved": {"command": "a"}, "other": {"command": "b"}}
    home = gemini_home(tmp_path, {"mcp": {"allowed": ["approved"]}, "mcpServers": servers})
    system = write(tmp_path / "etc" / "settings.json", json.dumps({"mcp": {"allowed": ["audited"]}}))

    environ = {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": os.fspath(system)}
    entries = load_host_entries("gemini", home=home, environ=environ, platform="linux")

    assert names(entries) == {"approved": False, "other": False}


def test_gemini_allow_lists_keep_the_system_lists_spelling_and_match_names_exactly(tmp_path: Path) -> None:
    servers = {"github": {"command": "gh-mcp"}, "GitLab": {"command": "gl-mcp"}}
    home = gemini_home(tmp_path, {"mcp": {"allowed": ["github", "gitlab"]}, "mcpServers": servers})
    system = write(tmp_path / "etc" / "settings.json", json.dumps({"mcp": {"allowed": ["GitHub", "GitLab"]}}))

    environ = {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": os.fspath(system)}
    entries = load_host_entries("gemini", home=home, environ=environ, platform="linux")

    assert names(entries) == {"github": False, "GitLab": True}


# --------------------------------------------------------------------------- Claude Code on Windows

# `~/.claude.json` as Claude Code writes it on Windows: project keys with forward slashes, the drive
# letter as the working folder had it (PrefectHQ/fastmcp#5094).
CLAUDE_JSON_ON_WINDOWS = {
    "projects": {
        "C:\\Users\\ann\\app": {"mcpServers": {}},  # an empty record another tool wrote
        "c:/Users/ann/app": {
            "mcpServers": {"local-db": {"type": "stdio", "command": "db-mcp"}},
            "disabledMcpjsonServers": ["shared-browser"],
        },
    }
}


def test_claude_code_finds_a_windows_projects_local_servers_under_its_forward_slash_key() -> None:
    project = PureWindowsPath("C:\\Users\\ann\\app")

    assert local_scope(CLAUDE_JSON_ON_WINDOWS, project) == {
        "mcpServers": {"local-db": {"type": "stdio", "command": "db-mcp"}}
    }
    record = local_scope(CLAUDE_JSON_ON_WINDOWS, project, key=None)
    assert record["disabledMcpjsonServers"] == ["shared-browser"]


def test_on_posix_a_claude_code_project_key_is_its_exact_path() -> None:
    projects = {"/home/ann/app/": {"mcpServers": {"x": {}}}, "/home/ann/app": {"mcpServers": {}}}
    document = {"projects": projects}

    assert local_scope(document, PurePosixPath("/home/ann/app")) == {"mcpServers": {}}


# --------------------------------------------------------------------------- Codex: a trusted project

# A cloned repository's `.codex/config.toml`, as Codex's docs write one.
CODEX_PROJECT = """\
[mcp_servers.repo-tools]
command = "python"
args = ["tools/mcp_server.py"]
"""


def codex_layout(tmp_path: Path, trust: str | None, key: Path | None = None) -> tuple[Path, Path]:
    """A home whose Codex config trusts (or not) a project, and the project with its own Codex file."""
    home, project = tmp_path / "home", tmp_path / "repo"
    write(project / ".codex" / "config.toml", CODEX_PROJECT)
    user = '[mcp_servers.docs]\nurl = "https://docs.example.com/mcp"\n'
    if trust is not None:
        user += f'\n[projects.{json.dumps(os.fspath(key or project))}]\ntrust_level = "{trust}"\n'
    write(home / ".codex" / "config.toml", user)
    return home, project


@pytest.mark.parametrize("trust", [None, "untrusted"])
def test_codex_does_not_load_an_untrusted_projects_servers_and_says_why_once(
    tmp_path: Path, records: Records, trust: str | None
) -> None:
    home, project = codex_layout(tmp_path, trust)

    entries = load_host_entries("codex", project, home=home, environ={}, platform="linux")

    assert names(entries) == {"docs": True}
    [warning] = [line for _, line in records.lines if " WARNING " in line]
    assert f"{project / '.codex' / 'config.toml'}: not loaded: " in warning
    if trust is None:
        assert f'[projects."{project}"] trust_level = "trusted"' in warning
    else:
        assert "is marked as untrusted" in warning


def test_codex_loads_a_trusted_projects_servers(tmp_path: Path) -> None:
    home, project = codex_layout(tmp_path, "trusted")

    entries = load_host_entries("codex", project, home=home, environ={}, platform="linux")

    assert names(entries) == {"docs": True, "repo-tools": True}


def test_codex_trust_of_the_repository_root_covers_a_subfolder_and_its_files_up_to_the_root(
    tmp_path: Path,
) -> None:
    home, root = codex_layout(tmp_path, "trusted")
    (root / ".git").mkdir()
    sub = root / "services" / "api"
    write(sub / ".codex" / "config.toml", '[mcp_servers.api-tools]\ncommand = "api-mcp"\n')

    entries = load_host_entries("codex", sub, home=home, environ={}, platform="linux")

    assert names(entries) == {"docs": True, "repo-tools": True, "api-tools": True}


def test_codex_trust_written_under_the_real_path_covers_a_symlinked_project(tmp_path: Path) -> None:
    home, project = codex_layout(tmp_path, "trusted")
    link = tmp_path / "link-to-repo"
    link.symlink_to(project, target_is_directory=True)

    entries = load_host_entries("codex", link, home=home, environ={}, platform="linux")

    assert names(entries) == {"docs": True, "repo-tools": True}


def test_codex_trust_written_under_the_path_as_given_still_covers_that_project(tmp_path: Path) -> None:
    link = tmp_path / "link-to-repo"
    home, project = codex_layout(tmp_path, "trusted", key=link)
    link.symlink_to(project, target_is_directory=True)

    entries = load_host_entries("codex", link, home=home, environ={}, platform="linux")

    assert names(entries) == {"docs": True, "repo-tools": True}


def untrusted_folder_beside_a_trusted_repository(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A home trusting `trusted` (a repository), and an untrusted folder elsewhere with a Codex server."""
    home, trusted, other = tmp_path / "home", tmp_path / "work" / "trusted", tmp_path / "Downloads" / "other"
    (trusted / ".git").mkdir(parents=True)
    write(other / ".codex" / "config.toml", '[mcp_servers.other-tools]\ncommand = "other-mcp"\n')
    trust = f'[projects.{json.dumps(os.fspath(trusted))}]\ntrust_level = "trusted"\n'
    write(home / ".codex" / "config.toml", trust)
    return home, trusted, other


def test_codex_trust_is_not_borrowed_through_dot_dot_from_a_trusted_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, trusted, _ = untrusted_folder_beside_a_trusted_repository(tmp_path)
    monkeypatch.chdir(trusted)

    for project in ("../../Downloads/other", trusted / ".." / ".." / "Downloads" / "other"):
        entries = load_host_entries("codex", project, home=home, environ={}, platform="linux")
        assert names(entries) == {}, project


def test_codex_trust_is_not_borrowed_through_a_symlink_kept_in_a_trusted_repository(tmp_path: Path) -> None:
    home, trusted, other = untrusted_folder_beside_a_trusted_repository(tmp_path)
    (trusted / "vendor").mkdir()
    (trusted / "vendor" / "other").symlink_to(other, target_is_directory=True)

    link = trusted / "vendor" / "other"
    entries = load_host_entries("codex", link, home=home, environ={}, platform="linux")

    assert names(entries) == {}


@pytest.mark.parametrize("gitdir", ["../../work/trusted/.git/worktrees/forged", "{trusted}/.git/worktrees/x"])
def test_a_forged_git_file_does_not_borrow_a_trusted_repositorys_codex_trust(
    tmp_path: Path, gitdir: str
) -> None:
    home, trusted, other = untrusted_folder_beside_a_trusted_repository(tmp_path)
    worktrees = trusted / ".git" / "worktrees"
    write(worktrees / "x" / "commondir", "../..\n")  # metadata that does not point back at `other`
    write(worktrees / "x" / "gitdir", f"{tmp_path / 'elsewhere' / '.git'}\n")
    write(other / ".git", f"gitdir: {gitdir.format(trusted=trusted)}\n")

    entries = load_host_entries("codex", other, home=home, environ={}, platform="linux")

    assert names(entries) == {}


def test_a_linked_worktree_of_a_trusted_repository_has_its_codex_trust(tmp_path: Path) -> None:
    home, trusted, _ = untrusted_folder_beside_a_trusted_repository(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", os.fspath(trusted)]
    subprocess.run([*git, "init", "-q"], check=True, timeout=30)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True, timeout=30)
    linked = tmp_path / "linked"
    subprocess.run([*git, "worktree", "add", "-q", os.fspath(linked)], check=True, timeout=30)
    write(linked / ".codex" / "config.toml", '[mcp_servers.linked-tools]\ncommand = "linked-mcp"\n')

    entries = load_host_entries("codex", linked, home=home, environ={}, platform="linux")

    assert names(entries) == {"linked-tools": True}


# --------------------------------------------------------------------------- where the hosts look

def test_claude_code_reads_claude_json_from_claude_config_dir(tmp_path: Path) -> None:
    config_dir, project = tmp_path / "claude-work", tmp_path / "project"
    project.mkdir()
    document = {
        "mcpServers": {"user-server": {"command": "u"}},
        "projects": {os.fspath(project): {"mcpServers": {"local-server": {"command": "l"}}}},
    }
    write(config_dir / ".claude.json", json.dumps(document))
    write(tmp_path / "home" / ".claude.json", json.dumps({"mcpServers": {"not-this-one": {"command": "x"}}}))
    environ = {"CLAUDE_CONFIG_DIR": os.fspath(config_dir)}

    entries = load_host_entries("claude-code", project, home=tmp_path / "home", environ=environ)

    assert names(entries) == {"user-server": True, "local-server": True}


def test_claude_code_reads_the_projects_own_mcp_json_not_a_parent_folders(tmp_path: Path) -> None:
    # Claude Code loads `.mcp.json` from the project folder only (anthropics/claude-code#68603 asks
    # for parent folders and says it does not); Codex, unlike it, reads `.codex/` up to the root.
    parent, project = tmp_path / "work", tmp_path / "work" / "app"
    write(parent / ".mcp.json", json.dumps({"mcpServers": {"parents": {"command": "p"}}}))
    write(project / ".mcp.json", json.dumps({"mcpServers": {"own": {"command": "o"}}}))

    entries = load_host_entries("claude-code", project, home=tmp_path / "home", environ={})

    assert names(entries) == {"own": True}


def test_gemini_extension_servers_are_not_read(tmp_path: Path) -> None:
    # An extension's servers start with its own folder and per-folder enablement
    # (`extension-enablement.json`): they are not loaded here; settings.json's servers are.
    home = gemini_home(tmp_path, {"mcpServers": {"a": {"command": "x"}}})
    extension = {"name": "ext", "version": "1.0.0", "mcpServers": {"ext-server": {"command": "node"}}}
    write(home / ".gemini" / "extensions" / "ext" / "gemini-extension.json", json.dumps(extension))

    entries = load_host_entries("gemini", home=home, environ={}, platform="linux")

    assert names(entries) == {"a": True}


# Gemini CLI's folder trust (packages/core/src/utils/trust.ts): a workspace's `.gemini/settings.json`
# is read only in a folder `trustedFolders.json` trusts; unknown folders are not trusted.
@pytest.mark.parametrize(
    ("rules", "settings", "environ", "loaded"),
    [
        (None, None, {}, False),
        ({"{project}": "TRUST_FOLDER"}, None, {}, True),
        ({"{project}/x": "TRUST_PARENT"}, None, {}, True),
        ({"{parent}": "TRUST_FOLDER", "{project}": "DO_NOT_TRUST"}, None, {}, False),
        (None, {"security": {"folderTrust": {"enabled": False}}}, {}, True),
        (None, None, {"GEMINI_CLI_TRUST_WORKSPACE": "true"}, True),
        ({"{project}": "TRUST_FOLDER"}, None, {"GEMINI_CLI_TRUST_WORKSPACE": "false"}, False),
    ],
)
def test_gemini_reads_a_workspaces_settings_only_in_a_trusted_folder(
    tmp_path: Path, records: Records, rules: Any, settings: Any, environ: dict[str, str], loaded: bool
) -> None:
    project = tmp_path / "work" / "cloned"
    home = gemini_home(tmp_path, {**(settings or {}), "mcpServers": {"user-server": {"command": "u"}}})
    write(project / ".gemini" / "settings.json", json.dumps({"mcpServers": {"repo": {"command": "r"}}}))
    if rules is not None:
        places = {"{project}": os.fspath(project), "{parent}": os.fspath(project.parent)}
        written = {}
        for rule, level in rules.items():
            for name, place in places.items():
                rule = rule.replace(name, place)
            written[rule] = level
        write(home / ".gemini" / "trustedFolders.json", json.dumps(written))

    entries = load_host_entries("gemini", project, home=home, environ=environ, platform="linux")

    expected = {"user-server": True, "repo": True} if loaded else {"user-server": True}
    assert names(entries) == expected
    assert ("not loaded" in records.text()) is not loaded


# --------------------------------------------------------------------------- with a hub, across a reload


def test_a_server_gemini_mcp_disable_switched_off_is_stopped_by_reload_and_the_other_keeps_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = command_entry()
    home = gemini_home(tmp_path, {"mcpServers": {"kept": server, "switched": server}})
    monkeypatch.setenv("HOME", os.fspath(home))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)

    with MCPHub.from_host("gemini") as hub:
        assert {name: connection.state for name, connection in hub.servers.items()} == {
            "kept": "ready",
            "switched": "ready",
        }
        disabled = {"switched": {"enabled": False}}
        write(home / ".gemini" / "mcp-server-enablement.json", json.dumps(disabled))
        hub.reload()

        assert {tool.server_name for tool in hub.tools()} == {"kept"}
        assert "switched" not in hub.servers or hub.servers["switched"].state != "ready"
        assert hub.call_tool("mcp__kept__add", {"a": 2, "b": 3}).text == "5"


@pytest.mark.parametrize(
    ("host", "place", "key"), [("vscode", ".vscode", "servers"), ("cursor", ".cursor", "mcpServers")]
)
def test_the_editors_short_path_separator_is_the_path_separator(
    tmp_path: Path, host: str, place: str, key: str
) -> None:
    project = tmp_path / "project"
    write(project / place / "mcp.json", json.dumps({key: {"s": {"command": "x", "args": ["a${/}b"]}}}))

    [config] = load_host_entries(host, project, home=tmp_path / "home", environ={}, platform="linux").entries

    assert isinstance(config, StdioServerConfig)
    assert config.args == (f"a{os.sep}b",)


def test_the_host_files_parse_cache_is_left_unset_by_loads_that_fail_or_succeed_in_a_fresh_interpreter(
    tmp_path: Path,
) -> None:
    # `_config.hosts.locations._parsed` (a ContextVar) lives for one load: after a good load, a load
    # of a broken file and a load that raises, the caller, another thread and a forked child see none.
    script = tmp_path / "host.py"
    script.write_text(
        "import json, os, sys, threading\n"
        "from pathlib import Path\n"
        "from mcp_sync import ConfigError, load_host_entries\n"
        "from mcp_sync._config.hosts import locations\n"
        "project = Path(sys.argv[1])\n"
        "(project / '.cursor').mkdir()\n"
        "(project / '.cursor' / 'mcp.json').write_text(json.dumps({'mcpServers': {'a': {'command': 'x'}}}))\n"
        "load_host_entries('cursor', project, home=project)\n"
        "(project / '.cursor' / 'mcp.json').write_text('{not json')\n"
        "load_host_entries('cursor', project, home=project)\n"
        "try:\n"
        "    load_host_entries('cursor', project / 'missing', home=project)\n"
        "except ConfigError:\n"
        "    pass\n"
        "seen = [locations._parsed.get()]\n"
        "t = threading.Thread(target=lambda: seen.append(locations._parsed.get())); t.start(); t.join(10)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(0 if locations._parsed.get() is None else 1)\n"
        "seen.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
        "print(seen)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[None, None, 0]", done.stdout
