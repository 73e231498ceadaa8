"""A pre-fork server (gunicorn ``--preload``, Celery prefork): the app module builds a hub or a
registry once, and the workers forked from it use them (tests/hosts/preload_host.py, with a real
``multiprocessing`` fork pool). A hub that was *started* before the fork still refuses in the child:
tests/test_hosts.py holds those tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hosts._common import HostProcess, reap_servers
from tests.support import pid_alive, wait_until

pytestmark = pytest.mark.timeout(240)

# The host's whole run: two workers each start a server and call it (the host bounds its own waits).
HOST_TIMEOUT = 150.0
# A worker's servers end with it; the exit of a stdio server takes a second or two.
SERVER_EXIT_TIMEOUT = 15.0


def run_preload_host(mode: str, workdir: Path) -> dict[str, Any]:
    host = HostProcess("preload_host.py", mode, os.fspath(workdir))
    try:
        host.finish(timeout=HOST_TIMEOUT)
        return {**host.report(), "host": f"{host.describe()}\n{host.stderr}"}
    finally:
        reap_servers(workdir)


def workers(report: dict[str, Any]) -> list[dict[str, Any]]:
    """What each worker's task saw; an AssertionError with the host's output if a task failed."""
    assert "workers_error" not in report, f"{report['workers_error']}\n{report['host']}"
    found: list[dict[str, Any]] = report["workers"]
    return found


@pytest.fixture(scope="module")
def preloaded_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield run_preload_host("hub", tmp_path_factory.mktemp("preload-hub"))


@pytest.fixture(scope="module")
def preloaded_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield run_preload_host("registry", tmp_path_factory.mktemp("preload-registry"))


def test_a_hub_created_before_a_fork_starts_and_answers_in_each_pool_worker(
    preloaded_hub: dict[str, Any],
) -> None:
    seen = workers(preloaded_hub)
    assert [worker["echo"] for worker in seen] == ["worker 0", "worker 1"]
    assert all(worker["state"] == "running" for worker in seen), seen


def test_each_pool_worker_runs_its_own_server_of_the_inherited_hub(preloaded_hub: dict[str, Any]) -> None:
    first, second = workers(preloaded_hub)
    if first["pid"] == second["pid"]:  # one worker took both tasks: one server is all there is
        assert first["server_pid"] == second["server_pid"]
    else:
        assert first["server_pid"] != second["server_pid"], (first, second)
    assert preloaded_hub["parent_hub_state"] == "created"  # the app module's hub, never started here


def test_the_servers_of_a_preloaded_hub_end_with_their_workers(preloaded_hub: dict[str, Any]) -> None:
    pids = {worker["server_pid"] for worker in workers(preloaded_hub)}
    wait_until(
        lambda: not any(pid_alive(pid) for pid in pids), timeout=SERVER_EXIT_TIMEOUT, message=f"left: {pids}"
    )


def test_progress_callbacks_run_in_a_worker_reusing_a_registry_whose_callback_thread_was_alive_at_the_fork(
    preloaded_registry: dict[str, Any],
) -> None:
    assert preloaded_registry["callback_thread_alive_at_fork"], preloaded_registry
    for worker in workers(preloaded_registry):
        assert worker["text"] == "done", worker
        assert worker["progress"] == [1, 2, 3], worker


def test_tool_listeners_of_a_registry_made_before_a_fork_hear_of_tools_added_in_the_worker(
    preloaded_registry: dict[str, Any],
) -> None:
    for index, worker in enumerate(workers(preloaded_registry)):
        assert f"mcp__kid{index}__progress" in worker["heard"], worker
        assert "host_tool" in worker["heard"], worker  # heard in the parent, before the fork
