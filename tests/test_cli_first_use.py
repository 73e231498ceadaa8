"""The command line as a new user meets it: VS Code's `${input:...}` values asked on a terminal (a real
`mcp-sync` subprocess on a pseudo-terminal, against the fixture server), a misspelt host, and the line
of a server's stderr that the tables show."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_sync._cli.listings import error_summary
from mcp_sync._server.stdio import STDERR_TAIL_MARKER
from tests.support import FIXTURE_SERVER, REPO_ROOT, cli_command, command_entry

pytestmark = pytest.mark.timeout(240)

RUN_TIMEOUT = 120.0  # one command, its server started and closed, on a loaded machine
SECRET = "hunter2-typed-secret"


def vscode_file() -> dict[str, Any]:
    """A VS Code file whose server `fx` takes two of its inputs, one of them a password."""
    return {
        "inputs": [
            {"type": "promptString", "id": "api-key", "description": "Fixture API key", "password": True},
            {"type": "promptString", "id": "team", "description": "Team name"},
        ],
        "servers": {
            "fx": {
                **command_entry(),
                "env": {
                    "API_KEY": "${input:api-key}",
                    "TEAM": "${input:team}",
                    "TEAM_AGAIN": "${input:team}",
                },
            }
        },
    }


def cli_environment(home: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": os.fspath(home), "USERPROFILE": os.fspath(home)}
    env.pop("XDG_CONFIG_HOME", None)
    return env


class Terminal:
    """The user's side of a pseudo-terminal: what the program wrote to it, and typing into it."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.transcript = ""

    def wait_for(self, text: str, deadline: float) -> None:
        while text not in self.transcript:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{text!r} never appeared on the terminal: {self.transcript!r}"
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                self.read_available()

    def read_available(self) -> None:
        with contextlib.suppress(OSError):  # the program closed its side
            self.transcript += os.read(self.master, 65536).decode(errors="replace")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())


def on_terminal(home: Path, argv: list[str], exchanges: list[tuple[str, str]]) -> tuple[int, str, str]:
    """Run `mcp-sync ARGV` with a pseudo-terminal as its stdin and stderr (stdout a pipe); for each
    (prompt, answer) wait for the prompt on the terminal and type the answer. Returns the exit code,
    stdout, and everything the terminal showed."""
    master, slave = os.openpty()
    deadline = time.monotonic() + RUN_TIMEOUT
    with subprocess.Popen(
        cli_command(*argv),
        cwd=REPO_ROOT,
        env=cli_environment(home),
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
        start_new_session=True,  # no controlling terminal but this one
        text=True,
    ) as process:
        os.close(slave)
        terminal = Terminal(master)
        try:
            for prompt, answer in exchanges:
                terminal.wait_for(prompt, deadline)
                terminal.type(answer + "\n")
            stdout, _ = process.communicate(timeout=max(deadline - time.monotonic(), 1.0))
        finally:
            process.kill()
            terminal.read_available()
            os.close(master)
    return process.returncode, stdout, terminal.transcript


def vscode_home(tmp_path: Path, document: dict[str, object]) -> Path:
    home = tmp_path / "home"
    (home / ".config" / "Code" / "User").mkdir(parents=True)
    (home / ".config" / "Code" / "User" / "mcp.json").write_text(json.dumps(document))
    return home


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
def test_vscode_inputs_are_asked_on_the_terminal_once_each_and_a_password_is_hidden(tmp_path: Path) -> None:
    code, stdout, transcript = on_terminal(
        vscode_home(tmp_path, vscode_file()),
        ["call", "--from", "vscode", "mcp__fx__get_env", '{"name": "API_KEY"}'],
        [("Fixture API key", SECRET), ("Team name", "blue")],
    )
    assert code == 0, transcript
    assert stdout == f"{SECRET}\n"  # the typed value reached the server
    assert SECRET not in transcript  # never echoed
    assert "blue" in transcript  # an ordinary answer is echoed as typed
    assert transcript.count("Team name") == 1  # one input used twice is asked once


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
def test_a_pick_string_input_is_chosen_by_number_on_the_terminal(tmp_path: Path) -> None:
    document = {
        "inputs": [{"type": "pickString", "id": "region", "description": "Region", "options": ["eu", "us"]}],
        "servers": {"fx": {**command_entry(), "env": {"REGION": "${input:region}"}}},
    }
    code, stdout, transcript = on_terminal(
        vscode_home(tmp_path, document),
        ["call", "--from", "vscode", "mcp__fx__get_env", '{"name": "REGION"}'],
        [("2) us", "2")],
    )
    assert code == 0, transcript
    assert stdout == "us\n"


def test_without_a_terminal_no_input_is_asked(tmp_path: Path) -> None:
    home = vscode_home(tmp_path, vscode_file())
    done = subprocess.run(
        cli_command("servers", "--from", "vscode", "--json"),
        cwd=REPO_ROOT,
        env=cli_environment(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 2
    assert "Fixture API key" not in done.stderr and "Team name" not in done.stderr
    [server] = json.loads(done.stdout)
    assert "references ${input:api-key}" in server["error"]


def test_a_misspelt_host_gets_a_did_you_mean(tmp_path: Path) -> None:
    done = subprocess.run(
        cli_command("servers", "--from", "vscod"),
        cwd=REPO_ROOT,
        env=cli_environment(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("mcp-sync: unknown host 'vscod'; did you mean vscode? known hosts: "), (
        done.stderr
    )


NODE_CRASH = """\
/srv/db-server/index.js:12
    throw new Error("DATABASE_URL is not set");
    ^

Error: DATABASE_URL is not set
    at connect (/srv/db-server/index.js:12:11)
    at Object.<anonymous> (/srv/db-server/index.js:20:1)
    at Module._compile (node:internal/modules/cjs/loader:1504:14)

Node.js v20.17.0"""
PYTHON_CRASH = """\
Traceback (most recent call last):
  File "/srv/server.py", line 9, in <module>
    main()
  File "/srv/server.py", line 5, in main
    raise RuntimeError("DATABASE_URL is not set")
RuntimeError: DATABASE_URL is not set"""
EXIT_MESSAGE = "starting db server\nDATABASE_URL is not set; see README"


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        (NODE_CRASH, "Error: DATABASE_URL is not set"),
        (PYTHON_CRASH, "RuntimeError: DATABASE_URL is not set"),
        (EXIT_MESSAGE, "DATABASE_URL is not set; see README"),
    ],
)
def test_an_error_with_a_stderr_tail_is_summed_up_by_the_line_that_says_why(tail: str, why: str) -> None:
    headline = "server 'db' went away while connecting (the process exited with status 1)"
    error = f"{headline}{STDERR_TAIL_MARKER}\n" + "\n".join(f"    {line}" for line in tail.splitlines())
    assert error_summary(error, 200) == f"{headline}; its stderr says: {why}"


# -- a newcomer's slips: a misspelt server map, a misspelt command; one server per call; server text --


def mcp_sync(*argv: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_command(*argv),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )


def test_a_file_whose_servers_are_under_a_misspelt_key_is_refused_with_a_did_you_mean(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpservers": {"fx": command_entry()}}))

    table, as_json = mcp_sync("servers", str(path)), mcp_sync("servers", str(path), "--json")

    assert table.returncode == 2 and table.stdout == ""
    assert "unknown top-level key 'mcpservers'; did you mean 'mcpServers'?" in table.stderr
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"]["type"] == "config"


def test_a_hosts_own_file_without_servers_stays_zero_servers_and_names_the_slip(tmp_path: Path) -> None:
    path = tmp_path / "project" / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpservers": {"fx": command_entry()}}))

    done = mcp_sync("servers", str(path))

    assert done.returncode == 0
    assert done.stdout.split() == ["SERVER", "TRANSPORT", "STATE", "TOOLS", "ERROR"]
    assert "warning" in done.stderr and "did you mean 'mcpServers'?" in done.stderr


@pytest.mark.parametrize("extra", [(), ("--json",)])
def test_a_misspelt_command_gets_a_did_you_mean(extra: tuple[str, ...]) -> None:
    done = mcp_sync("tols", *extra)

    assert done.returncode == 2
    assert "invalid choice: 'tols'; did you mean tools?" in done.stdout + done.stderr


def test_call_starts_only_the_server_its_tool_belongs_to(tmp_path: Path) -> None:
    other_events = tmp_path / "other.jsonl"
    servers = {
        "fx": command_entry(),
        "other": command_entry(FIXTURE_SERVER, "--events", os.fspath(other_events)),
        "broken": {"command": "no-such-command-for-mcp-sync"},
    }
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))

    called = mcp_sync("call", str(path), "mcp__fx__echo", '{"text": "only fx"}')
    unknown = mcp_sync("call", str(path), "mcp__nowhere__echo", "{}")  # no such server: all start

    assert (called.returncode, called.stdout, called.stderr) == (0, "only fx\n", "")
    assert unknown.returncode == 3 and "server 'broken' is not ready" in unknown.stderr
    assert [json.loads(line)["event"] for line in other_events.read_text().splitlines()].count("ready") == 1


def test_call_read_and_prompt_show_a_servers_control_characters_as_text(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"fx": command_entry()}}))
    text = "\x1b[2Jcleared\r\nnext\rline\tand a tab\x07"  # CRLF is a line break, a lone CR is not

    called = mcp_sync("call", str(path), "mcp__fx__echo", json.dumps({"text": text}))
    as_json = mcp_sync("call", str(path), "mcp__fx__echo", json.dumps({"text": text}), "--json")
    prompted = mcp_sync("prompt", str(path), "mcp__fx__greet", json.dumps({"name": "\x1b]0;title\x07"}))
    read = mcp_sync("read", str(path), "fixture://items/%1B%5B31m", "--server", "fx")

    assert called.stdout == "\\x1b[2Jcleared\nnext\\x0dline\tand a tab\\x07\n"
    assert json.loads(as_json.stdout)["text"] == text  # JSON stays lossless
    assert "Hello, \\x1b]0;title\\x07!" in prompted.stdout
    assert read.stdout == "item \\x1b[31m\n"
    assert not [run for run in (called, prompted, read) if "\x1b" in run.stdout or "\x07" in run.stdout]
