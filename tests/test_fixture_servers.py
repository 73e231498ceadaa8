"""Smoke tests of the test fixtures themselves, driven by the raw async `mcp.Client`.

Every behaviour a later mcp_sync test leans on (era negotiation, cancellation reaching
the server, list-changed on both eras, pagination shapes, crashes, a silent server, the
1.x server, the npm reference servers) is shown here to happen on the wire, so a failure
in those tests points at mcp_sync, not at a fixture. Each body runs under `anyio.run`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.client.session import DISCOVER_TIMEOUT_SECONDS, IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, LoggingMessageNotificationParams, ToolListChangedNotification

from tests.support import (
    FAST_CLOCK_FACTOR,
    FIXTURE_SERVER,
    HANGING_SERVER,
    LEGACY_V1_SERVER,
    EventLog,
    HttpServer,
    ReferenceServers,
    child_pids_of,
    pid_alive,
    stdio_config,
    stdio_params,
    wait_until,
)

MODERN = "2026-07-28"
ERAS = ["modern", "legacy"]
TRANSPORTS = ["stdio", "http"]

Target = Any  # a URL string or StdioServerParameters: what `mcp.Client` takes


def run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn)


def target_for(transport: str, http_server: Callable[..., HttpServer], *flags: str, **kwargs: Any) -> Target:
    if transport == "http":
        return http_server(*flags, **kwargs).url
    return stdio_params(*flags, **kwargs)


async def wait_event(
    events: EventLog, name: str, tag: str | None = None, timeout: float = 10.0
) -> dict[str, Any]:
    return await anyio.to_thread.run_sync(lambda: events.wait_for(name, tag=tag, timeout=timeout))


def check_era(client: Client, era: str) -> None:
    if era == "modern":
        assert client.protocol_version == MODERN
    else:
        assert client.protocol_version.startswith("2025-"), client.protocol_version


# --- era negotiation and basic tools --------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
def test_era_and_basic_tools(transport: str, era: str, http_server: Callable[..., HttpServer]) -> None:
    target = target_for(transport, http_server, "--era", era)

    async def body() -> None:
        started = time.monotonic()
        with anyio.fail_after(15):
            async with Client(target, cache=None) as client:
                elapsed = time.monotonic() - started
                check_era(client, era)
                assert client.server_capabilities.tools is not None
                assert client.server_capabilities.tools.list_changed

                echoed = await client.call_tool("echo", {"text": "hello"})
                assert [(b.type, getattr(b, "text", None)) for b in echoed.content] == [("text", "hello")]
                assert not echoed.is_error

                added = await client.call_tool("add", {"a": 2, "b": 3})
                assert added.structured_content == {"result": 5}

                blocks = await client.call_tool("blocks", {})
                assert [b.type for b in blocks.content] == ["text", "text", "image", "text"]
                texts = [getattr(b, "text", None) for b in blocks.content]
                assert texts == ["first", "second", None, "third"]
                assert getattr(blocks.content[2], "mime_type", None) == "image/png"

                failed = await client.call_tool("fail", {"message": "it broke"})
                assert failed.is_error
                assert getattr(failed.content[0], "text", None) == "it broke"
        # The legacy fixture refuses the discover probe at once: the client never waits out the probe's
        # timeout. (The bound is that timeout, not a guess at a speed: a loaded machine spends seconds
        # starting the stdio server's interpreter.)
        assert elapsed < DISCOVER_TIMEOUT_SECONDS, f"connect took {elapsed:.2f}s"

    run(body)


def test_environment_cwd_pid_and_a_completed_sleep(tmp_path: Path, events: EventLog) -> None:
    params = stdio_params(events=events, env={"FIXTURE_PROBE": "42"}, cwd=tmp_path)

    async def body() -> None:
        with anyio.fail_after(15):
            async with Client(params, cache=None) as client:
                env = await client.call_tool("get_env", {"name": "FIXTURE_PROBE"})
                unset = await client.call_tool("get_env", {"name": "FIXTURE_SURELY_UNSET"})
                cwd = await client.call_tool("get_cwd", {})
                pid = await client.call_tool("pid", {})
                slept = await client.call_tool("sleep", {"seconds": 0.05, "tag": "short"})
        assert getattr(slept.content[0], "text", None) == "slept 0.05"
        ran = events.find(lambda e: e.get("tool") == "sleep" and e["event"] != "call_arguments")
        assert [e["event"] for e in ran] == [
            "started",
            "finished",
        ]
        assert env.structured_content == {"result": "42"}
        assert unset.structured_content == {"result": "<unset>"}
        assert cwd.structured_content == {"result": str(tmp_path)}
        ready = events.wait_for("ready")
        assert pid.structured_content == {"result": ready["pid"]}

    run(body)


# --- cancellation ---------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
def test_cancelling_the_caller_cancels_the_server_handler(
    transport: str, era: str, events: EventLog, http_server: Callable[..., HttpServer]
) -> None:
    target = target_for(transport, http_server, "--era", era, events=events)
    tag = f"{transport}-{era}"

    async def body() -> None:
        with anyio.fail_after(20):
            async with Client(target, cache=None) as client:
                check_era(client, era)
                async with anyio.create_task_group() as tg:

                    async def call() -> None:
                        await client.call_tool("sleep", {"seconds": 30, "tag": tag})

                    tg.start_soon(call)
                    await wait_event(events, "started", tag)
                    tg.cancel_scope.cancel()
                await wait_event(events, "cancelled", tag, timeout=5)
                assert events.count("finished", tag) == 0
                # The session survives the cancellation.
                again = await client.call_tool("echo", {"text": "still here"})
                assert getattr(again.content[0], "text", None) == "still here"

    run(body)


# --- progress and notifications -------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
def test_progress_notifications_arrive(
    transport: str, era: str, http_server: Callable[..., HttpServer]
) -> None:
    target = target_for(transport, http_server, "--era", era)

    async def body() -> None:
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        with anyio.fail_after(15):
            async with Client(target, cache=None) as client:
                result = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
        assert getattr(result.content[0], "text", None) == "done"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

    run(body)


def test_notify_flood_of_log_messages_on_the_legacy_era() -> None:
    async def body() -> None:
        logs: list[LoggingMessageNotificationParams] = []

        async def on_log(params: LoggingMessageNotificationParams) -> None:
            logs.append(params)

        with anyio.fail_after(15):
            async with Client(stdio_params("--era", "legacy"), cache=None, logging_callback=on_log) as client:
                result = await client.call_tool("notify_flood", {"n": 200})
                assert getattr(result.content[0], "text", None) == "sent 200"
                await anyio.to_thread.run_sync(lambda: wait_until(lambda: len(logs) == 200, timeout=5))
        assert [p.data for p in logs[:2]] == ["flood 0", "flood 1"]

    run(body)


# --- list changed, on each era --------------------------------------------------------


async def _await_legacy_notification(
    client: Client, notified: list[ToolListChangedNotification], transport: str
) -> None:
    """On 2025 Streamable HTTP a server notification travels on the client's GET stream,
    which the client opens after the handshake; one sent before the server registered that
    stream is dropped. Announce until one arrives, so the real check below is not racy."""
    if transport != "http":
        return
    for _ in range(50):
        await client.call_tool("announce", {"n": 1})
        with anyio.move_on_after(0.1):
            while not notified:
                await anyio.sleep(0.01)
        if notified:
            notified.clear()
            return
    raise AssertionError("no list_changed notification ever arrived on the GET stream")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_list_changed_on_the_legacy_era(transport: str, http_server: Callable[..., HttpServer]) -> None:
    target = target_for(transport, http_server, "--era", "legacy")

    async def body() -> None:
        notified: list[ToolListChangedNotification] = []

        async def on_message(message: IncomingMessage) -> None:
            if isinstance(message, ToolListChangedNotification):
                notified.append(message)

        with anyio.fail_after(20):
            async with Client(target, cache=None, message_handler=on_message) as client:
                check_era(client, "legacy")
                await _await_legacy_notification(client, notified, transport)
                await client.call_tool("add_tool", {"name": "late_tool"})
                await anyio.to_thread.run_sync(lambda: wait_until(lambda: notified, timeout=5))
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert "late_tool" in names
                echoed = await client.call_tool("late_tool", {"text": "dynamic"})
                assert getattr(echoed.content[0], "text", None) == "dynamic"

                notified.clear()
                await client.call_tool("remove_tool", {"name": "late_tool"})
                await anyio.to_thread.run_sync(lambda: wait_until(lambda: notified, timeout=5))
                assert "late_tool" not in [tool.name for tool in (await client.list_tools()).tools]

                notified.clear()
                await client.call_tool("announce", {"n": 5})
                await anyio.to_thread.run_sync(lambda: wait_until(lambda: len(notified) == 5, timeout=5))

    run(body)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_list_changed_on_the_modern_era(transport: str, http_server: Callable[..., HttpServer]) -> None:
    target = target_for(transport, http_server)

    async def body() -> None:
        with anyio.fail_after(20):
            async with Client(target, cache=None) as client:
                check_era(client, "modern")
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("add_tool", {"name": "late_tool"})
                    with anyio.fail_after(5):
                        event = await subscription.__aiter__().__anext__()
                    assert isinstance(event, ToolsListChanged)
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert "late_tool" in names

    run(body)


# --- listing shapes -------------------------------------------------------------------


async def _pages(target: Target, limit: int = 10) -> list[list[str]]:
    pages: list[list[str]] = []
    async with Client(target, cache=None) as client:
        cursor: str | None = None
        for _ in range(limit):
            page = await client.list_tools(cursor=cursor)
            pages.append([tool.name for tool in page.tools])
            cursor = page.next_cursor
            if cursor is None:
                break
    return pages


# The fixture's own tools (echo, add, ... break_listing, fail_listings, delay_listings, notify_flood,
# the resource, prompt and request tools, echo_meta, framework_names), before any --tools extras.
BASE_TOOL_COUNT = 34


@pytest.mark.parametrize("era", ERAS)
def test_pagination(era: str) -> None:
    async def body() -> None:
        with anyio.fail_after(20):
            pages = await _pages(stdio_params("--era", era, "--tools", "250", "--page-size", "100"))
        assert [len(page) for page in pages] == [100, 100, 50 + BASE_TOOL_COUNT]
        names = [name for page in pages for name in page]
        assert len(set(names)) == 250 + BASE_TOOL_COUNT
        assert {"echo", "t00000", "t00249"} <= set(names)

    run(body)


def test_extra_tools_have_descriptions_and_schemas() -> None:
    async def body() -> None:
        with anyio.fail_after(15):
            async with Client(stdio_params("--tools", "3"), cache=None) as client:
                tools = {tool.name: tool for tool in (await client.list_tools()).tools}
                result = await client.call_tool("t00002", {"value": "v"})
        assert tools["t00002"].description == "Extra fixture tool number 2."
        assert "value" in tools["t00002"].input_schema["properties"]
        assert result.structured_content == {"result": "v"}

    run(body)


def test_duplicate_listing_repeats_a_name() -> None:
    async def body() -> None:
        with anyio.fail_after(15):
            pages = await _pages(stdio_params("--duplicate-listing"))
        names = [name for page in pages for name in page]
        assert names.count("echo") == 2

    run(body)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_endless_cursor_never_ends(transport: str, http_server: Callable[..., HttpServer]) -> None:
    target = target_for(transport, http_server, "--endless-cursor", "--page-size", "10")

    async def body() -> None:
        with anyio.fail_after(15):
            pages = await _pages(target, limit=6)
        assert len(pages) == 6  # the walk stopped at the cap, not at a last page
        full, rest = divmod(BASE_TOOL_COUNT, 10)
        real = [10] * full + ([rest] if rest else [])
        assert [len(page) for page in pages] == real + [0] * (6 - len(real))

    run(body)


# --- noisy servers --------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_garbage_on_stdout_is_survivable(era: str) -> None:
    async def body() -> None:
        with anyio.fail_after(15):
            async with Client(stdio_params("--garbage-stdout", "--era", era), cache=None) as client:
                check_era(client, era)
                result = await client.call_tool("echo", {"text": "through the noise"})
        assert getattr(result.content[0], "text", None) == "through the noise"

    run(body)


def test_stderr_lines_reach_the_errlog(tmp_path: Path) -> None:
    errlog_path = tmp_path / "stderr.txt"

    async def body() -> None:
        with open(errlog_path, "w") as errlog, anyio.fail_after(15):
            transport = stdio_client(stdio_params("--stderr-lines", "5"), errlog=errlog)
            async with Client(transport, cache=None) as client:
                await client.call_tool("echo", {"text": "x"})
        lines = errlog_path.read_text().splitlines()
        assert [line for line in lines if line.startswith("fixture stderr line")] == [
            f"fixture stderr line {i}" for i in range(5)
        ]

    run(body)


# --- crashes, exits, silence, signals -------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_crash_mid_call_fails_the_call_fast(era: str, events: EventLog) -> None:
    async def body() -> None:
        with anyio.fail_after(15):
            async with Client(stdio_params("--era", era, events=events), cache=None) as client:
                started = time.monotonic()
                with pytest.raises(MCPError) as failure:
                    await client.call_tool("crash", {})
                assert time.monotonic() - started < 2.0
                assert failure.value.code == CONNECTION_CLOSED
        pid = events.wait_for("ready")["pid"]
        assert events.count("crashing") == 1
        assert not pid_alive(pid)

    run(body)


def test_exit_later_is_an_idle_crash(events: EventLog) -> None:
    async def body() -> None:
        with anyio.fail_after(15):
            async with Client(stdio_params(events=events), cache=None) as client:
                result = await client.call_tool("exit_later", {"delay": 0.3})
                assert getattr(result.content[0], "text", None) == "ok"
                pid = events.wait_for("ready")["pid"]
                await anyio.to_thread.run_sync(lambda: wait_until(lambda: not pid_alive(pid), timeout=5))

    run(body)


@pytest.mark.parametrize("flags", [(), ("--ignore-signals",)], ids=["plain", "ignore-signals"])
def test_hanging_server_never_completes_the_handshake(flags: tuple[str, ...], events: EventLog) -> None:
    params = stdio_params(*flags, script=HANGING_SERVER, events=events)

    async def body() -> None:
        started = time.monotonic()
        with pytest.raises(TimeoutError), anyio.fail_after(1.0):
            async with Client(params, cache=None):
                pytest.fail("the handshake completed")
        # The SDK's stdio shutdown is shielded: closing stdin ends the plain server at once,
        # the signal-ignoring one costs its grace period, SIGTERM and SIGKILL (about 4 s).
        assert time.monotonic() - started < 8.0

    run(body)
    pid = events.wait_for("ready")["pid"]
    events.wait_for("stdin_closed")
    wait_until(lambda: not pid_alive(pid), timeout=5)
    if flags:
        events.wait_for("signal")


def test_ignore_signals_outlives_stdin_and_sigterm(events: EventLog) -> None:
    argv = [sys.executable, str(FIXTURE_SERVER), "--ignore-signals", "--events", str(events)]
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        events.wait_for("ready", timeout=15)
        assert process.stdin is not None
        process.stdin.close()
        events.wait_for("stdin_closed")
        process.send_signal(signal.SIGTERM)
        events.wait_for("signal")
        time.sleep(0.2)
        assert process.poll() is None, "the server should outlive stdin EOF and SIGTERM"
    finally:
        process.kill()
        process.wait(timeout=5)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.real_processes
def test_http_server_kill_and_cleanup(events: EventLog) -> None:
    with HttpServer(events=events) as server:
        assert server.url == f"http://127.0.0.1:{server.port}/mcp"
        assert events.wait_for("ready")["pid"] == server.pid
        assert child_pids_of(os.getpid()).count(server.pid) == 1
        server.kill()
        assert not pid_alive(server.pid)
    assert server.pid not in child_pids_of(os.getpid())


def test_http_server_that_ignores_sigterm_is_still_reaped(events: EventLog) -> None:
    server = HttpServer("--ignore-signals", events=events).start()
    try:
        started = time.monotonic()
        server.stop(timeout=0.5)  # SIGTERM is ignored; stop() falls back to SIGKILL
        assert time.monotonic() - started < 3.0
        assert events.count("signal") == 1
        assert not pid_alive(server.pid)
    finally:
        server.close()


@pytest.mark.real_processes
def test_stdio_config_shape(events: EventLog) -> None:
    config = stdio_config("fx", "--era", "legacy", events=events, tool_call_timeout_ms=500)
    assert config == {
        "server_name": "fx",
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(FIXTURE_SERVER), "--era", "legacy", "--events", str(events)],
        "tool_call_timeout_ms": 500,
    }


# --- the 1.x SDK server ---------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_legacy_v1_server(transport: str, legacy_v1_python: Path, events: EventLog) -> None:
    server: HttpServer | None = None
    if transport == "http":
        server = HttpServer(script=LEGACY_V1_SERVER, python=legacy_v1_python, events=events).start()
        target: Target = server.url
    else:
        target = stdio_params(script=LEGACY_V1_SERVER, python=legacy_v1_python, events=events)

    async def body() -> None:
        notified: list[ToolListChangedNotification] = []

        async def on_message(message: IncomingMessage) -> None:
            if isinstance(message, ToolListChangedNotification):
                notified.append(message)

        started = time.monotonic()
        with anyio.fail_after(20):
            async with Client(target, cache=None, message_handler=on_message) as client:
                assert time.monotonic() - started < 5.0
                check_era(client, "legacy")
                assert client.server_info is not None
                assert client.server_info.name == "mcp-sync-legacy-v1"
                echoed = await client.call_tool("echo", {"text": "from v1"})
                assert getattr(echoed.content[0], "text", None) == "from v1"

                await _await_legacy_notification(client, notified, transport)
                await client.call_tool("add_tool", {"name": "v1_late"})
                await anyio.to_thread.run_sync(lambda: wait_until(lambda: notified, timeout=5))
                assert "v1_late" in [tool.name for tool in (await client.list_tools()).tools]

                async with anyio.create_task_group() as tg:

                    async def call() -> None:
                        await client.call_tool("sleep", {"seconds": 30, "tag": "v1"})

                    tg.start_soon(call)
                    await wait_event(events, "started", "v1")
                    tg.cancel_scope.cancel()
                await wait_event(events, "cancelled", "v1", timeout=5)

    try:
        run(body)
    finally:
        if server is not None:
            server.stop()
            server.close()


# --- the npm reference servers --------------------------------------------------------


@pytest.mark.node
def test_reference_server_everything_lists_tools(reference_servers: ReferenceServers) -> None:
    async def body() -> None:
        with anyio.fail_after(30):
            async with Client(reference_servers.everything_params(), cache=None) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                echoed = await client.call_tool("echo", {"message": "hi"})
        assert "echo" in names
        assert "hi" in str(echoed.content)

    run(body)


@pytest.mark.node
def test_reference_server_filesystem_lists_tools(reference_servers: ReferenceServers, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha")

    async def body() -> None:
        with anyio.fail_after(30):
            async with Client(reference_servers.filesystem_params(tmp_path), cache=None) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                read = await client.call_tool("read_text_file", {"path": str(tmp_path / "a.txt")})
        assert {"read_text_file", "list_directory"} <= names
        assert "alpha" in str(read.content)

    run(body)


RESEARCH_STAGES = [
    "Gathering sources...",
    "Analyzing content...",
    "Synthesizing findings...",
    "Generating report...",
]


async def research_task(argv: list[str], *, to_the_end: bool) -> tuple[dict[str, Any], list[str], str]:
    """Start server-everything with `argv` and call its research query as a task, in raw JSON-RPC over
    stdio: the task the server created, then (`to_the_end`) each status message a `tasks/get` saw until
    it completed and its result's text, else nothing more (the task is cancelled). The server is killed
    at the end: its task's ttl timer would keep it running for minutes."""
    async with await anyio.open_process(argv, stderr=subprocess.DEVNULL) as process:
        try:
            return await _research_task(process, to_the_end=to_the_end)
        finally:
            process.kill()


async def _research_task(process: Process, *, to_the_end: bool) -> tuple[dict[str, Any], list[str], str]:
    assert process.stdin is not None and process.stdout is not None
    stdin, lines = process.stdin, BufferedByteReceiveStream(process.stdout)
    sent = 0

    async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        nonlocal sent
        sent += 1
        request = {"jsonrpc": "2.0", "id": sent, "method": method, "params": params}
        await stdin.send(json.dumps(request).encode() + b"\n")
        while True:  # the answer, past the server's notifications
            message = json.loads(await lines.receive_until(b"\n", 1 << 24))
            if message.get("id") == sent and "method" not in message:
                assert "result" in message, message
                result: dict[str, Any] = message["result"]
                return result

    client = {"name": "fixture-test", "version": "0"}
    await ask("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client})
    await stdin.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    call = {"name": "simulate-research-query", "arguments": {"topic": "tides"}, "task": {}}
    task = (await ask("tools/call", call))["task"]
    if not to_the_end:
        await ask("tasks/cancel", {"taskId": task["taskId"]})
        return task, [], ""
    seen = [task["statusMessage"]]
    status = task
    while status["status"] != "completed":
        assert status["status"] == "working", status
        await anyio.sleep(status["pollInterval"] / 1000)
        status = await ask("tasks/get", {"taskId": task["taskId"]})
        if status["statusMessage"] != seen[-1]:
            seen.append(status["statusMessage"])
    result = await ask("tasks/result", {"taskId": task["taskId"]})
    return task, seen, result["content"][0]["text"]


@pytest.mark.node
def test_reference_server_everything_on_its_fast_clock_goes_through_the_same_stages(
    reference_servers: ReferenceServers,
) -> None:
    """The fast clock (tests/reference_servers/fast_clock.mjs) divides the research task's pollInterval by
    its factor and leaves its ttl; the task goes through the published stages, in order, to its report."""

    async def body() -> None:
        with anyio.fail_after(30):
            real, _, _ = await research_task(reference_servers.everything_argv(), to_the_end=False)
            fast, seen, report = await research_task(
                reference_servers.everything_argv(fast=True), to_the_end=True
            )
        assert fast["pollInterval"] * FAST_CLOCK_FACTOR == real["pollInterval"] == 1000
        assert fast["ttl"] == real["ttl"]
        assert seen[0] == RESEARCH_STAGES[0] and seen[-1] == RESEARCH_STAGES[-1]
        assert seen == sorted(set(seen), key=RESEARCH_STAGES.index)
        assert report.startswith("# Research Report: tides")

    run(body)


@pytest.mark.node
def test_the_fast_clock_refuses_a_server_it_was_not_written_for(
    reference_servers: ReferenceServers, tmp_path: Path
) -> None:
    _node, *filesystem = reference_servers.filesystem_command(tmp_path)
    done = subprocess.run(
        [reference_servers.node, *reference_servers.fast_clock_options, *filesystem],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode != 0
    assert "fast_clock.mjs: expected @modelcontextprotocol/server-everything" in done.stderr, done.stderr
