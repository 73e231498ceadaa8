"""A failure at any step of connecting leaves the process able to start the next hub normally.

Each scenario runs tests/hosts/start_after_fault.py in a fresh interpreter (process-wide state
starts empty there, as in a user's script or notebook kernel): a first hub whose server fails at
one step (spawn, an exit before or during the handshake, a handshake that times out, a failing
tool listing, a one-time warm-up that raises or never ends, and the same across a fork), then two
fresh hubs on a good server, each of which must be ready, answer a call, and start without
waiting out the warm-up's bound (the host records each wait that did).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_sync._runtime.lifecycle import OncePerProcess
from tests.hosts._common import HostProcess, reap_servers

pytestmark = pytest.mark.timeout(240)

HOST_LIMIT = 150.0
"""Bound on one whole scenario (a faulty hub, a fork, four good hubs on a loaded machine)."""

FAULTS = {
    "missing-command": "could not start",
    "exits-at-once": "went away while connecting",
    "exit-during-handshake": "went away while connecting",
    "handshake-timeout": "connect_timeout_ms",
    "listing-fails": "listing failed on purpose",
}


def run_scenario(mode: str, workdir: Path) -> dict[str, Any]:
    host = HostProcess("start_after_fault.py", mode, os.fspath(workdir))
    try:
        host.finish(timeout=HOST_LIMIT)
        report = host.report()
        report["describe"] = host.describe()
        return report
    finally:
        reap_servers(workdir)


def assert_good_starts(starts: list[dict[str, Any]], context: str) -> None:
    assert len(starts) == 2, context
    for index, start in enumerate(starts):
        assert start["state"] == "ready", f"good hub {index} after the fault: {start}\n{context}"
        assert start["call"] == {**start["call"], "outcome": "returned", "value": "after the fault"}, (
            f"good hub {index}: {start}\n{context}"
        )
        assert not start["waited_out"], f"good hub {index} waited out the warm-up's bound: {start}\n{context}"


@pytest.mark.parametrize("mode", list(FAULTS))
def test_good_hub_starts_normally_after_a_server_failed_while_connecting(mode: str, tmp_path: Path) -> None:
    report = run_scenario(mode, tmp_path)
    faulty = report["faulty"]
    assert faulty["state"] == "failed", report["describe"]
    assert FAULTS[mode] in faulty["error"], faulty
    assert_good_starts(report["good"], report["describe"])


def test_good_hub_starts_normally_after_the_one_time_warm_up_raised(tmp_path: Path) -> None:
    report = run_scenario("warm-up-raises", tmp_path)
    assert report["faulty"]["state"] == "ready", report["describe"]
    assert_good_starts(report["good"], report["describe"])


def test_good_hub_starts_normally_after_the_one_time_warm_up_outlived_its_bound(tmp_path: Path) -> None:
    report = run_scenario("warm-up-slow", tmp_path)
    # The first hub waits for the warm-up, at most its bound (which a slow connect may have used up
    # already), and is then ready all the same, the work still not done.
    assert report["faulty"]["state"] == "ready", report["describe"]
    assert not report["faulty"]["warm_up_done"], report["describe"]
    assert_good_starts(report["good"], report["describe"])


@pytest.mark.parametrize("mode", ["fork", "fork-warm-up-in-flight"])
def test_good_hub_starts_normally_in_a_child_forked_after_a_failed_hub(mode: str, tmp_path: Path) -> None:
    report = run_scenario(mode, tmp_path)
    assert report["faulty"]["state"] == "failed", report["describe"]
    child = report["child"]
    assert "good" in child, f"the forked child did not report its hubs: {child}\n{report['describe']}"
    assert_good_starts(child["good"], report["describe"])
    assert_good_starts(report["good"], report["describe"])


def test_one_time_work_outlives_a_waiter_that_is_cancelled_and_whose_loop_closes() -> None:
    # The mechanism under the warm-up: a waiter cancelled with its session, on a loop that then
    # closes, neither cancels the work nor keeps it from waking the next waiter.
    release = threading.Event()
    work = OncePerProcess("test work", lambda: release.wait(30))
    work.start()

    async def cancelled_waiter() -> None:
        waiter = asyncio.ensure_future(work.wait(60))
        await asyncio.sleep(0.01)
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter

    asyncio.run(cancelled_waiter())  # its loop is closed when this returns
    release.set()
    assert asyncio.run(work.wait(60)), "the work never finished after a waiter was cancelled"
    assert work.done
