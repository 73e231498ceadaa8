"""The lifecycle contract inside one process: registry generations, re-sync retries, one callback
thread, the `timeout` argument, and native tools under the same call contract as MCP tools."""

from __future__ import annotations

import concurrent.futures
import logging
import math
import subprocess
import sys
import threading
from typing import Any

import pytest

from mcp_sync import (
    MCPHub,
    Tool,
    ToolCallCancelledError,
    ToolCallTimeoutError,
    ToolRegistry,
)
from mcp_sync._hub.connection import ServerConnection
from mcp_sync._runtime.callbacks import CallbackDispatcher
from tests.hub_harness import ToolEvents, started_hub
from tests.support import REPO_ROOT, EventLog, stdio_config, wait_until

# -- registry writes belong to one connection generation ------------------------------------------------


def late_listing_is_refused(hub: MCPHub, connection: ServerConnection, tools: list[Tool]) -> None:
    """A listing that a re-sync of `connection` would write now (it was in flight when the connection
    ended) changes nothing and announces nothing."""
    recorder = ToolEvents().attach(hub)
    assert connection.lease is not None
    assert connection.lease.replace_tools(tools) is None
    hub.registry.dispatcher.flush()
    assert recorder.events == []


def test_a_listing_that_arrives_after_close_is_refused() -> None:
    hub = MCPHub([stdio_config("fx")]).start()
    connection = hub.servers["fx"]
    tools = connection.tools
    hub.close()
    late_listing_is_refused(hub, connection, tools)
    assert hub.tools() == []


def test_a_listing_that_arrives_after_a_disconnect_is_refused(events: EventLog) -> None:
    with started_hub(stdio_config("fx", events=events)) as hub:
        connection = hub.servers["fx"]
        tools = connection.tools
        hub.call_tool("mcp__fx__exit_later", {"delay": 0.1})
        wait_until(lambda: connection.state == "disconnected", timeout=10)
        late_listing_is_refused(hub, connection, tools)
        assert hub.tools() == []


def test_a_listing_from_a_connection_that_reload_replaced_is_refused() -> None:
    with started_hub(stdio_config("fx")) as hub:
        old = hub.servers["fx"]
        tools = old.tools
        hub.reload([stdio_config("fx", "--tools", "1")])  # a changed config: a new connection
        assert hub.servers["fx"] is not old
        late_listing_is_refused(hub, old, tools)
        assert "mcp__fx__t00000" in hub.registry


def test_a_tool_can_be_called_from_the_listener_that_announces_it(events: EventLog) -> None:
    registry = ToolRegistry()
    answers: list[str] = []
    registry.on_tool_added(
        lambda tool: (
            answers.append(hub.call_tool(tool.name, {"text": "now"}).text)
            if tool.raw_name == "echo"
            else None
        )
    )
    hub = MCPHub([stdio_config("fx")], registry=registry)
    with hub:
        registry.dispatcher.flush()
    registry.close()
    assert answers == ["now"]


def test_repr_servers_tools_and_html_are_safe_during_reload() -> None:
    configs = [stdio_config("a"), stdio_config("b")]
    errors: list[BaseException] = []
    stop = threading.Event()
    with started_hub(configs[0]) as hub:

        def read() -> None:
            while not stop.is_set():
                try:
                    repr(hub)
                    list(hub.servers.items())
                    hub.tools()
                    hub._repr_html_()
                except BaseException as exc:  # pragma: no cover - the failure being tested for
                    errors.append(exc)

        readers = [threading.Thread(target=read) for _ in range(2)]
        for reader in readers:
            reader.start()
        try:
            for _ in range(3):
                hub.reload(configs)
                hub.reload(configs[:1])
        finally:
            stop.set()
            for reader in readers:
                reader.join(10)
    assert not errors, errors[:3]


# -- re-sync failures ----------------------------------------------------------------------------------


def test_a_failed_resync_is_retried_until_it_succeeds(
    events: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with started_hub(stdio_config("fx", events=events)) as hub:
        recorder = ToolEvents().attach(hub)
        hub.call_tool("mcp__fx__fail_listings", {"n": 2})
        hub.call_tool("mcp__fx__add_tool", {"name": "late"})
        recorder.wait_for(("added", "mcp__fx__late"), timeout=30)
        assert events.count("list_tools_failed") == 2
        assert hub.servers["fx"].state == "ready"
    assert sum("listing again in" in record.getMessage() for record in caplog.records) == 2


# -- one callback thread ----------------------------------------------------------------------------


def test_callbacks_stay_on_one_thread_in_order_when_close_gives_up_on_a_stuck_one() -> None:
    dispatcher = CallbackDispatcher()
    release = threading.Event()
    seen: list[tuple[int, str]] = []
    running = threading.Semaphore(1)
    overlaps: list[str] = []

    def record(tag: str) -> None:
        if not running.acquire(blocking=False):
            overlaps.append(tag)
        try:
            if tag == "stuck":
                release.wait(30)
            seen.append((threading.get_ident(), tag))
        finally:
            running.release()

    dispatcher.post((record,), "stuck")
    dispatcher.close(timeout=0.1)  # gives up on the stuck callback
    for tag in ("after-1", "after-2"):
        dispatcher.post((record,), tag)
    release.set()
    assert dispatcher.flush(timeout=10)
    assert [tag for _, tag in seen] == ["stuck", "after-1", "after-2"]
    assert len({ident for ident, _ in seen}) == 1
    assert overlaps == []
    dispatcher.close()


def test_a_callback_that_blocks_is_reported_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    dispatcher = CallbackDispatcher()
    release = threading.Event()

    def stuck_listener() -> None:
        release.wait(30)

    dispatcher.post((stuck_listener,))
    assert not dispatcher.flush(timeout=0.2)
    release.set()
    dispatcher.close()
    assert any("stuck_listener" in record.getMessage() for record in caplog.records)


# -- the timeout argument ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sleeper(tmp_path_factory: pytest.TempPathFactory) -> Any:
    events = EventLog(tmp_path_factory.mktemp("sleeper") / "events.jsonl")
    with started_hub(stdio_config("fx", events=events)) as hub:
        yield hub, events


@pytest.mark.parametrize("timeout", [0, -1, -0.5, math.nan, -math.inf])
@pytest.mark.parametrize("how", ["call_tool", "submit", "call_tool_safe"])
def test_a_timeout_that_is_not_positive_is_a_value_error_before_anything_is_sent(
    sleeper: tuple[MCPHub, EventLog], how: str, timeout: float
) -> None:
    hub, events = sleeper
    before = events.count("started")
    with pytest.raises(ValueError, match="timeout"):
        getattr(hub, how)("mcp__fx__sleep", {"seconds": 0.01}, timeout=timeout)
    assert events.count("started") == before


@pytest.mark.parametrize("how", ["call_tool", "submit", "call_tool_safe"])
def test_a_timeout_that_is_not_a_number_is_a_type_error(sleeper: tuple[MCPHub, EventLog], how: str) -> None:
    hub, _ = sleeper
    with pytest.raises(TypeError, match="timeout"):
        getattr(hub, how)("mcp__fx__echo", {"text": "x"}, timeout="5")


# The server's default call timeout, and a sleep that outlives it ten times over: a call that fell back
# to the default would time out long before the sleep ends.
SHORT_DEFAULT_TIMEOUT_MS = 100
OUTLIVING_SLEEP = 1.0


@pytest.fixture(scope="module")
def impatient(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A hub whose one server gives each call `SHORT_DEFAULT_TIMEOUT_MS` unless the call says otherwise."""
    with started_hub(stdio_config("fx", tool_call_timeout_ms=SHORT_DEFAULT_TIMEOUT_MS)) as hub:
        yield hub


@pytest.mark.parametrize("timeout", [math.inf, 1e10, 2**64])
def test_a_huge_or_infinite_timeout_means_no_limit(impatient: MCPHub, timeout: float) -> None:
    slept = f"slept {OUTLIVING_SLEEP}"
    arguments = {"seconds": OUTLIVING_SLEEP}
    future = impatient.submit("mcp__fx__sleep", arguments, timeout=timeout)
    assert impatient.call_tool("mcp__fx__sleep", arguments, timeout=timeout).text == slept
    assert impatient.call_tool_safe("mcp__fx__sleep", arguments, timeout=timeout).text == slept
    assert future.result(30).text == slept
    with pytest.raises(ToolCallTimeoutError):  # the default still applies to a call that names none
        impatient.call_tool("mcp__fx__sleep", {"seconds": 30})


def test_an_infinite_timeout_can_still_be_cancelled(sleeper: tuple[MCPHub, EventLog]) -> None:
    hub, events = sleeper
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    with pytest.raises(ToolCallCancelledError):
        hub.call_tool("mcp__fx__sleep", {"seconds": 30, "tag": "inf"}, timeout=math.inf, cancel=cancel)
    events.wait_for("cancelled", tag="inf", timeout=10)


# -- native tools keep the call contract --------------------------------------------------------------


class Blocking:
    """A native tool that blocks until released, and notices its cancel Event."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.cancelled = threading.Event()

    def cooperative(self, seconds: float, cancel: threading.Event) -> str:
        """Wait up to `seconds`, stopping early when cancelled."""
        self.started.set()
        if cancel.wait(seconds):
            self.cancelled.set()
            return "stopped"
        return "slept"

    def stubborn(self) -> str:
        """Wait until released, whatever the caller does."""
        self.started.set()
        self.release.wait(30)
        return "released"


@pytest.fixture
def native() -> Any:
    blocking = Blocking()
    hub = MCPHub()
    hub.registry.register_function(blocking.cooperative)
    hub.registry.register_function(blocking.stubborn)
    with hub:
        yield hub, blocking
    blocking.release.set()


def test_native_cancel_parameter_is_not_part_of_the_schema(native: tuple[MCPHub, Blocking]) -> None:
    hub, _ = native
    tool = hub.registry.get("cooperative")
    assert isinstance(tool, Tool)
    assert set(tool.input_schema["properties"]) == {"seconds"}


def test_native_submit_returns_at_once(native: tuple[MCPHub, Blocking]) -> None:
    hub, blocking = native
    future = hub.submit("stubborn")
    assert blocking.started.wait(10)
    assert not future.done()
    blocking.release.set()
    assert future.result(10).text == "released"


def test_native_timeout_releases_the_caller_and_tells_the_function(native: tuple[MCPHub, Blocking]) -> None:
    hub, blocking = native
    with pytest.raises(ToolCallTimeoutError):
        hub.call_tool("cooperative", {"seconds": 30}, timeout=0.2)
    assert blocking.cancelled.wait(10)


def test_native_cancel_event_releases_the_caller_and_tells_the_function(
    native: tuple[MCPHub, Blocking],
) -> None:
    hub, blocking = native
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    with pytest.raises(ToolCallCancelledError):
        hub.call_tool("cooperative", {"seconds": 30}, cancel=cancel)
    assert blocking.cancelled.wait(10)


def test_native_timeout_releases_the_caller_of_a_function_that_ignores_it(
    native: tuple[MCPHub, Blocking],
) -> None:
    hub, blocking = native
    with pytest.raises(ToolCallTimeoutError):
        hub.call_tool("stubborn", timeout=0.2)
    assert blocking.started.is_set()


def test_native_future_cancel_tells_the_function(native: tuple[MCPHub, Blocking]) -> None:
    hub, blocking = native
    future = hub.submit("cooperative", {"seconds": 30})
    assert blocking.started.wait(10)
    assert future.cancel()
    assert blocking.cancelled.wait(10)
    done, _ = concurrent.futures.wait([future], timeout=10)
    assert future in done


def test_native_submit_timeout_fails_the_future(native: tuple[MCPHub, Blocking]) -> None:
    hub, blocking = native
    future = hub.submit("cooperative", {"seconds": 30}, timeout=0.2)
    with pytest.raises(ToolCallTimeoutError):
        future.result(10)
    assert blocking.cancelled.wait(10)


def test_a_native_function_registered_plainly_gets_its_cancel_event() -> None:
    cancelled = threading.Event()

    def watcher(cancel: threading.Event) -> str:
        if cancel.wait(30):
            cancelled.set()
        return "done"

    with MCPHub() as hub:
        hub.registry.register_native("watcher", watcher)
        with pytest.raises(ToolCallTimeoutError):
            hub.call_tool("watcher", timeout=0.2)
        assert cancelled.wait(10)
        wait_until(lambda: not any(t.name == "mcp-sync:native:watcher" for t in threading.enumerate()), 10)


CTRL_C_AT_ONCE = """
import os, signal, threading, time
from mcp_sync import MCPHub

told: list[bool] = []

def interrupted(cancel: threading.Event) -> str:
    \"\"\"Ctrl-C the moment it runs, wherever the caller is (still starting its thread, or waiting).\"\"\"
    os.kill(os.getpid(), signal.SIGINT)
    told.append(cancel.wait(30))
    return "done"

raised = 0
with MCPHub([]) as hub:
    hub.registry.register_function(interrupted)
    for _ in range(20):
        try:
            hub.call_tool("interrupted", {})
        except KeyboardInterrupt:
            raised += 1
    deadline = time.monotonic() + 60
    while len(told) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
print(raised, told.count(True), len(told))
"""


def test_ctrl_c_as_a_native_tool_starts_raises_and_tells_the_function_to_stop() -> None:
    # Each function waits to be told to stop (30 s at most): every interrupted call's function is told,
    # wherever the Ctrl-C landed in the caller, even inside the start of the function's thread.
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_AT_ONCE], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["20", "20", "20"], (done.stdout, done.stderr)


def test_ctrl_c_while_a_native_submit_starts_its_timer_tells_the_function_to_stop(
    native: tuple[MCPHub, Blocking], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `Timer.start()` waits for the timer's thread, the function already running: a Ctrl-C may land
    # there (here it is made to, as a real signal cannot be aimed at that moment).
    hub, blocking = native

    class InterruptedTimer(threading.Timer):
        def start(self) -> None:
            blocking.started.wait(10)
            raise KeyboardInterrupt

    monkeypatch.setattr(threading, "Timer", InterruptedTimer)
    with pytest.raises(KeyboardInterrupt):
        hub.submit("cooperative", {"seconds": 30}, timeout=20)
    assert blocking.cancelled.wait(10)
