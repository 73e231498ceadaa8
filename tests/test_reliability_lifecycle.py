"""Reliability of the hub's lifecycle: nothing leaks, closing is bounded, exit leaves nothing behind.

- many start/close cycles leave no thread, file descriptor or child process behind (``soak``:
  short by default, 100 cycles with ``MCP_SYNC_SOAK=full``);
- `close()` with a hundred calls in flight fails every one of them promptly;
- a program that exits with calls in flight and without `close()` exits promptly and cleanly,
  its stdio servers gone and its HTTP server unharmed.
"""

from __future__ import annotations

import concurrent.futures
import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sync import MCPHub, ServerDisconnectedError
from tests.hub_harness import fixture_server, started_hub
from tests.support import (
    REPO_ROOT,
    EventLog,
    HttpServer,
    child_pids_of,
    http_config,
    pid_alive,
    stdio_config,
    wait_until,
)

FULL = os.environ.get("MCP_SYNC_SOAK") == "full"
CYCLES = 100 if FULL else 15
IN_FLIGHT = 100


def resources() -> tuple[list[str], int, list[int]]:
    """Thread names, open file descriptors and child processes of this process, right now."""
    gc.collect()  # an unreachable transport still holding a descriptor is not a leak
    threads = sorted(thread.name for thread in threading.enumerate())
    return threads, len(os.listdir("/proc/self/fd")), child_pids_of(os.getpid())


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    """One HTTP fixture server for the cycles, started before the baseline is taken."""
    with HttpServer() as server:
        yield server


@pytest.mark.soak
@pytest.mark.timeout(900 if FULL else 120)
def test_start_close_cycles_leak_no_thread_descriptor_or_process(http_server: HttpServer) -> None:
    def cycle(i: int) -> None:
        era = ("modern", "legacy")[i % 2]
        with started_hub(stdio_config("local", "--era", era), http_config("web", http_server.url)) as hub:
            assert {name: server.state for name, server in hub.servers.items()} == {
                "local": "ready",
                "web": "ready",
            }
            assert hub.call_tool("mcp__local__echo", {"text": f"cycle {i}"}).text == f"cycle {i}"
            assert hub.call_tool("mcp__web__echo", {"text": f"cycle {i}"}).text == f"cycle {i}"

    cycle(0)  # warm-up: first-use imports and lazily created module state are not leaks
    threads, fds, children = resources()
    growth: list[str] = []
    for i in range(1, CYCLES + 1):
        cycle(i)
        now_threads, now_fds, now_children = resources()
        if now_threads != threads or now_fds > fds or now_children != children:
            growth.append(
                f"after cycle {i}: threads {now_threads} (was {threads}), fds {now_fds} (was {fds}), "
                f"children {now_children} (was {children})"
            )
    assert not growth, f"{len(growth)} of {CYCLES} cycles leaked:\n" + "\n".join(growth[:5])


@pytest.mark.parametrize(
    ("transport", "era"),
    [
        pytest.param("stdio", "modern", id="stdio-2026"),
        pytest.param("stdio", "legacy", id="stdio-2025"),
        pytest.param("http", "modern", id="http-2026"),
        pytest.param("http", "legacy", id="http-2025"),
    ],
)
def test_close_during_a_hundred_calls_in_flight_fails_them_all_promptly(
    transport: str, era: str, tmp_path: Path
) -> None:
    events = EventLog(tmp_path / "events.jsonl")
    with fixture_server("busy", transport, era, events=events) as served:
        hub = MCPHub([served.config]).start()
        try:
            futures = [
                hub.submit("mcp__busy__sleep", {"seconds": 30, "tag": f"f{i}"}) for i in range(IN_FLIGHT // 2)
            ]
            blocked_errors: list[BaseException] = []
            lock = threading.Lock()

            def blocked_call(i: int) -> None:
                try:
                    hub.call_tool("mcp__busy__sleep", {"seconds": 30, "tag": f"b{i}"})
                except BaseException as exc:
                    with lock:
                        blocked_errors.append(exc)

            threads = [
                threading.Thread(target=blocked_call, args=(i,), daemon=True) for i in range(IN_FLIGHT // 2)
            ]
            for thread in threads:
                thread.start()
            # Over HTTP the client's pool holds 100 connections and the server-to-client stream keeps
            # one: the hundredth call waits for a connection (in flight for its caller, not yet started).
            running = IN_FLIGHT if transport == "stdio" else IN_FLIGHT - 1
            wait_until(
                lambda: events.count("started") >= running,
                timeout=20,
                message=f"fewer than {running} calls started on the server",
            )
        finally:
            closing = time.monotonic()
            hub.close()
            closed_in = time.monotonic() - closing
        # Bounded, not timed: close() kills what does not stop within its own deadline.
        assert closed_in < 30, f"close() took {closed_in:.1f}s with {IN_FLIGHT} calls in flight"
        done, not_done = concurrent.futures.wait(futures, 10)
        assert not not_done, f"{len(not_done)} futures still running after close()"
        for future in done:
            assert isinstance(future.exception(), ServerDisconnectedError), repr(future.exception())
        for thread in threads:
            thread.join(10)
        assert not any(thread.is_alive() for thread in threads), "a blocked call_tool() outlived close()"
        assert len(blocked_errors) == IN_FLIGHT // 2
        assert all(isinstance(error, ServerDisconnectedError) for error in blocked_errors), blocked_errors


EXIT_SCRIPT = textwrap.dedent(
    """
    import json, sys, threading
    sys.path.insert(0, sys.argv[1])
    from mcp_sync import MCPHub
    from tests.support import EventLog, http_config, stdio_config

    url, events = sys.argv[2], EventLog(sys.argv[3])
    servers = ("plain", "stubborn", "web")
    hub = MCPHub([
        stdio_config("plain", "--era", "legacy", events=events),
        stdio_config("stubborn", "--ignore-signals", events=events),
        http_config("web", url),
    ]).start()
    pids = {name: int(hub.call_tool(f"mcp__{name}__pid").text) for name in servers}
    futures = [hub.submit(f"mcp__{name}__sleep", {"seconds": 30, "tag": f"{name}-{i}"})
               for name in servers for i in range(3)]

    def blocked(name):
        try:
            hub.call_tool(f"mcp__{name}__sleep", {"seconds": 30, "tag": f"{name}-blocked"})
        except Exception as exc:  # the hub closing at exit ends it; say so quietly
            pass

    for name in servers:
        threading.Thread(target=blocked, args=(name,), daemon=True).start()
    for name in servers:
        for tag in (*(f"{name}-{i}" for i in range(3)), f"{name}-blocked"):
            events.wait_for("started", tag=tag, timeout=20)
    print(json.dumps(pids), flush=True)
    # ... and the program ends here, with 12 calls in flight and no close().
    """
)


def test_exit_without_close_with_calls_in_flight_leaves_no_server_and_spares_http(tmp_path: Path) -> None:
    script = tmp_path / "forgetful.py"
    script.write_text(EXIT_SCRIPT)
    events = EventLog(tmp_path / "events.jsonl")
    with HttpServer(events=events) as web:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, os.fspath(script), os.fspath(REPO_ROOT), web.url, os.fspath(events)],
            capture_output=True,
            text=True,
            timeout=45,
        )
        elapsed = time.monotonic() - started
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        pids = json.loads(done.stdout.strip().splitlines()[-1])
        # Exit is bounded: the hub gets 3 s to close, then stragglers are killed.
        assert elapsed < 30, f"the program took {elapsed:.1f}s to exit"
        wait_until(
            lambda: not any(pid_alive(pids[name]) for name in ("plain", "stubborn")),
            timeout=5,
            message=f"a stdio server outlived its host: {pids}",
        )
        # The HTTP server is not ours to stop: it is alive, and its in-flight calls were cancelled.
        assert pid_alive(pids["web"]) and web.process.poll() is None
        for tag in ("web-0", "web-1", "web-2", "web-blocked"):
            events.wait_for("cancelled", tag=tag, timeout=10)
        with started_hub(http_config("web", web.url)) as hub:
            assert hub.call_tool("mcp__web__echo", {"text": "unharmed"}).text == "unharmed"
