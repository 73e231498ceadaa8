"""The `mcp-sync` command line through its real entry points (`python -m mcp_sync` and the console
script), as subprocesses run from the repository root against the demo server.

Every invocation is declared in `RUNS` and started once, four at a time, when the module's first
test asks for one: each run starts its own server, and running them side by side keeps the module fast.
Runs start in the order of `RUNS`, the ones that start no server first.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support import cli_command, run_in_repo

BIN = Path(sys.executable).parent
CONSOLE_SCRIPT = shutil.which("mcp-sync", path=str(BIN))
YAML = "examples/servers.yaml"
HOST_JSON = "examples/claude_desktop_config.json"

BROKEN_CONFIG = """\
servers:
  - server_name: broken
    transport: stdio
    command: no-such-command-for-mcp-sync
"""
INVALID_CONFIG = """\
servers:
  - server_name: demo
    transport: stdio
    command: python
    colour: blue
"""
# One usable server and one entry with a misspelt key.
MIXED_CONFIG = """\
servers:
  - server_name: demo
    transport: stdio
    command: python
    args: [examples/demo_server.py]
  - server_name: typo
    transport: stdio
    command: python
    colour: blue
"""
# A server that stops at start-up with a traceback a few frames deep, as one missing its settings does.
CRASHING_CONFIG = """\
servers:
  - server_name: db
    transport: stdio
    command: python
    args:
      - -c
      - |
        def settings():
            raise RuntimeError('DATABASE_URL is not set')
        def connect():
            settings()
        connect()
"""
DEMO = {"command": "python", "args": ["examples/demo_server.py"]}
HOST_WITH_PROBLEMS = {
    "mcpServers": {
        "demo": DEMO,
        "brave": {"command": ["npx", "-y", "@modelcontextprotocol/server-brave-search"]},
        "legacy": {"type": "websocket", "url": "wss://mcp.example.com/ws"},
        "paused": {"type": "websocket", "url": "wss://old.example.com/ws", "disabled": True},
    }
}
HOST_WITH_OAUTH = {"mcpServers": {"demo": {**DEMO, "authProviderType": "google_credentials"}}}
SEVERAL_PROBLEMS = {"mcpServers": {"demo": {**DEMO, "timeout": 0, "env": "LOG_LEVEL=debug"}}}
REMOTE_WITH_A_TYPO = {
    "mcpServers": {
        "demo": DEMO,
        "remote": {
            "type": "http",
            "url": "https://mcp.example.com/mcp",
            "oauth": {"clientId": "mcp-sync-test"},
            "headers": "X-Team: tools",
        },
    }
}

Runs = dict[str, "Future[subprocess.CompletedProcess[str]]"]

# Bounds on one run (its server's start included) and on all of them: "does not hang", on a loaded machine.
RUN_TIMEOUT = 120.0
ALL_RUNS_TIMEOUT = 900.0

pytestmark = pytest.mark.timeout(ALL_RUNS_TIMEOUT + 60)

# name -> command-line arguments, run through `python -m mcp_sync` ("console_script": through the
# console script); {tmp} stands for the module's temporary directory.
RUNS: dict[str, list[str]] = {
    "no_command": [],
    "help": ["--help"],
    "version": ["--version"],
    "login_invalid_entry": ["login", "{tmp}/typo.json", "remote", "--no-browser", "--timeout", "5"],
    "logout_invalid_entry": ["logout", "{tmp}/typo.json", "remote"],
    "logout_unknown_server": ["logout", "{tmp}/typo.json", "nowhere"],
    "servers": ["servers", YAML],
    "servers_json": ["servers", YAML, "--json"],
    "tools": ["tools", YAML],
    "tools_json_host_config": ["tools", HOST_JSON, "--json"],
    "call": ["call", YAML, "mcp__demo__calculate", '{"expression": "2 * (3 + 4)"}'],
    "call_json": ["call", YAML, "mcp__demo__calculate", '{"expression": "2 * (3 + 4)"}', "--json"],
    "console_script": ["call", YAML, "mcp__demo__slugify", '{"text": "Hello, World!"}'],
    "call_error_result": ["call", YAML, "mcp__demo__calculate", '{"expression": "1 / 0"}'],
    "call_unknown_tool": ["call", YAML, "calculate", "{}"],
    "call_timeout": ["call", YAML, "mcp__demo__sleep", '{"seconds": 30}', "--timeout", "0.3"],
    "call_bad_json": ["call", YAML, "mcp__demo__calculate", '{"expression": '],
    "call_json_not_object": ["call", YAML, "mcp__demo__calculate", '["2 + 2"]'],
    "call_failing_server": ["call", "{tmp}/broken.yaml", "mcp__broken__anything"],
    "servers_failing_server": ["servers", "{tmp}/broken.yaml"],
    "servers_invalid_config": ["servers", "{tmp}/invalid.yaml"],
    "servers_missing_config": ["servers", "{tmp}/missing.yaml"],
    "servers_verbose": ["servers", YAML, "-v"],
    "resources": ["resources", YAML],
    "read": ["read", YAML, "demo://notes/training"],
    "read_template_json": ["read", YAML, "demo://units/mass", "--server", "demo", "--json"],
    "read_unknown": ["read", YAML, "demo://units/mass"],
    "prompts_json": ["prompts", YAML, "--json"],
    "prompt": ["prompt", YAML, "mcp__demo__weekly_summary", '{"miles": "20", "runs": "4"}'],
    "prompt_unknown": ["prompt", YAML, "mcp__demo__nothing"],
    "servers_host_with_problems": ["servers", "{tmp}/problems.json"],
    "servers_host_with_problems_json": ["servers", "{tmp}/problems.json", "--json"],
    "servers_host_with_problems_strict": ["servers", "{tmp}/problems.json", "--strict"],
    "servers_several_problems": ["servers", "{tmp}/several.json", "--json"],
    "servers_several_problems_strict": ["servers", "{tmp}/several.json", "--strict"],
    "servers_oauth_warning": ["servers", "{tmp}/oauth.json"],
    "resources_invalid_entry": ["resources", "{tmp}/mixed.yaml"],
    "prompts_invalid_entry": ["prompts", "{tmp}/mixed.yaml"],
    "call_save_images_under_a_file": [
        "call",
        YAML,
        "mcp__demo__calculate",
        '{"expression": "2 + 2"}',
        "--save-images",
        "{tmp}/broken.yaml/images",
    ],
    "call_misspelt_tool": ["call", YAML, "mcp__demo__calculat", '{"expression": "2 + 2"}'],
    "prompt_misspelt": ["prompt", YAML, "mcp__demo__weekly_sumary"],
    "servers_crashing_server": ["servers", "{tmp}/crashing.yaml"],
}


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return run_in_repo(argv, timeout=RUN_TIMEOUT)


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    tmp = tmp_path_factory.mktemp("cli")
    (tmp / "broken.yaml").write_text(BROKEN_CONFIG)
    (tmp / "invalid.yaml").write_text(INVALID_CONFIG)
    (tmp / "problems.json").write_text(json.dumps(HOST_WITH_PROBLEMS))
    (tmp / "oauth.json").write_text(json.dumps(HOST_WITH_OAUTH))
    (tmp / "several.json").write_text(json.dumps(SEVERAL_PROBLEMS))
    (tmp / "typo.json").write_text(json.dumps(REMOTE_WITH_A_TYPO))
    (tmp / "mixed.yaml").write_text(MIXED_CONFIG)
    (tmp / "crashing.yaml").write_text(CRASHING_CONFIG)
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = {}
        for name, args in RUNS.items():
            program = cli_command()
            if name == "console_script":
                if CONSOLE_SCRIPT is None:
                    continue
                program = [CONSOLE_SCRIPT]
            runs[name] = pool.submit(run, [*program, *(arg.replace("{tmp}", str(tmp)) for arg in args)])
        yield runs


def result(cli: Runs, name: str) -> subprocess.CompletedProcess[str]:
    return cli[name].result(timeout=ALL_RUNS_TIMEOUT)


def assert_one_line_error(done: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    """The failure is one line on stderr (after any progress lines the server's progress made)."""
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("mcp-sync: progress ")]
    assert len(lines) == 1 and lines[0].startswith("mcp-sync: "), done.stderr
    assert text in lines[0]


# -- success --------------------------------------------------------------------------------------------


def test_servers_prints_each_servers_transport_state_and_tool_count(cli: Runs) -> None:
    done = result(cli, "servers")
    assert done.returncode == 0, done.stderr
    header, demo = done.stdout.splitlines()
    assert header.split() == ["SERVER", "TRANSPORT", "STATE", "TOOLS", "ERROR"]
    assert demo.split() == ["demo", "stdio", "ready", "8"]
    assert done.stderr == ""


def test_servers_json_is_machine_readable(cli: Runs) -> None:
    done = result(cli, "servers_json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        {
            "name": "demo",
            "original_name": None,
            "transport": "stdio",
            "enabled": True,
            "state": "ready",
            "tools": 8,
            "protocol_version": "2026-07-28",
            "error": None,
        }
    ]


def test_tools_prints_public_name_server_raw_name_and_description(cli: Runs) -> None:
    done = result(cli, "tools")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["TOOL", "SERVER", "NAME", "DESCRIPTION"]
    row = next(line for line in lines if line.startswith("mcp__demo__word_count "))
    assert row.split(maxsplit=3) == [
        "mcp__demo__word_count",
        "demo",
        "word_count",
        "Count the words, characters and lines of a text.",
    ]
    assert len(lines) == 9


def test_tools_json_reads_an_mcp_servers_file(cli: Runs) -> None:
    done = result(cli, "tools_json_host_config")
    assert done.returncode == 0, done.stderr
    tools = {tool["name"]: tool for tool in json.loads(done.stdout)}
    assert len(tools) == 8
    slugify = tools["mcp__demo__slugify"]
    assert (slugify["server"], slugify["raw_name"]) == ("demo", "slugify")
    assert slugify["input_schema"]["required"] == ["text"]


def test_call_prints_the_result_text(cli: Runs) -> None:
    done = result(cli, "call")
    assert (done.returncode, done.stdout, done.stderr) == (0, "14\n", "")


def test_call_json_prints_the_whole_result(cli: Runs) -> None:
    done = result(cli, "call_json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "tool": "mcp__demo__calculate",
        "is_error": False,
        "text": "14",
        "structured_content": {"result": 14},
        "content": [{"type": "text", "text": "14"}],
    }


@pytest.mark.skipif(CONSOLE_SCRIPT is None, reason="the mcp-sync console script is not installed")
def test_console_script_runs_the_same_command_line(cli: Runs) -> None:
    done = result(cli, "console_script")
    assert (done.returncode, done.stdout, done.stderr) == (0, "hello-world\n", "")


def test_help_documents_the_exit_codes(cli: Runs) -> None:
    done = result(cli, "help")
    assert done.returncode == 0
    for line in (
        "  0   success",
        "  1   the tool ran",
        "  2   usage",
        "  3   a server failed",
        "  4   the call",
    ):
        assert line in done.stdout


def test_verbose_logs_debug_records_to_stderr(cli: Runs) -> None:
    done = result(cli, "servers_verbose")
    assert done.returncode == 0
    # A DEBUG record of the mcp_sync logger or one of its children (mcp_sync.config, mcp_sync.server.x).
    assert re.search(r" mcp_sync(\.\S+)? DEBUG: ", done.stderr), f"no DEBUG record in:\n{done.stderr}"
    assert "server 'demo' is ready" in done.stderr


# -- failures ---------------------------------------------------------------------------------------


def test_a_tool_error_result_exits_1_with_its_text_on_stdout(cli: Runs) -> None:
    done = result(cli, "call_error_result")
    assert done.stdout == "Error executing tool calculate: division by zero\n"
    assert_one_line_error(done, 1, "mcp__demo__calculate returned an error result")


def test_an_invalid_config_exits_2_naming_the_entry_and_key(cli: Runs) -> None:
    done = result(cli, "servers_invalid_config")
    assert_one_line_error(done, 2, "invalid.yaml: servers[0] (\"demo\"): unknown key 'colour'")
    assert done.stdout.splitlines()[1].split()[:4] == ["demo", "-", "failed", "0"]


def test_unusable_entries_fail_alone_and_the_other_servers_run(cli: Runs) -> None:
    done = result(cli, "servers_host_with_problems")
    assert done.returncode == 2, done.stderr
    rows = {row.split()[0]: row for row in done.stdout.splitlines()[1:]}
    assert rows["demo"].split()[:4] == ["demo", "stdio", "ready", "8"]
    assert "field 'command': must be a string" in rows["brave"]
    assert "field 'type': must be" in rows["legacy"]
    assert "paused" not in rows
    lines = done.stderr.splitlines()
    assert len(lines) == 2
    assert "mcpServers.brave: field 'command': must be a string" in lines[0]
    assert "mcpServers.legacy: field 'type': must be" in lines[1]


def test_unusable_entries_are_failed_servers_in_json(cli: Runs) -> None:
    done = result(cli, "servers_host_with_problems_json")
    assert done.returncode == 2, done.stderr
    records = {record["name"]: record for record in json.loads(done.stdout)}
    assert records["demo"]["state"] == "ready"
    assert (records["brave"]["state"], records["brave"]["transport"]) == ("failed", None)
    assert "field 'command': must be a string" in records["brave"]["error"]


def test_strict_refuses_a_file_with_an_unusable_entry_in_one_line(cli: Runs) -> None:
    done = result(cli, "servers_host_with_problems_strict")
    assert_one_line_error(done, 2, "mcpServers.brave: field 'command': must be a string")
    assert "mcpServers.legacy: field 'type': must be" in done.stderr
    assert done.stdout == ""


def test_an_entry_with_several_problems_is_one_json_error(cli: Runs) -> None:
    done = result(cli, "servers_several_problems")
    [record] = json.loads(done.stdout)
    assert "\n" not in record["error"]
    assert record["error"].endswith(
        "mcpServers.demo: 2 problems: field 'timeout': must be greater than 0; "
        "field 'env': must be a map of names to strings, like {\"NAME\": \"value\"}"
    )


def test_an_entry_with_several_problems_is_one_line_with_strict(cli: Runs) -> None:
    done = result(cli, "servers_several_problems_strict")
    assert_one_line_error(done, 2, "mcpServers.demo: 2 problems: field 'timeout': must be greater than 0; ")


def test_config_warnings_are_shown_without_verbose(cli: Runs) -> None:
    done = result(cli, "servers_oauth_warning")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("mcp-sync: warning: ")
    assert "mcpServers.demo: ignoring 'authProviderType'" in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("command", ["login", "logout"])
def test_sign_in_commands_on_an_invalid_entry_exit_2_with_its_config_error(cli: Runs, command: str) -> None:
    done = result(cli, f"{command}_invalid_entry")
    assert_one_line_error(done, 2, "mcpServers.remote: field 'headers': must be a map of names to strings")
    assert done.stdout == ""


def test_sign_in_commands_name_a_server_the_file_does_not_have(cli: Runs) -> None:
    assert_one_line_error(result(cli, "logout_unknown_server"), 3, "no server named 'nowhere'")


def test_version_names_the_package_and_the_sdk(cli: Runs) -> None:
    done = result(cli, "version")
    assert done.returncode == 0
    assert done.stdout.startswith("mcp-sync 0.1.0 (mcp 2.")


def test_a_missing_config_file_exits_2(cli: Runs) -> None:
    assert_one_line_error(result(cli, "servers_missing_config"), 2, "cannot read the config file")


def test_arguments_that_are_not_json_exit_2(cli: Runs) -> None:
    assert_one_line_error(result(cli, "call_bad_json"), 2, "ARGUMENTS is not valid JSON")


def test_arguments_that_are_not_a_json_object_exit_2(cli: Runs) -> None:
    assert_one_line_error(result(cli, "call_json_not_object"), 2, "ARGUMENTS must be a JSON object")


def test_a_missing_command_is_a_usage_error(cli: Runs) -> None:
    done = result(cli, "no_command")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "usage: mcp-sync" in done.stderr


def test_an_unknown_tool_exits_3_and_suggests_the_public_name(cli: Runs) -> None:
    assert_one_line_error(
        result(cli, "call_unknown_tool"), 3, "unknown tool 'calculate'; did you mean mcp__demo__calculate?"
    )


def test_a_server_that_cannot_start_exits_3_and_shows_why(cli: Runs) -> None:
    done = result(cli, "servers_failing_server")
    assert done.returncode == 3
    assert "Traceback" not in done.stderr
    row = done.stdout.splitlines()[1]
    assert row.split()[:4] == ["broken", "stdio", "failed", "0"]
    assert "no-such-command-for-mcp-sync" in row


def test_calling_a_tool_of_a_failed_server_exits_3_saying_why(cli: Runs) -> None:
    done = result(cli, "call_failing_server")
    assert_one_line_error(done, 3, "unknown tool 'mcp__broken__anything'; server 'broken' is not ready: ")
    assert "no-such-command-for-mcp-sync" in done.stderr


def test_a_call_that_times_out_exits_4(cli: Runs) -> None:
    assert_one_line_error(
        result(cli, "call_timeout"), 4, "call to mcp__demo__sleep did not finish within 0.3 s"
    )


# -- resources and prompts --------------------------------------------------------------------------------


def test_resources_lists_resources_and_templates(cli: Runs) -> None:
    done = result(cli, "resources")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["URI", "SERVER", "TYPE", "DESCRIPTION"]
    assert any(line.startswith("demo://notes/training") and "text/markdown" in line for line in lines)
    assert any(line.startswith("demo://units/{dimension}") and "(template)" in line for line in lines)


def test_read_prints_a_resources_text(cli: Runs) -> None:
    done = result(cli, "read")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Training notes")


def test_read_json_of_a_templated_uri_names_the_server(cli: Runs) -> None:
    done = result(cli, "read_template_json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["server"] == "demo"
    assert record["contents"][0]["text"] == '["g", "kg", "oz", "lb"]'


def test_read_of_a_templated_uri_without_a_server_exits_3(cli: Runs) -> None:
    assert_one_line_error(
        result(cli, "read_unknown"), 3, "for a URI made from a resource template, pass --server NAME"
    )


def test_prompts_json_describes_the_arguments(cli: Runs) -> None:
    done = result(cli, "prompts_json")
    assert done.returncode == 0, done.stderr
    (prompt,) = json.loads(done.stdout)
    assert prompt["name"] == "mcp__demo__weekly_summary"
    assert [(a["name"], a["required"]) for a in prompt["arguments"]] == [("miles", True), ("runs", True)]


def test_prompt_prints_each_message_with_its_role(cli: Runs) -> None:
    done = result(cli, "prompt")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        "[user]",
        "I ran 20 miles over 4 runs this week. Summarise the week in two sentences.",
    ]


def test_an_unknown_prompt_exits_3(cli: Runs) -> None:
    assert_one_line_error(result(cli, "prompt_unknown"), 3, "unknown prompt 'mcp__demo__nothing'")


# -- meeting a new user where they are ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["resources", "prompts"])
def test_resources_and_prompts_exit_2_naming_an_invalid_entry(cli: Runs, command: str) -> None:
    done = result(cli, f"{command}_invalid_entry")
    assert_one_line_error(done, 2, "mixed.yaml: servers[1] (\"typo\"): unknown key 'colour'")
    assert "demo" in done.stdout  # the usable server was listed


def test_save_images_into_a_path_under_a_file_exits_2_before_the_call(cli: Runs) -> None:
    done = result(cli, "call_save_images_under_a_file")
    assert_one_line_error(done, 2, "--save-images: ")
    assert "broken.yaml/images cannot be created: " in done.stderr and "is not a directory" in done.stderr
    assert done.stdout == ""  # no result: the call was never made


def test_a_misspelt_tool_gets_the_did_you_mean_of_the_python_api(cli: Runs) -> None:
    assert_one_line_error(
        result(cli, "call_misspelt_tool"),
        3,
        "unknown tool 'mcp__demo__calculat'; did you mean mcp__demo__calculate?",
    )


def test_a_misspelt_prompt_gets_the_did_you_mean_of_the_python_api(cli: Runs) -> None:
    assert_one_line_error(
        result(cli, "prompt_misspelt"),
        3,
        "unknown prompt 'mcp__demo__weekly_sumary': did you mean mcp__demo__weekly_summary?",
    )


def test_the_server_table_shows_the_stderr_line_that_says_why(cli: Runs) -> None:
    done = result(cli, "servers_crashing_server")
    assert done.returncode == 3, done.stderr
    row = done.stdout.splitlines()[1]
    assert row.split()[:4] == ["db", "stdio", "failed", "0"]
    assert row.endswith("; its stderr says: RuntimeError: DATABASE_URL is not set"), row
