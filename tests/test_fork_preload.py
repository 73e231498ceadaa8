"""A pre-fork server (gunicorn ``--preload``, Celery prefork): the app module builds a hub or a
registry once, and the workers forked from it use them (tests/hosts/preload_host.py, with a real
``multiprocessing`` fork pool). A hub that was *started* before the fork still refuses in the child
(tests/test_hosts.py holds those tests), and the registry it wrote to forgets its servers there."""

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


@pytest.fixture(scope="module")
def started_on_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield run_preload_host("started", tmp_path_factory.mktemp("preload-started"))


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


def test_a_worker_connects_a_server_of_the_same_name_as_the_parents_on_the_inherited_registry(
    started_on_registry: dict[str, Any],
) -> None:
    for index, worker in enumerate(workers(started_on_registry)):
        assert (worker["state"], worker["error"]) == ("ready", None), worker
        assert worker["mcp__app__echo"] == f"worker {index}", worker
        assert worker["server_pid"] != started_on_registry["parent_server_pid"], worker
    # The parent's server of that name is untouched.
    assert started_on_registry["parent_echo_after"] == "parent", started_on_registry


def test_an_inherited_registry_lists_only_the_hosts_own_tools_in_the_worker(
    started_on_registry: dict[str, Any],
) -> None:
    parent_tools = started_on_registry["parent_tools"]
    assert "mcp__app__echo" in parent_tools and "mcp__app__read_resource" in parent_tools, parent_tools
    for worker in workers(started_on_registry):
        assert worker["inherited_tools"] == ["host_tool"], worker


def test_tool_listeners_in_a_worker_hear_that_the_parents_server_tools_left_the_inherited_registry(
    started_on_registry: dict[str, Any],
) -> None:
    gone = {name for name in started_on_registry["parent_tools"] if name != "host_tool"}
    for worker in workers(started_on_registry):
        assert gone <= set(worker["heard_removed"]), worker
        assert "host_tool" not in worker["heard_removed"], worker


def test_a_native_tool_registered_before_the_fork_answers_in_the_worker_beside_its_own_server(
    started_on_registry: dict[str, Any],
) -> None:
    for index, worker in enumerate(workers(started_on_registry)):
        assert "host_tool" in worker["tools"] and "mcp__app__echo" in worker["tools"], worker
        assert (worker["host_tool"], worker["mcp__app__echo"]) == ("host", f"worker {index}"), worker


def test_a_call_on_the_parents_connection_in_a_worker_is_refused_at_once(
    started_on_registry: dict[str, Any],
) -> None:
    for worker in workers(started_on_registry):
        outcome = worker["parent_connection"]
        assert outcome.startswith("refused: ") and "(a fork)" in outcome, worker


def test_a_workers_own_hub_offers_its_resource_tool_in_place_of_the_parents(
    started_on_registry: dict[str, Any],
) -> None:
    for worker in workers(started_on_registry):
        assert worker["mcp__app__read_resource"] == "item fig", worker


def test_a_request_through_the_parents_connection_features_in_a_worker_fails_at_once(
    started_on_registry: dict[str, Any],
) -> None:
    for worker in workers(started_on_registry):
        assert worker["parent_features"].startswith("refused: ServerDisconnectedError"), worker
