"""`mcp-sync` and long-running calls as MCP tasks, through the real entry point (`python -m mcp_sync`) as
subprocesses: `call` of a tool that runs as a task (its status messages as progress lines, Ctrl-C), and
`task start|show|result|cancel|list`, where a task started by one run is found again by a later one.

Two servers: the official reference server (2025-11-25 tasks) over stdio, and the tasks fixture server
(the 2026-07-28 tasks extension) over Streamable HTTP. Runs across processes use the fixture server: it
keeps its tasks for the whole server, where the reference server keeps them per session (a later run,
a new session, would not find them). The reference server runs on its fast clock (its research stages
take 0.1 s, see `ReferenceServers.everything_argv`), but for the Ctrl-C of a call: the signal must come
while the task runs, and the real clock's four seconds are that margin.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import (
    REPO_ROOT,
    SERVERS_DIR,
    HttpServer,
    ReferenceServers,
    cli_command,
    python_path,
    run_in_repo,
)
from tests.tasks_harness import EverythingHttp

RUN_TIMEOUT = 120.0
pytestmark = pytest.mark.timeout(RUN_TIMEOUT * 4)

RESEARCH = "mcp__ref__simulate-research-query"


def mcp_sync(*args: str) -> subprocess.CompletedProcess[str]:
    return run_in_repo(cli_command(*args), timeout=RUN_TIMEOUT)


def write_reference_config(folder: Path, command: list[str]) -> str:
    """A configuration file in `folder` with server-everything run by `command` over stdio, named `ref`."""
    path = folder / "reference.json"
    path.write_text(json.dumps({"mcpServers": {"ref": {"command": command[0], "args": command[1:]}}}))
    return str(path)


@pytest.fixture(scope="module")
def reference_config(reference_servers: ReferenceServers, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A configuration file with the official reference server over stdio on its fast clock, named `ref`."""
    return write_reference_config(
        tmp_path_factory.mktemp("cli-tasks"), reference_servers.everything_argv(fast=True)
    )


@pytest.fixture(scope="module")
def real_clock_reference_config(
    reference_servers: ReferenceServers, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """A configuration file with the official reference server over stdio on its real clock, named `ref`."""
    return write_reference_config(
        tmp_path_factory.mktemp("cli-tasks-real-clock"), reference_servers.everything_argv()
    )


@pytest.fixture(scope="module")
def tasks_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A configuration file with the tasks fixture server over Streamable HTTP, named `tasks`."""
    with HttpServer(script=SERVERS_DIR / "tasks_server.py") as server:
        path = tmp_path_factory.mktemp("cli-tasks-http") / "tasks.json"
        path.write_text(json.dumps({"mcpServers": {"tasks": {"type": "http", "url": server.url}}}))
        yield str(path)


@pytest.fixture(scope="module")
def reference_http_config(
    reference_servers: ReferenceServers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A configuration file with the official reference server over Streamable HTTP on its fast clock,
    named `ref`."""
    folder = tmp_path_factory.mktemp("cli-tasks-reference-http")
    with EverythingHttp(reference_servers, folder, fast=True) as server:
        path = folder / "reference-http.json"
        path.write_text(json.dumps({"mcpServers": {"ref": {"type": "http", "url": server.url}}}))
        yield str(path)


def records(config: str) -> dict[str, Any]:
    """What the tasks fixture server recorded: `runs`, `cancelled` task ids, `status` per task id."""
    done = mcp_sync("call", config, "mcp__tasks__records")
    assert done.returncode == 0, done.stderr
    recorded: dict[str, Any] = json.loads(done.stdout)
    return recorded


def start(config: str, tool: str, arguments: dict[str, Any]) -> str:
    """`task start`: the id it prints alone on stdout."""
    done = mcp_sync("task", "start", config, tool, json.dumps(arguments))
    assert done.returncode == 0, done.stderr
    task_id = done.stdout.strip()
    assert task_id and "\n" not in task_id, done.stdout
    return task_id


def show(config: str, task_id: str) -> dict[str, Any]:
    done = mcp_sync("task", "show", config, "tasks", task_id, "--json")
    assert done.returncode == 0, (done.stdout, done.stderr)
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


def popen(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PATH=python_path(os.environ.get("PATH", "")))
    return subprocess.Popen(
        cli_command(*args),
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def interrupt_at_first_progress(process: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGINT once the run printed its first progress line (the task runs on the server); its output."""
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert first.startswith("mcp-sync: progress "), first
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=RUN_TIMEOUT)
    finally:
        process.kill()
        process.wait(timeout=10)
    return out, first + err


def progress_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("mcp-sync: progress ")]


# -- call ------------------------------------------------------------------------------------------------


def test_call_runs_a_tool_that_requires_a_task_and_prints_its_result(reference_config: str) -> None:
    done = mcp_sync("call", reference_config, RESEARCH, '{"topic": "tides"}')
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Research Report: tides"), done.stdout


def test_call_shows_each_status_message_of_a_task_as_a_progress_line(tasks_config: str) -> None:
    # `lockstep`: a stage ends only once a poll has seen it, so every status message is shown, in order;
    # the message of the last stage stays with the completed task.
    done = mcp_sync("call", tasks_config, "mcp__tasks__stages", '{"count": 3, "delay": 0, "lockstep": true}')
    assert done.returncode == 0, done.stderr
    messages = [line.partition(": ")[2].partition(": ")[2] for line in progress_lines(done.stderr)]
    stages = [message for message in messages if message.startswith("stage ")]
    assert stages == ["stage 1 of 3", "stage 2 of 3", "stage 3 of 3"], done.stderr
    assert messages[-1] == "all stages done", done.stderr


def test_call_json_of_a_task_prints_only_the_result_object(tasks_config: str) -> None:
    tool = "mcp__tasks__stages"
    done = mcp_sync("call", tasks_config, tool, '{"count": 2, "delay": 0, "tag": "json-call"}', "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (record["tool"], record["is_error"], record["text"]) == (tool, False, "done 2 stages json-call")
    assert done.stderr == ""


def test_call_of_a_task_that_times_out_exits_4(tasks_config: str) -> None:
    arguments = '{"count": 200, "delay": 0.5, "tag": "timeout"}'
    done = mcp_sync("call", tasks_config, "mcp__tasks__stages", arguments, "--timeout", "0.5")
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


def test_ctrl_c_during_a_task_call_exits_130(real_clock_reference_config: str) -> None:
    process = popen("call", real_clock_reference_config, RESEARCH, '{"topic": "tides"}')
    out, err = interrupt_at_first_progress(process)
    assert process.returncode == 130, (out, err)
    assert "interrupted" in err and "Traceback" not in err
    assert out == ""


def test_ctrl_c_during_a_task_call_cancels_the_task_on_the_server(tasks_config: str) -> None:
    process = popen(
        "call", tasks_config, "mcp__tasks__stages", '{"count": 200, "delay": 0.5, "tag": "ctrl-c"}'
    )
    out, err = interrupt_at_first_progress(process)
    assert process.returncode == 130, (out, err)
    recorded = records(tasks_config)
    assert any(recorded["status"].get(task_id) == "cancelled" for task_id in recorded["cancelled"]), recorded


# -- task ... --------------------------------------------------------------------------------------------


def test_task_show_of_an_unknown_server_exits_3_naming_the_servers(reference_config: str) -> None:
    done = mcp_sync("task", "show", reference_config, "nowhere", "some-id")
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "no server named 'nowhere' (servers: ref)" in done.stderr


def test_task_show_of_an_unknown_task_exits_3(reference_config: str) -> None:
    done = mcp_sync("task", "show", reference_config, "ref", "no-such-task", "--json")
    assert done.returncode == 3, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "not_found" and "no-such-task" in error["message"]


def test_task_start_prints_the_id_of_a_task_that_task_list_then_shows(reference_config: str) -> None:
    # Over stdio the server ends with the run: `start` and `list` of one server need one run, so this
    # checks what `start` prints, and `list` on a server of a run of its own.
    started = mcp_sync("task", "start", reference_config, RESEARCH, '{"topic": "tides"}', "--json")
    assert started.returncode == 0, started.stderr
    record = json.loads(started.stdout)
    assert record["server"] == "ref" and record["tool"] == RESEARCH
    assert record["status"] == "working" and record["task_id"]
    listed = mcp_sync("task", "list", reference_config, "ref", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def test_a_task_started_by_one_run_is_shown_and_its_result_fetched_by_later_runs(tasks_config: str) -> None:
    task_id = start(tasks_config, "mcp__tasks__stages", {"count": 3, "delay": 0.3, "tag": "later"})
    assert show(tasks_config, task_id)["status"] in ("working", "completed")
    done = mcp_sync("task", "result", tasks_config, "tasks", task_id, "--timeout", "60")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done 3 stages later"
    shown = show(tasks_config, task_id)
    assert (shown["server"], shown["task_id"], shown["status"]) == ("tasks", task_id, "completed")


def test_task_start_of_a_tool_the_server_answers_at_once_prints_its_result(tasks_config: str) -> None:
    # A 2026-07-28 server decides per call: `records` is answered at once, with no task.
    done = mcp_sync("task", "start", tasks_config, "mcp__tasks__records")
    assert done.returncode == 0, done.stderr
    assert "runs" in json.loads(done.stdout)
    assert "no task was started" in done.stderr and "started task" not in done.stderr


def test_task_result_json_names_the_server_and_the_task(tasks_config: str) -> None:
    task_id = start(tasks_config, "mcp__tasks__stages", {"count": 1, "delay": 0.1, "tag": "json"})
    done = mcp_sync("task", "result", tasks_config, "tasks", task_id, "--timeout", "60", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (record["server"], record["task_id"], record["is_error"]) == ("tasks", task_id, False)
    assert record["text"] == "done 1 stages json"


def test_task_result_that_times_out_exits_4_and_the_task_keeps_running(tasks_config: str) -> None:
    task_id = start(tasks_config, "mcp__tasks__stages", {"count": 200, "delay": 0.5, "tag": "slow"})
    done = mcp_sync("task", "result", tasks_config, "tasks", task_id, "--timeout", "0.5")
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert "the task keeps running on server 'tasks'" in done.stderr
    assert show(tasks_config, task_id)["status"] == "working"
    mcp_sync("task", "cancel", tasks_config, "tasks", task_id)


def test_task_cancel_cancels_the_task_on_the_server(tasks_config: str) -> None:
    task_id = start(tasks_config, "mcp__tasks__stages", {"count": 200, "delay": 0.5, "tag": "cancel"})
    done = mcp_sync("task", "cancel", tasks_config, "tasks", task_id, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "cancelled"
    assert task_id in records(tasks_config)["cancelled"]


def test_task_result_of_a_cancelled_task_exits_4(tasks_config: str) -> None:
    task_id = start(tasks_config, "mcp__tasks__stages", {"count": 200, "delay": 0.5, "tag": "gone"})
    assert mcp_sync("task", "cancel", tasks_config, "tasks", task_id).returncode == 0
    done = mcp_sync("task", "result", tasks_config, "tasks", task_id, "--json")
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["error"]["type"] == "cancelled"


def test_task_list_where_the_protocol_has_no_listing_exits_4(tasks_config: str) -> None:
    done = mcp_sync("task", "list", tasks_config, "tasks")
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


def test_a_reference_server_task_is_started_over_http_and_unknown_to_a_later_run(
    reference_http_config: str,
) -> None:
    # server-everything keeps each task in its MCP session's store: a later run is a new session.
    started = mcp_sync("task", "start", reference_http_config, RESEARCH, '{"topic": "tides"}')
    assert started.returncode == 0, started.stderr
    task_id = started.stdout.strip()
    done = mcp_sync("task", "show", reference_http_config, "ref", task_id, "--json")
    assert done.returncode == 3, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "not_found" and task_id in error["message"]


def test_call_runs_a_reference_server_task_over_http(reference_http_config: str) -> None:
    done = mcp_sync("call", reference_http_config, RESEARCH, '{"topic": "tides"}')
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Research Report: tides")
    assert progress_lines(done.stderr), done.stderr


def test_task_start_on_a_stdio_server_says_the_task_ends_with_the_run(reference_config: str) -> None:
    done = mcp_sync("task", "start", reference_config, RESEARCH, '{"topic": "tides"}')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and "\n" not in done.stdout.strip()
    assert "runs over stdio: it stops at the end of this run, and the task with it" in done.stderr


def test_call_task_of_a_tool_that_cannot_run_as_a_task_exits_4_naming_it(reference_config: str) -> None:
    done = mcp_sync("call", reference_config, "mcp__ref__echo", '{"message": "hi"}', "--task", "--json")
    assert done.returncode == 4, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "call_failed" and "mcp__ref__echo" in error["message"]


def test_a_task_id_that_begins_with_a_dash_is_read_after_a_double_dash() -> None:
    from mcp_sync._cli.parser import build_parser

    for action in ("show", "result", "cancel"):
        args = build_parser().parse_args(["task", action, "ev", "--", "-5f3a"])
        assert (args.server, args.task_id) == ("ev", "-5f3a")


def test_task_cancel_the_server_refuses_exits_4_with_its_reason_and_the_task_runs_on(
    tasks_config: str,
) -> None:
    task_id = start(tasks_config, "mcp__tasks__stages", {"count": 200, "delay": 0.5, "tag": "committing"})
    done = mcp_sync("task", "cancel", tasks_config, "tasks", task_id)
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert f"server 'tasks' refused to cancel task '{task_id}': cannot cancel: committing" in done.stderr
    assert "Traceback" not in done.stderr
    assert show(tasks_config, task_id)["status"] == "working"
    assert task_id not in records(tasks_config)["cancelled"]
