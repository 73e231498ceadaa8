"""The tool registry: generations, collisions, listeners, and concurrent readers."""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sync import ConfigError, Tool, ToolChanges, ToolListError, ToolRegistry, public_tool_name
from mcp_sync._hub.registry import ServerLease

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def mcp_tool(server: str, raw: str, description: str = "d") -> Tool:
    return Tool(public_tool_name(server, raw), description, SCHEMA, server_name=server, raw_name=raw)


def replace(registry: ToolRegistry, server: str, tools: list[Tool]) -> ToolChanges:
    """Write `server`'s generation through its lease, reserving the name on first use."""
    lease = registry.server_owner(server)
    if lease is None:
        lease = registry.reserve_server(server, None)
        lease.owner = lease  # the lease stands in for the connection that would own it
    assert isinstance(lease, ServerLease)
    changes = lease.replace_tools(tools)
    assert changes is not None
    return changes


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    registry = ToolRegistry()
    yield registry
    registry.close()


class Recorder:
    """Collects listener events and lets a test wait for a number of them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self._condition = threading.Condition()

    def listener(self, kind: str) -> Any:
        def record(tool: Tool) -> None:
            with self._condition:
                self.events.append((kind, tool.name))
                self._condition.notify_all()

        return record

    def wait_for(self, count: int, timeout: float = 5.0) -> list[tuple[str, str]]:
        with self._condition:
            assert self._condition.wait_for(lambda: len(self.events) >= count, timeout), self.events
            return list(self.events)

    def attach(self, registry: ToolRegistry) -> None:
        registry.on_tool_added(self.listener("added"))
        registry.on_tool_removed(self.listener("removed"))
        registry.on_tool_changed(self.listener("changed"))


def test_replace_registers_every_tool_under_its_public_name(registry: ToolRegistry) -> None:
    changes = replace(registry, "fs", [mcp_tool("fs", "read_file"), mcp_tool("fs", "a.b")])
    assert registry.get("mcp__fs__read_file") is not None
    assert registry.get(public_tool_name("fs", "a.b")) is not None
    assert [tool.raw_name for tool in changes.added] == ["a.b", "read_file"]
    assert [tool.name for tool in registry.tools()] == sorted(tool.name for tool in registry.tools())


def test_second_replace_reports_exactly_what_changed(registry: ToolRegistry) -> None:
    replace(registry, "fs", [mcp_tool("fs", "keep"), mcp_tool("fs", "edit"), mcp_tool("fs", "drop")])
    changes = replace(
        registry, "fs", [mcp_tool("fs", "keep"), mcp_tool("fs", "edit", "new text"), mcp_tool("fs", "new")]
    )
    assert [tool.raw_name for tool in changes.added] == ["new"]
    assert [tool.raw_name for tool in changes.removed] == ["drop"]
    assert [tool.raw_name for tool in changes.changed] == ["edit"]
    assert registry.get("mcp__fs__edit").description == "new text"  # type: ignore[union-attr]
    assert "mcp__fs__drop" not in registry


def test_unchanged_tool_keeps_its_registration(registry: ToolRegistry) -> None:
    replace(registry, "fs", [mcp_tool("fs", "keep")])
    first = registry.get("mcp__fs__keep")
    changes = replace(registry, "fs", [mcp_tool("fs", "keep"), mcp_tool("fs", "other")])
    assert registry.get("mcp__fs__keep") is first
    assert not changes.changed


def test_listing_that_repeats_a_name_keeps_previous_generation(registry: ToolRegistry) -> None:
    replace(registry, "fs", [mcp_tool("fs", "old")])
    with pytest.raises(ToolListError, match="more than once"):
        replace(registry, "fs", [mcp_tool("fs", "new"), mcp_tool("fs", "new")])
    assert [tool.raw_name for tool in registry.server_tools("fs")] == ["old"]


def test_collision_with_another_owner_rolls_back_the_whole_generation(registry: ToolRegistry) -> None:
    recorder = Recorder()
    replace(registry, "fs", [mcp_tool("fs", "old")])
    registry.register_native("mcp__fs__taken", lambda: "native")
    recorder.attach(registry)
    with pytest.raises(ToolListError, match="already taken"):
        replace(registry, "fs", [mcp_tool("fs", "fresh"), mcp_tool("fs", "taken")])
    assert registry.server_tools("fs") == []
    assert "mcp__fs__fresh" not in registry
    assert registry.get("mcp__fs__taken").is_native  # type: ignore[union-attr]
    assert recorder.wait_for(1) == [("removed", "mcp__fs__old")]


@pytest.mark.parametrize(("first", "second"), [("a", "a__b"), ("a__b", "a"), ("a", "a_"), ("x", "x__")])
def test_server_names_whose_namespaces_overlap_are_refused(
    registry: ToolRegistry, first: str, second: str
) -> None:
    # "a" + "b__x" and "a__b" + "x" would spell one public name: the later reservation fails, whatever
    # the connection order would have been.
    registry.reserve_server(first, "first")
    with pytest.raises(ConfigError, match="overlap"):
        registry.reserve_server(second, "second")


@pytest.mark.parametrize(
    ("first", "second"), [("a", "ab"), ("a", "a_b"), ("gh", "gh_enterprise"), ("a_", "a_b")]
)
def test_server_names_that_merely_share_a_prefix_coexist(
    registry: ToolRegistry, first: str, second: str
) -> None:
    registry.reserve_server(first, "first")
    registry.reserve_server(second, "second")


def test_native_and_mcp_tools_with_the_same_raw_name_coexist(registry: ToolRegistry) -> None:
    registry.register_native("search", lambda query: query, description="host search")
    replace(registry, "web", [mcp_tool("web", "search")])
    assert registry.get("search").is_native  # type: ignore[union-attr]
    assert registry.get("mcp__web__search").raw_name == "search"  # type: ignore[union-attr]


def test_registering_a_taken_native_name_raises(registry: ToolRegistry) -> None:
    registry.register_native("search", lambda: None)
    with pytest.raises(ValueError, match="already registered"):
        registry.register_native("search", lambda: None)


def test_reserving_a_server_name_twice_is_a_config_error(registry: ToolRegistry) -> None:
    lease = registry.reserve_server("gh", "first")
    with pytest.raises(ConfigError, match="'gh'"):
        registry.reserve_server("gh", "second")
    assert registry.server_owner("gh") == "first"
    lease.release()
    registry.reserve_server("gh", "third")
    assert registry.server_owner("gh") == "third"


def test_release_removes_the_servers_tools(registry: ToolRegistry) -> None:
    removed: list[Tool] = []
    registry.on_tool_removed(removed.append)
    replace(registry, "fs", [mcp_tool("fs", "a")])
    lease = registry.server_owner("fs")
    assert isinstance(lease, ServerLease)
    lease.release()
    registry.dispatcher.flush()
    assert [tool.raw_name for tool in removed] == ["a"]
    assert len(registry) == 0
    assert registry.server_owner("fs") is None


def test_an_ended_lease_refuses_writes_and_keeps_the_name_reserved(registry: ToolRegistry) -> None:
    lease = registry.reserve_server("fs", "connection 1")
    assert lease.replace_tools([mcp_tool("fs", "a")])
    lease.end()
    assert lease.replace_tools([mcp_tool("fs", "a"), mcp_tool("fs", "b")]) is None  # a late re-sync
    assert len(registry) == 0
    with pytest.raises(ConfigError):
        registry.reserve_server("fs", "connection 2")
    lease.release()
    successor = registry.reserve_server("fs", "connection 2")
    assert lease.replace_tools([mcp_tool("fs", "a")]) is None  # the old generation cannot write over it
    assert successor.replace_tools([mcp_tool("fs", "b")])
    assert [tool.raw_name for tool in registry.tools()] == ["b"]


def test_listeners_hear_changes_in_the_order_they_happened(registry: ToolRegistry) -> None:
    recorder = Recorder()
    recorder.attach(registry)
    replace(registry, "s", [mcp_tool("s", "a")])
    replace(registry, "s", [mcp_tool("s", "a", "v2"), mcp_tool("s", "b")])
    replace(registry, "s", [mcp_tool("s", "b")])
    registry.register_native("n", lambda: None)
    assert recorder.wait_for(5) == [
        ("added", "mcp__s__a"),
        ("changed", "mcp__s__a"),
        ("added", "mcp__s__b"),
        ("removed", "mcp__s__a"),
        ("added", "n"),
    ]


def test_listeners_run_on_the_callback_thread(registry: ToolRegistry) -> None:
    seen: list[str] = []
    done = threading.Event()
    registry.on_tool_added(lambda tool: (seen.append(threading.current_thread().name), done.set()))
    registry.register_native("n", lambda: None)
    assert done.wait(5)
    assert seen == ["mcp-sync:callbacks"]


def test_subscribing_replays_nothing(registry: ToolRegistry) -> None:
    registry.register_native("before", lambda: None)
    recorder = Recorder()
    recorder.attach(registry)
    registry.register_native("after", lambda: None)
    assert recorder.wait_for(1) == [("added", "after")]
    registry.dispatcher.flush()
    assert recorder.events == [("added", "after")]


def test_listener_exception_is_logged_and_contained(
    registry: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()

    def broken(tool: Tool) -> None:
        raise RuntimeError("listener bug")

    registry.on_tool_added(broken)
    registry.on_tool_added(recorder.listener("added"))
    registry.register_native("one", lambda: None)
    registry.register_native("two", lambda: None)
    assert recorder.wait_for(2) == [("added", "one"), ("added", "two")]
    assert "listener bug" in caplog.text


def test_unsubscribed_listener_hears_nothing_more(registry: ToolRegistry) -> None:
    recorder = Recorder()
    unsubscribe = registry.on_tool_added(recorder.listener("added"))
    registry.register_native("one", lambda: None)
    recorder.wait_for(1)
    unsubscribe()
    unsubscribe()  # idempotent
    registry.register_native("two", lambda: None)
    registry.dispatcher.flush()
    assert recorder.events == [("added", "one")]


def test_listener_sees_the_registry_at_least_as_new_as_its_event(registry: ToolRegistry) -> None:
    present: list[bool] = []
    done = threading.Event()
    registry.on_tool_added(lambda tool: (present.append(tool.name in registry), done.set()))
    replace(registry, "s", [mcp_tool("s", "a")])
    assert done.wait(5)
    assert present == [True]


def test_listener_may_call_back_into_the_registry(registry: ToolRegistry) -> None:
    done = threading.Event()

    def on_added(tool: Tool) -> None:
        if tool.name == "first":
            registry.register_native("second", lambda: None)  # mutating from a callback
        else:
            done.set()

    registry.on_tool_added(on_added)
    registry.register_native("first", lambda: None)
    assert done.wait(5)
    assert "second" in registry


def test_concurrent_readers_see_whole_generations(registry: ToolRegistry) -> None:
    generations = [[mcp_tool("s", f"g{g}_{i}") for i in range(200)] for g in range(2)]
    stop = threading.Event()
    errors: list[str] = []

    def read() -> None:
        while not stop.is_set():
            names = {tool.name for tool in registry.tools()}
            prefixes = {name.split("_")[-2] for name in names}
            if len(names) not in (0, 200) or len(prefixes) > 1:
                errors.append(f"saw {len(names)} tools from {prefixes}")
            for tool in generations[0][:5]:
                registry.get(tool.name)

    readers = [threading.Thread(target=read) for _ in range(4)]
    for reader in readers:
        reader.start()
    for round_ in range(200):
        replace(registry, "s", generations[round_ % 2])
    stop.set()
    for reader in readers:
        reader.join(10)
    assert not errors, errors[:3]


def test_resync_of_ten_thousand_tools_is_one_pass(registry: ToolRegistry) -> None:
    tools = [mcp_tool("big", f"t{i:05d}") for i in range(10_000)]
    assert len(replace(registry, "big", tools).added) == 10_000
    changes = replace(registry, "big", [*tools[1:], mcp_tool("big", "extra")])
    assert (len(changes.added), len(changes.removed), len(changes.changed)) == (1, 1, 0)
    assert len(registry) == 10_000


def test_tool_of_another_server_is_refused(registry: ToolRegistry) -> None:
    with pytest.raises(ValueError, match="does not belong"):
        replace(registry, "a", [mcp_tool("b", "x")])


@given(
    st.from_regex(r"[ab_]{1,6}", fullmatch=True),
    st.from_regex(r"[ab_]{1,6}", fullmatch=True),
    st.text(alphabet="ab_", max_size=8),
    st.text(alphabet="ab_", max_size=8),
)
def test_only_overlapping_server_names_can_spell_the_same_public_name(
    first: str, second: str, first_raw: str, second_raw: str
) -> None:
    if first != second and public_tool_name(first, first_raw) == public_tool_name(second, second_raw):
        registry = ToolRegistry()
        registry.reserve_server(first, "first")
        with pytest.raises(ConfigError, match="overlap"):
            registry.reserve_server(second, "second")


# How long a forked child may take to report the registry it inherited (it only reads it).
FORK_REPORT_TIMEOUT = 30.0


def registry_in_a_forked_child(registry: ToolRegistry) -> list[str]:
    """Fork, and return the names the child's copy of `registry` lists (the child reports and leaves
    with os._exit, running nothing of the test runner's)."""
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the scenario
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            os.write(write_end, json.dumps([tool.name for tool in registry]).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        readable, _, _ = select.select([read_end], [], [], FORK_REPORT_TIMEOUT)
        data = os.read(read_end, 65536) if readable else b""
    finally:
        os.close(read_end)
        reap(pid)
    assert data, "the forked child did not report"
    names: list[str] = json.loads(data)
    return names


def reap(pid: int) -> None:
    """Wait for a forked child to exit, bounded; one still there at the deadline is killed."""
    deadline = time.monotonic() + FORK_REPORT_TIMEOUT
    while time.monotonic() < deadline:
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done:
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_drops_the_servers_tools_and_per_process_native_tools_and_keeps_the_others(
    registry: ToolRegistry,
) -> None:
    registry.register_native("host", lambda: "host")
    registry.register_native("per_process", lambda: "parent only", per_process=True)
    replace(registry, "srv", [mcp_tool("srv", "echo")])
    assert registry_in_a_forked_child(registry) == ["host"]
    assert [tool.name for tool in registry] == ["host", "mcp__srv__echo", "per_process"]  # the parent's


def listener_counts(registry: ToolRegistry) -> tuple[int, ...]:
    listener_sets = (registry._added, registry._removed, registry._changed)
    return tuple(len(listeners.snapshot()) for listeners in listener_sets)


def test_hubs_closed_or_dropped_leave_no_listener_on_a_shared_registry(registry: ToolRegistry) -> None:
    """A long-lived registry shared by hub after hub does not gather the stand-ins of their callbacks."""
    from mcp_sync import MCPHub

    before = listener_counts(registry)
    kept = MCPHub([], registry=registry)
    added: list[str] = []
    kept.on_tool_added(lambda tool: added.append(tool.name))
    for _ in range(3):
        with MCPHub([], registry=registry) as hub:
            hub.on_tool_added(lambda tool: None)
            hub.on_tool_removed(lambda tool: None)
            hub.on_tool_changed(lambda tool: None)
    dropped = MCPHub([], registry=registry)
    dropped.on_tool_removed(lambda tool: None)
    del hub, dropped
    gc.collect()
    assert listener_counts(registry) == (before[0] + 1, before[1], before[2])
    registry.register_native("ping", lambda: "pong")
    assert registry.dispatcher.flush()
    assert added == ["ping"]  # the open hub's callback still subscribed
    kept.close()
    assert listener_counts(registry) == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_another_thread_holds_the_subscription_locks_can_subscribe(
    registry: ToolRegistry,
) -> None:
    """The locks a subscription takes (the hub's and the registry's listener sets') are renewed in the
    child: the thread that held one at the fork does not exist there, and would never release it."""
    from mcp_sync import MCPHub

    hub = MCPHub([], registry=registry)
    locks = [hub._held._lock, hub._held.subscriptions._lock, registry._added._lock]
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        for lock in locks:
            lock.acquire()
        holding.set()
        release.wait(FORK_REPORT_TIMEOUT)
        for lock in locks:
            lock.release()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert holding.wait(FORK_REPORT_TIMEOUT)
    read_end, write_end = os.pipe()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the scenario
            pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(read_end)
                hub.on_tool_added(lambda tool: None)()
                os.write(write_end, b"subscribed")
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        try:
            readable, _, _ = select.select([read_end], [], [], FORK_REPORT_TIMEOUT)
            data = os.read(read_end, 64) if readable else b""
        finally:
            os.close(read_end)
            if not data:  # hung on a lock the parent's thread held: nothing else will end it
                os.kill(pid, signal.SIGKILL)
            reap(pid)
    finally:
        release.set()
        holder.join(FORK_REPORT_TIMEOUT)
    assert data == b"subscribed"
    hub.close()
