"""A model of `MCPHub`, checked against real servers: Hypothesis drives random sequences of operations
and the isolation and lifecycle promises are checked after every step.

Operations: start a hub from a file; calls (plain, timed out, cancelled with a `threading.Event`,
from several threads at once, one whose server echoes a credential back in its error); reloads with
the file unchanged, one entry changed, a server added or removed, an entry made invalid (an unknown
key, an unset ``${VAR}``) with and without `strict=True`, with calls to the untouched servers going
on meanwhile; a reload from another thread while `start()` runs; a sign-in's reconnection of a server
racing a reload that changes or removes it; Ctrl-C inside a reload (a `KeyboardInterrupt` raised in
its thread once it has stopped the servers it replaces, or while it waits for their replacements);
a server crash while idle (it exits, or is killed) and during calls; a server whose command does
not exist; close (twice, with a call in flight, during `start()`); another hub beside the first; a
new hub after close; and a forked child, in which the inherited hub must refuse calls at once and a
new hub must work, while the parent's hub goes on untouched.

The model knows which servers the file holds and which of them must be ready. After every step:

- every good server of the running hub is ready, each reached ready within `HANDSHAKE_BOUND` of its
  process being up; a server that crashed or cannot start is not ready;
- a tool is callable exactly when it is listed: the registry holds the tools of the ready servers and
  nothing else, each one answers, and a tool of a server that is not ready is unknown;
- no call outlives its timeout or its cancellation by more than `CALL_SLACK`;
- with no hub running, no ``mcp-sync:`` thread, server process (nor its process group) or file
  descriptor is left;
- no configured secret (env and header values) appears in any error (the whole chain), repr or log
  record (a handler on the root logger takes every record at DEBUG).

The default run is short (a few sequences); ``pytest -n 0 -m stateful_long tests/test_hub_model.py`` runs
many long ones (the marker is deselected by default, see setup.cfg), and shrinks a failure to its
shortest sequence.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import select
import signal
import threading
import time
import unittest.mock
import uuid
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NoReturn

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from mcp_sync import (
    ConfigError,
    MCPHub,
    MCPSyncError,
    ServerDisconnectedError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
    ToolNotFoundError,
    public_tool_name,
)
from mcp_sync._hub import servers
from tests.hosts._common import mcp_threads
from tests.support import (
    EventLog,
    HttpServer,
    child_pids_of,
    exception_texts,
    http_config,
    pid_alive,
    process_group_members,
    stdio_config,
    wait_until,
)

# How far past its timeout, or past its cancellation, a call may end: "does not hang", not speed.
CALL_SLACK = 5.0
# From a server's process being up to the hub saying it is ready: the handshake and the first listing
# take milliseconds, and a stall of the process-wide one-time work (a 5 s wait) must show.
HANDSHAKE_BOUND = 5.0
# Waits for a server's event, a state change, a thread or a process to end.
EVENT_TIMEOUT = 15.0
# close() is bounded: a graceful stop, then the kill of what is left (about 4 s), with slack.
CLOSE_BOUND = 10.0
# start() returns within a server's connect deadline (30 s by default) and a grace of 5 s.
START_BOUND = 40.0
# The timeout of the calls expected to answer.
ECHO_TIMEOUT = 20.0
# The timeout of the calls expected to time out (their sleep lasts much longer).
SHORT_TIMEOUT = 1.0
SLEEP_SECONDS = 30
# In a forked child a call on the inherited hub must fail at once, not wait for its timeout.
FORK_REFUSE_BOUND = 5.0
# A call the parent has in flight while it forks: it must finish as if nothing happened.
FORK_CALL_SECONDS = 2.0
# The whole forked child: probe the inherited hub, start, use and close a hub of its own.
FORK_CHILD_TIMEOUT = 60.0
# Descriptors a process may open for itself meanwhile (a lazily opened file, the example database).
FD_TOLERANCE = 3

ALPHA, BETA, WEB, TYPO = "alpha", "beta", "web", "typo"
GOOD_STDIO = (ALPHA, BETA)
NAMES = (ALPHA, BETA, WEB, TYPO)
ERAS = {ALPHA: "modern", BETA: "legacy"}
KIDS = ("kid", "kidweb")  # the servers of the forked child's own hub
MISSING_COMMAND = "/nonexistent/bin/mcp-fixture-server-typo"
UNSET_VARIABLE = "MCP_SYNC_MODEL_TEST_UNSET"

TOKEN_NAME = "MODEL_API_TOKEN"
ENV_TOKEN = "env-tok-9Qz3-never-print-this"
ENV_PLAIN = "env-plain-Vb27-never-print-this"
HEADER_TOKEN = "hdr-tok-4Kx8-never-print-this"
HEADER_KEY = "hdr-key-6Wp1-never-print-this"
SECRETS = (ENV_TOKEN, ENV_PLAIN, HEADER_TOKEN, HEADER_KEY)


def leaked(texts: Iterable[str]) -> list[str]:
    """Each secret found in `texts`, with the text around it."""
    found = []
    for text in texts:
        for secret in SECRETS:
            at = text.find(secret)
            if at >= 0:
                found.append(f"{secret!r} in ...{text[max(0, at - 160) : at + len(secret) + 40]!r}...")
    return found


def fds() -> int:
    gc.collect()  # an unreachable transport still holding a descriptor is not a leak
    return len(os.listdir("/proc/self/fd"))


class Records(logging.Handler):
    """Every log record of every logger, formatted (message and traceback) as a handler writes it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self._lines: list[str] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        line = self.format(record)
        with self._lock:
            self._lines.append(line)

    def take(self) -> list[str]:
        """The lines emitted since the last call."""
        with self._lock:
            lines, self._lines = self._lines, []
        return lines


@dataclass
class World:
    """What every sequence shares: one HTTP fixture server, a folder, the log records, a baseline."""

    http: HttpServer
    http_events: EventLog
    folder: Path
    records: Records
    baseline_fds: int
    base_tools: frozenset[str] | None = None
    """The raw tool names of a good fixture server, learnt from the first one seen ready."""
    runs: int = 0


class StateLog:
    """When each server reached each state, as the hub's `on_server_state` listeners hear it."""

    def __init__(self) -> None:
        self._seen: list[tuple[str, str, float]] = []
        self._condition = threading.Condition()

    def record(self, name: str, state: str, _error: BaseException | None) -> None:
        with self._condition:
            self._seen.append((name, state, time.time()))
            self._condition.notify_all()

    def ready_at(self, name: str, since: float) -> float:
        """When `name` last became ready, at or after `since` (wall clock)."""

        def last() -> float | None:
            times = [at for who, state, at in self._seen if who == name and state == "ready" and at >= since]
            return times[-1] if times else None

        with self._condition:
            found = self._condition.wait_for(last, EVENT_TIMEOUT)
        assert found is not None, f"no ready event for {name!r} since {since}: {self._seen}"
        return found


@dataclass
class Outcome:
    """What one call did: its result text or its error, and how long it took."""

    text: str | None = None
    error: BaseException | None = None
    seconds: float = 0.0


def timed_call(hub: MCPHub, tool: str, arguments: dict[str, Any], **options: Any) -> Outcome:
    """Call and time it; a call that outlives its timeout by more than `CALL_SLACK` is an error itself."""
    began = time.monotonic()
    try:
        outcome = Outcome(text=hub.call_tool(tool, arguments, **options).text)
    except Exception as exc:
        outcome = Outcome(error=exc)
    outcome.seconds = time.monotonic() - began
    timeout = options.get("timeout")
    if timeout is not None and outcome.seconds > timeout + CALL_SLACK:
        overran = AssertionError(f"{tool} took {outcome.seconds:.1f} s, its timeout {timeout} s: {outcome}")
        return Outcome(error=overran, seconds=outcome.seconds)
    return outcome


@dataclass
class Traffic:
    """Calls `echo` on the given servers from a thread until stopped: each call must succeed."""

    hub: MCPHub
    names: list[str]
    failures: list[str] = field(default_factory=list)
    calls: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def _run(self) -> None:
        while not self._stop.is_set():
            for name in self.names:
                text = f"traffic {self.calls}"
                outcome = timed_call(self.hub, f"mcp__{name}__echo", {"text": text}, timeout=ECHO_TIMEOUT)
                self.calls += 1
                if outcome.text != text:
                    self.failures.append(f"{name}: {outcome.error!r}")

    @contextlib.contextmanager
    def running(self) -> Iterator[Traffic]:
        thread = threading.Thread(target=self._run, name="model-traffic", daemon=True)
        if self.names:
            thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            if self.names:
                thread.join(ECHO_TIMEOUT + CALL_SLACK)
                assert not thread.is_alive(), "a call of the traffic thread hung"


class InFlight:
    """A `sleep` call on one server, made from a thread; the server has started it once this returns."""

    def __init__(self, model: HubModel, name: str, seconds: float = SLEEP_SECONDS) -> None:
        tag = f"in-flight-{uuid.uuid4().hex[:8]}"
        self._outcomes: list[Outcome] = []
        self._thread = threading.Thread(
            target=lambda: self._outcomes.append(model.sleep_call(name, tag, seconds, timeout=seconds * 2)),
            name="model-in-flight",
            daemon=True,
        )
        self._thread.start()
        model.events(name).wait_for("started", tag=tag, timeout=EVENT_TIMEOUT)

    def outcome(self, within: float) -> Outcome:
        """How the call ended; it must end within `within` seconds from now."""
        self._thread.join(within)
        assert not self._thread.is_alive(), f"a call in flight did not end within {within} s"
        [outcome] = self._outcomes
        return outcome


class HubModel(RuleBasedStateMachine):
    """The model: which servers the file holds, which must be ready, and the hub under test."""

    world: ClassVar[World]

    def __init__(self) -> None:
        super().__init__()
        world = self.world
        world.runs += 1
        self.folder = world.folder / f"run-{world.runs}"
        self.folder.mkdir()
        self.path = self.folder / "servers.json"
        self.configured: dict[str, bool] = {}
        """Server name -> whether its entry is the changed variant (it leaves out the tool `blocks`)."""
        self.down: set[str] = set()
        """Configured servers of the running hub that must not be ready (crashed, or cannot start)."""
        self.invalid: set[str] = set()
        """Servers whose entry in the hub's configuration cannot be used (a reload gave a crashed server an
        invalid entry): failed until a reload gives them a valid one; an interrupted reload puts them back."""
        self.hub: MCPHub | None = None
        self.running = False
        self.states = StateLog()
        self.closed_hub: MCPHub | None = None
        self.errors: list[BaseException] = []
        """Every error a step saw; checked for secrets after the step."""
        self.pids: set[int] = set()
        """Every stdio server process of this run: none, nor its process group, may outlive a close."""

    # -- the configuration ---------------------------------------------------------------------------

    def events(self, name: str) -> EventLog:
        return self.world.http_events if name == WEB else EventLog(self.folder / f"{name}.jsonl")

    def entry(self, name: str, variant: bool) -> dict[str, Any]:
        """The file's entry for a server: secrets in its env or headers; the variant filters a tool."""
        env = {TOKEN_NAME: ENV_TOKEN, "FIXTURE_SETTING": ENV_PLAIN}
        if name == TYPO:
            entry: dict[str, Any] = {"server_name": TYPO, "transport": "stdio", "command": MISSING_COMMAND}
            entry["env"] = env
        elif name == WEB:
            headers = {"Authorization": f"Bearer {HEADER_TOKEN}", "X-Fixture-Key": HEADER_KEY}
            entry = http_config(WEB, self.world.http.url, headers=headers)
        else:
            flags = ("--era", ERAS[name], "--echo-in-errors", "--stderr-env", TOKEN_NAME)
            entry = stdio_config(name, *flags, events=self.events(name), env=env)
        if variant:
            entry["exclude_tools"] = ["blocks"]
        return entry

    def write_config(self, broken: tuple[str, str] | None = None) -> None:
        """Write the model's servers to the file; `broken` = (name, how) makes that entry invalid."""
        entries = []
        for name, variant in self.configured.items():
            entry = self.entry(name, variant)
            if broken is not None and broken[0] == name:
                entry = self.broken_entry(entry, broken[1])
            entries.append(entry)
        self.path.write_text(json.dumps({"servers": entries}, indent=1))

    @staticmethod
    def broken_entry(entry: dict[str, Any], how: str) -> dict[str, Any]:
        """The entry made invalid: a misspelt key that holds a secret, or a secret from an unset variable."""
        entry = json.loads(json.dumps(entry))
        if how == "unknown_key":
            key = "header" if "url" in entry else "env_vars"
            entry[key] = {"Authorization": f"Bearer {HEADER_TOKEN}", TOKEN_NAME: ENV_TOKEN}
        elif "url" in entry:
            entry["headers"]["X-Fixture-Key"] = f"${{{UNSET_VARIABLE}}}"
        else:
            entry["env"][TOKEN_NAME] = f"${{{UNSET_VARIABLE}}}"
        return entry

    # -- what the model expects ------------------------------------------------------------------------

    @property
    def up(self) -> list[str]:
        """The servers that must be ready now."""
        if not self.running:
            return []
        return sorted(name for name in self.configured if name not in self.down)

    @property
    def stdio_up(self) -> list[str]:
        return [name for name in self.up if name in GOOD_STDIO]

    def expected_tools(self, name: str) -> set[str]:
        base = self.world.base_tools
        assert base is not None
        raw = base - {"blocks"} if self.configured[name] else base
        return {public_tool_name(name, tool) for tool in raw}

    def live_hub(self) -> MCPHub:
        assert self.hub is not None and self.running
        return self.hub

    def connections(self) -> dict[str, object]:
        return dict(self.live_hub().servers)

    def learn_base_tools(self) -> None:
        """The first good server seen ready (not the variant) tells what a fixture server lists."""
        if self.world.base_tools is not None:
            return
        for name in self.up:
            if not self.configured[name]:
                raw = {tool.raw_name for tool in self.live_hub().servers[name].tools}
                assert {"echo", "sleep", "crash", "exit_later", "get_env", "blocks"} <= raw, raw
                self.world.base_tools = frozenset(str(tool) for tool in raw)
                return

    def check_handshakes(self, since: float, names: list[str], *, http_from: float | None = None) -> None:
        """Each newly started good server became ready within `HANDSHAKE_BOUND` of its process being up
        (an HTTP server is always up: from `http_from`, when its connection started)."""
        hub = self.live_hub()
        for name in names:
            connection = hub.servers[name]
            ready = self.states.ready_at(name, since)
            if name == WEB:
                if http_from is None:
                    continue
                up_at = http_from
            else:
                pid = connection.pid
                assert pid is not None, f"{name} has no process"
                self.pids.add(pid)
                event = self.events(name).wait_for(
                    lambda event, pid=pid: event.get("event") == "ready" and event.get("client_pid") == pid,
                    timeout=EVENT_TIMEOUT,
                )
                up_at = event["time"]
            assert ready - up_at <= HANDSHAKE_BOUND, (
                f"server {name!r} became ready {ready - up_at:.1f} s after its process was up "
                f"(bound {HANDSHAKE_BOUND} s): a stall in start-up"
            )

    def collect(self, outcome: Outcome) -> Outcome:
        if outcome.error is not None:
            self.errors.append(outcome.error)
        return outcome

    # -- start ------------------------------------------------------------------------------------------

    @initialize(names=st.lists(st.sampled_from(NAMES), unique=True, min_size=1))
    def configure(self, names: list[str]) -> None:
        """The servers the file holds at first, in this order (start-up order decides who does
        the process's one-time work)."""
        self.configured = dict.fromkeys(names, False)

    @precondition(lambda self: not self.running)
    @rule()
    def start_hub(self) -> None:
        self.write_config()
        hub = MCPHub.from_file(self.path)
        hub.on_server_state(self.states.record)
        since = time.time()
        began = time.monotonic()
        hub.start()
        elapsed = time.monotonic() - began
        self.hub, self.running = hub, True
        self.down, self.invalid = {TYPO} & set(self.configured), set()
        assert hub.state == "running"
        self.learn_base_tools()
        self.check_handshakes(since, self.up, http_from=since)
        assert elapsed <= START_BOUND, f"start() took {elapsed:.1f} s"

    # -- calls ------------------------------------------------------------------------------------------

    @precondition(lambda self: self.running)
    @rule(name=st.sampled_from(NAMES))
    def call_echo(self, name: str) -> None:
        """Any server's `echo`: answers when the server must be ready, unknown otherwise."""
        text = f"plain {uuid.uuid4().hex[:8]}"
        outcome = self.collect(
            timed_call(self.live_hub(), f"mcp__{name}__echo", {"text": text}, timeout=ECHO_TIMEOUT)
        )
        assert outcome.seconds <= ECHO_TIMEOUT + CALL_SLACK
        if name in self.up:
            assert outcome.text == text, outcome.error
        else:
            assert isinstance(outcome.error, ToolNotFoundError), outcome

    def sleep_call(self, name: str, tag: str, seconds: float = SLEEP_SECONDS, **options: Any) -> Outcome:
        arguments = {"seconds": seconds, "tag": tag}
        return self.collect(timed_call(self.live_hub(), f"mcp__{name}__sleep", arguments, **options))

    def check_cancelled_on_server(self, name: str, tag: str) -> None:
        """A sleep that reached the server was cancelled there (not left running)."""
        events = self.events(name)
        if events.find("started", tag=tag):
            events.wait_for("cancelled", tag=tag, timeout=EVENT_TIMEOUT)

    @precondition(lambda self: self.up)
    @rule(data=st.data())
    def call_times_out(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(self.up), label="server")
        tag = f"timeout-{uuid.uuid4().hex[:8]}"
        outcome = self.sleep_call(name, tag, timeout=SHORT_TIMEOUT)
        assert isinstance(outcome.error, ToolCallTimeoutError), outcome
        assert outcome.seconds <= SHORT_TIMEOUT + CALL_SLACK, f"the call outlived its timeout: {outcome}"
        self.check_cancelled_on_server(name, tag)

    @precondition(lambda self: self.up)
    @rule(data=st.data())
    def call_is_cancelled(self, data: st.DataObject) -> None:
        """Cancel a call with a `threading.Event` set from another thread once the server runs it."""
        name = data.draw(st.sampled_from(self.up), label="server")
        tag = f"cancel-{uuid.uuid4().hex[:8]}"
        cancel = threading.Event()
        cancelled_at: list[float] = []

        def cancel_once_started() -> None:
            with contextlib.suppress(AssertionError):  # not started in time: cancel anyway
                self.events(name).wait_for("started", tag=tag, timeout=EVENT_TIMEOUT)
            cancelled_at.append(time.monotonic())
            cancel.set()

        canceller = threading.Thread(target=cancel_once_started, name="model-cancel", daemon=True)
        canceller.start()
        outcome = self.sleep_call(name, tag, timeout=SLEEP_SECONDS * 2, cancel=cancel)
        ended = time.monotonic()
        canceller.join(EVENT_TIMEOUT)
        assert isinstance(outcome.error, ToolCallCancelledError), outcome
        assert cancelled_at and ended - cancelled_at[0] <= CALL_SLACK, "the call outlived its cancellation"
        self.check_cancelled_on_server(name, tag)

    @precondition(lambda self: self.running)
    @rule(threads=st.integers(min_value=2, max_value=6), with_timeout=st.booleans())
    def calls_from_threads(self, threads: int, with_timeout: bool) -> None:
        """Several threads call at once, every configured server; one call may time out meanwhile."""
        hub = self.live_hub()
        targets = [NAMES[i % len(NAMES)] for i in range(threads)]
        outcomes: list[Outcome | None] = [None] * threads
        start = threading.Barrier(threads + int(with_timeout))
        timeout_tag = f"threads-{uuid.uuid4().hex[:8]}"
        timeout_outcome: list[Outcome] = []
        sleeper = self.up[0] if self.up else None

        def call(index: int) -> None:
            start.wait(EVENT_TIMEOUT)
            tool = f"mcp__{targets[index]}__echo"
            outcomes[index] = timed_call(hub, tool, {"text": f"thread {index}"}, timeout=ECHO_TIMEOUT)

        def sleep() -> None:
            start.wait(EVENT_TIMEOUT)
            if sleeper is not None:
                timeout_outcome.append(self.sleep_call(sleeper, timeout_tag, timeout=SHORT_TIMEOUT))

        workers = [threading.Thread(target=call, args=(i,), daemon=True) for i in range(threads)]
        if with_timeout:
            workers.append(threading.Thread(target=sleep, daemon=True))
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(ECHO_TIMEOUT + CALL_SLACK)
            assert not worker.is_alive(), "a call outlived its timeout"
        for index, outcome in enumerate(outcomes):
            assert outcome is not None
            self.collect(outcome)
            if targets[index] in self.up:
                assert outcome.text == f"thread {index}", (targets[index], outcome)
            else:
                assert isinstance(outcome.error, ToolNotFoundError), (targets[index], outcome)
        for outcome in timeout_outcome:
            assert isinstance(outcome.error, ToolCallTimeoutError), outcome
            assert outcome.seconds <= SHORT_TIMEOUT + CALL_SLACK, outcome

    @precondition(lambda self: self.up)
    @rule(data=st.data())
    def call_whose_error_echoes_a_secret(self, data: st.DataObject) -> None:
        """The server answers with a protocol error that holds the configured credential."""
        name = data.draw(st.sampled_from(self.up), label="server")
        tool, arguments = (
            ("get_header", {"name": "Authorization"}) if name == WEB else ("get_env", {"name": TOKEN_NAME})
        )
        outcome = self.collect(
            timed_call(self.live_hub(), f"mcp__{name}__{tool}", arguments, timeout=ECHO_TIMEOUT)
        )
        assert isinstance(outcome.error, ToolCallError), outcome

    # -- reloads ----------------------------------------------------------------------------------------

    def reload(self, kept: list[str], *, traffic: bool, broken: tuple[str, str] | None = None) -> None:
        """Write the file, reload, and check that the servers in `kept` were not touched (same
        connection, calls answered throughout when `traffic`); servers not ready are restarted."""
        hub = self.live_hub()
        before = self.connections()
        self.write_config(broken)
        since = time.time()
        with Traffic(hub, kept if traffic else []).running() as calls:
            hub.reload()
        assert not calls.failures, f"calls to servers the reload did not change failed: {calls.failures}"
        after = self.connections()
        for name in kept:
            assert after.get(name) is before[name], f"reload replaced the unchanged server {name!r}"
        stuck = {broken[0]} & self.down if broken is not None else set()
        self.down = ({TYPO} & set(self.configured)) | stuck
        self.invalid = stuck
        self.learn_base_tools()
        started = [name for name in self.up if after[name] is not before.get(name)]
        self.check_handshakes(since, [name for name in started if name != WEB])

    @precondition(lambda self: self.running)
    @rule(traffic=st.booleans())
    def reload_unchanged(self, traffic: bool) -> None:
        self.reload(self.up, traffic=traffic)

    @precondition(lambda self: self.running and self.configured)
    @rule(data=st.data(), traffic=st.booleans(), in_flight_call=st.booleans())
    def reload_with_one_entry_changed(self, data: st.DataObject, traffic: bool, in_flight_call: bool) -> None:
        """The changed server reconnects (a call in flight on it fails promptly); the others are untouched."""
        name = data.draw(st.sampled_from(sorted(self.configured)), label="server")
        in_flight = InFlight(self, name) if in_flight_call and name in self.up else None
        self.configured[name] = not self.configured[name]
        self.reload([other for other in self.up if other != name], traffic=traffic)
        if in_flight is not None:
            outcome = self.collect(in_flight.outcome(CALL_SLACK))
            assert isinstance(outcome.error, ServerDisconnectedError), outcome
        if name in self.up:
            assert {tool.name for tool in self.live_hub().servers[name].tools} == self.expected_tools(name)

    @precondition(lambda self: self.running)
    @rule(name=st.sampled_from(NAMES), traffic=st.booleans(), in_flight_call=st.booleans())
    def reload_adding_or_removing(self, name: str, traffic: bool, in_flight_call: bool) -> None:
        """A server comes or goes (a call in flight on it fails promptly); the others are untouched."""
        in_flight = InFlight(self, name) if in_flight_call and name in self.up else None
        if name in self.configured:
            del self.configured[name]
        else:
            self.configured[name] = False
        self.reload([other for other in self.up if other != name], traffic=traffic)
        if name not in self.configured:
            assert name not in self.live_hub().servers
        if in_flight is not None:
            outcome = self.collect(in_flight.outcome(CALL_SLACK))
            assert isinstance(outcome.error, ServerDisconnectedError), outcome

    @precondition(lambda self: self.running and self.configured)
    @rule(data=st.data(), how=st.sampled_from(["unknown_key", "unset_variable"]), traffic=st.booleans())
    def reload_with_an_invalid_entry(self, data: st.DataObject, how: str, traffic: bool) -> None:
        """An entry that became invalid keeps its running server: same connection, same tools."""
        name = data.draw(st.sampled_from(sorted(self.configured)), label="server")
        self.reload(self.up, traffic=traffic, broken=(name, how))

    @precondition(lambda self: self.running and self.configured)
    @rule(data=st.data(), how=st.sampled_from(["unknown_key", "unset_variable"]))
    def strict_reload_with_an_invalid_entry(self, data: st.DataObject, how: str) -> None:
        """`reload(strict=True)` rejects the whole file: nothing changes, not even a crashed server."""
        name = data.draw(st.sampled_from(sorted(self.configured)), label="server")
        hub = self.live_hub()
        before = {server_name: (server, server.state) for server_name, server in hub.servers.items()}
        self.write_config((name, how))
        with pytest.raises(ConfigError) as raised:
            hub.reload(strict=True)
        self.errors.append(raised.value)
        after = {server_name: (server, server.state) for server_name, server in hub.servers.items()}
        assert after == before, "a rejected reload changed the servers"

    # -- reloads racing other operations ------------------------------------------------------------------

    def change_one(self, data: st.DataObject) -> str:
        """Change the model's file in one way: a server added, removed, or its entry changed."""
        name = data.draw(st.sampled_from(NAMES), label="server")
        if name not in self.configured:
            self.configured[name] = False
        elif data.draw(st.booleans(), label="remove"):
            del self.configured[name]
        else:
            self.configured[name] = not self.configured[name]
        return name

    def wait_until_settled(self) -> None:
        """Wait until the hub runs exactly the model's servers: each good one ready, the others ended, and
        no thread of a server that is gone."""
        hub = self.live_hub()
        threads = {f"mcp-sync:{name}" for name in self.configured} | {"mcp-sync:callbacks"}

        def settled() -> bool:
            states = {name: server.state for name, server in hub.servers.items()}
            return (
                set(states) == set(self.configured)
                and all(states[name] == "ready" for name in self.up)
                and all(states[name] in ("failed", "disconnected") for name in self.down)
                and set(mcp_threads()) <= threads
            )

        try:
            wait_until(settled, timeout=START_BOUND)
        except AssertionError:  # say what the servers are at the end of the wait, not at its start
            raise AssertionError(
                f"not settled within {START_BOUND:g} s: {dict(hub.servers)}, {mcp_threads()}; the model "
                f"expects {self.up} ready and {sorted(self.down)} failed or disconnected"
            ) from None

    @precondition(lambda self: not self.running)
    @rule(data=st.data())
    def reload_during_start(self, data: st.DataObject) -> None:
        """`reload()` from another thread while `start()` runs: the hub runs the file as reloaded."""
        self.write_config()
        hub = MCPHub.from_file(self.path)
        hub.on_server_state(self.states.record)
        starter = threading.Thread(target=hub.start, name="model-start", daemon=True)
        starter.start()
        wait_until(lambda: hub.state != "created", timeout=EVENT_TIMEOUT)
        self.change_one(data)
        self.write_config()
        try:
            hub.reload()
        finally:
            starter.join(START_BOUND)
        assert not starter.is_alive(), "start() did not return"
        self.hub, self.running = hub, True
        self.down, self.invalid = {TYPO} & set(self.configured), set()
        assert hub.state == "running"
        self.learn_base_tools()

    @precondition(lambda self: self.running and self.configured)
    @rule(data=st.data())
    def restart_during_reload(self, data: st.DataObject) -> None:
        """A server's reconnection after a sign-in (what `login()` and `logout()` do once the tokens are
        stored) racing a reload that changes or removes that server: what the reload removed stays
        removed, and a changed server runs its new entry."""
        hub = self.live_hub()
        name = data.draw(st.sampled_from(sorted(self.configured)), label="server")
        if data.draw(st.booleans(), label="remove"):
            del self.configured[name]
        else:
            self.configured[name] = not self.configured[name]
        self.write_config()
        restart = hub._servers.restart
        restarter = threading.Thread(target=restart, args=(name,), name="model-restart", daemon=True)
        restarter.start()
        try:
            hub.reload()
        finally:
            restarter.join(START_BOUND)
        assert not restarter.is_alive(), "restart() did not return"
        self.down, self.invalid = {TYPO} & set(self.configured), set()
        if name not in self.configured:
            assert name not in hub.servers, f"the removed server {name!r} came back: {hub.servers}"
        self.wait_until_settled()
        self.learn_base_tools()

    @precondition(lambda self: self.running)
    @rule(data=st.data(), step=st.sampled_from(["stopped", "waiting"]))
    def ctrl_c_during_reload(self, data: st.DataObject, step: str) -> None:
        """Ctrl-C in `reload()`, once it has stopped the servers it replaces or while it waits for their
        replacements: the previous configuration stays, every server of it comes back (a changed or
        removed one on its previous entry; one whose entry there could not be used is failed again),
        and one the reload added goes."""
        hub = self.live_hub()
        previous = dict(self.configured)
        self.change_one(data)
        self.write_config()
        with interrupted_reload(step):
            try:
                hub.reload()
            except KeyboardInterrupt:
                self.configured = previous
                self.write_config()
            else:  # nothing to stop, so no Ctrl-C: the file is applied, with every entry valid
                self.invalid = set()
        # The previous configuration is back, with the entries that could not be used (the file the model
        # writes has none, so the next reload applies a valid one).
        self.down = ({TYPO} | self.invalid) & set(self.configured)
        assert hub.state == "running"
        self.wait_until_settled()
        self.learn_base_tools()

    # -- crashes and servers that cannot start -----------------------------------------------------------

    def wait_disconnected(self, name: str) -> None:
        hub = self.live_hub()
        wait_until(
            lambda: hub.servers[name].state == "disconnected",
            timeout=EVENT_TIMEOUT,
            message=f"{name} did not become disconnected: {hub.servers[name]!r}",
        )
        error = hub.servers[name].error
        assert isinstance(error, ServerDisconnectedError), repr(error)
        self.errors.append(error)
        self.down.add(name)

    @precondition(lambda self: self.stdio_up)
    @rule(data=st.data(), how=st.sampled_from(["exits", "killed"]))
    def server_crashes_while_idle(self, data: st.DataObject, how: str) -> None:
        name = data.draw(st.sampled_from(self.stdio_up), label="server")
        hub = self.live_hub()
        if how == "exits":
            outcome = timed_call(hub, f"mcp__{name}__exit_later", {"delay": 0.2}, timeout=ECHO_TIMEOUT)
            assert outcome.text == "ok", outcome
        else:
            pid = hub.servers[name].pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
        self.wait_disconnected(name)

    @precondition(lambda self: self.stdio_up)
    @rule(data=st.data())
    def server_crashes_during_calls(self, data: st.DataObject) -> None:
        """The server exits while answering one call, with another in flight: both fail promptly."""
        name = data.draw(st.sampled_from(self.stdio_up), label="server")
        hub = self.live_hub()
        in_flight = InFlight(self, name)
        outcome = self.collect(timed_call(hub, f"mcp__{name}__crash", {}, timeout=ECHO_TIMEOUT))
        assert isinstance(outcome.error, ServerDisconnectedError), outcome
        assert outcome.seconds <= CALL_SLACK, outcome
        other = self.collect(in_flight.outcome(CALL_SLACK))
        assert isinstance(other.error, ServerDisconnectedError), other
        self.wait_disconnected(name)

    # -- close, other hubs, fork ------------------------------------------------------------------------

    @precondition(lambda self: self.running)
    @rule(twice=st.booleans(), in_flight_call=st.booleans())
    def close_hub(self, twice: bool, in_flight_call: bool) -> None:
        """Close (maybe twice, maybe with a call in flight, which then fails promptly)."""
        hub = self.live_hub()
        in_flight = InFlight(self, self.up[0]) if in_flight_call and self.up else None
        began = time.monotonic()
        hub.close()
        assert time.monotonic() - began <= CLOSE_BOUND
        if twice:
            hub.close()
        self.running, self.down, self.invalid = False, set(), set()
        self.closed_hub = hub
        assert hub.state == "closed"
        if in_flight is not None:
            outcome = self.collect(in_flight.outcome(CALL_SLACK))
            assert isinstance(outcome.error, ServerDisconnectedError), outcome
        with pytest.raises(MCPSyncError) as raised:
            hub.reload()
        self.errors.append(raised.value)

    @precondition(lambda self: not self.running)
    @rule(after_a_process=st.booleans())
    def close_during_start(self, after_a_process: bool) -> None:
        """`close()` from another thread ends a `start()` in progress; nothing is left running."""
        self.write_config()
        hub = MCPHub.from_file(self.path)
        ended: list[BaseException | None] = []

        def start() -> None:
            try:
                hub.start()
            except BaseException as exc:
                ended.append(exc)
            else:
                ended.append(None)

        stdio = [self.events(name) for name in self.configured if name in GOOD_STDIO]
        processes_before = sum(events.count("ready") for events in stdio)
        starter = threading.Thread(target=start, name="model-start", daemon=True)
        starter.start()
        wait_until(lambda: hub.state != "created", timeout=EVENT_TIMEOUT)
        if after_a_process and stdio:  # close during a handshake rather than before any process is up
            with contextlib.suppress(AssertionError):
                wait_until(
                    lambda: sum(events.count("ready") for events in stdio) > processes_before,
                    timeout=EVENT_TIMEOUT,
                )
        began = time.monotonic()
        hub.close()
        assert time.monotonic() - began <= CLOSE_BOUND
        starter.join(CLOSE_BOUND)
        assert not starter.is_alive(), "start() outlived a close() from another thread"
        assert hub.state == "closed"
        [error] = ended
        assert error is None or isinstance(error, MCPSyncError), repr(error)
        if error is not None:
            self.errors.append(error)
        self.closed_hub = hub

    @rule(with_typo=st.booleans(), typo_first=st.booleans())
    def another_hub(self, with_typo: bool, typo_first: bool) -> None:
        """A second hub, started, used and closed beside the first, which must not notice; a server of
        it that cannot start may come first."""
        headers = {"Authorization": f"Bearer {HEADER_TOKEN}"}
        side = http_config("side", self.world.http.url, headers=headers)
        typo = {"server_name": "sidetypo", "transport": "stdio", "command": MISSING_COMMAND}
        entries = ([typo, side] if typo_first else [side, typo]) if with_typo else [side]
        hub = MCPHub(entries)
        states = StateLog()
        hub.on_server_state(states.record)
        since = time.time()
        with hub:
            assert hub.call_tool("mcp__side__echo", {"text": "side"}, timeout=ECHO_TIMEOUT).text == "side"
            ready = states.ready_at("side", since)
            assert ready - since <= HANDSHAKE_BOUND, f"the other hub's server took {ready - since:.1f} s"
            if with_typo:
                self.errors.append(hub.servers["sidetypo"].error or AssertionError("no error"))
        assert hub.state == "closed"
        wait_until(lambda: not mcp_threads("side"), timeout=EVENT_TIMEOUT, message=str(mcp_threads()))

    @precondition(lambda self: hasattr(os, "fork") and self.up)
    @rule(data=st.data(), in_flight_call=st.booleans())
    def fork_a_child(self, data: st.DataObject, in_flight_call: bool) -> None:
        """In the child the inherited hub refuses calls at once and a new hub works; the parent's hub
        is untouched: same connections, and a call it had in flight finishes as if nothing happened."""
        name = data.draw(st.sampled_from(self.up), label="server")
        hub = self.live_hub()
        before = self.connections()
        in_flight = InFlight(self, name, seconds=FORK_CALL_SECONDS) if in_flight_call else None
        read_end, write_end = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the scenario
            pid = os.fork()
        if pid == 0:
            os.close(read_end)
            forked_child(hub, name, self.world.http.url, write_end)
        os.close(write_end)
        try:
            report, exit_code = read_child(pid, read_end)
        finally:
            os.close(read_end)
        assert exit_code == 0, f"the forked child ended with {exit_code}: {report}"
        assert report["state"] == "forked", report
        assert report["refused"], report
        assert report["inherited_seconds"] <= FORK_REFUSE_BOUND, report
        assert not report["inherited_leaks"], report
        assert report["own"] == list(KIDS), report
        assert report["threads"] == [], report
        assert self.connections() == before
        assert all(hub.servers[name].state == "ready" for name in self.up)
        if in_flight is not None:
            outcome = self.collect(in_flight.outcome(FORK_CALL_SECONDS + CALL_SLACK))
            assert outcome.text is not None and outcome.text.startswith("slept"), outcome

    # -- invariants ---------------------------------------------------------------------------------------

    @invariant()
    def servers_are_as_the_model_says(self) -> None:
        if not self.running:
            return
        hub = self.live_hub()
        assert hub.state == "running"
        states = {name: server.state for name, server in hub.servers.items()}
        assert set(states) == set(self.configured), states
        for name in self.configured:
            if name in self.down:
                assert states[name] in ("failed", "disconnected"), states
            else:
                assert states[name] == "ready", states

    @invariant()
    def a_tool_is_callable_exactly_when_listed(self) -> None:
        if not self.running:
            return
        hub = self.live_hub()
        expected = set().union(*(self.expected_tools(name) for name in self.up)) if self.up else set()
        listed = {tool.name for tool in hub.tools()}
        assert listed == expected, (
            f"missing {sorted(expected - listed)}, unexpected {sorted(listed - expected)}"
        )
        for name in NAMES:
            text = f"check {name}"
            outcome = self.collect(
                timed_call(hub, f"mcp__{name}__echo", {"text": text}, timeout=ECHO_TIMEOUT)
            )
            if name in self.up:
                assert outcome.text == text, outcome
            else:
                assert isinstance(outcome.error, ToolNotFoundError), outcome

    @invariant()
    def a_closed_hub_stays_closed(self) -> None:
        hub = self.closed_hub
        if hub is None:
            return
        assert hub.state == "closed"
        assert hub.tools() == []
        with pytest.raises(ToolNotFoundError) as raised:
            hub.call_tool(f"mcp__{ALPHA}__echo", {"text": "closed"}, timeout=ECHO_TIMEOUT)
        self.errors.append(raised.value)

    @invariant()
    def nothing_is_left_without_a_running_hub(self) -> None:
        if self.running:
            names = {f"mcp-sync:{name}" for name in self.configured} | {"mcp-sync:callbacks"}
            assert set(mcp_threads()) <= names, mcp_threads()
            return
        wait_until(lambda: not mcp_threads(), timeout=EVENT_TIMEOUT, message=f"threads left: {mcp_threads()}")
        ours = {self.world.http.pid}
        wait_until(
            lambda: not set(child_pids_of(os.getpid())) - ours,
            timeout=EVENT_TIMEOUT,
            message=f"child processes left: {set(child_pids_of(os.getpid())) - ours}",
        )
        for pid in self.pids:
            assert not pid_alive(pid), f"server process {pid} is left"
            assert not process_group_members(pid), f"process group {pid} is left"
        count = fds()
        assert count <= self.world.baseline_fds + FD_TOLERANCE, (
            f"{count} file descriptors open, {self.world.baseline_fds} before any hub: "
            f"{sorted(os.listdir('/proc/self/fd'))}"
        )

    @invariant()
    def no_secret_is_shown(self) -> None:
        texts: list[str] = []
        for error in self.errors:
            texts += exception_texts(error)
        self.errors = []
        for hub in (self.hub, self.closed_hub):
            if hub is None:
                continue
            texts.append(repr(hub))
            for server in hub.servers.values():
                texts += [repr(server), repr(server.config)]
                if server.error is not None:
                    texts += exception_texts(server.error)
        texts += self.world.records.take()
        found = leaked(texts)
        assert not found, "a secret was shown:\n" + "\n".join(found)

    def teardown(self) -> None:
        if self.hub is not None and self.running:
            self.hub.close()
            self.running = False
            self.nothing_is_left_without_a_running_hub()


@contextlib.contextmanager
def interrupted_reload(step: str) -> Iterator[None]:
    """Raise `KeyboardInterrupt` in the thread in `reload()` at `step`: right after it has stopped the
    connections it replaces ("stopped"), or when it waits for their replacements ("waiting")."""
    if step == "stopped":
        stop = servers.ServerSet._stop

        def stop_then_interrupt(self: servers.ServerSet, connections: list[Any], *, abort: bool) -> None:
            stop(self, connections, abort=abort)
            if connections:
                raise KeyboardInterrupt

        with unittest.mock.patch.object(servers.ServerSet, "_stop", stop_then_interrupt):
            yield
        return

    def interrupted_wait(connections: list[Any]) -> bool:
        raise KeyboardInterrupt

    with unittest.mock.patch.object(servers, "_wait_ready", interrupted_wait):
        yield


def forked_child(hub: MCPHub, name: str, url: str, report_to: int) -> NoReturn:
    """The forked child: probe the inherited hub, use a hub of its own (a stdio server and the HTTP
    one), report through the pipe, and leave without running anything of the parent's (no test
    runner teardown, no exit hooks)."""
    code = 1
    try:
        report: dict[str, Any] = {"state": hub.state, "refused": False, "inherited_leaks": []}
        began = time.monotonic()
        try:
            hub.call_tool(f"mcp__{name}__echo", {"text": "from the child"}, timeout=ECHO_TIMEOUT)
            report["inherited"] = "answered"
        except Exception as exc:
            report["inherited"] = repr(exc)
            report["refused"] = isinstance(exc, MCPSyncError)
            report["inherited_leaks"] = leaked(exception_texts(exc))
        report["inherited_seconds"] = time.monotonic() - began
        hub.close()  # does nothing here: the servers are the parent's
        own = MCPHub([stdio_config("kid"), http_config("kidweb", url)])
        with own:
            texts = [
                own.call_tool(f"mcp__{kid}__echo", {"text": kid}, timeout=ECHO_TIMEOUT).text for kid in KIDS
            ]
            report["own"] = texts
        report["threads"] = mcp_threads()
        os.write(report_to, json.dumps(report).encode())
        code = 0
    finally:
        os._exit(code)


def read_child(pid: int, read_end: int) -> tuple[dict[str, Any], int | None]:
    """The child's report and exit code; a child that outlives `FORK_CHILD_TIMEOUT` is killed."""
    deadline = time.monotonic() + FORK_CHILD_TIMEOUT
    chunks: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        readable, _, _ = select.select([read_end], [], [], remaining)
        if not readable:
            break
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    exit_code: int | None = None
    while exit_code is None and time.monotonic() < deadline + EVENT_TIMEOUT:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            exit_code = os.waitstatus_to_exitcode(status)
        else:
            time.sleep(0.02)
    if exit_code is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    text = b"".join(chunks).decode()
    return (json.loads(text) if text else {"hung": exit_code is None}), exit_code


# -- running it ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One HTTP fixture server for every sequence, and a root log handler at DEBUG for the whole run."""
    os.environ.pop(UNSET_VARIABLE, None)
    folder = tmp_path_factory.mktemp("hub-model")
    events = EventLog(folder / "web.jsonl")
    records = Records()
    root = logging.getLogger()
    level = root.level
    with HttpServer("--echo-in-errors", events=events) as http:
        root.addHandler(records)
        root.setLevel(logging.DEBUG)
        try:
            yield World(http=http, http_events=events, folder=folder, records=records, baseline_fds=fds())
        finally:
            root.removeHandler(records)
            root.setLevel(level)


def run_model(world: World, **overrides: Any) -> None:
    HubModel.world = world
    options: dict[str, Any] = {
        "deadline": None,
        "derandomize": False,
        "print_blob": True,
        "report_multiple_bugs": False,
        "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
        **overrides,
    }
    with reports_keep_info_and_above(world.records):
        run_state_machine_as_test(HubModel, settings=settings(**options))


@contextlib.contextmanager
def reports_keep_info_and_above(ours: logging.Handler) -> Iterator[None]:
    """The run's DEBUG records are for the secret check; the other root handlers (the test runner's
    report of a failure) keep INFO and above, as they would without it."""
    others = [handler for handler in logging.getLogger().handlers if handler is not ours]
    levels = [handler.level for handler in others]
    for handler in others:
        handler.setLevel(max(handler.level, logging.INFO))
    try:
        yield
    finally:
        for handler, level in zip(others, levels, strict=True):
            handler.setLevel(level)


@pytest.mark.timeout(300)
def test_hub_keeps_its_promises_under_random_operations(world: World) -> None:
    # Short: a failure is reported as found (real servers make shrinking slow); the long run shrinks.
    run_model(
        world,
        max_examples=2,
        stateful_step_count=12,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
    )


@pytest.mark.stateful_long
@pytest.mark.timeout(1800)
def test_hub_keeps_its_promises_under_long_random_operations(world: World) -> None:
    run_model(world, max_examples=20, stateful_step_count=30)
