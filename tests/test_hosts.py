"""Host models: the programs mcp_sync lives in, and how each one ends.

- a program that forks (``os.fork()``, a ``multiprocessing`` fork ``Pool``): the child never
  touches the parent's servers, an inherited hub fails at once and says what to do, and the
  child can make its own hub;
- Ctrl-C while ``start()`` waits for a server that never answers, and while ``close()`` waits
  for a server that ignores signals;
- ``close()`` from another thread while ``start()`` or ``reload()`` is connecting;
- a program whose main thread ends while a non-daemon worker thread is blocked in a call, also
  with the thread-pool module first imported after mcp_sync, and calls without a timeout;
- hubs nobody references any more (``del hub``, or ``hub = MCPHub(...)`` run again);
- a real Jupyter kernel: a cell re-run three times, and an interrupted ``start()``.

The whole-process scenarios run as scripts in tests/hosts/ (forking, signals and interpreter exit
inside the pytest process would be fragile); each prints one ``REPORT <json>`` line. A scenario runs
once per module (a fixture) and several tests read its report, one behaviour each. Every wait is
bounded, and every server a scenario started is SIGKILLed afterwards in case the code under test
left it behind.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import MCPHub
from tests.hosts._common import (
    HostProcess,
    Probe,
    kill_pids,
    poll,
    reap_servers,
    server_pids,
)
from tests.support import HANGING_SERVER, REPO_ROOT, EventLog, pid_alive, stdio_config

# Each scenario bounds its own waits (a stuck host is killed and reported); the module-wide limit only
# has to cover the worst case of those bounds, with the six background hosts of `host_runs`.
pytestmark = pytest.mark.timeout(240)

FORK_ADVICE = "create a new MCPHub in the child"
AT_ONCE = 10.0
"""Bound on "fails at once" for an inherited hub (its calls' own timeout is 60 s)."""
SETTLE = 2.0
"""The contract: within 2 s of an interrupt, nothing of the hub remains."""


def ready_pids(*logs: EventLog) -> list[int]:
    return server_pids(*(log.path for log in logs))


# -- fork ----------------------------------------------------------------------------------------------

FORK_EXITS = ("exit", "return", "_exit")
"""How the forked child ends: ``sys.exit(0)``, falling off the end of the script, ``os._exit(0)``."""

HostRuns = dict[str, "concurrent.futures.Future[HostProcess]"]


def run_fork_host(mode: str, workdir: Path) -> HostProcess:
    host = HostProcess("fork_host.py", mode, os.fspath(workdir))
    try:
        return host.finish(timeout=150)
    finally:
        reap_servers(workdir)


def run_unreferenced_host(mode: str) -> HostProcess:
    host = HostProcess("unreferenced.py", mode)
    try:
        return host.finish(timeout=60)
    finally:
        with contextlib.suppress(AssertionError):
            report = host.report()
            kill_pids([*report.get("servers", []), *report.get("children", []), report.get("server_pid", 0)])


@pytest.fixture(scope="module")
def host_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostRuns]:
    """The hosts whose scenarios have only generous bounds (the four fork hosts, the two
    unreferenced-hub hosts), started together the first time a test asks for one; their tests
    come first in this module, the timing-sensitive scenarios run after them, alone."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        runs = {
            mode: pool.submit(run_fork_host, mode, tmp_path_factory.mktemp(f"fork-{mode.strip('_')}"))
            for mode in (*FORK_EXITS, "pool")
        }
        for mode in ("del", "rerun"):
            runs[f"unreferenced-{mode}"] = pool.submit(run_unreferenced_host, mode)
        yield runs


def fork_report(host_runs: HostRuns, mode: str) -> dict[str, Any]:
    host = host_runs[mode].result(timeout=170)
    report = host.report()
    probes = report.get("workers") if mode == "pool" else report.get("children")
    assert probes, f"no child reported what it saw: {report!r}\n{host.describe()}"
    return report


def probes_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    probes: list[dict[str, Any]] = report["workers"] if report["mode"] == "pool" else report["children"]
    return probes


def assert_failed_at_once(probe: dict[str, Any], parent_pid: int, what: str) -> None:
    assert probe["outcome"] == "raised", (
        f"{what} on a hub inherited across fork did not raise within {AT_ONCE:.0f}s "
        f"(its timeout was 60 s): {probe!r}"
    )
    assert "MCPSyncError" in probe["mro"], f"{what} raised {probe['type']}, not an MCPSyncError: {probe!r}"
    assert probe["seconds"] < AT_ONCE, probe
    assert FORK_ADVICE in probe["message"], probe
    assert f"started in process {parent_pid}" in probe["message"], probe


def assert_parent_unharmed(report: dict[str, Any]) -> None:
    after = report["parent_after"]
    assert after["server_alive"], f"the parent's server {report['server_pid']} died: {report!r}"
    assert after["call"] == {**after["call"], "outcome": "returned", "value": "parent again"}, after
    assert after["state"] == "ready", after
    assert after["threads"] == ["mcp-sync:parent"], after
    assert "signal" not in after["server_events"], after
    assert "stdin_closed" not in after["server_events"], after


@pytest.mark.parametrize("mode", FORK_EXITS)
def test_forked_child_that_exits_never_touches_the_parents_servers(host_runs: HostRuns, mode: str) -> None:
    report = fork_report(host_runs, mode)
    assert report["child_exit"] == {"hung": False, "exit_code": 0}, report
    assert_parent_unharmed(report)


@pytest.mark.parametrize("mode", ["_exit", "return"])
def test_inherited_hub_fails_every_call_at_once_in_a_forked_child(host_runs: HostRuns, mode: str) -> None:
    report = fork_report(host_runs, mode)
    (child,) = probes_of(report)
    assert_failed_at_once(child["call"], report["parent_pid"], "call_tool()")
    assert_failed_at_once(child["submit"], report["parent_pid"], "submit()")


def test_inherited_hub_state_is_forked_in_the_child(host_runs: HostRuns) -> None:
    report = fork_report(host_runs, "_exit")
    (child,) = probes_of(report)
    assert child["state"] == {**child["state"], "outcome": "returned", "value": "forked"}, child["state"]


def test_closing_an_inherited_hub_in_the_child_is_a_no_op(host_runs: HostRuns) -> None:
    # The child closes the hub twice, then ends with os._exit(0): nothing but close() ran there
    # that could have touched the parent's server.
    report = fork_report(host_runs, "_exit")
    (child,) = probes_of(report)
    assert child["close"]["outcome"] == "returned", child["close"]
    assert child["close_again"]["outcome"] == "returned", child["close_again"]
    assert_parent_unharmed(report)


def test_forked_child_can_start_and_use_its_own_hub(host_runs: HostRuns) -> None:
    report = fork_report(host_runs, "return")
    (child,) = probes_of(report)
    assert child["own_hub"] == {**child["own_hub"], "outcome": "returned", "value": "own hub child"}, child


def test_fork_pool_workers_get_an_mcp_sync_error_from_the_inherited_hub(host_runs: HostRuns) -> None:
    report = fork_report(host_runs, "pool")
    for worker in probes_of(report):
        assert_failed_at_once(worker["call"], report["parent_pid"], f"call_tool() in worker {worker['pid']}")
        assert_failed_at_once(worker["submit"], report["parent_pid"], f"submit() in worker {worker['pid']}")


def test_fork_pool_workers_can_start_and_use_their_own_hub(host_runs: HostRuns) -> None:
    report = fork_report(host_runs, "pool")
    for index, worker in enumerate(probes_of(report)):
        assert worker["own_hub"] == {
            **worker["own_hub"],
            "outcome": "returned",
            "value": f"own hub worker{index}",
        }, worker


def test_fork_pool_whose_workers_exit_never_touches_the_parents_servers(host_runs: HostRuns) -> None:
    report = fork_report(host_runs, "pool")
    assert "workers_error" not in report, report
    assert_parent_unharmed(report)


# -- hubs nobody references ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def forgotten_hub(host_runs: HostRuns) -> dict[str, Any]:
    """unreferenced.py del: a started hub, then ``del hub; gc.collect()``."""
    return host_runs["unreferenced-del"].result(timeout=90).report()


@pytest.fixture(scope="module")
def cyclic_hubs() -> dict[str, Any]:
    """unreferenced.py cycle: hubs whose callbacks refer back to them, dropped and collected."""
    return run_unreferenced_host("cycle").report()


@pytest.fixture(scope="module")
def rebound_hub(host_runs: HostRuns) -> dict[str, Any]:
    """unreferenced.py rerun: ``hub = MCPHub([...]); hub.start()`` three times."""
    return host_runs["unreferenced-rerun"].result(timeout=90).report()


def test_collecting_an_unreferenced_hub_emits_a_resource_warning(forgotten_hub: dict[str, Any]) -> None:
    warnings = forgotten_hub["warnings"]
    assert any(warning.startswith("ResourceWarning") for warning in warnings), forgotten_hub


def test_collecting_an_unreferenced_hub_stops_its_server_and_threads(forgotten_hub: dict[str, Any]) -> None:
    assert forgotten_hub["gone_within_10s"], forgotten_hub
    assert not forgotten_hub["server_alive"], forgotten_hub
    assert forgotten_hub["threads"] == [], forgotten_hub
    assert forgotten_hub["children"] == [], forgotten_hub


@pytest.mark.parametrize("kind", ["on_tool_added", "on_server_state", "subscribe_resource", "elicitation"])
def test_a_hub_whose_callback_refers_back_to_it_is_collected_and_stopped(
    cyclic_hubs: dict[str, Any], kind: str
) -> None:
    """An object holding its hub and subscribing its own method (or passing it as a handler) makes a
    cycle through the user's callable: `gc.collect()` frees it, its server stops, one ResourceWarning."""
    run = cyclic_hubs[kind]
    assert run["gone_within_10s"], cyclic_hubs
    assert run["threads"] == [], cyclic_hubs
    assert run["warnings"] == [
        f"ResourceWarning: unclosed MCPHub with servers ['{kind.replace('_', '-')}']; "
        "call close() or use `with`"
    ], cyclic_hubs


def test_rebinding_a_started_hub_three_times_leaves_one_server_and_one_thread(
    rebound_hub: dict[str, Any],
) -> None:
    assert len(rebound_hub["servers"]) == 1, rebound_hub
    assert rebound_hub["threads"] == ["mcp-sync:cell"], rebound_hub


def test_the_last_of_three_rebound_hubs_still_answers(rebound_hub: dict[str, Any]) -> None:
    call = rebound_hub["last_hub_call"]
    assert call == {**call, "outcome": "returned", "value": "still mine"}, rebound_hub


# -- Ctrl-C during start() -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def interrupted_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostProcess]:
    """interrupt_start.py, sent SIGINT once both its servers are up and start() is waiting."""
    workdir = tmp_path_factory.mktemp("interrupt-start")
    host = HostProcess("interrupt_start.py", os.fspath(workdir))
    try:
        host.wait_for_line("STARTING", timeout=30)
        EventLog(workdir / "hang.jsonl").wait_for("ready", timeout=20)
        EventLog(workdir / "normal.jsonl").wait_for("ready", timeout=20)
        host.send_signal(signal.SIGINT)
        yield host.finish(timeout=30)
    finally:
        if host.ended_at is None:
            host.finish(timeout=0)
        reap_servers(workdir)


def test_ctrl_c_during_start_raises_keyboard_interrupt(interrupted_start: HostProcess) -> None:
    report = interrupted_start.report()
    assert report["start"]["outcome"] == "KeyboardInterrupt", report


def test_ctrl_c_during_start_leaves_no_server_process(interrupted_start: HostProcess) -> None:
    report = interrupted_start.report()
    assert len(report["server_pids"]) == 2, report
    assert report["after"]["servers"] == [], f"server(s) alive {SETTLE}s after Ctrl-C: {report!r}"
    assert report["after"]["children"] == [], f"child process(es) alive {SETTLE}s after Ctrl-C: {report!r}"


def test_ctrl_c_during_start_leaves_no_mcp_sync_thread(interrupted_start: HostProcess) -> None:
    report = interrupted_start.report()
    assert report["after"]["threads"] == [], f"threads alive {SETTLE}s after Ctrl-C: {report!r}"


def test_script_interrupted_during_start_exits_with_status_zero(interrupted_start: HostProcess) -> None:
    interrupted_start.report()
    assert not interrupted_start.timed_out, interrupted_start.describe()
    assert interrupted_start.process.returncode == 0, interrupted_start.describe()


# -- close() from another thread while start() / reload() connects ------------------------------------


@dataclass
class CloseDuringConnect:
    """What happened when the test thread closed a hub while another thread was connecting it."""

    close_seconds: float | None
    """How long close() took, or None if it had not returned within the bound."""
    servers_alive: list[int]
    threads: list[str]
    connector: dict[str, Any]
    pids: list[int] = field(default_factory=list)


CLOSE_BOUND = 10.0
"""Bound on close() here; the contract is 3 s, this is for a loaded machine."""


def close_during_connect(kind: str, workdir: Path) -> CloseDuringConnect:
    normal, hang = EventLog(workdir / "normal.jsonl"), EventLog(workdir / "hang.jsonl")
    normal_config = stdio_config("normal", events=normal)
    hang_config = stdio_config(
        "hang", "--ignore-signals", script=HANGING_SERVER, events=hang, connect_timeout_ms=60000
    )
    before = set(threading.enumerate())
    hub = MCPHub([normal_config, hang_config] if kind == "start" else [normal_config])
    closer: Probe | None = None
    try:
        if kind == "reload":
            hub.start()
            connect: Callable[[], object] = lambda: hub.reload([normal_config, hang_config])  # noqa: E731
        else:
            connect = hub.start
        connector = Probe(connect)
        hang.wait_for("ready", timeout=20)
        normal.wait_for("ready", timeout=20)
        closing = time.monotonic()
        closer = Probe(hub.close)
        closed = closer.result(CLOSE_BOUND)
        close_seconds = time.monotonic() - closing if closed["outcome"] != "blocked" else None
        if closed["outcome"] == "raised":
            raise AssertionError(f"close() raised: {closed!r}")
        pids = ready_pids(normal, hang)
        servers_alive = [pid for pid in pids if pid_alive(pid)]
        threads = [
            thread.name
            for thread in threading.enumerate()
            if thread.name.startswith("mcp-sync:") and thread.is_alive() and thread not in before
        ]
        return CloseDuringConnect(close_seconds, servers_alive, threads, connector.result(10.0), pids)
    finally:
        # A close() that did not do its job must not leave a server that ignores signals behind.
        reap_servers(workdir)
        if closer is not None:
            closer.result(30.0)
        hub.close()


REAL = pytest.mark.real_processes
"""For the tests of `closed_while_connecting`, which check the servers' own pids once close() returned: a
server close() finds still connecting is killed at once, and a warm-launched one would outlive its killed
shim by the moment the launcher takes to notice (tests/servers/warm_launcher.py)."""


@pytest.fixture(scope="module", params=["start", "reload"])
def closed_while_connecting(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> CloseDuringConnect:
    kind: str = request.param
    return close_during_connect(kind, tmp_path_factory.mktemp(f"close-during-{kind}"))


@REAL
def test_close_from_another_thread_during_connect_returns_promptly(
    closed_while_connecting: CloseDuringConnect,
) -> None:
    assert closed_while_connecting.close_seconds is not None, (
        f"close() had not returned after {CLOSE_BOUND}s while another thread was connecting"
    )
    assert closed_while_connecting.close_seconds < CLOSE_BOUND


@REAL
def test_close_from_another_thread_during_connect_leaves_no_server_process(
    closed_while_connecting: CloseDuringConnect,
) -> None:
    assert len(closed_while_connecting.pids) == 2, closed_while_connecting
    assert closed_while_connecting.servers_alive == [], closed_while_connecting


@REAL
def test_close_from_another_thread_during_connect_leaves_no_mcp_sync_thread(
    closed_while_connecting: CloseDuringConnect,
) -> None:
    assert closed_while_connecting.threads == [], closed_while_connecting


@REAL
def test_connect_interrupted_by_close_returns_or_raises_an_mcp_sync_error(
    closed_while_connecting: CloseDuringConnect,
) -> None:
    connector = closed_while_connecting.connector
    assert connector["outcome"] != "blocked", (
        f"start()/reload() still running 10 s after close(): {connector}"
    )
    if connector["outcome"] == "raised":
        assert "MCPSyncError" in connector["mro"], connector


@REAL
def test_a_server_held_in_its_handshake_is_gone_when_close_from_another_thread_returns(
    tmp_path: Path,
) -> None:
    """The moment the test above hits only now and then, every time: the server has started and not
    answered yet (it waits for a file that never comes) when another thread closes the hub."""
    events = EventLog(tmp_path / "held.jsonl")
    hub = MCPHub([stdio_config("held", "--hold-start", os.fspath(tmp_path / "never"), events=events)])
    starter = Probe(hub.start)
    pids: list[int] = []
    try:
        pids.append(events.wait_for("holding", timeout=20)["pid"])
        hub.close()
        assert not pid_alive(pids[0]), f"server {pids[0]} outlived close()"
        assert starter.result(10.0)["outcome"] == "raised"
    finally:
        kill_pids(pids)  # a close() that did not do its job leaves nothing behind either
        hub.close()


# -- Ctrl-C during close() -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def interrupted_close(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostProcess]:
    """interrupt_close.py, sent SIGINT once its close() has begun stopping the server."""
    workdir = tmp_path_factory.mktemp("interrupt-close")
    events = EventLog(workdir / "stubborn.jsonl")
    host = HostProcess("interrupt_close.py", os.fspath(workdir))
    try:
        host.wait_for_line("CLOSING", timeout=40)
        # close() is under way once the server saw its stdin close or a signal.
        events.wait_for(lambda event: event.get("event") in ("stdin_closed", "signal"), timeout=10)
        host.send_signal(signal.SIGINT)
        yield host.finish(timeout=60)
    finally:
        if host.ended_at is None:
            host.finish(timeout=0)
        reap_servers(workdir)


def test_ctrl_c_during_close_raises_keyboard_interrupt(interrupted_close: HostProcess) -> None:
    report = interrupted_close.report()
    assert report["first_close"]["outcome"] == "KeyboardInterrupt", report


def test_close_again_after_ctrl_c_during_close_leaves_no_server_process(
    interrupted_close: HostProcess,
) -> None:
    report = interrupted_close.report()
    assert report["second_close"]["outcome"] == "returned", report
    assert not report["after_second_close"]["server_alive"], report
    assert report["after_second_close"]["children"] == [], report


def test_close_again_after_ctrl_c_during_close_leaves_no_mcp_sync_thread(
    interrupted_close: HostProcess,
) -> None:
    report = interrupted_close.report()
    assert report["after_second_close"]["threads"] == [], report


def test_new_hub_on_the_same_registry_reuses_the_server_name_after_ctrl_c_during_close(
    interrupted_close: HostProcess,
) -> None:
    report = interrupted_close.report()
    reuse = report["new_hub_on_same_registry"]
    assert reuse == {**reuse, "outcome": "returned", "value": "same name, new hub"}, report


# -- exit with a call in flight in a non-daemon thread -------------------------------------------------

EXIT_BOUND = 20.0
"""Bound on the exit; the contract is 6 s, this is for a loaded machine."""


@dataclass
class ExitInFlight:
    host: HostProcess
    server_pid: int
    exit_seconds: float
    worker: dict[str, Any] | None
    cancelled_on_server: bool
    server_gone: bool


@pytest.fixture(scope="module")
def exit_in_flight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExitInFlight]:
    workdir = tmp_path_factory.mktemp("exit-in-flight")
    events = EventLog(workdir / "server.jsonl")
    host = HostProcess("exit_in_flight.py", os.fspath(workdir))
    try:
        server_pid = int(host.wait_for_line("PID ", timeout=40).split()[1])
        host.wait_for_line("RETURNING", timeout=30)
        returning = time.monotonic()
        host.finish(timeout=EXIT_BOUND)
        assert host.ended_at is not None
        exit_seconds = host.ended_at - returning
        worker_file = workdir / "worker.json"
        worker = json.loads(worker_file.read_text()) if worker_file.exists() else None
        yield ExitInFlight(
            host=host,
            server_pid=server_pid,
            exit_seconds=exit_seconds,
            worker=worker,
            cancelled_on_server=poll(lambda: events.count("cancelled", tag="x") > 0, 5.0),
            server_gone=poll(lambda: not pid_alive(server_pid), 5.0),
        )
    finally:
        if host.ended_at is None:
            host.finish(timeout=0)
        reap_servers(workdir)


def test_exit_with_a_call_in_flight_in_a_non_daemon_thread_is_prompt(exit_in_flight: ExitInFlight) -> None:
    assert_exited_by_itself(exit_in_flight)
    assert exit_in_flight.exit_seconds < EXIT_BOUND, f"exit took {exit_in_flight.exit_seconds:.1f}s"
    assert exit_in_flight.host.process.returncode == 0, exit_in_flight.host.describe()


def test_exit_with_a_call_in_flight_fails_the_call_with_a_tool_call_error(
    exit_in_flight: ExitInFlight,
) -> None:
    worker = exit_in_flight.worker
    assert worker is not None, (
        f"the worker's call never ended before the process did (exit after "
        f"{exit_in_flight.exit_seconds:.1f}s)\n{exit_in_flight.host.describe()}"
    )
    assert worker["outcome"] == "raised", worker
    assert "ToolCallError" in worker["mro"], worker


def assert_exited_by_itself(exit_in_flight: ExitInFlight) -> None:
    """After a host the test had to kill, what the server saw says nothing about the code under test."""
    assert not exit_in_flight.host.timed_out, (
        f"the program did not exit by itself within {EXIT_BOUND:.0f}s of its main thread returning; "
        f"it was killed\n{exit_in_flight.host.describe()}"
    )


def test_exit_with_a_call_in_flight_cancels_it_on_the_server(exit_in_flight: ExitInFlight) -> None:
    assert_exited_by_itself(exit_in_flight)
    assert exit_in_flight.cancelled_on_server, (
        f"the server never recorded 'cancelled' for the call in flight\n{exit_in_flight.host.describe()}"
    )


def test_exit_with_a_call_in_flight_leaves_no_server_process(exit_in_flight: ExitInFlight) -> None:
    assert_exited_by_itself(exit_in_flight)
    assert exit_in_flight.server_gone, f"server {exit_in_flight.server_pid} outlived its host"


def test_exit_with_a_call_in_flight_prints_no_traceback(exit_in_flight: ExitInFlight) -> None:
    assert_exited_by_itself(exit_in_flight)
    stderr = exit_in_flight.host.stderr
    assert "Traceback" not in stderr, stderr
    assert "Exception in thread" not in stderr, stderr


# -- exit with calls in flight in pool workers, the pool module imported after mcp_sync ---------------


@dataclass
class ExitPoolImportedLate:
    host: HostProcess
    imported: dict[str, bool]
    server_pid: int
    exit_seconds: float
    workers: dict[str, dict[str, Any] | None]
    server_gone: bool


@pytest.fixture(scope="module")
def exit_pool_imported_late(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExitPoolImportedLate]:
    workdir = tmp_path_factory.mktemp("exit-pool-imported-late")
    host = HostProcess("exit_pool_imported_late.py", os.fspath(workdir))
    try:
        server_pid = int(host.wait_for_line("PID ", timeout=40).split()[1])
        host.wait_for_line("RETURNING", timeout=30)
        returning = time.monotonic()
        host.finish(timeout=EXIT_BOUND)
        assert host.ended_at is not None
        workers: dict[str, dict[str, Any] | None] = {}
        for tag in ("long", "inf"):
            path = workdir / f"worker-{tag}.json"
            workers[tag] = json.loads(path.read_text()) if path.exists() else None
        yield ExitPoolImportedLate(
            host=host,
            imported=host.report()["imported"],
            server_pid=server_pid,
            exit_seconds=host.ended_at - returning,
            workers=workers,
            server_gone=poll(lambda: not pid_alive(server_pid), 5.0),
        )
    finally:
        if host.ended_at is None:
            host.finish(timeout=0)
        reap_servers(workdir)


def test_exit_with_pool_workers_in_calls_is_prompt_when_the_pool_module_is_imported_after_mcp_sync(
    exit_pool_imported_late: ExitPoolImportedLate,
) -> None:
    run = exit_pool_imported_late
    assert run.imported["before_mcp_sync"] is False, f"the scenario needs the other order: {run.imported}"
    assert not run.host.timed_out, (
        f"the program did not exit by itself within {EXIT_BOUND:.0f}s of its main thread returning, "
        f"with pool workers in a 60 s and an unbounded call; it was killed\n{run.host.describe()}"
    )
    assert run.exit_seconds < EXIT_BOUND, f"exit took {run.exit_seconds:.1f}s"
    assert run.host.process.returncode == 0, run.host.describe()


def test_exit_with_pool_workers_in_calls_fails_both_calls_when_the_pool_module_is_imported_after_mcp_sync(
    exit_pool_imported_late: ExitPoolImportedLate,
) -> None:
    run = exit_pool_imported_late
    for tag, worker in run.workers.items():
        assert worker is not None, f"the {tag} call never ended before the process did\n{run.host.describe()}"
        assert worker["outcome"] == "raised" and "ToolCallError" in worker["mro"], (tag, worker)


def test_exit_with_pool_workers_in_calls_leaves_no_server_process_when_the_pool_module_is_imported_late(
    exit_pool_imported_late: ExitPoolImportedLate,
) -> None:
    run = exit_pool_imported_late
    assert not run.host.timed_out, f"the host was killed: nothing to learn\n{run.host.describe()}"
    assert run.server_gone, f"server {run.server_pid} outlived its host"


# -- a real Jupyter kernel -----------------------------------------------------------------------------


@dataclass
class Cell:
    status: str
    stdout: str
    error: str | None


@dataclass
class NotebookRun:
    rerun_report: dict[str, Any]
    interrupted: Cell | None
    hang_pids: list[int]
    hang_gone_within_2s: bool
    after_interrupt: Cell | None
    earlier_hub_after_interrupt: Cell | None


def run_cell(client: Any, code: str, timeout: float) -> Cell:
    """Execute one cell, bounded; its printed text and, if it failed, ``ename: evalue``."""
    printed: list[str] = []
    errors: list[str] = []

    def output(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        elif message["msg_type"] == "error":
            errors.append(f"{message['content']['ename']}: {message['content']['evalue']}")

    reply = client.execute_interactive(code, timeout=timeout, output_hook=output, allow_stdin=False)
    return Cell(reply["content"]["status"], "".join(printed), errors[0] if errors else None)


def run_cell_after_an_error(client: Any, code: str, timeout: float) -> Cell:
    """`run_cell` for the first cells after one that failed: the kernel aborts the execute requests it
    receives until it has finished handling the failure (its stop-on-error window), which a loaded
    machine can stretch past our next request. A person re-runs such a cell; so does this, once."""
    cell = run_cell(client, code, timeout)
    return run_cell(client, code, timeout) if cell.status == "aborted" else cell


def shell_reply(client: Any, msg_id: str, timeout: float) -> dict[str, Any] | None:
    """The execute_reply to `msg_id`, or None if none came within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            message: dict[str, Any] = client.get_shell_msg(timeout=remaining)
        except Exception:  # queue.Empty
            return None
        if message["parent_header"].get("msg_id") == msg_id:
            return message
    return None


def notebook_cells(workdir: Path) -> dict[str, str]:
    setup = "\n".join(
        [
            "import gc, json, os, sys",
            f"sys.path.insert(0, {os.fspath(REPO_ROOT)!r})",
            "from mcp_sync import MCPHub",
            "from tests.hosts._common import live_children, mcp_threads, poll",
            "from tests.support import HANGING_SERVER, stdio_config",
            f"NB_EVENTS = {os.fspath(workdir / 'nb.jsonl')!r}",
            f"HANG_EVENTS = {os.fspath(workdir / 'hang.jsonl')!r}",
        ]
    )
    report = "\n".join(
        [
            "def _one_left():",
            "    gc.collect()",
            "    return len(mcp_threads('nb')) == 1 and len(live_children(marker='fixture_server.py')) == 1",
            "poll(_one_left, 10, interval=0.2)",
            "print(json.dumps({",
            "    'threads': mcp_threads('nb'),",
            "    'servers': live_children(marker='fixture_server.py'),",
            "    'hubs_in_output_history': sum(isinstance(v, MCPHub) for v in Out.values()),",
            "}))",
        ]
    )
    return {
        "setup": setup,
        # The cell as a user writes it and runs it again, rebinding `hub` (as examples/notebook.ipynb
        # does), its last line showing the hub: IPython's output history (Out[n], _) holds it weakly.
        "rerun": 'hub = MCPHub([stdio_config("nb", events=NB_EVENTS)])\nprint(hub)\nhub.start()',
        "report": report,
        "hang": (
            'hang = MCPHub([stdio_config("hang", "--ignore-signals", script=HANGING_SERVER, '
            "events=HANG_EVENTS, connect_timeout_ms=60000)]); hang.start()"
        ),
        "usable": "print(6 * 7)",
        "earlier_hub": 'print(hub.call_tool("mcp__nb__echo", {"text": "still here"}, timeout=20).text)',
        "cleanup": "hub.close()\ntry:\n    hang.close()\nexcept NameError:\n    pass",
    }


@pytest.fixture(scope="module")
def notebook_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NotebookRun]:
    from jupyter_client.manager import KernelManager

    workdir = tmp_path_factory.mktemp("notebook")
    cells = notebook_cells(workdir)
    hang_events = EventLog(workdir / "hang.jsonl")
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=os.fspath(REPO_ROOT))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        setup = run_cell(client, cells["setup"], 60)
        assert setup.status == "ok", setup
        for _ in range(3):
            rerun = run_cell(client, cells["rerun"], 60)
            assert rerun.status == "ok", rerun
        report_cell = run_cell(client, cells["report"], 30)
        assert report_cell.status == "ok", report_cell
        rerun_report = json.loads(report_cell.stdout.strip().splitlines()[-1])

        msg_id = client.execute(cells["hang"])
        hang_events.wait_for("ready", timeout=30)
        manager.interrupt_kernel()
        reply = shell_reply(client, msg_id, 20)
        interrupted = (
            None if reply is None else Cell(reply["content"]["status"], "", reply["content"].get("ename"))
        )
        hang_pids = ready_pids(hang_events)
        hang_gone = poll(lambda: not any(pid_alive(pid) for pid in hang_pids), SETTLE)
        after = run_cell_after_an_error(client, cells["usable"], 30) if reply is not None else None
        earlier = run_cell_after_an_error(client, cells["earlier_hub"], 30) if reply is not None else None
        yield NotebookRun(rerun_report, interrupted, hang_pids, hang_gone, after, earlier)
        if reply is not None:
            with contextlib.suppress(Exception):  # best effort: the kernel is shut down next anyway
                run_cell(client, cells["cleanup"], 30)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)
        reap_servers(workdir)


def test_notebook_cell_run_three_times_leaves_one_server_and_one_thread(notebook_run: NotebookRun) -> None:
    report = notebook_run.rerun_report
    held = f"; IPython's output history still holds {report['hubs_in_output_history']} of the hubs"
    assert len(report["servers"]) == 1, f"{report}{held}"
    assert report["threads"] == ["mcp-sync:nb"], f"{report}{held}"
    assert report["hubs_in_output_history"] == 0, report


def test_notebook_interrupt_during_start_raises_keyboard_interrupt_in_the_cell(
    notebook_run: NotebookRun,
) -> None:
    assert notebook_run.interrupted is not None, "the interrupted cell never finished"
    assert notebook_run.interrupted == Cell("error", "", "KeyboardInterrupt"), notebook_run.interrupted


def test_notebook_interrupt_during_start_leaves_no_hanging_server(notebook_run: NotebookRun) -> None:
    assert len(notebook_run.hang_pids) == 1, notebook_run
    assert notebook_run.hang_gone_within_2s, (
        f"the hanging server {notebook_run.hang_pids} was alive {SETTLE}s after the interrupt"
    )


def test_notebook_kernel_runs_cells_after_an_interrupted_start(notebook_run: NotebookRun) -> None:
    assert notebook_run.after_interrupt == Cell("ok", "42\n", None), notebook_run


def test_notebook_hub_from_an_earlier_cell_answers_after_an_interrupted_start(
    notebook_run: NotebookRun,
) -> None:
    assert notebook_run.earlier_hub_after_interrupt == Cell("ok", "still here\n", None), notebook_run
