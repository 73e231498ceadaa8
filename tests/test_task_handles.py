"""What a task handle and a task call's errors say is exactly what happened, at the edges of other features:
a registry shared by two hubs, a fork, a call the server answers at once, a cancel the server refuses, two
waits on one task, a hub not started yet. Against the tasks fixture server (tests/servers/tasks_server.py,
the 2026-07-28 tasks extension) over stdio and Streamable HTTP."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_sync import (
    ConfigError,
    ElicitationRequest,
    ElicitationResponse,
    MCPHub,
    MCPSyncError,
    ServerDisconnectedError,
    TaskCancelRefusedError,
    TaskNotFoundError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
)
from tests.support import REPO_ROOT, SERVERS_DIR, EventLog, HttpServer, http_config, stdio_config
from tests.tasks_harness import Relay

TASKS_SERVER = SERVERS_DIR / "tasks_server.py"
BOUND = 30.0
"""Bound on each wait of a test."""
LONG = {"count": 500, "delay": 0.2}
"""A task that runs for minutes unless cancelled."""


@pytest.fixture(params=["stdio", "http"])
def entry(request: pytest.FixtureRequest, events: EventLog) -> Iterator[dict[str, Any]]:
    """The hub's entry for a tasks fixture server named ``t``, over each transport."""
    if request.param == "stdio":
        yield stdio_config("t", script=TASKS_SERVER, events=events)
        return
    with HttpServer(script=TASKS_SERVER, events=events) as server:
        yield http_config("t", server.url)


def _records(hub: MCPHub) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads(hub.call_tool("mcp__t__records", timeout=BOUND).text)
    return recorded


# -- a registry shared by two hubs ---------------------------------------------------------------------


@pytest.mark.parametrize("route", ["call_tool", "task=True", "submit", "start_task"])
def test_a_task_call_through_a_hub_sharing_another_hub_s_registry_returns_its_result(
    entry: dict[str, Any], route: str
) -> None:
    arguments = {"count": 2, "delay": 0.01, "tag": "shared"}
    with MCPHub([entry]) as owner, MCPHub([], registry=owner.registry) as caller:
        if route == "start_task":
            result = caller.start_task("mcp__t__stages", arguments).wait(BOUND)
        elif route == "submit":
            result = caller.submit("mcp__t__stages", arguments, timeout=BOUND).result(BOUND)
        else:
            task = True if route == "task=True" else None
            result = caller.call_tool("mcp__t__stages", arguments, timeout=BOUND, task=task)
        assert result.text == "done 2 stages shared"
        assert (
            caller.call_tool("mcp__t__stages", {"count": 1, "delay": 0}, timeout=BOUND).text
            == "done 1 stages"
        )


@pytest.mark.parametrize("stop", ["timeout", "cancel event", "handle cancel"])
def test_a_stopped_task_call_through_a_shared_registry_cancels_its_task_on_the_server(
    entry: dict[str, Any], events: EventLog, stop: str
) -> None:
    with MCPHub([entry]) as owner, MCPHub([], registry=owner.registry) as caller:
        if stop == "handle cancel":
            handle = caller.start_task("mcp__t__stages", LONG)
            assert handle.cancel(BOUND).status == "cancelled"
        else:
            cancel = threading.Event()
            timeout = 1.0 if stop == "timeout" else BOUND
            error = ToolCallTimeoutError if stop == "timeout" else ToolCallCancelledError
            with pytest.raises(error):
                # The first status message is seen once the call follows its task: it cancels from there.
                caller.call_tool(
                    "mcp__t__stages",
                    LONG,
                    timeout=timeout,
                    cancel=cancel,
                    task=True,
                    progress=(lambda *_update: cancel.set()) if stop == "cancel event" else None,
                )
        created = events.wait_for("task_created")
        assert events.wait_for("cancelled", timeout=BOUND)["task_id"] == created["task_id"]
        assert _records(owner)["status"][created["task_id"]] == "cancelled"


def test_a_handle_by_id_through_a_shared_registry_reaches_the_other_hub_s_server(
    entry: dict[str, Any],
) -> None:
    with MCPHub([entry]) as owner, MCPHub([], registry=owner.registry) as caller:
        started = owner.start_task("mcp__t__stages", {"count": 1, "delay": 0.01, "tag": "by id"})
        assert caller.task("t", started.task_id).wait(BOUND).text == "done 1 stages by id"
        with pytest.raises(ConfigError, match="no server named 'u'"):
            caller.task("u", started.task_id)


# -- a call the server answers at once -------------------------------------------------------------


def test_a_handle_of_a_call_answered_at_once_holds_its_result_and_asks_the_server_nothing(
    entry: dict[str, Any], events: EventLog
) -> None:
    # A 2026-07-28 server decides per call: `records` is answered at once, with no task.
    with MCPHub([entry]) as hub:
        handle = hub.start_task("mcp__t__records")
        assert handle.task_id == ""
        assert handle.info is not None and handle.info.status == "completed" and handle.info.done
        assert json.loads(handle.result(BOUND).text)["runs"] == {}
        assert handle.wait(BOUND) is handle.result()
        assert handle.refresh(BOUND) is handle.info
        assert handle.cancel(BOUND) is handle.info
        assert events.count("get") == 0 and events.count("task_created") == 0
        assert repr(handle) == (
            "<TaskHandle server='t' answered at once (no task) tool='mcp__t__records' status='completed'>"
        )
        with pytest.raises(ValueError, match="task_id"):
            hub.task("t", handle.task_id)
        assert (
            hub.call_tool("mcp__t__stages", {"count": 1, "delay": 0}, timeout=BOUND).text == "done 1 stages"
        )


# -- a cancel the server refuses -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "code", "reason"),
    [
        ("committing", -32603, "cannot cancel: committing"),
        ("locked", -32602, "cannot cancel: the task holds a lock"),
    ],
)
def test_a_cancel_the_server_refuses_raises_naming_the_server_the_task_and_its_reason(
    entry: dict[str, Any], tag: str, code: int, reason: str
) -> None:
    with MCPHub([entry]) as hub:
        # In lockstep a stage ends only once a poll has seen it: the task is running when it is cancelled.
        handle = hub.start_task("mcp__t__stages", {"count": 3, "delay": 0, "lockstep": True, "tag": tag})
        with pytest.raises(TaskCancelRefusedError) as refused:
            handle.cancel(BOUND)
        error = refused.value
        assert (error.server, error.task_id, error.code, error.reason) == ("t", handle.task_id, code, reason)
        assert error.tool == "mcp__t__stages"
        assert "'t'" in str(error) and handle.task_id in str(error) and reason in str(error)
        assert handle.wait(BOUND).text == f"done 3 stages {tag}"  # it ran on: the cancel did not happen
        assert _records(hub)["cancelled"] == []


def test_a_cancel_of_a_task_that_already_ended_returns_its_end(entry: dict[str, Any]) -> None:
    with MCPHub([entry]) as hub:
        handle = hub.start_task("mcp__t__stages", {"count": 1, "delay": 0, "tag": "strict"})
        handle.wait(BOUND)
        assert handle.cancel(BOUND).status == "completed"  # refused with -32602: it had ended


# -- errors name the tool and the task apart -------------------------------------------------------


def test_a_handle_s_errors_name_the_tool_and_the_task_id_each_once(entry: dict[str, Any]) -> None:
    with MCPHub([entry]) as hub:
        cancelled = hub.start_task("mcp__t__stages", LONG)
        cancelled.cancel(BOUND)
        failed = hub.start_task("mcp__t__fail_task", {"message": "out of paper"})
        slow = hub.start_task("mcp__t__stages", {"count": 3, "delay": 0, "lockstep": True})
        vanished = hub.start_task("mcp__t__vanish")
        raised: list[tuple[ToolCallError, str]] = []
        for handle, error in [
            (cancelled, ToolCallCancelledError),
            (failed, ToolCallError),
            (slow, ToolCallTimeoutError),
            (vanished, TaskNotFoundError),
        ]:
            with pytest.raises(error) as caught:
                handle.wait(0.01 if handle is slow else BOUND)
            raised.append((caught.value, handle.task_id))
        for error, task_id in raised:
            assert error.tool in ("mcp__t__stages", "mcp__t__fail_task", "mcp__t__vanish"), error.tool
            assert error.task_id == task_id
            assert str(error).count(task_id) == 1, str(error)
        by_id = hub.task("t", cancelled.task_id)
        with pytest.raises(ToolCallCancelledError) as caught:
            by_id.wait(BOUND)
        assert (caught.value.tool, caught.value.task_id) == (None, cancelled.task_id)
        assert str(caught.value).count(cancelled.task_id) == 1


@pytest.mark.parametrize("task", [True, None])
def test_a_stopped_task_call_s_error_names_the_tool_and_carries_the_task_id(
    entry: dict[str, Any], events: EventLog, task: bool | None
) -> None:
    cancel = threading.Event()
    with MCPHub([entry]) as hub:
        with pytest.raises(ToolCallCancelledError) as caught:
            # Stopped once its first status message is seen: the call follows its task by then.
            hub.call_tool(
                "mcp__t__stages",
                LONG,
                timeout=BOUND,
                cancel=cancel,
                task=task,
                progress=lambda *_: cancel.set(),
            )
        task_id = events.wait_for("task_created")["task_id"]
        assert (caught.value.tool, caught.value.task_id) == ("mcp__t__stages", task_id)
        assert events.wait_for("cancelled", timeout=BOUND)["task_id"] == task_id


# -- two waits on one task, and a hub not started ------------------------------------------------------


def test_two_waits_on_one_task_that_needs_input_ask_the_user_once(
    entry: dict[str, Any], events: EventLog
) -> None:
    asked: list[ElicitationRequest] = []
    release = threading.Event()

    def slow_user(request: ElicitationRequest) -> ElicitationResponse:
        asked.append(request)
        release.wait(BOUND)
        return ElicitationResponse.accept({"name": "Ada"})

    with MCPHub([entry], elicitation=slow_user) as hub:
        handle = hub.start_task("mcp__t__ask", {"tag": "twice"})
        results: list[str] = []
        first = threading.Thread(target=lambda: results.append(handle.wait(BOUND).text), daemon=True)
        first.start()
        try:
            events.wait_for("input_required", timeout=BOUND)
            polled = threading.Event()
            second_handle = hub.task("t", handle.task_id)
            second = threading.Thread(
                target=lambda: results.append(
                    second_handle.wait(BOUND, progress=lambda *_update: polled.set()).text
                ),
                daemon=True,
            )
            second.start()
            assert polled.wait(BOUND)  # the second wait has seen the task waiting for input
            seen = events.count("get")
            events.wait_for(lambda _event: events.count("get") >= seen + 3, timeout=BOUND)
        finally:
            release.set()
        first.join(BOUND)
        second.join(BOUND)
    assert results == ['accept {"name": "Ada"}'] * 2
    assert len(asked) == 1


@pytest.mark.parametrize("request_kind", ["task", "list_tasks"])
def test_a_task_request_before_start_says_the_hub_is_not_started(request_kind: str, events: EventLog) -> None:
    hub = MCPHub([stdio_config("t", script=TASKS_SERVER, events=events)])
    with pytest.raises(MCPSyncError, match="not started") as raised:
        if request_kind == "task":
            hub.task("t", "T1")
        else:
            hub.list_tasks("t")
    assert not isinstance(raised.value, ConfigError)
    with pytest.raises(ConfigError, match="no server named 'u'"):
        hub.task("u", "T1")
    with hub:  # started, the same hub reaches it
        assert (
            hub.task("t", hub.start_task("mcp__t__stages", {"count": 1, "delay": 0}).task_id).wait(BOUND).text
            == "done 1 stages"
        )


# -- a fork -------------------------------------------------------------------------------------------

_FORK_SCRIPT = r"""
import json, os, sys, threading
from mcp_sync import MCPHub, MCPSyncError

def attempt(method, *args, **kwargs):
    outcome = []
    def run():
        try:
            method(*args, **kwargs)
            outcome.append("returned")
        except MCPSyncError as error:
            outcome.append(type(error).__name__ + ": " + str(error))
        except BaseException as error:
            outcome.append("other " + type(error).__name__ + ": " + str(error))
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    return outcome[0] if outcome else "still waiting"

with MCPHub([json.loads(sys.argv[1])]) as hub:
    running = hub.start_task("mcp__t__stages", {"count": 500, "delay": 0.2})
    at_once = hub.start_task("mcp__t__records")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        seen = {
            "wait": attempt(running.wait, 3),
            "wait without timeout": attempt(running.wait),
            "result": attempt(running.result),
            "refresh": attempt(running.refresh),
            "cancel": attempt(running.cancel),
            "result at once": attempt(at_once.result),
        }
        os.write(write, json.dumps(seen).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        seen = json.loads(pipe.read())
    os.waitpid(pid, 0)
    seen["parent"] = running.refresh(30).status
    running.cancel(30)
print(json.dumps(seen))
"""


def test_every_method_of_a_handle_refuses_at_once_in_a_forked_child(events: EventLog) -> None:
    with HttpServer(script=TASKS_SERVER, events=events) as server:
        entry = http_config("t", server.url, reconnect={"initial_delay_ms": 50, "max_attempts": 3})
        done = subprocess.run(
            [sys.executable, "-c", _FORK_SCRIPT, json.dumps(entry)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO_ROOT,
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen.pop("parent") == "working"  # the child touched nothing of the parent's
    for method, outcome in seen.items():
        assert outcome.startswith("MCPSyncError: "), (method, outcome)
        assert "(a fork)" in outcome and "create a new MCPHub in the child" in outcome, (method, outcome)
    assert "hub.task('t', " in seen["wait"]


def test_a_task_request_for_a_disabled_server_says_it_is_disabled(events: EventLog) -> None:
    disabled = stdio_config("t", script=TASKS_SERVER, events=events, enabled=False)
    with MCPHub([disabled]) as hub, pytest.raises(MCPSyncError, match="'t' is disabled") as raised:
        hub.task("t", "T1")
    assert not isinstance(raised.value, ConfigError)


@pytest.mark.parametrize("how", ["handle", "call"])
def test_input_answered_before_a_reconnect_is_given_again_after_it_not_asked_again(
    events: EventLog, how: str
) -> None:
    # The user answers; the connection goes down before the answer (tasks/update) reaches the server, and
    # comes back: the task still waits for that input, and gets the same answer without a second question.
    asked: list[ElicitationRequest] = []
    with HttpServer(script=TASKS_SERVER, events=events) as server:
        assert server.port is not None
        with Relay(server.port) as relay:
            reconnect = {"initial_delay_ms": 50, "max_delay_ms": 200, "max_attempts": 200}
            entry = http_config("t", relay.url, reconnect=reconnect)
            reconnecting = threading.Event()

            def come_back_once_reconnecting() -> None:
                reconnecting.wait(BOUND)
                relay.come_back()

            def user(request: ElicitationRequest) -> ElicitationResponse:
                asked.append(request)
                if len(asked) == 1:
                    relay.go_down()
                    threading.Thread(target=come_back_once_reconnecting, daemon=True).start()
                return ElicitationResponse.accept({"name": "Ada"})

            with MCPHub([entry], elicitation=user) as hub:
                hub.on_server_state(
                    lambda _name, state, _error: state == "reconnecting" and reconnecting.set()
                )
                if how == "handle":
                    result = hub.start_task("mcp__t__ask", {"tag": "reconnect"}).wait(BOUND * 2)
                else:
                    result = hub.call_tool("mcp__t__ask", {"tag": "reconnect"}, timeout=BOUND * 2, task=True)
                assert result.text == 'accept {"name": "Ada"}'
    assert len(asked) == 1
    assert events.count("task_created") == 1


def test_a_wait_looks_again_when_a_failed_reconnect_attempt_gives_way_to_its_reconnector() -> None:
    # While an attempt to reconnect connects, the map of servers shows it; a handle that reads its state just
    # after it failed, before the reconnector stands in again, must look again, not give up. No real server
    # can hold that moment open.
    import time
    from unittest import mock

    from mcp_sync._hub.connection import ServerConnection
    from mcp_sync._hub.tasks import TaskHandle

    config = mock.Mock(reconnect=object())  # one server's entry, whichever connection shows it

    def connection(state: str) -> Any:
        stand_in = mock.Mock(spec=ServerConnection)
        stand_in.state = state
        stand_in.error = MCPSyncError("nothing accepted a connection")
        stand_in.config = config
        return stand_in

    attempt, reconnector, ready = connection("failed"), mock.Mock(state="reconnecting"), connection("ready")
    seen = iter([attempt, reconnector])
    handle = TaskHandle(lambda: {"t": next(seen, ready)}, "t", "task-1")
    assert handle._connection(time.monotonic() + BOUND, None) is ready


@pytest.mark.parametrize("route", ["call_tool", "submit", "task=True"])
def test_a_failed_task_call_s_error_names_the_tool_and_carries_the_task_id(
    entry: dict[str, Any], events: EventLog, route: str
) -> None:
    arguments = {"message": "out of paper"}
    with MCPHub([entry]) as hub, pytest.raises(ToolCallError, match="out of paper") as caught:
        if route == "submit":
            hub.submit("mcp__t__fail_task", arguments, timeout=BOUND, task=True).result(BOUND)
        else:
            task = True if route == "task=True" else None
            hub.call_tool("mcp__t__fail_task", arguments, timeout=BOUND, task=task)
    task_id = events.wait_for("task_created")["task_id"]
    assert (caught.value.tool, caught.value.task_id) == ("mcp__t__fail_task", task_id)
    assert str(caught.value).count(task_id) == 1, str(caught.value)


# -- errors of a handle whose server cannot be reached, a name clash, pickling ---------------------------


def test_a_handle_used_after_its_hub_closed_raises_naming_the_tool_and_the_task_id(
    entry: dict[str, Any],
) -> None:
    with MCPHub([entry]) as hub:
        handle = hub.start_task("mcp__t__stages", LONG)
    for method in (handle.refresh, handle.cancel, handle.wait):
        with pytest.raises(ServerDisconnectedError) as caught:
            method(BOUND)
        assert (caught.value.tool, caught.value.task_id) == ("mcp__t__stages", handle.task_id)


def test_a_wait_on_a_server_whose_reconnects_ran_out_raises_naming_the_tool_and_the_task_id(
    events: EventLog,
) -> None:
    reconnect = {"initial_delay_ms": 50, "max_delay_ms": 100, "max_attempts": 2}
    with (
        HttpServer(script=TASKS_SERVER, events=events) as server,
        MCPHub([http_config("t", server.url, reconnect=reconnect)]) as hub,
    ):
        handle = hub.start_task("mcp__t__stages", LONG)
        server.kill()
        with pytest.raises(ServerDisconnectedError) as caught:
            handle.wait(BOUND)
        assert (caught.value.tool, caught.value.task_id) == ("mcp__t__stages", handle.task_id)


def test_a_handle_by_id_on_a_name_another_hub_on_the_registry_holds_reaches_that_hub_s_server(
    events: EventLog,
) -> None:
    # Both hubs configure `t`: the second's cannot take the name (the first holds it) and fails, yet
    # its calls of mcp__t__* run on the first hub's server; so do its handles by id.
    with HttpServer(script=TASKS_SERVER, events=events) as server:
        entry = http_config("t", server.url)
        with MCPHub([entry]) as owner, MCPHub([entry], registry=owner.registry) as caller:
            started = caller.start_task("mcp__t__stages", {"count": 1, "delay": 0.01, "tag": "clash"})
            assert caller.task("t", started.task_id).wait(BOUND).text == "done 1 stages clash"


def test_task_errors_survive_pickling_with_their_fields() -> None:
    refused = TaskCancelRefusedError(
        "refused", server="t", task_id="T1", reason="busy", code=-32603, tool="mcp__t__x"
    )
    missing = TaskNotFoundError("unknown", server="t", task_id="T2", tool="mcp__t__x")
    for error in (refused, missing):
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error) and vars(back) == vars(error)
