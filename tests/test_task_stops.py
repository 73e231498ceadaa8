"""Stopping a call that runs as a task is exact: whatever stops it (timeout, cancel Event, `close()`,
`reload()`), the caller is answered at once, and the task the server made for it is cancelled, also one
whose creation answer comes late; a reload to the same server hands the task over instead.

Against the 2026-07-28 tasks-extension fixture (tests/servers/tasks_server.py), over stdio and Streamable
HTTP; each test asserts on what the server recorded (its events), not on timing.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import (
    MCPHub,
    ServerDisconnectedError,
    ToolCallCancelledError,
    ToolCallTimeoutError,
)
from mcp_sync._hub import tasks as hub_tasks
from mcp_sync._server.tasks import runner
from tests.support import (
    REPO_ROOT,
    SERVERS_DIR,
    EventLog,
    HttpServer,
    http_config,
    stdio_config,
    wait_until,
)
from tests.tasks_harness import Relay

TASKS_SERVER = SERVERS_DIR / "tasks_server.py"
BOUND = 30.0
"""Bound on each wait of a test."""
LONG = {"count": 500, "delay": 0.2}
"""A task that runs for minutes unless cancelled."""
QUICK = {"count": 1, "delay": 0}
RECONNECT = {"initial_delay_ms": 50, "max_delay_ms": 200, "max_attempts": 50}


@pytest.fixture(params=["stdio", "http"])
def served(request: pytest.FixtureRequest, events: EventLog) -> Iterator[Callable[..., dict[str, Any]]]:
    """`served(*flags, **overrides)`: the entry (named ``t``) of a tasks server run with `flags`."""
    servers: list[HttpServer] = []

    def entry(*flags: str, **overrides: Any) -> dict[str, Any]:
        if request.param == "stdio":
            return stdio_config("t", *flags, script=TASKS_SERVER, events=events, **overrides)
        server = HttpServer(*flags, script=TASKS_SERVER, events=events)
        server.__enter__()
        servers.append(server)
        return http_config("t", server.url, **overrides)

    try:
        yield entry
    finally:
        for server in servers:
            server.__exit__(None, None, None)


def _in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Run `work` on a thread; its result or exception lands in the list."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _cancelled_ids(events: EventLog) -> list[str]:
    return [event["task_id"] for event in events.find("cancelled")]


# -- a task whose creation answer comes late ---------------------------------------------------------


@pytest.mark.parametrize("stop", ["timeout", "cancel"])
def test_a_stopped_default_call_cancels_the_task_the_server_answers_with_late(
    served: Callable[..., dict[str, Any]], events: EventLog, stop: str
) -> None:
    # The server makes the call a task at once and answers after the call was stopped (task=None: it
    # only may become a task), within the time a call that may become one is given to answer.
    delay_ms = int(runner.MAY_BECOME_TASK_GRACE * 1000 / 2)
    with MCPHub([served("--create-delay-ms", str(delay_ms))]) as hub:
        if stop == "timeout":
            with pytest.raises(ToolCallTimeoutError):
                hub.call_tool("mcp__t__stages", LONG, timeout=0.1)
        else:
            cancel = threading.Event()
            thread, outcome = _in_thread(
                lambda: hub.call_tool("mcp__t__stages", LONG, timeout=BOUND, cancel=cancel)
            )
            events.wait_for("task_created", timeout=BOUND)
            cancel.set()
            thread.join(BOUND)
            assert len(outcome) == 1 and isinstance(outcome[0], ToolCallCancelledError)
        created = events.wait_for("task_created", timeout=BOUND)
        assert events.wait_for("cancelled", timeout=BOUND)["task_id"] == created["task_id"]
        # The connection is as good as before.
        assert hub.call_tool("mcp__t__stages", QUICK, timeout=BOUND).text == "done 1 stages"


@pytest.mark.parametrize("caller", ["call_tool", "start_task"])
def test_a_stopped_task_call_cancels_a_task_the_server_creates_long_after(
    served: Callable[..., dict[str, Any]], events: EventLog, caller: str
) -> None:
    # Longer than a stopped caller's start used to be waited for: the task is cancelled when it comes.
    delay_ms = int(runner.CANCEL_TIMEOUT * 1000 + 1000)
    with MCPHub([served("--create-delay-ms", str(delay_ms))]) as hub:
        with pytest.raises(ToolCallTimeoutError):
            if caller == "call_tool":
                hub.call_tool("mcp__t__stages", LONG, timeout=0.1, task=True)
            else:
                hub.start_task("mcp__t__stages", LONG, timeout=0.1)
        created = events.wait_for("task_created", timeout=BOUND)
        assert events.wait_for("cancelled", timeout=BOUND)["task_id"] == created["task_id"]


@pytest.mark.parametrize("task", [True, None])
def test_closing_the_hub_while_a_call_s_task_is_being_created_cancels_it_before_close_returns(
    served: Callable[..., dict[str, Any]], events: EventLog, task: bool | None
) -> None:
    # Later than the session used to keep its transport at the end (1 s), within what the end now gives
    # (1.7 s for a stdio server); a default call (it only may become a task) is given
    # `MAY_BECOME_TASK_GRACE` to answer.
    delay_ms = 1200 if task else int(runner.MAY_BECOME_TASK_GRACE * 1000 / 2)
    hub = MCPHub([served("--create-delay-ms", str(delay_ms))])
    hub.start()
    thread, outcome = _in_thread(lambda: hub.call_tool("mcp__t__stages", LONG, timeout=BOUND, task=task))
    created = events.wait_for("task_created", timeout=BOUND)
    hub.close()
    assert created["task_id"] in _cancelled_ids(events)  # already, when close() returns
    thread.join(BOUND)
    assert len(outcome) == 1 and isinstance(outcome[0], ServerDisconnectedError)


# -- a server slow to answer tasks/cancel --------------------------------------------------------------


@pytest.mark.parametrize("route", ["cancel", "timeout", "submit"])
def test_a_stopped_task_call_raises_before_the_server_answers_its_cancel(
    served: Callable[..., dict[str, Any]], events: EventLog, route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # However long the answer to tasks/cancel would be waited for, the caller does not wait for it.
    monkeypatch.setattr(runner, "CANCEL_TIMEOUT", 4 * BOUND)
    monkeypatch.setattr(hub_tasks, "CANCEL_TIMEOUT", 4 * BOUND, raising=False)
    with MCPHub([served("--hold-cancel")]) as hub:
        cancel = threading.Event()

        def work() -> object:
            if route == "cancel":
                return hub.call_tool("mcp__t__stages", LONG, timeout=4 * BOUND, cancel=cancel)
            if route == "timeout":
                return hub.call_tool("mcp__t__stages", LONG, timeout=1.0)
            # a submitted call keeps its time on the server's loop
            return hub.submit("mcp__t__stages", LONG, timeout=1.0).result(4 * BOUND)

        expected = ToolCallCancelledError if route == "cancel" else ToolCallTimeoutError
        thread, outcome = _in_thread(work)
        events.wait_for("get", timeout=BOUND)  # the task is being followed
        cancel.set()
        thread.join(BOUND)
        assert not thread.is_alive(), "the call waited for the server's answer to tasks/cancel"
        assert len(outcome) == 1 and isinstance(outcome[0], expected)
        created = events.wait_for("task_created", timeout=BOUND)
        assert events.wait_for("cancelled", timeout=BOUND)["task_id"] == created["task_id"]
        assert not events.find("cancel_answered")
        assert hub.call_tool("mcp__t__release_cancels", timeout=BOUND).text == "released"
        events.wait_for("cancel_answered", timeout=BOUND)


# -- reload: the same server, or another -------------------------------------------------------------


@pytest.fixture
def http_events(tmp_path: Path) -> EventLog:
    return EventLog(tmp_path / "other-events.jsonl")


@pytest.mark.parametrize("change", ["timeout", "header", "sign-in restart"])
@pytest.mark.parametrize("task", [None, True])
def test_a_reload_that_keeps_the_server_hands_a_task_call_over(
    events: EventLog, change: str, task: bool | None
) -> None:
    arguments = {"count": 4, "delay": 0, "lockstep": True, "tag": "once"}  # ends only while it is polled
    with HttpServer(script=TASKS_SERVER, events=events) as server:
        entry = http_config("t", server.url, reconnect=RECONNECT, headers={"X-Token": "first"})
        with MCPHub([entry]) as hub:
            thread, outcome = _in_thread(
                lambda: hub.call_tool("mcp__t__stages", arguments, timeout=4 * BOUND, task=task)
            )
            events.wait_for("get", timeout=BOUND)
            if change == "timeout":
                result = hub.reload([{**entry, "tool_call_timeout_ms": 120_000}])
                assert result.restarted == ("t",)
            elif change == "header":
                result = hub.reload([{**entry, "headers": {"X-Token": "rotated"}}])
                assert result.restarted == ("t",)
            else:  # what login() and logout() do once the credentials changed
                hub._servers.restart("t")
            thread.join(2 * BOUND)
            assert [getattr(result, "text", result) for result in outcome] == ["done 4 stages once"]
    assert not events.find("cancelled")
    assert events.count("run") == 1
    assert events.count("task_created") == 1


def test_a_reload_that_gives_the_name_another_address_cancels_a_call_s_task_on_the_first_server(
    events: EventLog, http_events: EventLog
) -> None:
    with (
        HttpServer(script=TASKS_SERVER, events=events) as first,
        HttpServer(script=TASKS_SERVER, events=http_events) as second,
    ):
        entry = http_config("t", first.url, reconnect=RECONNECT)
        with MCPHub([entry]) as hub:
            thread, outcome = _in_thread(lambda: hub.call_tool("mcp__t__stages", LONG, timeout=4 * BOUND))
            created = events.wait_for("get", timeout=BOUND)
            hub.reload([{**entry, "url": second.url}])
            thread.join(2 * BOUND)
            assert len(outcome) == 1 and isinstance(outcome[0], ServerDisconnectedError)
            assert "another server" in str(outcome[0])
            assert created["task_id"] in _cancelled_ids(events)
            assert not http_events.find("get")  # nothing about it was asked of the other server
            assert hub.call_tool("mcp__t__stages", QUICK, timeout=BOUND).text == "done 1 stages"


def test_a_reload_that_gives_the_name_another_address_leaves_a_handle_s_task_running_on_the_first_server(
    events: EventLog, http_events: EventLog
) -> None:
    with (
        HttpServer(script=TASKS_SERVER, events=events) as first,
        HttpServer(script=TASKS_SERVER, events=http_events) as second,
    ):
        entry = http_config("t", first.url, reconnect=RECONNECT)
        with MCPHub([entry]) as hub:
            handle = hub.start_task("mcp__t__stages", LONG)
            thread, outcome = _in_thread(lambda: handle.wait(4 * BOUND))
            events.wait_for("get", timeout=BOUND)
            hub.reload([{**entry, "url": second.url}])
            thread.join(2 * BOUND)
            assert len(outcome) == 1 and isinstance(outcome[0], ServerDisconnectedError)
            assert "keeps running there" in str(outcome[0])
            with pytest.raises(ServerDisconnectedError, match="another server"):
                handle.refresh()
        assert not events.find("cancelled")
        assert not http_events.find("get")


_EXIT_DURING_CREATION_SCRIPT = r"""
import json, sys, threading, time
from mcp_sync import MCPHub

events_path, entry = sys.argv[1], json.loads(sys.argv[2])
hub = MCPHub([entry]).start()
threading.Thread(
    target=lambda: hub.call_tool("mcp__t__stages", {"count": 500, "delay": 0.2}, timeout=600, task=True),
    daemon=True,
).start()
deadline = time.monotonic() + 30
while time.monotonic() < deadline:  # the task is being created: its creation answer is on its way
    with open(events_path, encoding="utf-8") as events:
        if '"task_created"' in events.read():
            break
    time.sleep(0.02)
# The interpreter exits without close(): the exit hook closes the hub.
"""


def test_interpreter_exit_while_a_call_s_task_is_being_created_cancels_it(
    served: Callable[..., dict[str, Any]], events: EventLog
) -> None:
    entry = served("--create-delay-ms", "1200")
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_DURING_CREATION_SCRIPT, str(events), json.dumps(entry)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr
    created = events.wait_for("task_created", timeout=BOUND)
    assert created["task_id"] in _cancelled_ids(events)  # already, when the process has exited


# -- what a stopped task call's error says about its task -----------------------------------------------


@pytest.mark.parametrize("route", ["call_tool", "submit"])
def test_a_stopped_task_call_whose_cancel_is_refused_says_the_cancel_was_sent_and_logs_the_refusal(
    served: Callable[..., dict[str, Any]], events: EventLog, route: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The caller is answered before the server's answer to tasks/cancel: its error cannot say the
    # server was told, only that the cancel was sent; the refusal (`committing`) is logged.
    arguments = {"count": 4, "delay": 0.5, "tag": "committing"}
    with MCPHub([served()]) as hub:
        with pytest.raises(ToolCallTimeoutError) as caught:
            if route == "call_tool":
                hub.call_tool("mcp__t__stages", arguments, timeout=1.0, task=True)
            else:
                hub.submit("mcp__t__stages", arguments, timeout=1.0, task=True).result(BOUND)
        task_id = events.wait_for("task_created", timeout=BOUND)["task_id"]
        message = str(caught.value)
        assert "was told" not in message, message
        assert f"tasks/cancel was sent for task {task_id!r}" in message and "logged" in message
        assert caught.value.task_id == task_id
        done = events.wait_for(lambda event: event["event"] == "task_done" and event["task_id"] == task_id)
        assert done["status"] == "completed"  # the refused cancel left it running
        wait_until(
            lambda: any("refused" in r.getMessage() and task_id in r.getMessage() for r in caplog.records),
            timeout=BOUND,
        )


def test_a_submitted_task_call_that_times_out_carries_its_task_id(
    served: Callable[..., dict[str, Any]], events: EventLog
) -> None:
    with MCPHub([served()]) as hub:
        future = hub.submit("mcp__t__stages", LONG, timeout=1.0, task=True)
        with pytest.raises(ToolCallTimeoutError) as caught:
            future.result(BOUND)
        task_id = events.wait_for("task_created", timeout=BOUND)["task_id"]
        assert (caught.value.tool, caught.value.task_id) == ("mcp__t__stages", task_id)
        assert events.wait_for("cancelled", timeout=BOUND)["task_id"] == task_id


def test_a_submitted_task_call_whose_stdio_server_dies_carries_its_task_id(events: EventLog) -> None:
    with MCPHub([stdio_config("t", script=TASKS_SERVER, events=events)]) as hub:
        future = hub.submit("mcp__t__stages", LONG, timeout=BOUND, task=True)
        task_id = events.wait_for("get", timeout=BOUND)["task_id"]  # the task is being followed
        process = hub.servers["t"]
        assert process.pid is not None
        os.kill(process.pid, getattr(signal, "SIGKILL", signal.SIGTERM))
        with pytest.raises(ServerDisconnectedError) as caught:
            future.result(BOUND)
        assert (caught.value.tool, caught.value.task_id) == ("mcp__t__stages", task_id)



@pytest.mark.parametrize("held", ["poll", "create"])
def test_a_task_call_whose_stdio_server_dies_with_a_request_unanswered_says_what_became_of_its_task(
    events: EventLog, tmp_path: Path, held: str
) -> None:
    """The server dies with a `tasks/get` (or the `tools/call` that creates the task) unanswered: that
    request fails, and the session's end cuts the call short while its error is being made. Whichever
    reaches the call first, on any Python, the error says what became of the task, and names it once
    the server had given its id."""
    entry = stdio_config("t", "--gates", os.fspath(tmp_path), script=TASKS_SERVER, events=events)
    with MCPHub([entry]) as hub, concurrent.futures.ThreadPoolExecutor(1) as starter:
        arguments = {"tag": held, "hold": [held]}
        if held == "poll":
            future = hub.submit("mcp__t__gated", arguments, timeout=BOUND, task=True)
        else:
            future = starter.submit(hub.start_task, "mcp__t__gated", arguments, timeout=BOUND)
        task_id = events.wait_for("held", tag=held, timeout=BOUND)["task_id"]
        pid = hub.servers["t"].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ServerDisconnectedError) as caught:
            future.result(BOUND)
    error = caught.value
    assert error.tool == "mcp__t__gated", error
    if held == "poll":
        assert error.task_id == task_id, error
        assert f"its task {task_id!r} was cancelled if the connection could still send" in str(error), error
    else:  # the server made the task, and its answer with the id was lost
        assert "it may still be running" in str(error), error


@pytest.mark.parametrize("task", [True, None])
def test_closing_the_hub_while_a_task_is_created_later_than_close_waits_says_it_may_still_run(
    served: Callable[..., dict[str, Any]], events: EventLog, task: bool | None
) -> None:
    # The server answers with the task after the session's end stopped waiting for its id: the task
    # cannot be cancelled, and the caller's error says so (the log says the same).
    hub = MCPHub([served("--create-delay-ms", "6000")])
    hub.start()
    thread, outcome = _in_thread(lambda: hub.call_tool("mcp__t__stages", LONG, timeout=BOUND, task=task))
    events.wait_for("task_created", timeout=BOUND)
    hub.close()
    thread.join(BOUND)
    assert len(outcome) == 1 and isinstance(outcome[0], ServerDisconnectedError), outcome
    assert "may still be running" in str(outcome[0]), str(outcome[0])

# -- between a hand-over and the call's first wait on the new connection ------------------------------


@pytest.mark.parametrize("then", ["close", "reload elsewhere"])
def test_closing_or_reloading_elsewhere_right_after_a_hand_over_cancels_the_call_s_task(
    events: EventLog, http_events: EventLog, then: str
) -> None:
    with (
        HttpServer(script=TASKS_SERVER, events=events) as first,
        HttpServer(script=TASKS_SERVER, events=http_events) as second,
    ):
        entry = http_config("t", first.url, reconnect=RECONNECT)
        hub = MCPHub([entry]).start()
        try:
            thread, outcome = _in_thread(
                lambda: hub.call_tool("mcp__t__stages", LONG, timeout=4 * BOUND, task=True)
            )
            created = events.wait_for("get", timeout=BOUND)
            assert hub.reload([{**entry, "tool_call_timeout_ms": 120_000}]).restarted == ("t",)
            if then == "close":  # whether or not the call re-attached to the new connection yet
                hub.close()
            else:
                hub.reload([{**entry, "url": second.url}])
            thread.join(2 * BOUND)
            assert len(outcome) == 1 and isinstance(outcome[0], ServerDisconnectedError)
            events.wait_for("cancelled", timeout=BOUND)
            assert created["task_id"] in _cancelled_ids(events)
            if then != "close":
                assert "could not" not in str(outcome[0])  # the hub had tasks/cancel sent there
                assert not http_events.find("get")
        finally:
            hub.close()


def test_a_reload_elsewhere_while_a_hand_over_is_under_way_cancels_the_call_s_task(
    events: EventLog, http_events: EventLog
) -> None:
    with (
        HttpServer(script=TASKS_SERVER, events=events) as first,
        HttpServer(script=TASKS_SERVER, events=http_events) as second,
    ):
        entry = http_config("t", first.url, reconnect=RECONNECT)
        with MCPHub([entry]) as hub:
            thread, outcome = _in_thread(
                lambda: hub.call_tool("mcp__t__stages", LONG, timeout=4 * BOUND, task=True)
            )
            created = events.wait_for("get", timeout=BOUND)
            old = hub.servers["t"]
            keeping, _kept = _in_thread(lambda: hub.reload([{**entry, "tool_call_timeout_ms": 120_000}]))
            wait_until(lambda: getattr(old, "handing_over", False), timeout=BOUND)  # the first has begun
            hub.reload([{**entry, "url": second.url}])
            keeping.join(2 * BOUND)
            thread.join(2 * BOUND)
            assert len(outcome) == 1 and isinstance(outcome[0], ServerDisconnectedError)
            events.wait_for("cancelled", timeout=BOUND)
            assert created["task_id"] in _cancelled_ids(events)
            assert hub.call_tool("mcp__t__stages", QUICK, timeout=BOUND).text == "done 1 stages"


def test_a_call_cancelled_before_it_re_attached_after_a_hand_over_gets_its_task_cancelled(
    events: EventLog,
) -> None:
    with HttpServer(script=TASKS_SERVER, events=events) as server:
        entry = http_config("t", server.url, reconnect=RECONNECT, connect_timeout_ms=20_000)
        with MCPHub([entry]) as hub:
            cancel = threading.Event()
            thread, outcome = _in_thread(
                lambda: hub.call_tool("mcp__t__stages", LONG, timeout=4 * BOUND, task=True, cancel=cancel)
            )
            created = events.wait_for("get", timeout=BOUND)
            old = hub.servers["t"]
            reloading, _done = _in_thread(lambda: hub.reload([{**entry, "tool_call_timeout_ms": 120_000}]))
            # The new connection is there, not yet ready: the call has not re-attached to it.
            wait_until(lambda: hub.servers.get("t") not in (old, None), timeout=BOUND, interval=0.001)
            cancel.set()
            thread.join(BOUND)
            assert len(outcome) == 1 and isinstance(outcome[0], ToolCallCancelledError)
            reloading.join(2 * BOUND)
            events.wait_for("cancelled", timeout=BOUND)
            assert created["task_id"] in _cancelled_ids(events)


def test_a_call_whose_server_is_reloaded_elsewhere_while_reconnecting_says_its_task_was_not_cancelled(
    events: EventLog, http_events: EventLog
) -> None:
    with (
        HttpServer(script=TASKS_SERVER, events=events) as first,
        HttpServer(script=TASKS_SERVER, events=http_events) as second,
        Relay(first.port) as relay,
    ):
        entry = http_config("t", relay.url, reconnect={**RECONNECT, "max_attempts": 500})
        with MCPHub([entry]) as hub:
            thread, outcome = _in_thread(lambda: hub.call_tool("mcp__t__stages", LONG, timeout=4 * BOUND))
            events.wait_for("get", timeout=BOUND)
            relay.go_down()
            wait_until(lambda: getattr(hub.servers.get("t"), "state", None) == "reconnecting", timeout=BOUND)
            hub.reload([{**entry, "url": second.url}])
            thread.join(2 * BOUND)
            assert len(outcome) == 1 and isinstance(outcome[0], ServerDisconnectedError)
            assert not events.find("cancelled")
            assert "sent tasks/cancel" not in str(outcome[0])


# -- the end of a session: its flushes, and a handle after a reload -------------------------------------


_TERM_IGNORING_WRAPPER = "trap '' TERM; {python} {script} --hold-cancel --events {events}; sleep 5"


def test_closing_after_a_stopped_call_stops_a_slow_stdio_server_within_close_s_bound(
    events: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    # The server does not answer tasks/cancel, and does not exit when its stdin closes nor on SIGTERM
    # (many wrappers do not): the end's flushes must leave the stop's graces their time.
    command = _TERM_IGNORING_WRAPPER.format(
        python=shlex.quote(sys.executable),
        script=shlex.quote(str(TASKS_SERVER)),
        events=shlex.quote(str(events)),
    )
    hub = MCPHub([{"server_name": "t", "transport": "stdio", "command": "bash", "args": ["-c", command]}])
    hub.start()
    with pytest.raises(ToolCallTimeoutError):
        hub.call_tool("mcp__t__stages", LONG, timeout=0.5, task=True)
    hub.close()
    assert events.find("cancelled")
    # The end's flushes stop at the close budget less the stdio stop's graces (a fixed deadline, see
    # `Session._flush_deadline`), so the stop gets its time; whether the last fraction of a second of
    # it is reached on a loaded machine is a matter of scheduling, not asserted here.
    assert hub.state == "closed" and not [t for t in threading.enumerate() if t.name == "mcp-sync:t"]


def test_a_tasks_cancel_cut_off_by_the_session_s_end_is_logged(
    events: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    # The task comes while close() flushes what stopped calls left to do; its tasks/cancel is not answered.
    flags = ("--hold-cancel", "--create-delay-ms", "1000")
    entry = stdio_config("t", *flags, script=TASKS_SERVER, events=events)
    hub = MCPHub([entry]).start()
    with caplog.at_level(logging.WARNING, logger="mcp_sync"):
        with pytest.raises(ToolCallTimeoutError):
            hub.call_tool("mcp__t__stages", LONG, timeout=0.3, task=True)
        hub.close()
    warnings = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert any("may be left running" in message or "is not cancelled" in message for message in warnings)


@pytest.mark.parametrize("now", ["stdio with other arguments", "http"])
def test_a_handle_never_asks_a_server_reloaded_as_another_about_its_task(
    events: EventLog, http_events: EventLog, now: str
) -> None:
    with (
        HttpServer(script=TASKS_SERVER, events=http_events) as other,
        MCPHub([stdio_config("t", script=TASKS_SERVER, events=events)]) as hub,
    ):
        handle = hub.start_task("mcp__t__stages", LONG)
        if now == "http":
            hub.reload([http_config("t", other.url)])
        else:
            hub.reload([stdio_config("t", "--poll-ms", "60", script=TASKS_SERVER, events=http_events)])
        with pytest.raises(ServerDisconnectedError, match="another server"):
            handle.refresh(timeout=BOUND)
        assert not [event for event in http_events.find("get") if event["task_id"] == handle.task_id]


@pytest.mark.parametrize("route", ["call_tool", "submit"])
def test_a_task_call_stopped_while_its_server_reconnects_has_its_task_cancelled_once_the_server_is_back(
    events: EventLog, route: str
) -> None:
    with HttpServer(script=TASKS_SERVER, events=events) as server, Relay(server.port) as relay:
        entry = http_config("t", relay.url, reconnect={**RECONNECT, "max_attempts": 500})
        with MCPHub([entry]) as hub:
            cancel = threading.Event()
            if route == "call_tool":
                thread, outcome = _in_thread(
                    lambda: hub.call_tool("mcp__t__stages", LONG, timeout=4 * BOUND, task=True, cancel=cancel)
                )
            else:
                future = hub.submit("mcp__t__stages", LONG, timeout=4 * BOUND, task=True)
            created = events.wait_for("get", timeout=BOUND)
            relay.go_down()
            wait_until(lambda: getattr(hub.servers.get("t"), "state", None) == "reconnecting", timeout=BOUND)
            # Stopped while no connection can send tasks/cancel: the hub sends it once the server is back.
            if route == "call_tool":
                cancel.set()
                thread.join(BOUND)
                assert len(outcome) == 1 and isinstance(outcome[0], ToolCallCancelledError)
            else:
                assert future.cancel()
            relay.come_back()
            events.wait_for("cancelled", timeout=2 * BOUND)
            assert created["task_id"] in _cancelled_ids(events)
