"""Long-running calls as MCP tasks (2025-11-25) against the official reference server, over stdio and
Streamable HTTP: `simulate-research-query` (taskSupport "required", four stages of about a second, the
server's pollInterval 1 s; `ambiguous: true` asks for a clarification while `input_required`).

Tests of what a task call does (its result, its status messages, the input it asks for) run the server on
its fast clock (`everything`, stages and pollInterval of 0.1 s: see `ReferenceServers.everything_argv`).
Tests that act on a task while it runs (cancel it, time out or interrupt the wait, cut the connection,
kill the server) run it on its real clock (`everything_real_clock`, `everything_http`): the task's four
seconds are their margin, and most of them end it long before. Those that then wait for its end (the
wait with a short timeout, the good call after failures, the reset connection) run the published
server's research query end to end, as published.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import (
    MCPHub,
    ServerDisconnectedError,
    TaskHandle,
    TaskInfo,
    TaskNotFoundError,
    ToolCallCancelledError,
    ToolCallTimeoutError,
    UnsupportedFeatureError,
)
from tests.hub_harness import fixture_server, started_hub
from tests.support import FAST_CLOCK_FACTOR, REPO_ROOT, ReferenceServers, wait_until
from tests.tasks_harness import RESEARCH, Answers, EverythingHttp, Relay, http_entry

pytestmark = [pytest.mark.node, pytest.mark.timeout(90)]

TOOL = f"mcp__ev__{RESEARCH}"
STAGES = ["Gathering sources...", "Analyzing content...", "Synthesizing findings...", "Generating report..."]


class Progress:
    """Records a call's progress callbacks; tests wait for one instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float | None, str | None]] = []
        self._condition = threading.Condition()

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        with self._condition:
            self.calls.append((progress, total, message))
            self._condition.notify_all()

    @property
    def messages(self) -> list[str | None]:
        return [message for _progress, _total, message in self.calls]

    def wait_for(self, count: int, timeout: float = 20.0) -> None:
        with self._condition:
            if not self._condition.wait_for(lambda: len(self.calls) >= count, timeout):
                raise AssertionError(f"fewer than {count} progress callbacks within {timeout}s: {self.calls}")


@contextlib.contextmanager
def everything_hub(
    transport: str, reference_servers: ReferenceServers, folder: Path, *, fast: bool
) -> Iterator[tuple[MCPHub, Answers]]:
    """A hub with server-everything as `ev` over `transport`, on its fast clock or its real one."""
    answers = Answers()
    if transport == "stdio":
        with started_hub(
            reference_servers.everything_config("ev", fast=fast), **answers.hub_options()
        ) as hub:
            yield hub, answers
    else:
        with (
            EverythingHttp(reference_servers, folder, fast=fast) as server,
            started_hub(http_entry("ev", server.url), **answers.hub_options()) as hub,
        ):
            yield hub, answers


@pytest.fixture(scope="module", params=["stdio", "http"])
def everything(
    request: pytest.FixtureRequest,
    reference_servers: ReferenceServers,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[MCPHub, Answers]]:
    """server-everything on its fast clock: a research task's stages take 0.1 s each."""
    with everything_hub(
        request.param, reference_servers, tmp_path_factory.mktemp("everything"), fast=True
    ) as served:
        yield served


@pytest.fixture(scope="module", params=["stdio", "http"])
def everything_real_clock(
    request: pytest.FixtureRequest,
    reference_servers: ReferenceServers,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[MCPHub, Answers]]:
    """server-everything on its real clock: a research task lasts four seconds, the margin of a test that
    acts on it while it runs."""
    with everything_hub(
        request.param, reference_servers, tmp_path_factory.mktemp("everything"), fast=False
    ) as served:
        yield served


def new_task(hub: MCPHub, before: set[str]) -> TaskInfo:
    """The one task the server lists that was not in `before`."""
    new = [task for task in hub.list_tasks("ev") if task.task_id not in before]
    assert len(new) == 1, new
    return new[0]


def assert_cancelled_on_the_server(hub: MCPHub, task_id: str) -> None:
    """The stopped call raised at once and its `tasks/cancel` goes on in the background
    (docs/long-running-calls.md): the task is cancelled soon after, not necessarily yet."""
    wait_until(lambda: hub.task("ev", task_id).refresh().status == "cancelled", timeout=10)


def task_ids(hub: MCPHub) -> set[str]:
    return {task.task_id for task in hub.list_tasks("ev")}


def test_task_tools_list_their_task_support(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    assert hub.registry.get(TOOL).task_support == "required"  # type: ignore[union-attr]
    assert hub.registry.get("mcp__ev__echo").task_support == "forbidden"  # type: ignore[union-attr]


def test_required_task_tool_blocks_until_its_result_with_status_messages_as_progress(
    everything: tuple[MCPHub, Answers],
) -> None:
    hub, _ = everything
    before = task_ids(hub)
    progress = Progress()
    result = hub.call_tool(TOOL, {"topic": "tide pools"}, progress=progress)
    assert not result.is_error
    assert result.text.startswith("# Research Report: tide pools")
    # Each new status message once, in order: the first (from the task's creation) and the last (it
    # stays at the end) always, the others as the polls at the server's interval saw them.
    messages = progress.messages
    assert messages[0] == STAGES[0] and messages[-1] == STAGES[-1]
    assert messages == sorted(set(messages), key=STAGES.index)
    assert [call[:2] for call in progress.calls] == [(float(n), None) for n in range(1, len(messages) + 1)]
    assert new_task(hub, before).status == "completed"  # the tool ran once, as one task


def test_input_required_is_answered_by_the_elicitation_handler(everything: tuple[MCPHub, Answers]) -> None:
    hub, answers = everything
    asked = len(answers.elicitations)
    progress = Progress()
    result = hub.call_tool(TOOL, {"topic": "python", "ambiguous": True}, progress=progress)
    assert result.text.startswith("# Research Report: python (snake)")  # the handler's answer was used
    assert len(answers.elicitations) == asked + 1, "the user was asked once"
    assert "interpretation" in answers.elicitations[asked].requested_schema["properties"]
    # Status messages are what the polls saw: a message may pass between two polls (the server moves on
    # at its own pace), so only their order and the last one are certain, never a middle one.
    messages = progress.messages
    assert messages and messages[-1] == STAGES[-1]
    assert len(messages) == len(set(messages)), f"a status message was reported twice: {messages}"


def test_cancel_event_cancels_the_task_on_the_server(everything_real_clock: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything_real_clock
    before = task_ids(hub)
    cancel = threading.Event()
    progress = Progress()

    def cancel_once_started(value: float, total: float | None, message: str | None) -> None:
        progress(value, total, message)
        cancel.set()

    with pytest.raises(ToolCallCancelledError):
        hub.call_tool(TOOL, {"topic": "cancelled"}, cancel=cancel, progress=cancel_once_started)
    assert_cancelled_on_the_server(hub, new_task(hub, before).task_id)
    assert hub.call_tool("mcp__ev__echo", {"message": "still usable"}).text == "Echo: still usable"


def test_timeout_cancels_the_task_on_the_server(everything_real_clock: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything_real_clock
    before = task_ids(hub)
    with pytest.raises(ToolCallTimeoutError):
        hub.call_tool(TOOL, {"topic": "too long"}, timeout=1.5)
    assert_cancelled_on_the_server(hub, new_task(hub, before).task_id)


def test_future_cancel_cancels_the_task_on_the_server(everything_real_clock: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything_real_clock
    before = task_ids(hub)
    progress = Progress()
    future = hub.submit(TOOL, {"topic": "submitted"}, progress=progress)
    progress.wait_for(1)  # the task exists: its first status message arrived
    assert future.cancel()
    with pytest.raises(concurrent.futures.CancelledError):
        future.result(timeout=5)
    task_id = new_task(hub, before).task_id
    handle = hub.task("ev", task_id)
    wait_until(
        lambda: handle.refresh().status == "cancelled", timeout=10, message="the task was not cancelled"
    )


def test_submit_gives_a_task_call_s_result(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    future = hub.submit(TOOL, {"topic": "futures"})
    assert future.result(timeout=30).text.startswith("# Research Report: futures")


def test_wait_with_a_short_timeout_leaves_the_task_running_then_its_result_comes(
    everything_real_clock: tuple[MCPHub, Answers],
) -> None:
    hub, _ = everything_real_clock
    handle = hub.start_task(TOOL, {"topic": "patience"})
    assert handle.server == "ev" and handle.tool == TOOL and handle.task_id
    assert handle.info is not None and handle.info.status == "working" and handle.info.poll_interval == 1.0
    with pytest.raises(ToolCallTimeoutError, match="keeps running"):
        handle.wait(timeout=0.2)
    assert handle.refresh().status in ("working", "completed")  # not cancelled by the timeout
    result = handle.result(timeout=30)
    assert result.text.startswith("# Research Report: patience")
    assert handle.info is not None and handle.info.status == "completed"
    assert "completed" in repr(handle) and handle.task_id in repr(handle)


def test_cancelling_a_handle_cancels_the_task_and_waiting_on_it_says_so(
    everything_real_clock: tuple[MCPHub, Answers],
) -> None:
    hub, _ = everything_real_clock
    handle = hub.start_task(TOOL, {"topic": "abandoned"})
    assert handle.cancel().status == "cancelled"
    with pytest.raises(ToolCallCancelledError, match="cancelled on server"):
        handle.wait(timeout=10)
    assert handle.cancel().status == "cancelled"  # cancelling again: the status it ended with


def test_a_handle_by_id_waits_for_a_task_another_handle_started(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    started = hub.start_task(TOOL, {"topic": "by id"})
    # The server's pollInterval of 1 s, on its fast clock (the real one: the short-timeout wait's test).
    assert started.info is not None and started.info.poll_interval == 1.0 / FAST_CLOCK_FACTOR
    other = hub.task("ev", started.task_id)
    assert other.info is None and other.tool is None  # nothing sent yet
    progress = Progress()
    assert other.wait(timeout=30, progress=progress).text.startswith("# Research Report: by id")
    assert progress.messages and set(progress.messages) <= set(STAGES)  # the server's messages, no guesses
    assert other.info is not None and other.info.status == "completed"


def test_list_tasks_lists_the_tasks_started(everything_real_clock: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything_real_clock
    handle = hub.start_task(TOOL, {"topic": "listed"})
    listed = {task.task_id: task for task in hub.list_tasks("ev")}
    assert listed[handle.task_id].server == "ev"
    assert listed[handle.task_id].created_at is not None
    handle.cancel()


def test_unknown_task_id_is_task_not_found_error(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    handle = hub.task("ev", "no-such-task")
    for attempt in (handle.refresh, handle.cancel, lambda: handle.wait(timeout=10)):
        with pytest.raises(TaskNotFoundError) as caught:
            attempt()
        assert (caught.value.server, caught.value.task_id) == ("ev", "no-such-task")
        assert "no-such-task" in str(caught.value)


def test_arguments_never_appear_in_a_handle_or_its_errors(
    everything_real_clock: tuple[MCPHub, Answers],
) -> None:
    hub, _ = everything_real_clock
    handle = hub.start_task(TOOL, {"topic": "s3cr3t-topic-value"})
    with pytest.raises(ToolCallTimeoutError) as caught:
        handle.wait(timeout=0.1)
    assert "s3cr3t" not in repr(handle) + str(caught.value) + repr(handle.info)
    handle.cancel()


def test_each_failure_is_followed_by_a_good_call_on_the_same_hub(
    everything_real_clock: tuple[MCPHub, Answers],
) -> None:
    hub, _ = everything_real_clock

    def good() -> None:
        assert hub.call_tool("mcp__ev__echo", {"message": "ok"}).text == "Echo: ok"

    with pytest.raises(UnsupportedFeatureError, match="mcp__ev__echo"):
        hub.call_tool("mcp__ev__echo", {"message": "x"}, task=True)
    good()
    with pytest.raises(UnsupportedFeatureError, match=TOOL):
        hub.call_tool(TOOL, {"topic": "x"}, task=False)
    good()
    with pytest.raises(UnsupportedFeatureError):
        hub.start_task("mcp__ev__echo", {"message": "x"})
    good()
    with pytest.raises(TaskNotFoundError):
        hub.task("ev", "missing").refresh()
    good()
    with pytest.raises(ToolCallTimeoutError):
        hub.call_tool(TOOL, {"topic": "x"}, timeout=0.3)
    good()
    assert hub.call_tool(TOOL, {"topic": "after failures"}).text.startswith(
        "# Research Report: after failures"
    )


# -- Streamable HTTP only: a second process, a dropped connection ------------------------------------------


@pytest.fixture
def everything_http(reference_servers: ReferenceServers, tmp_path: Path) -> Iterator[EverythingHttp]:
    """server-everything over Streamable HTTP on its real clock: the tests below act on a task as it runs."""
    with EverythingHttp(reference_servers, tmp_path) as server:
        yield server


@pytest.fixture
def fast_everything_http(reference_servers: ReferenceServers, tmp_path: Path) -> Iterator[EverythingHttp]:
    """server-everything over Streamable HTTP on its fast clock."""
    with EverythingHttp(reference_servers, tmp_path, fast=True) as server:
        yield server


_SECOND_PROCESS = textwrap.dedent(
    """
    import json, sys
    from mcp_sync import MCPHub, TaskNotFoundError
    url, task_id = sys.argv[1], sys.argv[2]
    with MCPHub([{"server_name": "ev", "transport": "streamable-http", "url": url}]) as hub:
        handle = hub.task("ev", task_id)
        try:
            print(json.dumps({"text": handle.result(timeout=30).text}))
        except TaskNotFoundError as error:
            print(json.dumps({"not_found": [error.server, error.task_id]}))
    """
)


def test_a_second_process_asks_for_a_task_by_id_over_http(fast_everything_http: EverythingHttp) -> None:
    """server-everything keeps each task in its MCP session's own store, so another session (another
    process's hub) is told the task does not exist, running or ended: `TaskNotFoundError` naming the
    server and the id."""
    url = fast_everything_http.url
    with started_hub(http_entry("ev", url)) as hub:
        handle = hub.start_task(TOOL, {"topic": "elsewhere"})
        done = subprocess.run(
            [sys.executable, "-c", _SECOND_PROCESS, url, handle.task_id],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert json.loads(done.stdout.strip().splitlines()[-1]) == {"not_found": ["ev", handle.task_id]}
        assert handle.result(timeout=30).text.startswith("# Research Report: elsewhere")  # ours still has it


def test_a_reset_http_connection_mid_task_does_not_stop_the_wait_and_the_tool_runs_once(
    everything_http: EverythingHttp,
) -> None:
    """The relay resets every connection just after a poll was answered (a status message arrived), a
    second before the next poll: the idle connections go, the session and the wait stay. (A reset that
    catches a request in flight ends the SDK's HTTP transport: that is the reconnect tests' case.)"""
    with Relay(everything_http.port) as relay, started_hub(http_entry("ev", relay.url)) as hub:
        handle = hub.start_task(TOOL, {"topic": "reset"})
        progress = Progress()
        waiting = concurrent.futures.ThreadPoolExecutor(1)
        try:
            result = waiting.submit(handle.wait, 60, progress=progress)
            progress.wait_for(1)
            assert relay.connections() > 0
            relay.cut()
            text = result.result(timeout=60).text
        finally:
            waiting.shutdown(wait=True, cancel_futures=True)
        assert text.startswith("# Research Report: reset")
        assert [(task.task_id, task.status) for task in hub.list_tasks("ev")] == [
            (handle.task_id, "completed")
        ]


def test_future_cancel_cancels_the_task_on_a_server_the_hub_reconnects(
    everything_http: EverythingHttp,
) -> None:
    reconnect: dict[str, Any] = {"reconnect": {"initial_delay_ms": 50, "max_delay_ms": 200}}
    with started_hub(http_entry("ev", everything_http.url, **reconnect)) as hub:
        progress = Progress()
        future = hub.submit(TOOL, {"topic": "submitted"}, progress=progress)
        progress.wait_for(1)  # the task exists: its first status message arrived
        assert future.cancel()
        done, _pending = concurrent.futures.wait([future], timeout=5)
        assert done == {future}
        with pytest.raises(concurrent.futures.CancelledError):
            future.result(timeout=5)
        (task,) = hub.list_tasks("ev")
        handle = hub.task("ev", task.task_id)
        wait_until(
            lambda: handle.refresh().status == "cancelled", timeout=10, message="the task was not cancelled"
        )


@pytest.mark.parametrize("waiter", ["handle.wait", "call_tool", "submit"])
def test_after_a_reconnect_the_wait_asks_the_new_session_for_the_same_task_and_never_calls_again(
    everything_http: EverythingHttp, waiter: str
) -> None:
    """The server goes out of reach mid-task, the hub reconnects (a new MCP session), and the wait goes on
    with the same task id there. server-everything keeps tasks per session, so the new session does not
    know it: `TaskNotFoundError`; the tool was not called again (the new session has no task at all)."""
    reconnect: dict[str, Any] = {
        "reconnect": {"initial_delay_ms": 50, "max_delay_ms": 200, "max_attempts": 20}
    }
    states: list[str] = []
    with Relay(everything_http.port) as relay, started_hub(http_entry("ev", relay.url, **reconnect)) as hub:
        hub.on_server_state(lambda _name, state, _error: states.append(state))
        first_session = hub.servers["ev"].session_id  # type: ignore[union-attr]
        progress = Progress()
        waiting = concurrent.futures.ThreadPoolExecutor(1)
        try:
            if waiter == "call_tool":
                result = waiting.submit(
                    hub.call_tool, TOOL, {"topic": "reconnected"}, timeout=60, progress=progress
                )
                progress.wait_for(1)
                task_id = hub.list_tasks("ev")[0].task_id
            elif waiter == "submit":
                result = hub.submit(TOOL, {"topic": "reconnected"}, timeout=60, progress=progress)
                progress.wait_for(1)
                task_id = hub.list_tasks("ev")[0].task_id
            else:
                handle = hub.start_task(TOOL, {"topic": "reconnected"})
                task_id = handle.task_id
                result = waiting.submit(handle.wait, 60, progress=progress)
                progress.wait_for(1)
            relay.go_down()
            wait_until(lambda: "reconnecting" in states, timeout=20, message=f"no reconnect: {states}")
            relay.come_back()
            with pytest.raises(TaskNotFoundError) as caught:
                result.result(timeout=60)
        finally:
            waiting.shutdown(wait=True, cancel_futures=True)
        assert caught.value.task_id == task_id
        assert hub.servers["ev"].state == "ready"
        assert hub.servers["ev"].session_id not in (None, first_session)  # type: ignore[union-attr]
        assert hub.list_tasks("ev") == []  # the tool was not called again on the new session


def test_a_handle_repr_names_server_id_and_status(everything: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything
    handle = hub.task("ev", "abc")
    assert repr(handle) == "<TaskHandle server='ev' task_id='abc' status='unknown'>"
    assert isinstance(handle, TaskHandle)


def test_ctrl_c_cancels_the_task_on_the_server(everything_real_clock: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything_real_clock
    before = task_ids(hub)
    interrupted = threading.Event()

    def interrupt_once_started(value: float, total: float | None, message: str | None) -> None:
        # A real SIGINT, as Ctrl-C sends: it interrupts the main thread's blocking wait.
        if not interrupted.is_set():
            interrupted.set()
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        hub.call_tool(TOOL, {"topic": "interrupted"}, progress=interrupt_once_started)
    assert_cancelled_on_the_server(hub, new_task(hub, before).task_id)


@pytest.mark.parametrize("caller", ["call_tool", "submit"])
def test_a_stdio_server_that_dies_mid_task_fails_the_call_at_once(
    reference_servers: ReferenceServers, caller: str
) -> None:
    with started_hub(reference_servers.everything_config("ev")) as hub:
        pid = hub.servers["ev"].pid
        assert pid is not None
        progress = Progress()
        if caller == "submit":
            future = hub.submit(TOOL, {"topic": "orphaned"}, progress=progress)
        else:
            pool = concurrent.futures.ThreadPoolExecutor(1)
            future = pool.submit(hub.call_tool, TOOL, {"topic": "orphaned"}, progress=progress)
            pool.shutdown(wait=False)
        progress.wait_for(1)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ServerDisconnectedError):
            future.result(timeout=15)
        assert hub.servers["ev"].state == "disconnected"


def test_submit_timeout_cancels_the_task_on_the_server(everything_real_clock: tuple[MCPHub, Answers]) -> None:
    hub, _ = everything_real_clock
    before = task_ids(hub)
    future = hub.submit(TOOL, {"topic": "submitted, too long"}, timeout=1.5)
    with pytest.raises(ToolCallTimeoutError):
        future.result(timeout=30)
    assert_cancelled_on_the_server(hub, new_task(hub, before).task_id)


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_server_without_tasks_lists_none_and_its_tools_are_not_tasks(era: str) -> None:
    with fixture_server("fx", "stdio", era) as served, started_hub(served.config) as hub:
        assert {tool.task_support for tool in hub.tools()} == {"forbidden"}
        with pytest.raises(UnsupportedFeatureError):
            hub.list_tasks("fx")
        with pytest.raises(UnsupportedFeatureError, match="mcp__fx__echo"):
            hub.call_tool("mcp__fx__echo", {"text": "x"}, task=True)
        assert hub.call_tool("mcp__fx__echo", {"text": "ok"}).text == "ok"


def test_a_handle_does_not_keep_its_hub_alive(reference_servers: ReferenceServers) -> None:
    hub = MCPHub([reference_servers.everything_config("ev")])
    hub.start()
    handle = hub.start_task(TOOL, {"topic": "orphan"})
    handle.cancel()
    hub.close()
    collected = weakref.ref(hub)
    del hub
    gc.collect()
    assert collected() is None
    with pytest.raises(ServerDisconnectedError, match="its hub was closed"):
        handle.refresh()
