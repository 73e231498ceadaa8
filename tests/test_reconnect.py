"""Opt-in reconnection: a server that drops comes back with the same tool names, calls during the outage
fail at once, close() stops the attempts at once, and a server that keeps failing ends failed."""

from __future__ import annotations

import queue
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import MCPHub, ReconnectConfig, ToolNotFoundError
from mcp_sync._hub.reconnect import backoff_delays
from tests.support import (
    FIXTURE_SERVER,
    EventLog,
    HttpServer,
    http_config,
    pid_alive,
    stdio_config,
    wait_until,
)


class States:
    """Every (server, state) the hub reports, in order, with a bounded wait for one."""

    def __init__(self, hub: MCPHub) -> None:
        self.seen: list[tuple[str, str]] = []
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue()
        hub.on_server_state(self._record)

    def _record(self, name: str, state: str, error: BaseException | None) -> None:
        self.seen.append((name, state))
        self._queue.put((name, state))

    def wait_for(self, state: str, name: str = "srv", timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                got = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"no {state!r} for {name!r} within {timeout}s; saw {self.seen}"
                ) from None
            if got == (name, state):
                return


def reconnect(**policy: Any) -> dict[str, Any]:
    return {"reconnect": {"initial_delay_ms": 50, "max_delay_ms": 200, "max_attempts": 5, **policy}}


def mcp_names(hub: MCPHub) -> set[str]:
    return {tool.name for tool in hub.tools() if tool.server_name == "srv"}


def test_stdio_server_that_exits_is_restarted_with_the_same_tool_names(tmp_path: Path) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    with MCPHub([stdio_config("srv", events=events, **reconnect())]) as hub:
        states = States(hub)
        before, first_pid = mcp_names(hub), hub.servers["srv"].pid

        hub.call_tool("mcp__srv__exit_later", {"delay": 0.1})
        states.wait_for("disconnected")
        states.wait_for("reconnecting")
        states.wait_for("ready")

        assert mcp_names(hub) == before
        assert hub.servers["srv"].pid != first_pid
        assert hub.call_tool("mcp__srv__echo", {"text": "back"}).text == "back"


# The first attempt comes 5 to 10 s (jittered) after `reconnecting` is announced: a call that fails
# at once has long failed by then, a call that waits for anything (a timeout, a backoff) has not.
OUTAGE_BACKOFF_MS = 10_000


def test_calls_during_the_outage_fail_at_once(tmp_path: Path) -> None:
    with MCPHub([stdio_config("srv", **reconnect(initial_delay_ms=OUTAGE_BACKOFF_MS))]) as hub:
        states = States(hub)
        hub.call_tool("mcp__srv__exit_later", {"delay": 0.1})
        states.wait_for("reconnecting")

        with pytest.raises(ToolNotFoundError, match="reconnecting"):
            hub.call_tool("mcp__srv__echo", {"text": "anyone?"}, timeout=60)
        # Failed before the attempt it would have waited for: that attempt has not begun.
        assert hub.servers["srv"].state == "reconnecting"
        assert states.seen[-1] == ("srv", "reconnecting"), f"an attempt began first: {states.seen}"
        assert not mcp_names(hub)


def test_close_during_the_backoff_returns_at_once() -> None:
    hub = MCPHub([stdio_config("srv", **reconnect(initial_delay_ms=600_000, max_delay_ms=600_000))]).start()
    states = States(hub)
    hub.call_tool("mcp__srv__exit_later", {"delay": 0.1})
    states.wait_for("reconnecting")

    started = time.monotonic()
    hub.close()
    elapsed = time.monotonic() - started

    assert not [t for t in threading.enumerate() if t.name.startswith("mcp-sync:reconnect")]
    assert hub.state == "closed"
    assert elapsed < 10  # generous: the backoff alone is ten minutes


def test_server_that_keeps_failing_ends_failed_after_the_last_attempt(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(f"import runpy\nrunpy.run_path({str(FIXTURE_SERVER)!r}, run_name='__main__')\n")
    config = stdio_config("srv", script=script, **reconnect(max_attempts=2))
    with MCPHub([config]) as hub:
        states = States(hub)
        script.unlink()  # the next starts fail: the file is gone
        hub.call_tool("mcp__srv__exit_later", {"delay": 0.1})
        states.wait_for("disconnected")
        for _ in range(2):
            states.wait_for("reconnecting")
            states.wait_for("failed")
        wait_until(lambda: hub.servers["srv"].state == "failed", timeout=10)

        assert [state for name, state in states.seen].count("reconnecting") == 2
        assert "could not start" in str(hub.servers["srv"].error) or "went away" in str(
            hub.servers["srv"].error
        )


def test_server_without_reconnect_stays_disconnected(tmp_path: Path) -> None:
    with MCPHub([stdio_config("srv")]) as hub:
        states = States(hub)
        hub.call_tool("mcp__srv__exit_later", {"delay": 0.1})
        states.wait_for("disconnected")

        assert hub.servers["srv"].state == "disconnected"
        assert not [t for t in threading.enumerate() if t.name.startswith("mcp-sync:reconnect")]


def test_http_server_restarted_on_the_same_port_is_reconnected() -> None:
    first = HttpServer().start()
    port = first.port
    try:
        policy = reconnect(initial_delay_ms=100, max_delay_ms=300, max_attempts=40)
        with MCPHub([http_config("srv", first.url, **policy)]) as hub:
            states = States(hub)
            before = mcp_names(hub)

            first.kill()
            states.wait_for("disconnected")
            with pytest.raises(ToolNotFoundError):
                hub.call_tool("mcp__srv__echo", {"text": "down?"})
            with HttpServer("--port", str(port)) as second:
                states.wait_for("ready", timeout=30)

                assert mcp_names(hub) == before
                assert hub.call_tool("mcp__srv__echo", {"text": "back"}).text == "back"
                assert second.port == port
    finally:
        first.stop()
        first.close()


def test_backoff_doubles_up_to_its_ceiling_with_jitter() -> None:
    policy = ReconnectConfig(max_attempts=6, initial_delay_ms=100, max_delay_ms=500)

    rng = random.Random(20260728)  # seeded: the spread checked below is then the same on every run

    runs = [list(backoff_delays(policy, rng)) for _ in range(200)]

    ceilings = [0.1, 0.2, 0.4, 0.5, 0.5, 0.5]
    assert {len(delays) for delays in runs} == {6}
    for attempt, ceiling in enumerate(ceilings):
        drawn = [delays[attempt] for delays in runs]
        assert all(ceiling / 2 <= delay <= ceiling for delay in drawn)
        # Jitter: each wait is drawn from the whole range between half the ceiling and the ceiling.
        assert min(drawn) < 0.6 * ceiling and max(drawn) > 0.9 * ceiling, (attempt, min(drawn), max(drawn))


def test_a_server_that_drops_while_another_is_still_starting_is_reconnected(tmp_path: Path) -> None:
    gate = tmp_path / "let-slow-start"
    slow = EventLog(tmp_path / "slow.jsonl")
    hub = MCPHub(
        [
            stdio_config("srv", **reconnect()),
            stdio_config("slow", "--hold-start", str(gate), events=slow, connect_timeout_ms=120_000),
        ]
    )
    states = States(hub)
    starter = threading.Thread(target=hub.start, name="test-start", daemon=True)
    starter.start()
    try:
        states.wait_for("ready")
        slow.wait_for("holding")
        first_pid = hub.servers["srv"].pid
        hub.call_tool("mcp__srv__exit_later", {"delay": 0.1})
        states.wait_for("disconnected")
        states.wait_for("reconnecting")
        states.wait_for("ready")

        assert hub.state == "starting"
        assert hub.servers["srv"].pid != first_pid
        assert hub.call_tool("mcp__srv__echo", {"text": "back"}).text == "back"
        gate.touch()
        starter.join(60)
        assert hub.state == "running"
        assert hub.servers["slow"].state == "ready"
    finally:
        gate.touch()
        hub.close()
        starter.join(10)


@pytest.mark.real_processes  # the server's own process must be gone when close() returns
def test_close_while_starting_stops_a_reconnection_armed_during_the_start(tmp_path: Path) -> None:
    gate = tmp_path / "never"
    slow = EventLog(tmp_path / "slow.jsonl")
    hub = MCPHub(
        [
            stdio_config("srv", **reconnect(initial_delay_ms=600_000, max_delay_ms=600_000)),
            stdio_config("slow", "--hold-start", str(gate), events=slow, connect_timeout_ms=120_000),
        ]
    )
    states = States(hub)
    failures: list[BaseException] = []

    def start() -> None:
        try:
            hub.start()
        except BaseException as exc:
            failures.append(exc)

    starter = threading.Thread(target=start, name="test-start", daemon=True)
    starter.start()
    try:
        states.wait_for("ready")
        slow_pid = int(slow.wait_for("holding")["pid"])
        hub.call_tool("mcp__srv__exit_later", {"delay": 0.1})
        states.wait_for("reconnecting")
        assert hub.state == "starting"
    finally:
        hub.close()
        starter.join(30)
    assert not starter.is_alive()
    assert hub.state == "closed"
    assert failures, "start() returned normally though close() preempted it"
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp-sync:reconnect")]
    assert not [t for t in threading.enumerate() if t.name in ("mcp-sync:srv", "mcp-sync:slow")]
    assert not pid_alive(slow_pid)
