"""Reliability: servers that die, never answer, ignore signals, write garbage or flood us.

Each test injects one fault and checks that the hub survives it: the faulty server's calls end
promptly with a typed error, its state says what happened, and every other server stays usable.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sync import MCPHub, ServerDisconnectedError, ToolNotFoundError
from tests.hub_harness import ToolEvents, fixture_server, started_hub
from tests.support import (
    HANGING_SERVER,
    SERVERS_DIR,
    EventLog,
    child_pids_of,
    http_config,
    pid_alive,
    stdio_config,
    wait_until,
)

ERAS = ["modern", "legacy"]
HOSTILE_SERVER = SERVERS_DIR / "hostile_server.py"


@pytest.fixture
def events(tmp_path: Path) -> EventLog:
    return EventLog(tmp_path / "events.jsonl")


def wait_for_state(hub: MCPHub, server: str, state: str, timeout: float) -> None:
    wait_until(
        lambda: hub.servers[server].state == state,
        timeout=timeout,
        message=f"{server} did not become {state} within {timeout}s: {hub.servers[server]!r}",
    )


def ended_within(future: concurrent.futures.Future[object], seconds: float) -> BaseException | None:
    """Wait (bounded) for `future` and return its exception; fails if it is still running."""
    done, _ = concurrent.futures.wait([future], seconds)
    assert done, f"the call was still running {seconds}s after the fault"
    return future.exception()


def assert_bystander_fine(hub: MCPHub, name: str = "bystander") -> None:
    assert hub.servers[name].state == "ready"
    assert hub.call_tool(f"mcp__{name}__echo", {"text": "still here"}, timeout=10).text == "still here"


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def silent_listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that accepts connections and never writes a byte; yields its port."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # the listener was closed: done
                return
            accepted.append(connection)

    acceptor = threading.Thread(target=accept, name="silent-listener", daemon=True)
    acceptor.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        acceptor.join(5)
        for connection in accepted:
            connection.close()


# -- killed from outside ----------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_stdio_server_sigkilled_mid_call_fails_the_call_promptly(era: str, events: EventLog) -> None:
    before = set(child_pids_of(os.getpid()))
    with started_hub(stdio_config("victim", "--era", era, events=events), stdio_config("bystander")) as hub:
        tools = ToolEvents().attach(hub)
        pid = int(hub.call_tool("mcp__victim__pid").text)
        future = hub.submit("mcp__victim__sleep", {"seconds": 30, "tag": "doomed"})
        events.wait_for("started", tag="doomed")
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        error = ended_within(future, 5)
        assert isinstance(error, ServerDisconnectedError), repr(error)
        assert time.monotonic() - killed_at < 5
        wait_for_state(hub, "victim", "disconnected", timeout=5)
        tools.wait_for(("removed", "mcp__victim__echo"))
        with pytest.raises(ToolNotFoundError):
            hub.call_tool("mcp__victim__echo", {"text": "anyone?"})
        assert_bystander_fine(hub)
    assert not pid_alive(pid)
    assert set(child_pids_of(os.getpid())) <= before, "the killed server was never reaped"


@pytest.mark.parametrize("era", ERAS)
def test_stdio_server_sigkilled_while_idle_is_noticed(era: str) -> None:
    with started_hub(stdio_config("victim", "--era", era), stdio_config("bystander")) as hub:
        tools = ToolEvents().attach(hub)
        pid = int(hub.call_tool("mcp__victim__pid").text)
        os.kill(pid, signal.SIGKILL)
        wait_for_state(hub, "victim", "disconnected", timeout=5)
        tools.wait_for(("removed", "mcp__victim__echo"))
        assert isinstance(hub.servers["victim"].error, ServerDisconnectedError)
        assert "mcp__victim__echo" not in hub.registry
        assert_bystander_fine(hub)


@pytest.mark.parametrize("era", ERAS)
def test_http_server_sigkilled_mid_call_fails_the_call_promptly(era: str, events: EventLog) -> None:
    with (
        fixture_server("victim", "http", era, events=events) as served,
        started_hub(served.config, stdio_config("bystander")) as hub,
    ):
        assert served.http is not None
        future = hub.submit("mcp__victim__sleep", {"seconds": 30, "tag": "doomed"})
        events.wait_for("started", tag="doomed")
        served.http.kill()
        error = ended_within(future, 10)
        assert isinstance(error, ServerDisconnectedError), repr(error)
        wait_for_state(hub, "victim", "disconnected", timeout=10)
        assert "mcp__victim__echo" not in hub.registry
        with pytest.raises(ToolNotFoundError):
            hub.call_tool("mcp__victim__echo", {"text": "anyone?"})
        assert_bystander_fine(hub)


# -- never there, never answering -------------------------------------------------------------------


def test_http_endpoint_gone_before_start_fails_quickly() -> None:
    gone = http_config("gone", f"http://127.0.0.1:{closed_port()}/mcp")  # default 30 s connect timeout
    started = time.monotonic()
    with started_hub(gone, stdio_config("bystander")) as hub:
        elapsed = time.monotonic() - started
        server = hub.servers["gone"]
        assert server.state == "failed"
        assert isinstance(server.error, ServerDisconnectedError), repr(server.error)
        assert elapsed < 10, f"a refused connection took {elapsed:.1f}s to fail"  # not the 30 s deadline
        assert not server.tools
        assert_bystander_fine(hub)


def test_http_server_that_never_answers_the_handshake_fails_at_its_connect_deadline() -> None:
    with silent_listener() as port:
        mute = http_config("mute", f"http://127.0.0.1:{port}/mcp", connect_timeout_ms=500)
        started = time.monotonic()
        hub = MCPHub([mute, stdio_config("bystander")]).start()
        try:
            server = hub.servers["mute"]
            assert server.state == "failed"
            assert isinstance(server.error, TimeoutError), repr(server.error)
            assert "connect_timeout_ms" in str(server.error)
            assert_bystander_fine(hub)
        finally:
            closing = time.monotonic()
            hub.close()
        assert time.monotonic() - closing < 5
    assert time.monotonic() - started < 15


def test_stdio_server_that_never_answers_and_ignores_signals_leaves_no_process(events: EventLog) -> None:
    before = set(child_pids_of(os.getpid()))
    mute = stdio_config(
        "mute", "--ignore-signals", script=HANGING_SERVER, events=events, connect_timeout_ms=500
    )
    started = time.monotonic()
    with started_hub(mute, stdio_config("bystander")) as hub:
        pid = int(events.wait_for("ready")["pid"])
        assert hub.servers["mute"].state == "failed"
        assert isinstance(hub.servers["mute"].error, TimeoutError)
        assert_bystander_fine(hub)
        # A server that failed to connect is gone while the hub is still open, not only at close().
        wait_until(lambda: not pid_alive(pid), timeout=10, message=f"the mute server {pid} survived")
    assert time.monotonic() - started < 20
    assert set(child_pids_of(os.getpid())) <= before


# -- ignores stdin closing and SIGTERM --------------------------------------------------------------


def test_close_with_calls_in_flight_on_a_server_that_ignores_stdin_close_and_sigterm(
    events: EventLog,
) -> None:
    before = set(child_pids_of(os.getpid()))
    hub = MCPHub([stdio_config("stubborn", "--era", "legacy", "--ignore-signals", events=events)]).start()
    pid = int(hub.call_tool("mcp__stubborn__pid").text)
    futures = [hub.submit("mcp__stubborn__sleep", {"seconds": 30, "tag": f"s{i}"}) for i in range(3)]
    for i in range(3):
        events.wait_for("started", tag=f"s{i}")
    closing = time.monotonic()
    hub.close()
    assert time.monotonic() - closing < 10  # the SDK's own stop takes ~4 s; the hub kills after 6 s
    for future in futures:
        assert isinstance(ended_within(future, 1), ServerDisconnectedError)
    wait_until(lambda: not pid_alive(pid), timeout=5, message=f"server {pid} survived close()")
    assert set(child_pids_of(os.getpid())) <= before
    assert not [thread.name for thread in threading.enumerate() if thread.name.startswith("mcp-sync:")]


# -- garbage on stdout ------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_garbage_and_a_partial_line_on_stdout_do_not_break_the_session(era: str) -> None:
    with started_hub(stdio_config("noisy", "--era", era, "--garbage-stdout")) as hub:
        assert hub.servers["noisy"].state == "ready"
        assert "mcp__noisy__echo" in hub.registry
        for i in range(20):
            assert hub.call_tool("mcp__noisy__echo", {"text": f"call {i}"}, timeout=10).text == f"call {i}"
        assert hub.call_tool("mcp__noisy__add", {"a": 2, "b": 3}).structured_content == {"result": 5}


# A connect timeout no test waits out: a server that fails, fails for what it did.
NEVER = 600_000
NOT_MCP_SECRET = "s3cr3t-printed-token-9141"


def not_mcp_config(name: str, *flags: str, **overrides: object) -> dict[str, object]:
    return stdio_config(name, *flags, script=HANGING_SERVER, **overrides)


def test_a_server_that_keeps_writing_text_that_is_not_mcp_fails_before_its_timeout_with_what_it_wrote() -> (
    None
):
    # It writes a line every 50 ms and never answers: it fails once it has kept at it for NOT_MCP_PATIENCE.
    config = not_mcp_config("printer", "--stdout-lines", "1", "--stdout-forever", connect_timeout_ms=NEVER)
    with started_hub(config, stdio_config("bystander")) as hub:
        assert hub.servers["printer"].state == "failed"
        error = str(hub.servers["printer"].error)
        pattern = (
            r"server 'printer' does not speak MCP on its stdout: "
            r"it wrote \d+ lines to stdout that are not MCP messages, the first: 'hanging: not MCP, line 1'"
        )
        assert re.fullmatch(pattern, error), error
        assert_bystander_fine(hub)


def test_a_server_that_prints_a_long_banner_and_then_answers_is_ready() -> None:
    # More lines than NOT_MCP_LINE_LIMIT, written at once before serving: a banner, not a refusal to answer.
    with started_hub(stdio_config("banner", "--stdout-banner", "12", connect_timeout_ms=NEVER)) as hub:
        assert hub.servers["banner"].state == "ready", hub.servers["banner"].error
        assert hub.call_tool("mcp__banner__echo", {"text": "after the banner"}).text == "after the banner"


def test_a_server_that_prints_and_exits_names_what_it_wrote() -> None:
    config = not_mcp_config("usage", "--stdout-lines", "2", "--exit-after-output", connect_timeout_ms=NEVER)
    with started_hub(config) as hub:
        assert str(hub.servers["usage"].error) == (
            "server 'usage' went away while connecting (the process exited with status 2); it wrote 2 lines "
            "to stdout that are not MCP messages, the first: 'hanging: not MCP, line 1'"
        )


def test_a_server_that_prints_a_line_and_never_answers_names_it_when_the_connect_times_out() -> None:
    # The line is written at start-up, milliseconds into the 5 s the connection waits.
    with started_hub(not_mcp_config("banner", "--stdout-lines", "1", connect_timeout_ms=5000)) as hub:
        error = str(hub.servers["banner"].error)
        assert error.startswith("server 'banner' did not connect and list its tools within 5 s"), error
        assert error.endswith(
            "; it wrote 1 line to stdout that is not an MCP message: 'hanging: not MCP, line 1'"
        )


def test_text_that_is_not_mcp_is_quoted_without_the_servers_secrets() -> None:
    config = not_mcp_config(
        "leaky",
        "--stdout-lines",
        "10",
        "--stdout-env",
        "SERVICE_TOKEN",
        "--exit-after-output",
        env={"SERVICE_TOKEN": NOT_MCP_SECRET},
        connect_timeout_ms=NEVER,
    )
    with started_hub(config) as hub:
        error = str(hub.servers["leaky"].error)
    assert NOT_MCP_SECRET not in error
    assert "the first: 'hanging: SERVICE_TOKEN=***'" in error


# A credential with a backslash (escaping would double it) and the pad that puts it across the 200-character
# cut of the quoted line ("hanging: " + pad + "SERVICE_TOKEN=" + secret from the 191st character on).
BACKSLASH_SECRET = "Zq8v1Lr0\\PwX7mKc2Ne5tYb9HsAd4"


@pytest.mark.parametrize("pad", [0, 167], ids=["within_the_quote", "across_the_cut"])
def test_a_quoted_line_never_shows_a_secret_with_a_backslash_or_across_the_cut(pad: int) -> None:
    config = not_mcp_config(
        "leaky",
        "--stdout-lines",
        "2",
        "--stdout-env",
        "SERVICE_TOKEN",
        "--stdout-pad",
        str(pad),
        "--exit-after-output",
        env={"SERVICE_TOKEN": BACKSLASH_SECRET},
        connect_timeout_ms=NEVER,
    )
    with started_hub(config) as hub:
        error = str(hub.servers["leaky"].error)
    assert BACKSLASH_SECRET[:4] not in error, error
    assert f"the first: 'hanging: {'x' * pad}SERVICE_TOKEN=***'" in error, error


# -- notification floods ----------------------------------------------------------------------------

FLOOD = 5000
FLOODS = [
    pytest.param("log", "stdio", "legacy", id="log-stdio-2025"),
    pytest.param("progress", "stdio", "modern", id="progress-stdio-2026"),
    pytest.param("progress", "http", "legacy", id="progress-http-2025"),
    pytest.param("tools_changed", "stdio", "legacy", id="tools_changed-stdio-2025"),
    pytest.param("tools_changed", "stdio", "modern", id="tools_changed-stdio-2026"),
    pytest.param("tools_changed", "http", "modern", id="tools_changed-http-2026"),
]


@pytest.mark.parametrize(("kind", "transport", "era"), FLOODS)
def test_notification_flood_keeps_the_hub_responsive(
    kind: str, transport: str, era: str, events: EventLog
) -> None:
    progress: list[float] = []
    with fixture_server("flood", transport, era, events=events) as served, started_hub(served.config) as hub:
        tools = ToolEvents().attach(hub)
        kwargs = (
            {"progress": lambda value, total, message: progress.append(value)} if kind == "progress" else {}
        )
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            flood = pool.submit(
                hub.call_tool, "mcp__flood__notify_flood", {"n": FLOOD, "kind": kind}, timeout=50, **kwargs
            )
            # Responsive during the flood: echo keeps answering (how fast is bench_resync's business).
            answered = 0
            while not flood.done() or not answered:
                assert hub.call_tool("mcp__flood__echo", {"text": "ping"}, timeout=30).text == "ping"
                answered += 1
            assert flood.result(timeout=30).text == f"sent {FLOOD}"
        if kind == "progress":
            assert progress == [float(i) for i in range(1, FLOOD + 1)]  # all of them, in order
        if kind == "tools_changed":
            # Every announcement is followed by a listing (none lost), and the burst was coalesced.
            last_announced = max(event["time"] for event in events.find("announced"))
            wait_until(
                lambda: any(event["time"] > last_announced for event in events.find("list_tools")),
                timeout=10,
                message="no re-list after the last announcement of the flood",
            )
            # Coalesced: fewer listings than announcements. How many fewer depends on the machine's
            # speed, so the test does not say (bench_resync measures it).
            relists = events.count("list_tools") - 1
            assert 1 <= relists < FLOOD, f"{relists} re-lists for {FLOOD} announcements"
        # Still in sync after the flood: a tool added now is seen.
        hub.call_tool("mcp__flood__add_tool", {"name": "after_flood"})
        tools.wait_for(("added", "mcp__flood__after_flood"), timeout=10)
        assert hub.call_tool("mcp__flood__after_flood", {"text": "synced"}).text == "synced"
        assert hub.servers["flood"].state == "ready"


def test_tools_subscription_ended_by_the_server_is_renewed() -> None:
    # What a flood can do at random (the SDK ends a listen stream whose backlog overflows, and
    # expects its client to listen again and re-list), done on purpose: end the stream, then change.
    with started_hub(stdio_config("hx", "--subscriptions", script=HOSTILE_SERVER)) as hub:
        assert hub.servers["hx"].protocol_version == "2026-07-28"
        tools = ToolEvents().attach(hub)
        assert hub.call_tool("mcp__hx__grow").text == "grown_1"
        tools.wait_for(("added", "mcp__hx__grown_1"))  # the subscription works
        assert hub.call_tool("mcp__hx__end_subscriptions").text == "ended"
        assert hub.call_tool("mcp__hx__grow").text == "grown_2"
        tools.wait_for(("added", "mcp__hx__grown_2"), timeout=10)
        assert hub.servers["hx"].state == "ready"
