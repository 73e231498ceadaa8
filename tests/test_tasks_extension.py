"""The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`): the wire and the claim resolver
against a fixture server that speaks it (tests/servers/tasks_server.py), over stdio and Streamable HTTP.

These drive an SDK `Client` carrying `TasksExtension` directly, with the hub's task runner's wire
(`ExtensionTaskWire`) where a test needs one request at a time.
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY, ElicitRequestParams, ElicitResult, ErrorData

from mcp_sync import (
    ElicitationRequest,
    ElicitationResponse,
    MCPHub,
    ServerDisconnectedError,
    TaskNotFoundError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
    UnsupportedFeatureError,
)
from mcp_sync._server.tasks import runner
from mcp_sync._server.tasks.extension import (
    TASK_NOT_FOUND_CODE,
    ExtensionTaskWire,
    TasksExtension,
    server_offers_tasks,
)
from mcp_sync._values.tasks import TaskInfo
from tests.support import (
    REPO_ROOT,
    SERVERS_DIR,
    EventLog,
    HttpServer,
    http_config,
    stdio_config,
    stdio_params,
    wait_until,
)

TASKS_SERVER = SERVERS_DIR / "tasks_server.py"
BOUND = 30.0
"""Bound on each test's whole conversation with the server."""
LONG = {"count": 500, "delay": 0.2}
"""A task that runs for minutes unless cancelled."""


@dataclass
class Target:
    """Where a test's server is: an SDK connection target and the server's event log."""

    transport: str
    server: str | StdioServerParameters
    events: EventLog


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, events: EventLog) -> Iterator[Target]:
    if request.param == "stdio":
        yield Target("stdio", stdio_params(script=TASKS_SERVER, events=events), events)
        return
    with HttpServer(script=TASKS_SERVER, events=events) as server:
        yield Target("http", server.url, events)


@pytest.fixture
def http_target(events: EventLog) -> Iterator[Target]:
    with HttpServer(script=TASKS_SERVER, events=events) as server:
        yield Target("http", server.url, events)


async def _accept_name(context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
    if params.mode == "url":
        return ElicitResult(action="accept")
    return ElicitResult(action="accept", content={"name": "Ada"})


def run(target: Target, body: Callable[[Client], Awaitable[Any]], **client_options: Any) -> Any:
    """Connect a client with the tasks extension to the target, run `body` with it, within `BOUND`."""

    async def main() -> Any:
        with anyio.fail_after(BOUND):
            options: dict[str, Any] = {"extensions": [TasksExtension()], "elicitation_callback": _accept_name}
            options.update(client_options)
            async with Client(target.server, **options) as client:
                return await body(client)

    return anyio.run(main)


async def _records(client: Client) -> dict[str, Any]:
    result = await client.call_tool("records", {})
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def _until_done(wire: ExtensionTaskWire, client: Client, info: TaskInfo) -> list[TaskInfo]:
    """Poll the task to its end as a runner does; every state seen."""
    seen = [info]
    while not info.done:
        await anyio.sleep(info.poll_interval or 0.05)
        info = await wire.get(client, info.task_id)
        if info.status == "input_required":
            await wire.answer_input(client, info.task_id, info)
        seen.append(info)
    return seen


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_server_advertises_the_extension(target: Target) -> None:
    async def body(client: Client) -> bool:
        return server_offers_tasks(client)

    assert run(target, body)


def test_a_required_task_tool_called_plainly_returns_its_result(target: Target) -> None:
    result = run(target, lambda client: client.call_tool("stages", {"count": 2, "delay": 0.01, "tag": "a"}))
    assert _text(result) == "done 2 stages a"
    assert target.events.count("task_created") == 1


def test_the_wire_starts_a_task_and_takes_its_result(target: Target) -> None:
    wire = ExtensionTaskWire("tasks")

    async def body(client: Client) -> Any:
        info = await wire.start(client, "stages", {"count": 2, "delay": 0.01}, ttl=None)
        assert isinstance(info, TaskInfo)
        assert (info.server, info.status, info.poll_interval, info.ttl) == ("tasks", "working", 0.05, 600.0)
        seen = await _until_done(wire, client, info)
        return seen[-1], await wire.outcome(client, info.task_id, seen[-1])

    last, result = run(target, body)
    assert last.status == "completed"
    assert _text(result) == "done 2 stages"


def test_each_stage_s_status_message_is_seen_in_order(target: Target) -> None:
    wire = ExtensionTaskWire("tasks")

    async def body(client: Client) -> list[str | None]:
        info = await wire.start(client, "stages", {"count": 3, "delay": 0, "lockstep": True}, ttl=None)
        assert isinstance(info, TaskInfo)
        seen = await _until_done(wire, client, info)
        messages: list[str | None] = []
        for state in seen:
            if state.status_message is not None and state.status_message not in messages:
                messages.append(state.status_message)
        return messages

    assert run(target, body) == ["stage 1 of 3", "stage 2 of 3", "stage 3 of 3", "all stages done"]


def test_cancel_is_recorded_by_the_server(target: Target) -> None:
    wire = ExtensionTaskWire("tasks")

    async def body(client: Client) -> tuple[TaskInfo, dict[str, Any], str]:
        info = await wire.start(client, "stages", LONG, ttl=None)
        assert isinstance(info, TaskInfo)
        after = await wire.cancel(client, info.task_id)
        return after, await _records(client), info.task_id

    after, records, task_id = run(target, body)
    assert records["cancelled"] == [task_id]
    assert records["status"][task_id] == "cancelled"
    assert after.status == "cancelled"


def test_a_cancelled_plain_call_cancels_its_task_on_the_server(target: Target) -> None:
    async def body(client: Client) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "stages", LONG)
            while not target.events.find("get"):  # the client knows the task: it polls it
                await anyio.sleep(0.02)
            group.cancel_scope.cancel()

    run(target, body)
    created = target.events.wait_for("task_created")
    assert target.events.wait_for("cancelled")["task_id"] == created["task_id"]


def test_a_timed_out_plain_call_cancels_its_task_on_the_server(target: Target) -> None:
    async def body(client: Client) -> None:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "stages", LONG)
                while not target.events.find("get"):  # the client knows the task: it polls it
                    await anyio.sleep(0.02)
                scope.deadline = anyio.current_time() + 0.1
        assert scope.cancelled_caught

    run(target, body)
    created = target.events.wait_for("task_created")
    assert target.events.wait_for("cancelled")["task_id"] == created["task_id"]


@pytest.mark.parametrize("mode", ["form", "url"])
def test_input_required_is_answered_by_the_elicitation_handler(target: Target, mode: str) -> None:
    asked: list[ElicitRequestParams] = []

    async def elicit(context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        asked.append(params)
        return await _accept_name(context, params)

    result = run(target, lambda client: client.call_tool("ask", {"mode": mode}), elicitation_callback=elicit)
    assert [params.mode for params in asked] == [mode]
    assert _text(result) == ('accept {"name": "Ada"}' if mode == "form" else "accept {}")
    assert target.events.wait_for("input_received")["answer"]["action"] == "accept"


def test_input_is_asked_once_however_often_the_task_is_polled(target: Target) -> None:
    wire = ExtensionTaskWire("tasks")
    asked: list[str] = []

    async def elicit(context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        asked.append(params.message)
        return ElicitResult(action="decline")

    async def body(client: Client) -> str:
        info = await wire.start(client, "ask", {}, ttl=None)
        assert isinstance(info, TaskInfo)
        while info.status != "input_required":
            await anyio.sleep(0.02)
            info = await wire.get(client, info.task_id)
        await wire.answer_input(client, info.task_id, info)
        await wire.answer_input(client, info.task_id, info)
        seen = await _until_done(wire, client, info)
        return _text(await wire.outcome(client, info.task_id, seen[-1]))

    assert run(target, body, elicitation_callback=elicit) == "decline"
    assert asked == ["Who are you?"]


def test_input_the_client_cannot_give_fails_the_call(target: Target) -> None:
    async def body(client: Client) -> None:
        with pytest.raises(MCPError):
            await client.call_tool("ask", {})

    run(target, body, elicitation_callback=None)
    created = target.events.wait_for("task_created")
    assert target.events.wait_for("cancelled")["task_id"] == created["task_id"]


def test_a_task_the_server_dropped_is_not_found(target: Target) -> None:
    wire = ExtensionTaskWire("tasks")

    async def body(client: Client) -> None:
        info = await wire.start(client, "vanish", {}, ttl=None)
        assert isinstance(info, TaskInfo)
        with pytest.raises(MCPError) as caught:
            await wire.get(client, info.task_id)
        assert caught.value.code == TASK_NOT_FOUND_CODE
        with pytest.raises(MCPError) as again:
            await wire.get(client, "no-such-task")
        assert again.value.code == TASK_NOT_FOUND_CODE

    run(target, body)


def test_the_wire_s_cancel_of_an_ended_task_the_server_refuses_gives_its_end(target: Target) -> None:
    # A "strict" task's server refuses tasks/cancel after its end with -32602, as for an unknown task.
    wire = ExtensionTaskWire("tasks")

    async def body(client: Client) -> None:
        info = await wire.start(client, "stages", {"count": 1, "delay": 0, "tag": "strict"}, ttl=None)
        assert isinstance(info, TaskInfo)
        await _until_done(wire, client, info)
        assert (await wire.cancel(client, info.task_id)).status == "completed"
        with pytest.raises(MCPError) as caught:
            await wire.cancel(client, "no-such-task")
        assert caught.value.code == TASK_NOT_FOUND_CODE

    run(target, body)


def test_listing_tasks_is_unsupported(target: Target) -> None:
    async def body(client: Client) -> None:
        with pytest.raises(UnsupportedFeatureError, match="no tasks/list"):
            await ExtensionTaskWire("tasks").list(client)

    run(target, body)


def test_a_failed_task_raises_its_error_and_the_next_call_works(target: Target) -> None:
    async def body(client: Client) -> str:
        with pytest.raises(MCPError, match="out of paper") as caught:
            await client.call_tool("fail_task", {"message": "out of paper"})
        assert caught.value.code != TASK_NOT_FOUND_CODE
        return _text(await client.call_tool("stages", {"count": 1, "delay": 0}))

    assert run(target, body) == "done 1 stages"


def test_a_task_that_ends_in_a_tool_error_is_an_error_result(target: Target) -> None:
    result = run(target, lambda client: client.call_tool("error_result", {"message": "bad input"}))
    assert result.is_error
    assert _text(result) == "bad input"


def test_each_failure_leaves_the_session_usable(target: Target) -> None:
    wire = ExtensionTaskWire("tasks")

    async def body(client: Client) -> list[str]:
        good: list[str] = []

        async def good_call() -> None:
            good.append(_text(await client.call_tool("stages", {"count": 1, "delay": 0})))

        with pytest.raises(MCPError):
            await wire.get(client, "no-such-task")
        await good_call()
        with pytest.raises(MCPError):
            await client.call_tool("fail_task", {})
        await good_call()
        with pytest.raises(MCPError):
            await wire.cancel(client, "no-such-task")
        await good_call()
        with anyio.move_on_after(0.3):
            await client.call_tool("stages", LONG)
        await good_call()
        return good

    assert run(target, body) == ["done 1 stages"] * 4


def test_a_tool_with_optional_tasks_gives_a_plain_result_without_the_extension(target: Target) -> None:
    plain = run(target, lambda client: client.call_tool("maybe_task", {"text": "x"}), extensions=None)
    assert _text(plain) == "echo x"
    assert target.events.count("task_created") == 0
    as_task = run(target, lambda client: client.call_tool("maybe_task", {"text": "y"}))
    assert _text(as_task) == "echo y"
    assert target.events.count("task_created") == 1


def test_a_client_without_the_extension_is_told_a_tool_needs_it(target: Target) -> None:
    async def body(client: Client) -> None:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("stages", {})
        assert caught.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY

    run(target, body, extensions=None)


def test_task_requests_carry_the_task_id_as_mcp_name_over_http(http_target: Target) -> None:
    wire = ExtensionTaskWire("tasks")

    async def body(client: Client) -> str:
        info = await wire.start(client, "stages", {"count": 1, "delay": 0}, ttl=None)
        assert isinstance(info, TaskInfo)
        await _until_done(wire, client, info)
        return info.task_id

    task_id = run(http_target, body)
    gets = http_target.events.find("get")
    assert gets
    assert {event["name_header"] for event in gets} == {task_id}


def test_a_task_outlives_the_connection_that_started_it(http_target: Target) -> None:
    wire = ExtensionTaskWire("tasks")

    async def start(client: Client) -> str:
        info = await wire.start(client, "stages", {"count": 2, "delay": 0.2, "tag": "kept"}, ttl=None)
        assert isinstance(info, TaskInfo)
        return info.task_id

    task_id = run(http_target, start)

    async def resume(client: Client) -> tuple[str, dict[str, Any]]:
        info = await wire.get(client, task_id)
        seen = await _until_done(wire, client, info)
        return _text(await wire.outcome(client, task_id, seen[-1])), await _records(client)

    text, records = run(http_target, resume)
    assert text == "done 2 stages kept"
    assert records["runs"] == {"stages": 1}


def test_another_process_fetches_a_result_by_task_id(http_target: Target) -> None:
    wire = ExtensionTaskWire("tasks")

    async def start(client: Client) -> str:
        info = await wire.start(client, "stages", {"count": 1, "delay": 0, "tag": "elsewhere"}, ttl=None)
        assert isinstance(info, TaskInfo)
        await _until_done(wire, client, info)
        return info.task_id

    task_id = run(http_target, start)
    assert isinstance(http_target.server, str)
    script = textwrap.dedent(
        """
        import sys, anyio
        from mcp import Client
        from mcp_sync._server.tasks.extension import ExtensionTaskWire, TasksExtension

        async def main():
            wire = ExtensionTaskWire("tasks")
            async with Client(sys.argv[1], extensions=[TasksExtension()]) as client:
                info = await wire.get(client, sys.argv[2])
                result = await wire.outcome(client, info.task_id, info)
                print(info.status, result.content[0].text)

        anyio.run(main)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, http_target.server, task_id],
        capture_output=True,
        text=True,
        timeout=BOUND,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "completed done 1 stages elsewhere"
    assert http_target.events.count("run") == 1


# --- through the hub: a plain call of a tool the server runs as a task ------------------------------


@pytest.fixture
def hub_entry(target: Target) -> dict[str, Any]:
    """The hub's configuration entry for the target's server, named ``t``."""
    if isinstance(target.server, str):
        return http_config("t", target.server)
    return stdio_config("t", script=TASKS_SERVER, events=target.events)


def _record_elicitations(
    asked: list[ElicitationRequest],
) -> Callable[[ElicitationRequest], ElicitationResponse]:
    def answer(request: ElicitationRequest) -> ElicitationResponse:
        asked.append(request)
        return ElicitationResponse.accept({"name": "Grace"} if request.mode == "form" else {})

    return answer


def test_hub_call_of_a_task_tool_blocks_until_its_result(hub_entry: dict[str, Any]) -> None:
    with MCPHub([hub_entry]) as hub:
        result = hub.call_tool("mcp__t__stages", {"count": 2, "delay": 0.01, "tag": "hub"}, timeout=BOUND)
    assert result.text == "done 2 stages hub"
    assert not result.is_error


def test_hub_timeout_cancels_the_task_on_the_server(hub_entry: dict[str, Any], target: Target) -> None:
    with MCPHub([hub_entry]) as hub:
        with pytest.raises(ToolCallTimeoutError):
            hub.call_tool("mcp__t__stages", LONG, timeout=3.0)
        created = target.events.wait_for("task_created")
        assert target.events.wait_for("cancelled")["task_id"] == created["task_id"]
        assert (
            hub.call_tool("mcp__t__stages", {"count": 1, "delay": 0}, timeout=BOUND).text == "done 1 stages"
        )


@pytest.mark.parametrize("caller", ["call_tool", "start_task"])
def test_hub_timeout_before_the_task_id_arrives_cancels_the_task_on_the_server(
    caller: str, events: EventLog
) -> None:
    entry = stdio_config("t", "--create-delay-ms", "1000", script=TASKS_SERVER, events=events)
    with MCPHub([entry]) as hub:
        with pytest.raises(ToolCallTimeoutError):
            if caller == "call_tool":
                hub.call_tool("mcp__t__stages", LONG, timeout=0.3, task=True)
            else:
                hub.start_task("mcp__t__stages", LONG, timeout=0.3)
        created = events.wait_for("task_created")
        assert events.wait_for("cancelled", timeout=BOUND)["task_id"] == created["task_id"]


@pytest.mark.parametrize("stop", ["timeout", "cancel"])
def test_hub_stopped_plain_call_that_may_become_a_task_is_cancelled_on_the_server_at_once(
    stop: str, events: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # However long a task's start would be waited for, a call that only may become one is not.
    monkeypatch.setattr(runner, "CANCEL_TIMEOUT", 2 * BOUND)
    cancel = threading.Event()

    def cancel_once_started() -> None:
        events.wait_for("plain_started", timeout=BOUND)
        cancel.set()

    entry = stdio_config("t", script=TASKS_SERVER, events=events)
    with MCPHub([entry]) as hub:
        if stop == "timeout":
            with pytest.raises(ToolCallTimeoutError):
                hub.call_tool("mcp__t__plain_slow", {"seconds": 4 * BOUND}, timeout=0.3)
        else:
            canceller = threading.Thread(target=cancel_once_started, daemon=True)
            canceller.start()
            with pytest.raises(ToolCallCancelledError):
                hub.call_tool("mcp__t__plain_slow", {"seconds": 4 * BOUND}, timeout=BOUND, cancel=cancel)
            canceller.join(BOUND)
        events.wait_for("plain_cancelled", timeout=BOUND)


def test_hub_plain_call_answered_at_once_returns_after_its_progress_callbacks_ran(
    hub_entry: dict[str, Any],
) -> None:
    updates: list[str | None] = []

    def slow_progress(value: float, total: float | None, message: str | None) -> None:
        time.sleep(0.05)  # a callback slower than the answer: the call must still wait for it
        updates.append(message)

    with MCPHub([hub_entry]) as hub:
        result = hub.call_tool("mcp__t__plain_progress", {"steps": 5}, timeout=BOUND, progress=slow_progress)
        assert result.text == "5 steps"
        assert updates == [f"step {step}" for step in range(1, 6)]


def test_hub_plain_call_whose_result_leaves_out_its_result_type_returns_it(events: EventLog) -> None:
    entry = stdio_config("t", "--untyped-results", script=TASKS_SERVER, events=events)
    with MCPHub([entry]) as hub:
        assert hub.call_tool("mcp__t__plain_progress", {"steps": 1}, timeout=BOUND).text == "1 steps"
        submitted = hub.submit("mcp__t__plain_progress", {"steps": 2}, timeout=BOUND)
        assert submitted.result(BOUND).text == "2 steps"


def test_hub_cancel_event_cancels_the_task_on_the_server(hub_entry: dict[str, Any], target: Target) -> None:
    cancel = threading.Event()

    def cancel_once_polled() -> None:
        target.events.wait_for("get", timeout=BOUND)
        cancel.set()

    with MCPHub([hub_entry]) as hub:
        canceller = threading.Thread(target=cancel_once_polled, daemon=True)
        canceller.start()
        with pytest.raises(ToolCallCancelledError):
            hub.call_tool("mcp__t__stages", LONG, timeout=BOUND, cancel=cancel)
        canceller.join(BOUND)
        created = target.events.wait_for("task_created")
        assert target.events.wait_for("cancelled")["task_id"] == created["task_id"]
        assert (
            hub.call_tool("mcp__t__stages", {"count": 1, "delay": 0}, timeout=BOUND).text == "done 1 stages"
        )


@pytest.mark.parametrize("mode", ["form", "url"])
def test_hub_answers_input_required_with_its_elicitation_handler(
    hub_entry: dict[str, Any], mode: str
) -> None:
    asked: list[ElicitationRequest] = []
    with MCPHub([hub_entry], elicitation=_record_elicitations(asked)) as hub:
        result = hub.call_tool("mcp__t__ask", {"mode": mode}, timeout=BOUND)
    assert [(request.server_name, request.mode) for request in asked] == [("t", mode)]
    assert result.text == ('accept {"name": "Grace"}' if mode == "form" else "accept {}")
    if mode == "url":
        assert asked[0].url is not None and asked[0].url.startswith("https://example.com/approve/")


def test_hub_failures_of_a_task_are_errors_and_the_next_call_works(hub_entry: dict[str, Any]) -> None:
    good = {"count": 1, "delay": 0}
    with MCPHub([hub_entry]) as hub:
        with pytest.raises(ToolCallError, match="out of paper"):
            hub.call_tool("mcp__t__fail_task", {"message": "out of paper"}, timeout=BOUND)
        assert hub.call_tool("mcp__t__stages", good, timeout=BOUND).text == "done 1 stages"
        error = hub.call_tool("mcp__t__error_result", {"message": "bad input"}, timeout=BOUND)
        assert (error.is_error, error.text) == (True, "bad input")
        assert hub.call_tool("mcp__t__stages", good, timeout=BOUND).text == "done 1 stages"
        with pytest.raises(TaskNotFoundError, match="does not know task"):
            hub.call_tool("mcp__t__vanish", {}, timeout=BOUND)
        assert hub.call_tool("mcp__t__stages", good, timeout=BOUND).text == "done 1 stages"
        with pytest.raises(ToolCallTimeoutError):
            hub.call_tool("mcp__t__stages", LONG, timeout=1.0)
        assert hub.call_tool("mcp__t__stages", good, timeout=BOUND).text == "done 1 stages"
        assert hub.servers["t"].state == "ready"


def test_hub_sees_every_tool_of_a_server_with_the_extension_as_an_optional_task(
    hub_entry: dict[str, Any],
) -> None:
    with MCPHub([hub_entry]) as hub:
        assert {tool.task_support for tool in hub.tools()} == {"optional"}


def test_hub_status_messages_reach_progress(hub_entry: dict[str, Any]) -> None:
    updates: list[tuple[float, float | None, str | None]] = []
    arguments = {"count": 3, "delay": 0, "lockstep": True}
    with MCPHub([hub_entry]) as hub:
        result = hub.call_tool(
            "mcp__t__stages", arguments, timeout=BOUND, progress=lambda *update: updates.append(update)
        )
    assert result.text == "done 3 stages"
    messages = [message for _, _, message in updates]
    assert [m for m in messages if m and m.startswith("stage")] == [
        "stage 1 of 3",
        "stage 2 of 3",
        "stage 3 of 3",
    ]
    assert messages[-1] == "all stages done"
    counts = [count for count, _, _ in updates]
    assert counts == sorted(counts) and len(set(counts)) == len(counts)
    assert {total for _, total, _ in updates} == {None}


def test_hub_call_with_task_true_runs_the_tool_as_a_task(hub_entry: dict[str, Any], target: Target) -> None:
    with MCPHub([hub_entry]) as hub:
        assert hub.call_tool("mcp__t__maybe_task", {"text": "z"}, timeout=BOUND, task=True).text == "echo z"
    assert target.events.count("task_created") == 1


def test_hub_future_cancel_cancels_the_task_on_the_server(hub_entry: dict[str, Any], target: Target) -> None:
    with MCPHub([hub_entry]) as hub:
        future = hub.submit("mcp__t__stages", LONG, timeout=BOUND)
        target.events.wait_for("get", timeout=BOUND)
        assert future.cancel()
        created = target.events.wait_for("task_created")
        assert target.events.wait_for("cancelled", timeout=BOUND)["task_id"] == created["task_id"]


def test_hub_start_task_gives_a_handle_that_waits_for_the_result(hub_entry: dict[str, Any]) -> None:
    with MCPHub([hub_entry]) as hub:
        handle = hub.start_task("mcp__t__stages", {"count": 2, "delay": 0.01, "tag": "secret-arg"})
        assert (handle.server, handle.tool) == ("t", "mcp__t__stages")
        assert handle.info is not None and handle.info.status == "working"
        assert "secret-arg" not in repr(handle) and handle.task_id in repr(handle)
        assert handle.wait(BOUND).text == "done 2 stages secret-arg"
        assert handle.refresh(BOUND).status == "completed"
        assert handle.result().text == "done 2 stages secret-arg"


def test_hub_handle_cancel_is_recorded_by_the_server(hub_entry: dict[str, Any], target: Target) -> None:
    with MCPHub([hub_entry]) as hub:
        handle = hub.start_task("mcp__t__stages", LONG)
        assert handle.cancel(BOUND).status == "cancelled"
        assert target.events.wait_for("cancelled")["task_id"] == handle.task_id
        with pytest.raises(ToolCallCancelledError):
            handle.wait(BOUND)


def test_hub_handle_wait_that_times_out_leaves_the_task_running(
    hub_entry: dict[str, Any], target: Target
) -> None:
    with MCPHub([hub_entry]) as hub:
        handle = hub.start_task("mcp__t__stages", {"count": 3, "delay": 0, "lockstep": True})
        with pytest.raises(ToolCallTimeoutError, match="keeps running"):
            handle.wait(0.01)
        assert target.events.count("cancelled") == 0
        assert handle.wait(BOUND).text == "done 3 stages"


def test_hub_handle_of_a_task_the_server_dropped_raises_task_not_found(hub_entry: dict[str, Any]) -> None:
    with MCPHub([hub_entry]) as hub:
        handle = hub.start_task("mcp__t__vanish", {})
        with pytest.raises(TaskNotFoundError) as caught:
            handle.wait(BOUND)
        assert handle.task_id in str(caught.value) and "'t'" in str(caught.value)
        with pytest.raises(TaskNotFoundError):
            hub.task("t", "no-such-task").refresh(BOUND)
        assert (
            hub.call_tool("mcp__t__stages", {"count": 1, "delay": 0}, timeout=BOUND).text == "done 1 stages"
        )


@pytest.mark.parametrize("as_task", [None, True, "handle"])
def test_hub_task_result_that_breaks_the_output_schema_is_an_error(
    hub_entry: dict[str, Any], as_task: bool | str | None
) -> None:
    with MCPHub([hub_entry]) as hub:
        with pytest.raises(ToolCallError, match="invalid result") as caught:
            if as_task == "handle":
                hub.start_task("mcp__t__wrong_output").wait(BOUND)
            else:
                hub.call_tool("mcp__t__wrong_output", timeout=BOUND, task=as_task)
        assert "is not of type 'string'" in str(caught.value)


@pytest.mark.parametrize("as_task", [None, True])
def test_hub_input_the_server_refuses_fails_the_call_without_calling_the_task_lost(
    hub_entry: dict[str, Any], target: Target, as_task: bool | None
) -> None:
    # The server refuses the task's input (tasks/update) with -32602: the task exists, and is cancelled.
    asked: list[ElicitationRequest] = []
    with MCPHub([hub_entry], elicitation=_record_elicitations(asked)) as hub:
        with pytest.raises(ToolCallError, match="inputResponses do not match") as caught:
            hub.call_tool("mcp__t__ask", {"tag": "reject"}, timeout=BOUND, task=as_task)
        assert not isinstance(caught.value, TaskNotFoundError)
        assert "not found" not in str(caught.value)
        created = target.events.wait_for("task_created")
        assert target.events.wait_for("cancelled")["task_id"] == created["task_id"]


@pytest.mark.parametrize("as_task", [None, True, "handle"])
def test_hub_task_that_fails_with_its_own_not_found_error_is_not_task_not_found(
    hub_entry: dict[str, Any], as_task: bool | str | None
) -> None:
    arguments = {"message": "input file not found", "code": TASK_NOT_FOUND_CODE}
    with MCPHub([hub_entry]) as hub:
        with pytest.raises(ToolCallError, match="input file not found") as caught:
            if as_task == "handle":
                hub.start_task("mcp__t__fail_task", arguments).wait(BOUND)
            else:
                hub.call_tool("mcp__t__fail_task", arguments, timeout=BOUND, task=as_task)
        assert not isinstance(caught.value, TaskNotFoundError)


def test_hub_task_that_ends_while_its_question_is_open_returns_at_once(hub_entry: dict[str, Any]) -> None:
    # The elicitation handler is still waiting for its user when the task completes without the answer.
    asked, release = threading.Event(), threading.Event()

    def slow_user(request: ElicitationRequest) -> ElicitationResponse:
        asked.set()
        release.wait(BOUND)
        return ElicitationResponse.decline()

    with MCPHub([hub_entry], elicitation=slow_user) as hub:
        try:
            result = hub.call_tool("mcp__t__optional_ask", {"delay": 0.3}, timeout=BOUND)
            assert result.text == "done without the answer"
            assert asked.is_set() and not release.is_set()
        finally:
            release.set()


def test_hub_status_messages_are_scrubbed_of_secrets_as_errors_are(events: EventLog) -> None:
    secret = "sk-live-abcdef1234567890"
    entry = stdio_config("t", script=TASKS_SERVER, events=events, env={"API_KEY": secret})
    messages: list[str | None] = []
    with MCPHub([entry]) as hub, pytest.raises(ToolCallError, match="upstream rejected key") as caught:
        hub.call_tool(
            "mcp__t__status_secret",
            timeout=BOUND,
            progress=lambda _done, _total, message: messages.append(message),
        )
    assert "using key ***" in messages
    assert secret not in str(caught.value) and all(secret not in str(message) for message in messages)


def test_hub_list_tasks_is_unsupported_by_the_extension(hub_entry: dict[str, Any]) -> None:
    with MCPHub([hub_entry]) as hub:
        with pytest.raises(UnsupportedFeatureError, match="no tasks/list"):
            hub.list_tasks("t")
        assert (
            hub.call_tool("mcp__t__stages", {"count": 1, "delay": 0}, timeout=BOUND).text == "done 1 stages"
        )


def test_hub_of_another_process_fetches_a_result_by_task_id(http_target: Target) -> None:
    assert isinstance(http_target.server, str)
    with MCPHub([http_config("t", http_target.server)]) as hub:
        handle = hub.start_task("mcp__t__stages", {"count": 2, "delay": 0.05, "tag": "by-id"})
    script = textwrap.dedent(
        """
        import sys
        from mcp_sync import MCPHub

        with MCPHub([{"server_name": "t", "transport": "streamable-http", "url": sys.argv[1]}]) as hub:
            result = hub.task("t", sys.argv[2]).result(timeout=30)
            print(result.text)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, http_target.server, handle.task_id],
        capture_output=True,
        text=True,
        timeout=BOUND * 2,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done 2 stages by-id"
    assert http_target.events.count("run") == 1


class _Proxy:
    """A TCP forwarder on 127.0.0.1 in front of a server, that can go away and come back on its port:
    a network path that breaks while the server (and its tasks) lives on."""

    def __init__(self, target_port: int) -> None:
        self._target_port = target_port
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, []
        for sock in ([listener] if listener is not None else []) + sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._target_port), timeout=BOUND)
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


@pytest.mark.parametrize("how", ["handle", "call", "default call", "default submit"])
def test_hub_wait_goes_on_with_the_same_task_after_a_reconnect(events: EventLog, how: str) -> None:
    arguments = {"count": 20, "delay": 0.1, "tag": "once"}
    with HttpServer(script=TASKS_SERVER, events=events) as server:
        assert server.port is not None
        proxy = _Proxy(server.port)
        proxy.start()
        try:
            entry = http_config(
                "t",
                f"http://127.0.0.1:{proxy.port}/mcp",
                reconnect={"initial_delay_ms": 50, "max_delay_ms": 200, "max_attempts": 200},
            )
            with MCPHub([entry]) as hub:
                waited: list[Any] = []
                if how == "handle":
                    handle = hub.start_task("mcp__t__stages", arguments)
                    work = functools.partial(handle.wait, BOUND * 2)
                elif how == "default submit":
                    future = hub.submit("mcp__t__stages", arguments, timeout=BOUND * 2)
                    work = functools.partial(future.result, BOUND * 2)
                else:  # the server answers a default call (task=None) with a task too
                    work = functools.partial(
                        hub.call_tool,
                        "mcp__t__stages",
                        arguments,
                        timeout=BOUND * 2,
                        task=True if how == "call" else None,
                    )
                waiter = threading.Thread(target=lambda: waited.append(work()), daemon=True)
                waiter.start()
                events.wait_for(
                    lambda event: event["event"] == "stage" and event["stage"] == 2, timeout=BOUND
                )
                proxy.stop()
                wait_until(lambda: hub.servers["t"].state == "reconnecting", timeout=BOUND)
                proxy.start()
                waiter.join(BOUND * 2)
                assert [result.text for result in waited] == ["done 20 stages once"]
                assert hub.servers["t"].state == "ready"
        finally:
            proxy.stop()
    assert events.count("run") == 1
    assert events.count("task_created") == 1


@pytest.mark.parametrize("as_task", [None, True])
def test_hub_call_whose_input_cannot_be_given_fails_and_cancels_its_task(
    hub_entry: dict[str, Any], target: Target, as_task: bool | None
) -> None:
    def no_user(request: ElicitationRequest) -> ElicitationResponse:
        raise RuntimeError("nobody at the keyboard")

    with MCPHub([hub_entry], elicitation=no_user) as hub:
        with pytest.raises(ToolCallError, match="nobody at the keyboard"):
            hub.call_tool("mcp__t__ask", {}, timeout=BOUND, task=as_task)
        created = target.events.wait_for("task_created")
        assert target.events.wait_for("cancelled")["task_id"] == created["task_id"]
        good = hub.call_tool("mcp__t__stages", {"count": 1, "delay": 0}, timeout=BOUND)
        assert good.text == "done 1 stages"


def test_a_handle_waits_through_the_moment_a_dropped_connection_shows_disconnected() -> None:
    # The loop thread announces `disconnected` before it installs the reconnector in the connection's
    # place; a waiting handle may read the state in between. No real server can hold that moment open.
    from unittest import mock

    from mcp_sync._hub.connection import ServerConnection
    from mcp_sync._hub.tasks import TaskHandle

    config = mock.Mock(reconnect=object())  # one server's entry, whichever connection shows it

    def connection(state: str) -> Any:
        stand_in = mock.Mock(spec=ServerConnection)
        stand_in.state = state
        stand_in.error = ServerDisconnectedError("connection lost")
        stand_in.config = config
        return stand_in

    dropped, ready = connection("disconnected"), connection("ready")
    seen = iter([dropped, dropped, dropped])
    handle = TaskHandle(lambda: {"t": next(seen, ready)}, "t", "task-1")
    assert handle._connection(time.monotonic() + BOUND, None) is ready

    dropped.config.reconnect = None  # a server that does not reconnect: disconnected at once
    handle = TaskHandle(lambda: {"t": dropped}, "t", "task-1")
    with pytest.raises(ServerDisconnectedError, match="disconnected"):
        handle._connection(time.monotonic() + BOUND, None)


@pytest.mark.parametrize("caller", ["call_tool", "submit"])
def test_hub_close_during_a_call_cancels_its_task_on_the_server(
    caller: str, hub_entry: dict[str, Any], target: Target
) -> None:
    # A reconnecting server: submit then waits on a thread of its own, as call_tool waits.
    entry = {**hub_entry, "reconnect": {"initial_delay_ms": 50, "max_delay_ms": 200, "max_attempts": 3}}
    outcome: list[object] = []
    hub = MCPHub([entry])
    hub.start()

    def call() -> None:
        try:
            if caller == "call_tool":
                outcome.append(hub.call_tool("mcp__t__stages", LONG, timeout=BOUND))
            else:
                outcome.append(hub.submit("mcp__t__stages", LONG, timeout=BOUND).result(BOUND))
        except Exception as exc:
            outcome.append(exc)

    caller_thread = threading.Thread(target=call, daemon=True)
    caller_thread.start()
    created = target.events.wait_for("task_created", timeout=BOUND)
    target.events.wait_for("get", timeout=BOUND)  # the call is following its task
    hub.close()
    caller_thread.join(BOUND)
    assert not caller_thread.is_alive()
    assert outcome and isinstance(outcome[0], Exception)
    assert target.events.wait_for("cancelled", timeout=BOUND)["task_id"] == created["task_id"]


_CONTEXT_STATE_SCRIPT = r"""
import json, os, sys, threading
from mcp_sync import MCPHub, ToolCallError, ToolCallTimeoutError
from mcp_sync._runtime.task_watch import TASK_WATCHER
from mcp_sync._server.tasks import extension

def state():
    return (TASK_WATCHER.get(), extension._CAPTURE.get())

seen = {}
with MCPHub([json.loads(sys.argv[1])], tracing=True) as hub:
    hub.start()
    try:
        hub.call_tool("mcp__t__fail_task", task=True)
        raise SystemExit("fail_task did not fail")
    except ToolCallError:
        pass
    try:
        hub.call_tool("mcp__t__stages", {"count": 50, "delay": 1.0}, task=True, timeout=1.0)
    except ToolCallTimeoutError:
        pass
    hub.start_task("mcp__t__stages", {"count": 1, "delay": 0.01}).result(timeout=30)
    seen["caller"] = state()
    other = []
    thread = threading.Thread(target=lambda: other.append(state()))
    thread.start()
    thread.join(10)
    seen["thread"] = other[0]
    pid = os.fork()
    if pid == 0:
        os._exit(0 if state() == (None, False) else 3)
    _, status = os.waitpid(pid, 0)
    seen["fork"] = os.waitstatus_to_exitcode(status)
print(json.dumps({key: list(value) if isinstance(value, tuple) else value for key, value in seen.items()}))
"""


def test_the_task_context_state_is_left_unset_by_calls_that_fail_time_out_or_succeed_in_a_fresh_interpreter(
    events: EventLog,
) -> None:
    """`TASK_WATCHER` (tracing) and `_CAPTURE` (the extension's start) live in one call's context: after a
    failed, a timed-out and a good task call the caller, another thread and a forked child see neither."""
    entry = stdio_config("t", script=TASKS_SERVER, events=events)
    done = subprocess.run(
        [sys.executable, "-c", _CONTEXT_STATE_SCRIPT, json.dumps(entry)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "caller": [None, False],
        "thread": [None, False],
        "fork": 0,
    }


@pytest.mark.parametrize("route", ["call_tool", "submit"])
def test_a_failed_tasks_error_carries_the_code_the_server_gave(events: EventLog, route: str) -> None:
    with MCPHub([stdio_config("t", script=TASKS_SERVER, events=events)]) as hub:
        hub.start()
        arguments = {"message": "out of paper", "code": -32001}
        with pytest.raises(ToolCallError, match="out of paper") as raised:
            if route == "call_tool":
                hub.call_tool("mcp__t__fail_task", arguments, task=True, timeout=BOUND)
            else:
                hub.submit("mcp__t__fail_task", arguments, task=True, timeout=BOUND).result(BOUND)
    assert raised.value.code == -32001


# -- the server's default timeout and a call answered with a task ------------------------------------


def _called(hub: MCPHub, caller: str, name: str, arguments: dict[str, Any]) -> Any:
    """`hub.call_tool` or `hub.submit` of `name` with no timeout of the caller's."""
    if caller == "call_tool":
        return hub.call_tool(name, arguments)
    return hub.submit(name, arguments).result(timeout=BOUND)


@pytest.mark.parametrize("caller", ["call_tool", "submit"])
def test_hub_default_timeout_bounds_the_wait_for_a_task_not_the_task(
    caller: str, hub_entry: dict[str, Any]
) -> None:
    with MCPHub([{**hub_entry, "tool_call_timeout_ms": 300}]) as hub:
        result = _called(hub, caller, "mcp__t__stages", {"count": 4, "delay": 0.25, "tag": caller})
        assert result.text == f"done 4 stages {caller}"


@pytest.mark.parametrize("caller", ["call_tool", "submit"])
def test_hub_default_timeout_bounds_a_call_the_server_answers_with_no_task(
    caller: str, events: EventLog, tmp_path: Any
) -> None:
    entry = stdio_config(
        "t", "--gates", str(tmp_path), script=TASKS_SERVER, events=events, tool_call_timeout_ms=300
    )
    with MCPHub([entry]) as hub:
        with pytest.raises(ToolCallTimeoutError):
            _called(hub, caller, "mcp__t__gated", {"tag": f"withheld-{caller}", "hold": ["create"]})
        with pytest.raises(ToolCallTimeoutError):
            _called(hub, caller, "mcp__t__plain_slow", {"seconds": 60})
        assert hub.call_tool("mcp__t__stages", {"count": 1, "delay": 0}).text == "done 1 stages"


@pytest.mark.parametrize("caller", ["call_tool", "submit"])
def test_hub_default_timeout_of_a_task_call_ends_with_the_tasks_life(
    caller: str, events: EventLog, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_sync._hub import tasks

    ttls: list[float | None] = []

    def short_life(info: TaskInfo) -> float:
        ttls.append(info.ttl)
        return 0.5

    monkeypatch.setattr(tasks, "task_wait_limit", short_life)
    entry = stdio_config(
        "t", "--gates", str(tmp_path), script=TASKS_SERVER, events=events, tool_call_timeout_ms=300
    )
    with MCPHub([entry]) as hub:
        with pytest.raises(ToolCallTimeoutError) as raised:
            _called(hub, caller, "mcp__t__gated", {"tag": f"endless-{caller}"})
        created = events.wait_for("task_created", tag=f"endless-{caller}")
        assert raised.value.task_id == created["task_id"]
        assert events.wait_for("cancelled", timeout=BOUND)["task_id"] == created["task_id"]
    assert ttls == [600.0]
