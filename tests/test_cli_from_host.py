"""`mcp-sync ... --from HOST [--project DIR]`: the servers a host keeps, read from its files in a home
directory laid out for the test (a real `mcp-sync` subprocess, real fixture servers)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mcp_sync._cli.parser import HOST_NAMES
from mcp_sync._config import HOSTS
from mcp_sync._values.naming import server_name_from_host
from tests.support import PYTHON, REPO_ROOT, cli_command, command_entry

pytestmark = pytest.mark.timeout(180)

RUN_TIMEOUT = 120.0  # one command, servers started and closed, on a loaded machine


def mcp_sync_cli(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": os.fspath(home), "USERPROFILE": os.fspath(home)}
    env.pop("XDG_CONFIG_HOME", None)
    return subprocess.run(
        cli_command(*argv),
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )


@pytest.fixture
def cursor_home(tmp_path: Path) -> tuple[Path, Path]:
    """A home whose Cursor file has `alpha`, and a project whose own Cursor file adds `beta`."""
    home, project = tmp_path / "home", tmp_path / "project"
    server = command_entry()
    for folder, entries in ((home, {"alpha": server}), (project, {"beta": server})):
        (folder / ".cursor").mkdir(parents=True)
        (folder / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": entries}))
    return home, project


def test_servers_from_a_host_reads_its_user_file(cursor_home: tuple[Path, Path]) -> None:
    home, _project = cursor_home
    done = mcp_sync_cli(home, "servers", "--from", "cursor", "--json")
    assert done.returncode == 0, done.stderr
    assert [(server["name"], server["state"]) for server in json.loads(done.stdout)] == [("alpha", "ready")]


def test_tools_from_a_host_with_a_project_adds_the_projects_servers(cursor_home: tuple[Path, Path]) -> None:
    home, project = cursor_home
    done = mcp_sync_cli(home, "tools", "--from", "cursor", "--project", os.fspath(project), "--json")
    assert done.returncode == 0, done.stderr
    servers = {tool["server"] for tool in json.loads(done.stdout)}
    assert servers == {"alpha", "beta"}


def test_call_from_a_host_takes_the_tool_and_its_arguments(cursor_home: tuple[Path, Path]) -> None:
    # No CONFIG: the first positional is the tool, not a configuration file.
    home, _project = cursor_home
    done = mcp_sync_cli(home, "call", "--from", "cursor", "mcp__alpha__echo", '{"text": "from cursor"}')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "from cursor\n"


GALLERY_NAME = "io.github.upstash/context7"  # as VS Code's gallery writes it: not a valid server name


@pytest.fixture
def vscode_gallery_project(tmp_path: Path) -> tuple[Path, Path]:
    """A home without files and a project whose `.vscode/mcp.json` holds a server under a gallery name."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    entry = {"type": "stdio", **command_entry()}
    (project / ".vscode").mkdir(parents=True)
    (project / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {GALLERY_NAME: entry}}))
    return home, project


def test_servers_json_gives_the_name_the_hosts_file_wrote(vscode_gallery_project: tuple[Path, Path]) -> None:
    home, project = vscode_gallery_project
    done = mcp_sync_cli(home, "servers", "--from", "vscode", "--project", os.fspath(project), "--json")
    assert done.returncode == 0, done.stderr
    [record] = json.loads(done.stdout)
    assert (record["name"], record["original_name"]) == (server_name_from_host(GALLERY_NAME), GALLERY_NAME)


def test_servers_table_shows_the_name_the_hosts_file_wrote_beside_the_name(
    vscode_gallery_project: tuple[Path, Path],
) -> None:
    home, project = vscode_gallery_project
    done = mcp_sync_cli(home, "servers", "--from", "vscode", "--project", os.fspath(project))
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split() == ["SERVER", "NAME", "IN", "FILE", "TRANSPORT", "STATE", "TOOLS", "ERROR"]
    assert row.split()[:4] == [server_name_from_host(GALLERY_NAME), GALLERY_NAME, "stdio", "ready"]


def test_a_host_without_its_file_is_a_config_error_naming_where_it_looked(tmp_path: Path) -> None:
    done = mcp_sync_cli(tmp_path, "servers", "--from", "windsurf", "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "config" and "windsurf" in error["message"], error
    assert os.fspath(tmp_path) in error["message"], error


def test_an_unknown_host_is_a_config_error_listing_the_known_ones(tmp_path: Path) -> None:
    done = mcp_sync_cli(tmp_path, "servers", "--from", "notepad")
    assert done.returncode == 2
    assert "notepad" in done.stderr and "cursor" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["servers"],  # neither
        ["servers", "examples/servers.yaml", "--from", "cursor"],  # both
        ["servers", "examples/servers.yaml", "--project", "."],  # --project alone
    ],
)
def test_config_and_from_are_one_or_the_other(tmp_path: Path, argv: list[str]) -> None:
    done = mcp_sync_cli(tmp_path, *argv, "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["type"] == "usage"


def test_the_command_lines_host_names_are_the_hosts_the_configuration_knows() -> None:
    # The parser stays light (it does not import the configuration package), so it names them itself.
    assert HOST_NAMES == HOSTS


def test_an_untrusted_codex_project_is_not_started_and_the_cli_says_why_once(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "cloned"
    (project / ".codex").mkdir(parents=True)
    (home / ".codex").mkdir(parents=True)
    marker = tmp_path / "started"
    command = f"open({os.fspath(marker)!r}, 'w').close()"
    (project / ".codex" / "config.toml").write_text(
        f"[mcp_servers.repo]\ncommand = {json.dumps(PYTHON)}\nargs = ['-c', {json.dumps(command)}]\n"
    )
    (home / ".codex" / "config.toml").write_text('model = "gpt-5"\n')

    done = mcp_sync_cli(home, "servers", "--from", "codex", "--project", os.fspath(project), "--json")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    assert not marker.exists()
    assert done.stderr.count("not loaded: Codex reads it only in a trusted project") == 1, done.stderr
