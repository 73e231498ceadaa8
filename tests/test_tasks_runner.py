"""The task runner's loop over a scripted wire: what no real server can be made to produce on demand
(any sequence of statuses and messages, poll intervals of zero or an hour, a server that answers
`tasks/cancel` late or never)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError

from mcp_sync import (
    ConfigError,
    MCPHub,
    MCPSyncError,
    TaskCancelRefusedError,
    TaskInfo,
    TaskNotFoundError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
    UnsupportedFeatureError,
)
from mcp_sync._server.tasks import runner
from mcp_sync._server.tasks.legacy import LegacyTaskWire, task_info
from tests.hub_harness import started_hub
from tests.support import SERVERS_DIR, wait_until

_RESULT = types.CallToolResult(content=[types.TextContent(type="text", text="done")])


class ScriptedWire:
    """A wire whose `tasks/get` answers follow a script; records every request."""

    input_brings_result = False

    def __init__(self, script: list[TaskInfo], cancel_delay: float = 0.0) -> None:
        self.script = list(script)
        self.requests: list[str] = []
        self.cancel_delay = cancel_delay

    async def start(self, client: Any, raw_name: str, arguments: dict[str, Any], **_: Any) -> TaskInfo:
        self.requests.append("tools/call")
        return self.script.pop(0)

    async def get(self, client: Any, task_id: str) -> TaskInfo:
        self.requests.append("tasks/get")
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    async def answer_input(
        self, client: Any, task_id: str, info: TaskInfo, given: dict[str, Any] | None = None
    ) -> types.CallToolResult | None:
        self.requests.append("answer_input")
        return None

    async def outcome(self, client: Any, task_id: str, info: TaskInfo) -> types.CallToolResult:
        self.requests.append("tasks/result")
        return _RESULT

    async def cancel(self, client: Any, task_id: str) -> TaskInfo:
        self.requests.append("tasks/cancel")
        await asyncio.sleep(self.cancel_delay)
        return TaskInfo("srv", task_id, "cancelled")

    async def list(self, client: Any) -> list[TaskInfo]:
        return []


def _info(status: str, message: str | None, poll: float | None = 0.0) -> TaskInfo:
    return TaskInfo("srv", "t1", status, message, poll_interval=poll)  # type: ignore[arg-type]


messages = st.sampled_from([None, "a", "b", "c"])
working = st.builds(_info, st.sampled_from(["working", "input_required"]), messages)


@settings(max_examples=25, deadline=None)
@given(
    steps=st.lists(working, max_size=5),
    end=st.sampled_from(["completed", "failed", "cancelled"]),
    last=messages,
)
def test_the_runner_reports_each_new_message_once_and_calls_the_tool_once(
    steps: list[TaskInfo], end: str, last: str | None
) -> None:
    script = [*steps, _info(end, last)] if steps else [_info("working", None), _info(end, last)]
    wire = ScriptedWire(script)
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    async def run() -> types.CallToolResult:
        return await runner.run_task(wire, None, "tool", {}, label="mcp__srv__tool", progress=progress)  # type: ignore[arg-type]

    if end == "cancelled":
        with pytest.raises(ToolCallCancelledError):
            asyncio.run(run())
    else:
        assert asyncio.run(run()) is _RESULT
        assert wire.requests.count("tasks/result") == 1
    assert wire.requests.count("tools/call") == 1
    assert "tasks/cancel" not in wire.requests
    expected: list[str] = []
    for info in script[: len(script)]:
        text = info.status_message or info.status
        if not expected or expected[-1] != text:
            expected.append(text)
    assert [message for _value, _total, message in seen] == expected
    assert [value for value, _total, _message in seen] == list(range(1, len(expected) + 1))


def test_the_poll_interval_is_the_server_s_within_a_floor_and_a_ceiling() -> None:
    assert runner._poll_delay(_info("working", None, 1.0)) == 1.0
    assert runner._poll_delay(_info("working", None, 0.0)) == runner._MIN_POLL_INTERVAL
    assert runner._poll_delay(_info("working", None, 3600.0)) == runner._MAX_POLL_INTERVAL
    assert runner._poll_delay(_info("working", None, None)) == runner._DEFAULT_POLL_INTERVAL


def test_a_stopped_runner_sends_tasks_cancel_and_gives_up_on_a_server_that_never_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "CANCEL_TIMEOUT", 0.2)
    wire = ScriptedWire([_info("working", "a", 5.0)], cancel_delay=3600)

    async def run() -> None:
        task = asyncio.ensure_future(
            runner.run_task(wire, None, "tool", {}, label="mcp__srv__tool", progress=None)  # type: ignore[arg-type]
        )
        await asyncio.sleep(0)  # started: waiting out its poll interval
        while "tools/call" not in wire.requests:
            await asyncio.sleep(0)
        task.cancel()
        async with asyncio.timeout(5):
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(run())
    assert wire.requests == ["tools/call", "tasks/cancel"]


def test_a_runner_that_only_waits_leaves_the_task_running_when_stopped() -> None:
    wire = ScriptedWire([_info("working", "a", 5.0)])

    async def run() -> None:
        task = asyncio.ensure_future(
            runner.follow_task(
                wire,
                None,
                _info("working", "a", 5.0),
                tool="t",
                progress=None,
                cancel_when_stopped=False,  # type: ignore[arg-type]
            )
        )
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert "tasks/cancel" not in wire.requests


def test_a_modern_session_without_the_tasks_extension_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "_EXTENSION_MODULE", "mcp_sync._server.tasks.no_such_extension")
    with pytest.raises(UnsupportedFeatureError, match="2026-07-28"):
        runner.wire_for("srv", "2026-07-28")
    assert isinstance(runner.wire_for("srv", "2025-11-25"), LegacyTaskWire)


def test_the_runner_waits_the_server_s_poll_interval_between_polls() -> None:
    wire = ScriptedWire(
        [_info("working", "a", 0.2), _info("working", "b", 0.2), _info("completed", "b", 0.2)]
    )

    async def run() -> float:
        started = asyncio.get_running_loop().time()
        await runner.run_task(wire, None, "tool", {}, label="mcp__srv__tool", progress=None)  # type: ignore[arg-type]
        return asyncio.get_running_loop().time() - started

    assert asyncio.run(run()) >= 0.4  # two pauses of the server's 0.2 s before the two polls
    assert wire.requests == ["tools/call", "tasks/get", "tasks/get", "tasks/result"]


class FailingInput(ScriptedWire):
    """A wire whose answer to `input_required` fails (its `tasks/result` refused)."""

    async def answer_input(
        self, client: Any, task_id: str, info: TaskInfo, given: dict[str, Any] | None = None
    ) -> types.CallToolResult | None:
        self.requests.append("answer_input")
        raise RuntimeError("tasks/result refused")


def test_input_that_fails_because_the_task_was_cancelled_says_cancelled() -> None:
    wire = FailingInput([_info("input_required", "which?", 0.0), _info("cancelled", "by someone", 0.0)])
    with pytest.raises(ToolCallCancelledError, match="cancelled"):
        asyncio.run(runner.run_task(wire, None, "tool", {}, label="t", progress=None))  # type: ignore[arg-type]


def test_input_that_fails_otherwise_raises_its_error() -> None:
    wire = FailingInput([_info("input_required", "which?", 0.0), _info("input_required", "which?", 0.0)])
    with pytest.raises(RuntimeError, match="refused"):
        asyncio.run(runner.run_task(wire, None, "tool", {}, label="t", progress=None))  # type: ignore[arg-type]


class SlowStart(ScriptedWire):
    """A wire whose `tools/call` is on the wire until `created` is set: the task exists on the server,
    its `CreateTaskResult` has not come back."""

    def __init__(self, script: list[TaskInfo]) -> None:
        super().__init__(script)
        self.created = asyncio.Event()

    async def start(self, client: Any, raw_name: str, arguments: dict[str, Any], **_: Any) -> TaskInfo:
        self.requests.append("tools/call")
        await self.created.wait()
        return self.script.pop(0)


def test_a_runner_stopped_before_its_task_is_created_cancels_the_task_once_created() -> None:
    wire = SlowStart([_info("working", "a", 5.0)])

    async def run() -> None:
        task = asyncio.ensure_future(
            runner.run_task(wire, None, "tool", {}, label="mcp__srv__tool", progress=None)  # type: ignore[arg-type]
        )
        while "tools/call" not in wire.requests:
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.sleep(0)
        wire.created.set()  # the CreateTaskResult arrives after the caller gave up
        async with asyncio.timeout(5):
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(run())
    assert wire.requests == ["tools/call", "tasks/cancel"]


def test_a_failed_poll_cancels_the_task_of_a_call() -> None:
    class FailingPoll(ScriptedWire):
        async def get(self, client: Any, task_id: str) -> TaskInfo:
            self.requests.append("tasks/get")
            raise ValueError("status 'paused' is no task status")

    wire = FailingPoll([_info("working", "a", 0.0)])
    with pytest.raises(ValueError, match="paused"):
        asyncio.run(runner.run_task(wire, None, "tool", {}, label="t", progress=None))  # type: ignore[arg-type]
    assert wire.requests == ["tools/call", "tasks/get", "tasks/cancel"]


def test_a_wait_resumed_with_its_status_updates_neither_repeats_nor_recounts_them() -> None:
    updates = runner.StatusUpdates()
    seen: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, message))

    async def follow(first: TaskInfo, script: list[TaskInfo]) -> None:
        with contextlib.suppress(ConnectionError):
            await runner.follow_task(
                DroppingWire(script),
                None,  # type: ignore[arg-type]
                first,
                tool="t",
                progress=progress,
                cancel_when_stopped=False,
                updates=updates,
            )

    class DroppingWire(ScriptedWire):
        """Its connection drops at the poll after the script's last status."""

        async def get(self, client: Any, task_id: str) -> TaskInfo:
            if not self.script:
                raise ConnectionError("dropped")
            return self.script.pop(0)

    async def run() -> None:
        await follow(_info("working", "a", 0.0), [_info("working", "b", 0.0)])
        # the wait goes on over a new connection: the task's state now, as that connection's first poll saw it
        await follow(_info("working", "b", 0.0), [_info("completed", "c", 0.0)])

    asyncio.run(run())
    assert seen == [(1.0, "a"), (2.0, "b"), (3.0, "c")]


@pytest.mark.parametrize(
    "message", ["Task not found: abc", "Invalid or nonexistent taskId.", "Task abc has expired"]
)
def test_invalid_params_on_a_task_request_is_task_not_found_whatever_its_message(message: str) -> None:
    refused = MCPError(code=types.INVALID_PARAMS, message=message)
    missing = runner.not_found(refused, "srv", "abc")
    assert isinstance(missing, TaskNotFoundError)
    assert "'srv'" in str(missing) and "'abc'" in str(missing)


def test_durations_too_long_for_a_float_are_clamped() -> None:
    huge = 10**400
    task = types.Task(
        task_id="t1",
        status="working",
        created_at="2025-01-01T00:00:00Z",
        last_updated_at="2025-01-01T00:00:00Z",
        ttl=huge,
        poll_interval=huge,
    )
    info = task_info("srv", task)
    assert info.ttl is not None and info.poll_interval is not None
    assert math.isfinite(info.ttl) and info.ttl > 3600 * 24 * 365
    assert runner._poll_delay(info) == runner._MAX_POLL_INTERVAL


# -- against a raw server that answers what the reference server cannot be made to ------------------------

RAW_TASKS_SERVER = SERVERS_DIR / "raw_tasks_server.py"
JOB = "mcp__raw__job"


class RawServer:
    """A `raw_tasks_server.py` in one mode, and the methods it received."""

    def __init__(self, mode: str, log: Path) -> None:
        self.log = log
        log.write_text("")
        self.config = {
            "server_name": "raw",
            "transport": "stdio",
            "command": sys.executable,
            "args": [str(RAW_TASKS_SERVER), mode, str(log)],
        }

    def methods(self) -> list[str]:
        return self.log.read_text().split()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("caller", ["call_tool", "submit", "start_task"])
def test_a_call_stopped_before_its_task_is_created_cancels_that_task_on_the_server(
    caller: str, tmp_path: Path
) -> None:
    raw = RawServer("slow_create", tmp_path / "log")  # the CreateTaskResult comes 1 s after tools/call
    with started_hub(raw.config) as hub:
        with pytest.raises(ToolCallTimeoutError):
            if caller == "call_tool":
                hub.call_tool(JOB, timeout=0.3)
            elif caller == "submit":
                hub.submit(JOB, timeout=0.3).result(timeout=30)
            else:
                hub.start_task(JOB, timeout=0.3)
        wait_until(lambda: "tasks/cancel" in raw.methods(), timeout=20, message="no tasks/cancel")
    assert raw.methods().count("tools/call") == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("caller", ["call_tool", "submit"])
def test_a_call_failing_on_a_bad_poll_answer_cancels_its_task(caller: str, tmp_path: Path) -> None:
    raw = RawServer("badstatus", tmp_path / "log")
    with started_hub(raw.config) as hub:
        with pytest.raises(ToolCallError, match="invalid result"):
            if caller == "call_tool":
                hub.call_tool(JOB, timeout=30)
            else:
                hub.submit(JOB, timeout=30).result(timeout=30)
        wait_until(lambda: "tasks/cancel" in raw.methods(), timeout=20, message="no tasks/cancel")


@pytest.mark.timeout(60)
def test_a_poll_interval_too_long_for_a_float_is_no_error(tmp_path: Path) -> None:
    raw = RawServer("hugepoll", tmp_path / "log")
    with started_hub(raw.config) as hub:
        assert hub.call_tool(JOB, timeout=30).text == "done"


def test_a_native_tool_asked_to_run_as_a_task_is_unsupported() -> None:
    hub = MCPHub([])

    @hub.registry.register_function
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with hub, pytest.raises(UnsupportedFeatureError, match="add"):
        hub.call_tool("add", {"a": 1, "b": 2}, task=True)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("ttl", [math.inf, math.nan, -1.0])
def test_a_ttl_that_is_not_a_positive_finite_number_is_a_value_error(ttl: float, tmp_path: Path) -> None:
    raw = RawServer("plain", tmp_path / "log")
    with started_hub(raw.config) as hub, pytest.raises(ValueError, match="ttl"):
        hub.start_task(JOB, ttl=ttl)
    assert "tools/call" not in raw.methods()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("request_kind", ["task", "list_tasks"])
def test_a_closed_hub_says_it_is_closed_for_its_tasks(request_kind: str, tmp_path: Path) -> None:
    raw = RawServer("plain", tmp_path / "log")
    with started_hub(raw.config) as hub:
        pass
    with pytest.raises(MCPSyncError, match="closed") as raised:
        if request_kind == "task":
            hub.task("raw", "T1")
        else:
            hub.list_tasks("raw")
    assert not isinstance(raised.value, ConfigError)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("caller", ["call_tool", "submit"])
def test_the_server_s_own_progress_during_a_task_reaches_progress(caller: str, tmp_path: Path) -> None:
    raw = RawServer("progress", tmp_path / "log")  # "server progress 1..3" while the task works
    seen: list[tuple[float, float | None, str | None]] = []
    with started_hub(raw.config) as hub:
        if caller == "call_tool":
            hub.call_tool(JOB, timeout=30, progress=lambda *update: seen.append(update))
        else:
            hub.submit(JOB, timeout=30, progress=lambda *update: seen.append(update)).result(timeout=30)
    server_own = [update for update in seen if update[2] and update[2].startswith("server progress")]
    assert server_own == [
        (1.0, 3.0, "server progress 1"),
        (2.0, 3.0, "server progress 2"),
        (3.0, 3.0, "server progress 3"),
    ]
    assert (1.0, None, "busy") in seen  # the task's status message, besides


@pytest.mark.timeout(60)
@pytest.mark.parametrize("caller", ["call_tool", "handle"])
def test_a_task_result_that_breaks_the_output_schema_is_an_error(caller: str, tmp_path: Path) -> None:
    raw = RawServer("wrongoutput", tmp_path / "log")  # structuredContent {"result": 42}: not a string
    with started_hub(raw.config) as hub, pytest.raises(ToolCallError, match="invalid result"):
        if caller == "call_tool":
            hub.call_tool(JOB, timeout=30)
        else:
            hub.start_task(JOB).wait(30)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("caller", ["call_tool", "handle"])
def test_a_task_failing_with_its_own_not_found_error_is_no_task_not_found(
    caller: str, tmp_path: Path
) -> None:
    raw = RawServer("failnotfound", tmp_path / "log")  # tasks/result: -32602 "input file not found"
    with started_hub(raw.config) as hub:
        with pytest.raises(ToolCallError, match="input file not found") as raised:
            if caller == "call_tool":
                hub.call_tool(JOB, timeout=30)
            else:
                hub.start_task(JOB).wait(30)
        assert not isinstance(raised.value, TaskNotFoundError)


@pytest.mark.timeout(60)
def test_a_task_list_refused_with_invalid_params_is_an_error_not_task_not_found(tmp_path: Path) -> None:
    raw = RawServer("badlist", tmp_path / "log")
    with started_hub(raw.config) as hub, pytest.raises(ToolCallError, match="Invalid cursor") as refused:
        hub.list_tasks("raw")
    assert not isinstance(refused.value, TaskNotFoundError)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("caller", ["call_tool", "handle"])
def test_a_task_that_fails_while_its_input_is_asked_for_is_a_failure_never_task_not_found(
    caller: str, tmp_path: Path
) -> None:
    # The task asks for input (tasks/result waits), then fails; a poll sees `failed` before tasks/result
    # answers its error, -32602 "input file not found": the task's own end, not a lost task.
    raw = RawServer("inputfail", tmp_path / "log")
    with started_hub(raw.config) as hub:
        with pytest.raises(ToolCallError, match="input file not found") as raised:
            if caller == "call_tool":
                hub.call_tool(JOB, timeout=30)
            else:
                hub.start_task(JOB).wait(30)
        assert not isinstance(raised.value, TaskNotFoundError)
        assert (raised.value.tool, raised.value.task_id) == (JOB, "T1")
        assert [task.status for task in hub.list_tasks("raw")] == ["failed"]
    assert raw.methods().count("tools/call") == 1


@pytest.mark.timeout(60)
def test_a_cancel_the_server_refuses_raises_naming_the_server_the_task_and_its_reason(tmp_path: Path) -> None:
    raw = RawServer("refusecancel", tmp_path / "log")  # tasks/cancel: -32603 "cannot cancel: committing"
    with started_hub(raw.config) as hub:
        handle = hub.start_task(JOB)
        with pytest.raises(TaskCancelRefusedError, match="cannot cancel: committing") as refused:
            handle.cancel(30)
        assert (refused.value.server, refused.value.task_id, refused.value.code) == ("raw", "T1", -32603)
        assert "'raw'" in str(refused.value) and "'T1'" in str(refused.value)
        assert handle.wait(30).text == "done"  # the task worked on


@pytest.mark.timeout(60)
def test_a_task_list_that_never_ends_is_a_bounded_listing_error_not_unsupported(tmp_path: Path) -> None:
    raw = RawServer("endlesslist", tmp_path / "log")  # every page gives another cursor
    with started_hub(raw.config) as hub:
        with pytest.raises(ToolCallError, match="did not end within 100 pages") as endless:
            hub.list_tasks("raw")
        assert not isinstance(endless.value, UnsupportedFeatureError)
        assert raw.methods().count("tasks/list") == 100
        assert hub.call_tool(JOB, timeout=30).text == "done"
