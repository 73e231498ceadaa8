"""A person approves each call of a tool whose configuration says so (`require_approval`, `tool_approval`,
Codex's approval modes): the hub's `approve` callback is asked before the call is sent, a call nobody could
ask about or that was refused never reaches the server, and tools without the policy never ask."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import (
    ConfigError,
    MCPHub,
    Tool,
    ToolApprovalDeniedError,
    ToolApprovalError,
    ToolApprovalRequiredError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
    load_config_entries,
    parse_server_entries,
    terminal_approval,
)
from tests.support import (
    REPO_ROOT,
    SERVERS_DIR,
    EventLog,
    HttpServer,
    Records,
    cli_command,
    http_config,
    python_path,
    run_in_repo,
    stdio_config,
)

SECRET_ARGUMENT = "arg-Vt52-shown-to-the-approver-only"


class Approver:
    """An `approve` callback that records what it was asked and answers from a list (default: yes)."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[Tool, dict[str, Any]]] = []

    def __call__(self, tool: Tool, arguments: Mapping[str, Any]) -> object:
        self.asked.append((tool, dict(arguments)))
        return self.answers.pop(0) if self.answers else True


def started_events(events: EventLog) -> list[dict[str, Any]]:
    return [event for event in events.events() if event.get("event") == "started"]


# --------------------------------------------------------------------------- the configuration


def test_approval_settings_take_snake_and_camel_keys_and_booleans() -> None:
    entries = [
        {"server_name": "a", "command": "x", "require_approval": "always"},
        {"serverName": "b", "command": "x", "requireApproval": True, "toolApproval": {"read": False}},
        {"server_name": "c", "command": "x", "tool_approval": {"delete": "writes"}},
    ]

    a, b, c = parse_server_entries(entries, strict=True).configs

    assert (a.require_approval, b.require_approval, c.require_approval) == ("always", "always", "never")
    assert dict(b.tool_approval) == {"read": "never"} and dict(c.tool_approval) == {"delete": "writes"}
    assert hash(b) == hash(
        parse_server_entries([entries[1]], strict=True).configs[0]
    )  # reload() diffs hashable configs


def test_an_unknown_approval_mode_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"'tool_approval.delete': must be 'never', 'always' or 'writes'"):
        parse_server_entries(
            [{"server_name": "a", "command": "x", "tool_approval": {"delete": "ask"}}], strict=True
        )


def test_a_tool_setting_by_raw_or_public_name_wins_over_the_server_default() -> None:
    [config] = parse_server_entries(
        [
            {
                "server_name": "fs",
                "command": "x",
                "require_approval": "always",
                "tool_approval": {"read_file": "never", "mcp__fs__list": "never", "stat": "writes"},
            }
        ],
        strict=True,
    ).configs

    assert not config.approval_required("read_file", read_only=False)
    assert not config.approval_required("list", read_only=False)
    assert config.approval_required("write_file", read_only=True)
    assert not config.approval_required("stat", read_only=True)
    assert config.approval_required("stat", read_only=False)


CODEX_CONFIG = """\
[mcp_servers.fs]
command = "npx"
default_tools_approval_mode = "prompt"

[mcp_servers.fs.tools.read_file]
approval_mode = "approve"

[mcp_servers.fs.tools.search]
approval_mode = "auto"

[mcp_servers.fs.tools.list]
output_token_limit = 8000

[mcp_servers.docs]
command = "docs-mcp"
default_tools_approval_mode = "writes"

[mcp_servers.gh]
command = "gh-mcp"
default_tools_approval_mode = "auto"

[mcp_servers.mail.tools.send]
approval_mode = "prompt"

[mcp_servers.mail]
command = "mail-mcp"

[mcp_servers.typo]
command = "x"
default_tools_approval_mode = "ask"
"""


def test_codex_approval_modes_become_the_tools_policy(tmp_path: Path) -> None:
    """codex-rs/config/src/mcp_types.rs (`AppToolApproval`: auto, prompt, approve; writes) and
    codex-rs/core/src/mcp_tool_call.rs (`requires_mcp_tool_approval_for_mode`)."""
    path = tmp_path / "config.toml"
    path.write_text(CODEX_CONFIG)

    entries = load_config_entries(path)
    configs = {config.server_name: config for config in entries.configs}

    assert configs["fs"].require_approval == "always"
    assert dict(configs["fs"].tool_approval) == {"read_file": "never", "search": "writes"}
    assert configs["docs"].require_approval == "writes"
    assert (configs["gh"].require_approval, dict(configs["gh"].tool_approval)) == ("never", {})
    assert dict(configs["mail"].tool_approval) == {"send": "always"}
    [typo] = entries.invalid
    assert "default_tools_approval_mode" in str(typo.error) and "'prompt'" in str(typo.error)


# --------------------------------------------------------------------------- calls


def test_a_tool_that_asks_first_is_refused_without_an_approve_callback_and_never_reaches_the_server(
    events: EventLog,
) -> None:
    config = stdio_config("fx", events=events, tool_approval={"sleep": "always"})
    with MCPHub([config]) as hub:
        assert hub.registry.get("mcp__fx__sleep").requires_approval  # type: ignore[union-attr]
        with pytest.raises(ToolApprovalRequiredError) as refused:
            hub.call_tool("mcp__fx__sleep", {"seconds": 0, "tag": "t"})
        assert hub.call_tool("mcp__fx__echo", {"text": "after"}).text == "after"

    assert isinstance(refused.value, ToolCallError) and refused.value.tool == "mcp__fx__sleep"
    assert "approve" in str(refused.value) and "'fx'" in str(refused.value)
    assert started_events(events) == []


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_the_approver_sees_the_tool_and_arguments_and_its_yes_runs_the_call(era: str) -> None:
    approver = Approver(True)
    with MCPHub([stdio_config("fx", "--era", era, require_approval=True)], approve=approver) as hub:
        result = hub.call_tool("mcp__fx__echo", {"text": "hello"})

    assert result.text == "hello"
    [(tool, arguments)] = approver.asked
    assert (tool.name, tool.server_name, tool.raw_name, arguments) == (
        "mcp__fx__echo",
        "fx",
        "echo",
        {"text": "hello"},
    )


def test_a_denied_call_never_runs_and_a_later_approved_call_does(events: EventLog) -> None:
    approver = Approver(False, "yes", True)  # only True runs a call
    config = stdio_config("fx", events=events, require_approval="always")
    with MCPHub([config], approve=approver) as hub:
        for _ in range(2):
            with pytest.raises(ToolApprovalDeniedError, match="refused"):
                hub.call_tool("mcp__fx__sleep", {"seconds": 0, "tag": "denied"})
        hub.call_tool("mcp__fx__sleep", {"seconds": 0, "tag": "approved"})

    assert [event["tag"] for event in started_events(events)] == ["approved"]


def test_an_approver_that_raises_refuses_the_call_with_its_exception_as_the_cause() -> None:
    def broken(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        raise RuntimeError("no terminal")

    config = stdio_config("fx", require_approval=True)
    with MCPHub([config], approve=broken) as hub, pytest.raises(ToolApprovalDeniedError) as refused:
        hub.call_tool("mcp__fx__echo", {"text": "x"})

    assert "raised RuntimeError" in str(refused.value)

    assert isinstance(refused.value.__cause__, RuntimeError)


def test_an_approver_that_calls_a_tool_that_asks_first_is_asked_again_not_deadlocked() -> None:
    asked: list[str] = []
    hubs: list[MCPHub] = []

    def approve(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        asked.append(tool.name)
        if tool.raw_name == "add":  # looks something up before saying yes
            return hubs[0].call_tool("mcp__fx__echo", {"text": "lookup"}).text == "lookup"
        return True

    with MCPHub([stdio_config("fx", require_approval=True)], approve=approve) as hub:
        hubs.append(hub)
        assert hub.call_tool("mcp__fx__add", {"a": 1, "b": 2}).text == "3"

    assert asked == ["mcp__fx__add", "mcp__fx__echo"]


def test_writes_asks_only_for_tools_the_server_does_not_mark_read_only() -> None:
    approver = Approver()
    with MCPHub([stdio_config("fx", require_approval="writes")], approve=approver) as hub:
        assert not hub.registry.get("mcp__fx__echo").requires_approval  # type: ignore[union-attr]
        hub.call_tool("mcp__fx__echo", {"text": "read-only"})
        hub.call_tool("mcp__fx__add", {"a": 1, "b": 2})

    assert [tool.raw_name for tool, _ in approver.asked] == ["add"]


def test_tools_without_the_policy_never_ask() -> None:
    def never(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        raise AssertionError(f"asked about {tool.name}")

    with MCPHub([stdio_config("fx")], approve=never) as hub:
        assert not [tool for tool in hub.tools() if tool.requires_approval]
        assert hub.call_tool("mcp__fx__echo", {"text": "plain"}).text == "plain"


def test_submit_and_start_task_ask_first_too(events: EventLog) -> None:
    approver = Approver(False, True)
    with MCPHub([stdio_config("fx", events=events, require_approval=True)], approve=approver) as hub:
        with pytest.raises(ToolApprovalDeniedError):
            hub.submit("mcp__fx__sleep", {"seconds": 0, "tag": "submitted"})
        assert hub.submit("mcp__fx__echo", {"text": "ok"}).result(timeout=30).text == "ok"
    tasks = stdio_config("tk", script=SERVERS_DIR / "tasks_server.py", require_approval=True)
    with MCPHub([tasks]) as hub:
        assert hub.registry.get("mcp__tk__maybe_task").task_support == "optional"  # type: ignore[union-attr]
        with pytest.raises(ToolApprovalError):
            hub.start_task("mcp__tk__maybe_task", {"text": "x"})

    assert started_events(events) == []


def test_call_tool_safe_tells_the_model_the_call_was_not_approved() -> None:
    with MCPHub([stdio_config("fx", require_approval=True)], approve=Approver(False)) as hub:
        denied = hub.call_tool_safe("mcp__fx__echo", {"text": "x"})
    with MCPHub([stdio_config("fx", require_approval=True)]) as hub:
        unasked = hub.call_tool_safe("mcp__fx__echo", {"text": "x"})

    assert denied.is_error and "said no" in denied.text
    assert unasked.is_error and "needs a person's approval" in unasked.text


def test_the_arguments_reach_the_approver_but_no_log_record_or_error(records: Records) -> None:
    approver = Approver(False)
    config = stdio_config("fx", require_approval=True)
    with MCPHub([config], approve=approver) as hub, pytest.raises(ToolApprovalDeniedError) as refused:
        hub.call_tool("mcp__fx__echo", {"text": SECRET_ARGUMENT})
    with MCPHub([config]) as hub, pytest.raises(ToolApprovalRequiredError) as unasked:
        hub.call_tool("mcp__fx__echo", {"text": SECRET_ARGUMENT})

    assert approver.asked[0][1] == {"text": SECRET_ARGUMENT}
    assert SECRET_ARGUMENT not in str(refused.value) + str(unasked.value)
    assert not [text for _, text in records.lines if SECRET_ARGUMENT in text]


def test_an_http_server_tool_asks_first_too(http_server: Any) -> None:
    server: HttpServer = http_server()
    approver = Approver(False, True)
    with MCPHub([http_config("web", server.url, require_approval=True)], approve=approver) as hub:
        with pytest.raises(ToolApprovalDeniedError):
            hub.call_tool("mcp__web__echo", {"text": "x"})
        assert hub.call_tool("mcp__web__echo", {"text": "y"}).text == "y"


def test_a_reload_that_sets_the_policy_makes_the_tool_ask() -> None:
    approver = Approver()
    with MCPHub([stdio_config("fx")], approve=approver) as hub:
        hub.call_tool("mcp__fx__echo", {"text": "before"})
        hub.reload([stdio_config("fx", tool_approval={"echo": "always"})])
        assert hub.call_tool("mcp__fx__echo", {"text": "after"}).text == "after"

    assert [arguments for _, arguments in approver.asked] == [{"text": "after"}]


def test_the_langchain_adapter_inherits_the_approval() -> None:
    from mcp_sync.integrations.langchain import langchain_tool

    approver = Approver(False, True)
    with MCPHub([stdio_config("fx", require_approval=True)], approve=approver) as hub:
        tool = langchain_tool(hub, "mcp__fx__echo")
        refused = tool.invoke({"text": "first"})
        allowed = tool.invoke({"text": "second"})

    assert "said no" in json.dumps(refused)
    assert allowed == "second" or "second" in json.dumps(allowed)
    assert [arguments for _, arguments in approver.asked] == [{"text": "first"}, {"text": "second"}]


# --------------------------------------------------------------------------- the terminal prompt


def test_terminal_approval_runs_the_call_only_on_yes_and_shows_escapes_as_text() -> None:
    tool = Tool("mcp__fx__rm", None, {}, server_name="fx", raw_name="rm", requires_approval=True)
    shown: list[str] = []

    def answering(answer: str | None) -> Any:
        def ask(question: str) -> str:
            shown.append(question)
            if answer is None:
                raise EOFError
            return answer

        return terminal_approval(ask)

    assert answering("y")(tool, {"path": "\x1b[2J/etc"}) is True
    assert answering(" YES ")(tool, {}) is True
    assert answering("")(tool, {}) is False
    assert answering("n")(tool, {}) is False
    assert answering(None)(tool, {}) is False
    assert "\x1b" not in shown[0] and "mcp__fx__rm" in shown[0] and "[y/N]" in shown[0]


# --------------------------------------------------------------------------- the command line


def approval_file(tmp_path: Path) -> Path:
    [entry] = [stdio_config("fx")]
    server = {"command": entry["command"], "args": entry["args"], "toolApproval": {"echo": "always"}}
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"fx": server}}))
    return path


def test_mcp_sync_call_refuses_a_tool_that_asks_first_when_stdin_is_not_a_terminal(tmp_path: Path) -> None:
    path = approval_file(tmp_path)
    argv = cli_command("call", str(path), "mcp__fx__echo", '{"text": "x"}')

    plain = run_in_repo(argv, timeout=120)
    as_json = run_in_repo([*argv, "--json"], timeout=120)

    assert plain.returncode == 4 and plain.stdout == ""
    assert "waits for a person's approval" in plain.stderr and "not a terminal" in plain.stderr
    assert json.loads(as_json.stdout)["error"]["type"] == "not_approved"


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")
@pytest.mark.parametrize(("answer", "code"), [("y\n", 0), ("n\n", 4)])
def test_mcp_sync_call_asks_on_a_terminal_and_runs_the_tool_only_on_yes(
    tmp_path: Path, answer: str, code: int
) -> None:
    import os
    import pty
    import subprocess

    path = approval_file(tmp_path)
    argv = cli_command("call", str(path), "mcp__fx__echo", '{"text": "hello"}')
    controller, terminal = pty.openpty()
    os.write(controller, answer.encode())  # typed ahead: read when the question is asked
    try:
        run = subprocess.run(
            argv,
            cwd=REPO_ROOT,
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PATH": python_path(os.environ.get("PATH", ""))},
        )
    finally:
        os.close(terminal)
        os.close(controller)

    assert run.returncode == code, run.stderr
    assert "mcp__fx__echo" in run.stderr and "[y/N]" in run.stderr and '"text": "hello"' in run.stderr
    assert run.stdout == ("hello\n" if code == 0 else "")


def test_a_tool_approval_that_names_no_tool_is_warned_about(records: Records) -> None:
    config = stdio_config("fx", tool_approval={"ecko": "always", "mcp__fx__add": "always"})
    with MCPHub([config]) as hub:
        assert hub.registry.get("mcp__fx__add").requires_approval  # type: ignore[union-attr]

    [warning] = [text for name, text in records.lines if "name no tool" in text]
    assert "the server offers: 'ecko';" in warning  # the public name is a name it takes


def test_the_langchain_adapter_asks_off_the_event_loop_when_called_asynchronously() -> None:
    import asyncio
    import threading

    from mcp_sync.integrations.langchain import langchain_tool

    threads: list[str] = []

    def approve(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        threads.append(threading.current_thread().name)
        return True

    async def main(hub: MCPHub) -> Any:
        threads.append(threading.current_thread().name)
        return await langchain_tool(hub, "mcp__fx__echo").ainvoke({"text": "async"})

    with MCPHub([stdio_config("fx", require_approval=True)], approve=approve) as hub:
        result = asyncio.run(main(hub))

    assert "async" in json.dumps(result)
    loop_thread, approver_thread = threads
    assert approver_thread != loop_thread


def test_mcp_sync_tools_json_says_which_tools_ask_first(tmp_path: Path) -> None:
    path = approval_file(tmp_path)
    done = run_in_repo(cli_command("tools", str(path), "--json"), timeout=120)

    asking = {tool["name"] for tool in json.loads(done.stdout) if tool["requires_approval"]}
    assert done.returncode == 0 and asking == {"mcp__fx__echo"}


def test_a_call_that_cannot_be_made_is_refused_before_anyone_is_asked() -> None:
    approver = Approver()
    with MCPHub([stdio_config("fx", require_approval=True)], approve=approver) as hub:
        with pytest.raises(ValueError, match="timeout"):
            hub.call_tool("mcp__fx__echo", {"text": "x"}, timeout=0)
        with pytest.raises(ValueError, match="timeout"):
            hub.submit("mcp__fx__echo", {"text": "x"}, timeout=-1)

    assert approver.asked == []


def test_with_a_shared_registry_each_hub_asks_with_its_own_callback() -> None:
    from mcp_sync import ToolRegistry

    registry = ToolRegistry()
    approver = Approver()
    with (
        MCPHub([stdio_config("fx", require_approval=True)], registry=registry, approve=approver) as asking,
        MCPHub([stdio_config("plain")], registry=registry) as other,
    ):
        with pytest.raises(ToolApprovalRequiredError):
            other.call_tool("mcp__fx__echo", {"text": "from the other hub"})
        assert asking.call_tool("mcp__fx__echo", {"text": "asked"}).text == "asked"
        assert other.call_tool("mcp__plain__echo", {"text": "plain"}).text == "plain"

    assert [arguments for _, arguments in approver.asked] == [{"text": "asked"}]


# --------------------------------------------------------------------------- what is asked is what is sent


def call_arguments(events: EventLog, tool: str) -> list[Any]:
    return [
        e["arguments"] for e in events.events() if e.get("event") == "call_arguments" and e["tool"] == tool
    ]


def test_the_server_gets_exactly_the_arguments_the_approver_saw_whoever_changes_them_meanwhile(
    events: EventLog,
) -> None:
    original = {"seconds": 0, "tag": "frozen", "argv": ["ls", "/tmp"], "env": {"A": "1"}}
    seen: list[str] = []

    def approve(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        seen.append(json.dumps(arguments))  # a plain JSON value, as a logger or a UI would show it
        original["argv"].append("caller-edit")  # type: ignore[attr-defined]  # the caller, meanwhile
        arguments["argv"].append("approver-edit")
        arguments["env"]["A"] = "2"
        return True

    with MCPHub([stdio_config("fx", events=events, require_approval=True)], approve=approve) as hub:
        hub.call_tool("mcp__fx__sleep", original)
        hub.submit("mcp__fx__sleep", original).result(timeout=30)

    asked = {"seconds": 0, "tag": "frozen", "argv": ["ls", "/tmp"], "env": {"A": "1"}}
    assert json.loads(seen[0]) == asked
    assert call_arguments(events, "sleep")[0] == asked


def test_arguments_a_plain_call_would_refuse_are_refused_the_same_before_anyone_is_asked() -> None:
    approver = Approver()
    config = stdio_config("ask", require_approval=True)
    with MCPHub([config, stdio_config("plain")], approve=approver) as hub:
        for arguments in ({1: "x"}, "text", [("text", "x")], {"text": object()}):
            with pytest.raises(Exception) as asking:  # the same as the plain tool's, below
                hub.call_tool("mcp__ask__echo", arguments)  # type: ignore[arg-type]
            with pytest.raises(Exception) as plain:
                hub.call_tool("mcp__plain__echo", arguments)  # type: ignore[arg-type]
            assert type(asking.value) is type(plain.value)
            assert str(asking.value).replace("ask", "plain") == str(plain.value)

    assert approver.asked == []


def test_an_async_approver_is_refused_when_the_hub_is_made() -> None:
    async def approve(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        return True

    class AsyncApprover:
        async def __call__(self, tool: Tool, arguments: Mapping[str, Any]) -> bool:
            return True

    for approver in (approve, AsyncApprover()):
        with pytest.raises(TypeError, match="async"):
            MCPHub([stdio_config("fx", require_approval=True)], approve=approver)


# --------------------------------------------------------------------------- cancel and timeout while asking


def test_a_cancel_set_or_a_timeout_run_out_while_asking_stops_the_call_before_it_is_sent(
    events: EventLog,
) -> None:
    cancel = threading.Event()

    def approve(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        if tool.raw_name != "sleep":
            return True
        if arguments["tag"] == "cancelled":
            cancel.set()  # the caller gave up while the person thought
        else:
            time.sleep(0.2)  # the person answers after the call's time ran out
        return True

    with MCPHub([stdio_config("fx", events=events, require_approval=True)], approve=approve) as hub:
        with pytest.raises(ToolCallCancelledError, match="not sent"):
            hub.call_tool("mcp__fx__sleep", {"seconds": 0, "tag": "cancelled"}, cancel=cancel)
        with pytest.raises(ToolCallTimeoutError, match="not sent"):
            hub.call_tool("mcp__fx__sleep", {"seconds": 0, "tag": "late"}, timeout=0.1)
        with pytest.raises(ToolCallTimeoutError, match="not sent"):
            hub.submit("mcp__fx__sleep", {"seconds": 0, "tag": "late"}, timeout=0.1)
        assert hub.call_tool("mcp__fx__echo", {"text": "after"}).text == "after"

    assert call_arguments(events, "sleep") == [] and started_events(events) == []


def test_an_async_call_cancelled_while_asking_is_not_sent_when_the_person_says_yes(events: EventLog) -> None:
    from mcp_sync.integrations._common import acall

    asked = threading.Event()
    answer = threading.Event()
    cancel = threading.Event()

    def approve(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        asked.set()
        return answer.wait(30)

    async def cancelled_while_asking(hub: MCPHub, tag: str, by_event: bool) -> None:
        call = asyncio.ensure_future(
            acall(hub, "mcp__fx__sleep", {"seconds": 0, "tag": tag}, timeout=None, cancel=cancel)
        )
        await asyncio.to_thread(asked.wait, 30)
        if by_event:
            cancel.set()
            with pytest.raises(ToolCallCancelledError, match="not sent"):
                await call
        else:
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
        answer.set()  # the yes comes after the caller has gone; asyncio.run waits for the asking thread

    with MCPHub([stdio_config("fx", events=events, require_approval=True)], approve=approve) as hub:
        asyncio.run(cancelled_while_asking(hub, "task-cancelled", by_event=False))
        asked.clear()
        answer.clear()
        asyncio.run(cancelled_while_asking(hub, "event-set", by_event=True))
        assert hub.call_tool("mcp__fx__echo", {"text": "after"}).text == "after"

    assert call_arguments(events, "sleep") == []


# --------------------------------------------------------------------------- no lock across the question


def test_two_calls_are_asked_at_the_same_time_not_one_after_the_other() -> None:
    both_asked = threading.Barrier(2, timeout=30)

    def approve(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        both_asked.wait()  # each question waits until the other is asked too
        return True

    with (
        MCPHub([stdio_config("fx", require_approval=True)], approve=approve) as hub,
        concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="mcp-sync:test") as pool,
    ):
        results = list(pool.map(lambda text: hub.call_tool("mcp__fx__echo", {"text": text}).text, "ab"))

    assert results == ["a", "b"]


def test_an_approver_that_calls_an_asking_tool_through_an_async_adapter_is_not_deadlocked() -> None:
    from mcp_sync.integrations._common import acall

    asked: list[str] = []
    hubs: list[MCPHub] = []

    def approve(tool: Tool, arguments: Mapping[str, Any]) -> bool:
        asked.append(tool.name)
        if tool.raw_name == "add":  # asked again on the adapter's worker thread
            lookup = asyncio.run(acall(hubs[0], "mcp__fx__echo", {"text": "lookup"}, timeout=30, cancel=None))
            return lookup.text == "lookup"
        return True

    with MCPHub([stdio_config("fx", require_approval=True)], approve=approve) as hub:
        hubs.append(hub)
        assert hub.call_tool("mcp__fx__add", {"a": 1, "b": 2}, timeout=30).text == "3"

    assert asked == ["mcp__fx__add", "mcp__fx__echo"]
