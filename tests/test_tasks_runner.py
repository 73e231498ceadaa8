"""The task runner's loop over a scripted wire: what no real server can be made to produce on demand
(any sequence of statuses and messages, poll intervals of zero or an hour, a server that answers
`tasks/cancel` late or never)."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sync import TaskInfo, ToolCallCancelledError, UnsupportedFeatureError
from mcp_sync._server.tasks import runner
from mcp_sync._server.tasks.legacy import LegacyTaskWire

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

    async def answer_input(self, client: Any, task_id: str, info: TaskInfo) -> types.CallToolResult | None:
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
                label="t",
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

    async def answer_input(self, client: Any, task_id: str, info: TaskInfo) -> types.CallToolResult | None:
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
