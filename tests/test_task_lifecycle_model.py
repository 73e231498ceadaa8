"""A model of a task's life through `MCPHub`, checked against real task servers: Hypothesis drives
sequences of task calls, each stopped at a chosen step, and "stopping is exact" is checked after each.

The servers run the ``gated`` tool: a task that runs until the test lets it finish, and holds, each on
a gate file, the step the test names: the ``tools/call`` answer with the task (before the id arrives),
a ``tasks/get`` answer (while polling), the input's delivery (while answering input); while the hub's
elicitation handler answers the task's question the test holds that handler. Each server records
every run, status and ``tasks/cancel`` in its events file. They are tests/servers/tasks_server.py (the
2026-07-28 tasks extension) over stdio and over Streamable HTTP behind a relay whose connections can
be cut or refused (tests/tasks_harness.py), and the ``gated`` mode of tests/servers/raw_tasks_server.py
(2025-11-25 tasks) over stdio.

A call is made by ``call_tool`` (``task=True`` or the default), ``submit`` or ``start_task`` and a
handle's ``wait``; once it has reached its step (or, over HTTP, while the hub reconnects after its
server became unreachable), it is stopped: its timeout, its cancel Event, ``future.cancel()``,
``close()`` from another thread, ``reload()`` of the unchanged entry or of a changed one (another
``tool_call_timeout_ms``), a cut connection (HTTP, with ``reconnect:``), or nothing. A held answer is
let go at once after the stop, or only after the caller was answered (a late answer; always so after
a timeout); the answer to the call's ``tasks/cancel`` may be held until the caller was answered too.

After every call:

- the caller was answered (a generous bound, a hang detector only);
- a call that is not given up (no stop, an unchanged reload, a cut connection or a replaced one once
  the task exists on an HTTP server that outlives the connection) gets its task's result, and its
  task was never asked to cancel; nor was a task whose handle's wait was stopped (it keeps running:
  it is then cancelled through the handle, or waited for to its end);
- every call the client gave up on (a timeout, a cancel Event, ``future.cancel()``, ``close()``, a
  stdio server replaced, a task's creation answer lost): each task the server created for it was
  cancelled there (``tasks/cancel`` reached the running task) or its server process has ended, or the
  error says the server could not be told (`COULD_NOT_TELL`);
- the tool ran at most once per call, and at most one task was created per call.

With no hub running, no ``mcp-sync:`` thread and no stdio server process is left.

The default run is short; ``pytest -n 0 -m stateful_long tests/test_task_lifecycle_model.py`` runs many
longer sequences and shrinks a failure. ``TASK_LIFE_VERBOSE=1`` prints each call as it starts.
"""

from __future__ import annotations

import concurrent.futures
import functools
import gc
import logging
import os
import re
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, Phase, Verbosity, settings
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
    ElicitationRequest,
    ElicitationResponse,
    MCPHub,
    MCPSyncError,
    TaskHandle,
    ToolCallCancelledError,
    ToolCallTimeoutError,
    ToolResult,
)
from tests.hosts._common import mcp_threads
from tests.support import SERVERS_DIR, EventLog, HttpServer, http_config, pid_alive, stdio_config, wait_until
from tests.tasks_harness import Relay

TASKS_SERVER = SERVERS_DIR / "tasks_server.py"
RAW_TASKS_SERVER = SERVERS_DIR / "raw_tasks_server.py"
TOOL = "mcp__t__gated"

# Hang detectors, never speed: how long past its stop a caller may take to be answered (a stopped task
# call may wait for the task's creation and for its tasks/cancel, each a couple of seconds at most).
ANSWER_BOUND = 30.0
# The timeout of a call that must complete: it covers only a hang.
CALL_TIMEOUT = 60.0
# The timeout of a call stopped by its timeout, while its step is held.
SHORT_TIMEOUT = 1.0
# After the caller was answered, how long the server may take to record the tasks/cancel it was sent.
CANCEL_SEEN = 10.0
# Waits for a server's event, a step to be reached, a server to be ready again, a thread to end.
EVENT_TIMEOUT = 20.0
# close() is bounded: a graceful stop, then the kill of what is left, with slack.
CLOSE_BOUND = 15.0
VERBOSE = bool(os.environ.get("TASK_LIFE_VERBOSE"))
"""Set: each call is printed as it starts, and Hypothesis reports each example."""
# Reconnect at once, and for as long as the relay is down (a step of the model, ended by the test).
RECONNECT = {"initial_delay_ms": 50, "max_delay_ms": 200, "max_attempts": 1000}

TRANSPORTS = ("stdio", "http", "legacy")
"""The 2026-07-28 tasks server over stdio and over Streamable HTTP; a 2025-11-25 one over stdio."""
CALLERS = ("call_tool", "submit", "start_task")
STEPS = ("create", "poll", "input", "update", "running", "reconnect")
"""Where the call is stopped: its task's creation answer held; a poll's answer held; the elicitation
handler held; the input's delivery held; the task running with nothing held; the task running while
the hub reconnects to its HTTP server (the relay refuses connections until the step is let go)."""
STOPS = ("timeout", "event", "future_cancel", "close", "reload_same", "reload_changed", "drop", "none")

COULD_NOT_TELL = re.compile(
    r"could not (be )?(tell|told|reach|cancel)|not (been )?told|may (still )?be running|"
    r"may still run|(is|was) left running|may have (run|started)",
    re.IGNORECASE,
)
"""What an error says when the server could not be told to stop the work it started for the call."""


@dataclass
class World:
    """What every sequence shares: a folder, the gate files' folder, one HTTP tasks server behind a relay."""

    folder: Path
    gates: Path
    http: HttpServer
    http_events: EventLog
    relay: Relay
    runs: int = 0
    relay_down: bool = False

    def relay_back(self) -> None:
        if self.relay_down:
            self.relay.come_back()
            self.relay_down = False


class Answers:
    """The hub's elicitation handler: answers at once, or holds the question of a tag until let go."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, threading.Event] = {}
        self._asked: dict[str, threading.Event] = {}
        self.asked: list[str] = []

    def hold(self, tag: str) -> None:
        with self._lock:
            self._held[tag] = threading.Event()
            self._asked[tag] = threading.Event()

    def release(self, tag: str) -> None:
        with self._lock:
            held = self._held.get(tag)
        if held is not None:
            held.set()

    def was_asked(self, tag: str) -> bool:
        with self._lock:
            asked = self._asked.get(tag)
        return asked is not None and asked.is_set()

    def __call__(self, request: ElicitationRequest) -> ElicitationResponse:
        tag = request.message.rsplit(" ", 1)[-1]
        with self._lock:
            self.asked.append(tag)
            held, asked = self._held.get(tag), self._asked.get(tag)
        if asked is not None:
            asked.set()
        if held is not None:  # bounded: a handler the test forgot must not hang the hub
            wait_until(
                lambda: held.is_set() or request.cancelled.is_set(),
                timeout=EVENT_TIMEOUT,
                message=f"the held question of {tag} was never let go",
            )
        return ElicitationResponse.accept({"name": "Ada"})


@dataclass
class Outcome:
    """How a caller was answered."""

    result: ToolResult | None = None
    error: BaseException | None = None
    handle: TaskHandle | None = None
    future_cancelled: bool = False


@dataclass
class Call:
    """One task call of the model, run on a thread of its own."""

    caller: str
    as_task: bool | None
    step: str
    stop: str
    late: bool
    slow_cancel: bool = False
    """The server holds its answer to the call's ``tasks/cancel`` until the caller was answered."""
    tag: str = field(default_factory=lambda: f"call-{uuid.uuid4().hex[:10]}")
    cancel: threading.Event = field(default_factory=threading.Event)
    future: concurrent.futures.Future[ToolResult] | None = None
    handle: TaskHandle | None = None
    outcome: Outcome | None = None
    thread: threading.Thread | None = None

    @property
    def arguments(self) -> dict[str, Any]:
        held = [self.step] if self.step in ("create", "poll", "update") else []
        if self.slow_cancel:
            held.append("cancel")
        return {"tag": self.tag, "hold": held, "ask": self.step in ("input", "update")}

    @property
    def timeout(self) -> float:
        return SHORT_TIMEOUT if self.stop == "timeout" else CALL_TIMEOUT

    def describe(self) -> str:
        return (
            f"{self.caller}(task={self.as_task}) stopped by {self.stop} at {self.step}"
            f"{' (held answer let go late)' if self.late else ''}"
            f"{' (its tasks/cancel answered late)' if self.slow_cancel else ''} [{self.tag}]"
        )


class TaskLifeModel(RuleBasedStateMachine):
    """The model: a hub on one tasks server (stdio or HTTP) and the calls made through it."""

    world: ClassVar[World]

    def __init__(self) -> None:
        super().__init__()
        world = self.world
        world.runs += 1
        self.run = world.runs
        self.transport = "stdio"
        self.variant = 0
        self.hub: MCPHub | None = None
        self.answers = Answers()
        self.stdio_events: EventLog | None = None
        self.hubs = 0
        self.pids: set[int] = set()
        """Every stdio server process of this sequence: none may outlive a close."""
        self.tags: list[str] = []

    # -- the server -----------------------------------------------------------------------------------

    @property
    def http(self) -> bool:
        return self.transport == "http"

    @property
    def events(self) -> EventLog:
        if self.http:
            return self.world.http_events
        assert self.stdio_events is not None
        return self.stdio_events

    def entry(self) -> dict[str, Any]:
        timeout_ms = 120_000 + self.variant  # a changed entry: another tool_call_timeout_ms
        if self.http:
            return http_config(
                "t", self.world.relay.url, reconnect=RECONNECT, tool_call_timeout_ms=timeout_ms
            )
        if self.transport == "legacy":
            log = self.world.folder / f"run-{self.run}-methods.log"
            flags = ("gated", str(log), str(self.world.gates), str(self.events))
            return stdio_config("t", *flags, script=RAW_TASKS_SERVER, tool_call_timeout_ms=timeout_ms)
        return stdio_config(
            "t",
            "--gates",
            str(self.world.gates),
            script=TASKS_SERVER,
            events=self.events,
            tool_call_timeout_ms=timeout_ms,
        )

    def gate(self, tag: str, step: str) -> None:
        """Let a held step (or the task's end, "finish") go."""
        (self.world.gates / f"{tag}.{step}").touch()

    def live_hub(self) -> MCPHub:
        assert self.hub is not None
        return self.hub

    def server_pids(self) -> set[int]:
        """The stdio server processes that said they were ready (the real ones, not a launcher's shim)."""
        if self.http or self.stdio_events is None:
            return set()
        return {int(event["pid"]) for event in self.events.find("ready")}

    # -- the hub --------------------------------------------------------------------------------------

    @initialize(transport=st.sampled_from(TRANSPORTS))
    def choose_transport(self, transport: str) -> None:
        self.transport = transport

    @precondition(lambda self: self.hub is None)
    @rule()
    def start_hub(self) -> None:
        self.hubs += 1
        if not self.http:
            self.stdio_events = EventLog(self.world.folder / f"run-{self.run}-hub-{self.hubs}.jsonl")
        hub = MCPHub([self.entry()], elicitation=self.answers)
        hub.start()
        self.hub = hub
        assert hub.servers["t"].state == "ready", hub.servers["t"].error
        self.pids |= self.server_pids()

    @precondition(lambda self: self.hub is not None)
    @rule()
    def close_hub(self) -> None:
        self.close_now()

    def close_now(self) -> None:
        hub, self.hub = self.live_hub(), None
        closing = threading.Thread(target=hub.close, name="model-close", daemon=True)
        closing.start()
        closing.join(CLOSE_BOUND)
        assert not closing.is_alive(), f"close() did not return within {CLOSE_BOUND} s"
        self.pids |= self.server_pids()

    @invariant()
    def nothing_left_after_close(self) -> None:
        if self.hub is not None:
            return
        wait_until(
            lambda: not mcp_threads(), timeout=EVENT_TIMEOUT, message="mcp-sync threads outlived close"
        )
        wait_until(
            lambda: not [pid for pid in self.pids if pid_alive(pid)],
            timeout=EVENT_TIMEOUT,
            message=f"a server process outlived close: {self.pids}",
        )

    def teardown(self) -> None:
        try:
            if self.hub is not None:
                self.close_now()
        finally:
            self.world.relay_back()
            for tag in self.tags:  # whatever a sequence left running (or held) ends now
                self.gate(tag, "finish")
                self.gate(tag, "cancel")

    # -- the calls ------------------------------------------------------------------------------------

    @precondition(lambda self: self.hub is not None)
    @rule(
        data=st.data(),
        caller=st.sampled_from(CALLERS),
        as_task=st.sampled_from([True, None]),
        late=st.booleans(),
        slow_cancel=st.booleans(),
        then_cancel=st.booleans(),
    )
    def task_call(
        self,
        data: st.DataObject,
        caller: str,
        as_task: bool | None,
        late: bool,
        slow_cancel: bool,
        then_cancel: bool,
    ) -> None:
        steps = [step for step in STEPS if step != "reconnect" or self.http]
        step = data.draw(st.sampled_from(steps), label="step")
        stops = [stop for stop in STOPS if self.stop_applies(caller, step, stop)]
        stop = data.draw(st.sampled_from(stops), label="stop")
        self.run_call(caller, as_task, step, stop, late, then_cancel, slow_cancel)

    def run_call(
        self,
        caller: str,
        as_task: bool | None,
        step: str,
        stop: str,
        late: bool,
        then_cancel: bool,
        slow_cancel: bool = False,
    ) -> None:
        """One call, stopped by `stop` once it reached `step`, and every check of it."""
        call = Call(caller, True if caller == "start_task" else as_task, step, stop, late, slow_cancel)
        self.tags.append(call.tag)
        if VERBOSE:
            print(f"[{self.transport}] {call.describe()}", file=sys.stderr)
        self.ready_again()
        if step == "input":
            self.answers.hold(call.tag)
        self.begin(call)
        self.wait_for_step(call)
        self.inject(call)
        if self.completes(call):
            self.let_go(call)
            self.gate(call.tag, "finish")
            outcome = self.answered(call)
            self.check_completed(call, outcome)
        elif self.waits_only(call):
            self.let_go(call)
            outcome = self.answered(call)
            self.check_left_running(call, outcome, then_cancel)
        else:
            if not call.late and call.stop != "timeout":  # a timeout's held answer comes after it
                self.let_go(call)
            outcome = self.answered(call)
            self.let_go(call)
            self.gate(call.tag, "cancel")
            self.check_given_up(call, outcome)
        self.check_once(call)
        if call.stop == "close":
            self.close_now()

    def ready_again(self) -> None:
        """A cut connection or a replaced one: the server is back before the next call."""
        hub = self.live_hub()
        wait_until(
            lambda: hub.servers["t"].state == "ready" and TOOL in {tool.name for tool in hub.tools()},
            timeout=EVENT_TIMEOUT,
            message="the server did not come back",
        )

    def begin(self, call: Call) -> None:
        hub = self.live_hub()
        outcome = Outcome()

        def run() -> None:
            try:
                if call.caller == "call_tool":
                    outcome.result = hub.call_tool(
                        TOOL, call.arguments, timeout=call.timeout, cancel=call.cancel, task=call.as_task
                    )
                elif call.caller == "submit":
                    assert call.future is not None
                    try:
                        outcome.result = call.future.result(call.timeout + ANSWER_BOUND)
                    except concurrent.futures.CancelledError:
                        outcome.future_cancelled = True
                elif call.step == "create":  # the stop reaches start_task itself
                    call.handle = hub.start_task(TOOL, call.arguments, timeout=call.timeout)
                else:
                    call.handle = hub.start_task(TOOL, call.arguments, timeout=CALL_TIMEOUT)
                    outcome.result = call.handle.wait(call.timeout, cancel=call.cancel)
            except Exception as error:
                outcome.error = error
            call.outcome = outcome

        if call.caller == "submit":
            call.future = hub.submit(TOOL, call.arguments, timeout=call.timeout, task=call.as_task)
        call.thread = threading.Thread(target=run, name="model-call", daemon=True)
        call.thread.start()

    def wait_for_step(self, call: Call) -> None:
        """Until the call's step is reached (or the call already ended: a timeout may come first)."""
        assert call.thread is not None
        thread = call.thread

        def reached() -> bool:
            if not thread.is_alive():
                return True
            if call.step == "input":
                return self.answers.was_asked(call.tag)
            if call.step in ("running", "reconnect"):
                if call.caller == "start_task":
                    return call.handle is not None
                return self.polled(call)
            held = self.events.find(
                lambda event: event.get("event") == "held" and event.get("step") == call.step, tag=call.tag
            )
            return bool(held)

        wait_until(reached, timeout=EVENT_TIMEOUT, message=f"{call.describe()} never reached its step")
        if call.step == "reconnect" and thread.is_alive():
            self.world.relay_down = True
            self.world.relay.go_down()
            connection = self.live_hub().servers["t"]
            wait_until(
                lambda: connection.state != "ready" or not thread.is_alive(),
                timeout=EVENT_TIMEOUT,
                message="the hub did not see its connection go",
            )

    def task_ids(self, call: Call) -> list[str]:
        return [event["task_id"] for event in self.events.find("task_created", tag=call.tag)]

    def polled(self, call: Call) -> bool:
        ids = set(self.task_ids(call))
        return any(event.get("task_id") in ids for event in self.events.find("get"))

    def inject(self, call: Call) -> None:
        hub = self.live_hub()
        if call.stop == "event":
            call.cancel.set()
        elif call.stop == "future_cancel":
            assert call.future is not None
            call.future.cancel()
        elif call.stop == "close":
            closing = threading.Thread(target=hub.close, name="model-close", daemon=True)
            closing.start()
            closing.join(CLOSE_BOUND)
            assert not closing.is_alive(), f"close() did not return within {CLOSE_BOUND} s"
        elif call.stop == "reload_same":
            hub.reload([self.entry()])
        elif call.stop == "reload_changed":
            self.variant += 1
            hub.reload([self.entry()])
            self.pids |= self.server_pids()
        elif call.stop == "drop":
            self.world.relay.cut()

    def let_go(self, call: Call) -> None:
        if call.step in ("create", "poll", "update"):
            self.gate(call.tag, call.step)
        if call.step == "input":
            self.answers.release(call.tag)
        if call.step == "reconnect":
            self.world.relay_back()

    def answered(self, call: Call) -> Outcome:
        assert call.thread is not None
        call.thread.join(call.timeout + ANSWER_BOUND)
        assert not call.thread.is_alive(), f"{call.describe()}: the caller was not answered"
        assert call.outcome is not None
        return call.outcome

    # -- what each stop must give ---------------------------------------------------------------------

    def completes(self, call: Call) -> bool:
        """Whether the call must get its task's result: nothing gave it up."""
        if call.stop in ("none", "reload_same"):
            return True
        # A task on a server that outlives the connection is followed by its id on the next one.
        return call.stop in ("drop", "reload_changed") and self.http and call.step != "create"

    def stop_applies(self, caller: str, step: str, stop: str) -> bool:
        """Whether the call can be stopped that way: `future.cancel()` is `submit`'s, a cancel Event
        `call_tool`'s and a handle wait's; connections are cut (the relay) only over HTTP. A reload
        while the server cannot be reached fails its server, as any connect does: not a stop."""
        if (stop == "drop" or step == "reconnect") and not self.http:
            return False
        if step == "reconnect" and stop.startswith("reload"):
            return False
        if stop == "future_cancel":
            return caller == "submit"
        if stop == "event":
            return caller == "call_tool" or (caller == "start_task" and step != "create")
        return True

    def waits_only(self, call: Call) -> bool:
        """A handle's wait that was stopped: the task keeps running, as the handle's docs say."""
        return call.caller == "start_task" and call.step != "create"

    def check_completed(self, call: Call, outcome: Outcome) -> None:
        assert outcome.error is None and not outcome.future_cancelled, f"{call.describe()}: {outcome!r}"
        assert self.final_text(call, outcome) == f"finished {call.tag}", f"{call.describe()}: {outcome!r}"
        self.check_never_asked_to_cancel(call)

    def final_text(self, call: Call, outcome: Outcome) -> str | None:
        """The result's text; for a started task, its handle's (once let finish)."""
        if outcome.result is not None:
            return outcome.result.text
        if call.handle is not None:
            self.gate(call.tag, "finish")
            return call.handle.wait(CALL_TIMEOUT).text
        return None

    def check_never_asked_to_cancel(self, call: Call) -> None:
        ids = set(self.task_ids(call))
        asked = [event for event in self.events.find("cancel_request") if event["task_id"] in ids]
        assert not asked, f"{call.describe()}: its task was cancelled though nobody gave it up: {asked}"

    def check_left_running(self, call: Call, outcome: Outcome, then_cancel: bool) -> None:
        """A handle's wait stopped (or its hub closed, or its connection replaced): the task runs on."""
        if call.stop == "timeout":
            assert isinstance(outcome.error, ToolCallTimeoutError), f"{call.describe()}: {outcome}"
        elif call.stop == "event":
            assert isinstance(outcome.error, ToolCallCancelledError), f"{call.describe()}: {outcome}"
        elif call.stop == "close":
            assert isinstance(outcome.error, MCPSyncError), f"{call.describe()}: {outcome}"
        elif outcome.error is not None:  # a stdio server replaced: its process (and its task) ended
            assert call.stop == "reload_changed" and not self.http, f"{call.describe()}: {outcome}"
            self.check_given_up(call, outcome)
            return
        if self.http or call.stop in ("timeout", "event"):
            self.check_never_asked_to_cancel(call)
        handle = call.handle
        if call.stop == "close" or handle is None:
            return
        if then_cancel:
            self.gate(call.tag, "cancel")
            assert handle.cancel(EVENT_TIMEOUT).status == "cancelled"
            self.check_cancelled(call, None)
        else:
            self.gate(call.tag, "finish")
            assert handle.wait(CALL_TIMEOUT).text == f"finished {call.tag}"

    def check_given_up(self, call: Call, outcome: Outcome) -> None:
        """The client gave the call up: the right error, and its task stopped on the server (or said not)."""
        if call.stop == "future_cancel":
            assert outcome.future_cancelled or outcome.error is not None, f"{call.describe()}: {outcome}"
        elif call.stop == "timeout":
            assert isinstance(outcome.error, ToolCallTimeoutError), f"{call.describe()}: {outcome}"
        elif call.stop == "event":
            assert isinstance(outcome.error, ToolCallCancelledError), f"{call.describe()}: {outcome}"
        elif outcome.error is None:  # a stop that came too late to give the call up
            assert self.final_text(call, outcome) == f"finished {call.tag}", f"{call.describe()}: {outcome!r}"
            return
        else:
            assert isinstance(outcome.error, MCPSyncError), f"{call.describe()}: {outcome!r}"
        self.check_cancelled(call, outcome.error)

    def check_cancelled(self, call: Call, error: BaseException | None) -> None:
        """Each task created for the call was cancelled on the server, or its process ended, or the
        error says the server could not be told."""
        if error is not None and COULD_NOT_TELL.search(str(error)):
            return
        events = self.events

        def stopped(task_id: str, pid: int) -> bool:
            cancelled = events.find(
                lambda event: event.get("event") == "cancelled" and event.get("task_id") == task_id
            )
            return bool(cancelled) or (not self.http and not pid_alive(pid))

        for created in events.find("task_created", tag=call.tag):
            task_id, pid = created["task_id"], int(created["pid"])
            try:
                wait_until(functools.partial(stopped, task_id, pid), timeout=CANCEL_SEEN)
            except AssertionError:
                statuses = [event["status"] for event in events.find("status") if event["task_id"] == task_id]
                raise AssertionError(
                    f"{call.describe()}: task {task_id} was left running on the server (statuses "
                    f"{statuses}), and the caller's error does not say the server could not be told: "
                    f"{error!r}"
                ) from None

    def check_once(self, call: Call) -> None:
        runs = self.events.count("run", tag=call.tag)
        created = self.events.count("task_created", tag=call.tag)
        assert runs <= 1 and created <= 1, f"{call.describe()}: ran {runs} times, {created} tasks created"
        # Every call reached the server (its step was seen there), but one its short timeout stopped first.
        assert created == 1 or call.stop == "timeout", f"{call.describe()}: the server saw no task of it"


# -- running it ---------------------------------------------------------------------------------------

settings.register_profile(
    "task-life",
    deadline=None,
    derandomize=False,
    print_blob=True,
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    # Short: a failure is reported as found (real servers make shrinking slow); the long run shrinks.
    max_examples=3,
    stateful_step_count=5,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
settings.register_profile(
    "task-life-long",
    settings.get_profile("task-life"),
    max_examples=25,
    stateful_step_count=15,
    phases=list(Phase),
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One HTTP tasks server, behind a relay, for every sequence; the gate files' folder."""
    folder = tmp_path_factory.mktemp("task-life")
    gates = folder / "gates"
    gates.mkdir()
    events = EventLog(folder / "http.jsonl")
    with (
        HttpServer("--gates", str(gates), script=TASKS_SERVER, events=events) as http,
        Relay(http.port or 0) as relay,
    ):
        yield World(folder=folder, gates=gates, http=http, http_events=events, relay=relay)


def run_model(world: World, profile: str) -> None:
    TaskLifeModel.world = world
    options = settings.get_profile(profile)
    if VERBOSE:
        options = settings(options, verbosity=Verbosity.verbose)
    run_state_machine_as_test(TaskLifeModel, settings=options)


class AsyncioErrors(logging.Handler):
    """The ``asyncio`` logger's ERROR records (an exception of a task nobody retrieved, say)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_connection_cut_while_input_is_delivered_leaves_no_unretrieved_task_error(world: World) -> None:
    """The input's delivery (tasks/update) and a poll both fail with the connection: the call goes on
    on the next one, and the delivery's failure is not left for asyncio to report as never retrieved."""
    errors = AsyncioErrors()
    logging.getLogger("asyncio").addHandler(errors)
    tag = f"cut-input-{uuid.uuid4().hex[:8]}"
    arguments = {"tag": tag, "hold": ["update", "poll_after_input"], "ask": True}
    answers = Answers()
    outcome: list[ToolResult] = []
    try:
        entry = http_config("t", world.relay.url, reconnect=RECONNECT)
        with MCPHub([entry], elicitation=answers) as hub:
            caller = threading.Thread(
                target=lambda: outcome.append(hub.call_tool(TOOL, arguments, timeout=CALL_TIMEOUT)),
                name="model-call",
                daemon=True,
            )
            caller.start()
            for step in ("update", "poll_after_input"):
                world.http_events.wait_for(
                    lambda event, step=step: event.get("event") == "held" and event.get("step") == step,
                    tag=tag,
                    timeout=EVENT_TIMEOUT,
                )
            world.relay.cut()
            for step in ("update", "poll_after_input", "finish"):
                (world.gates / f"{tag}.{step}").touch()
            caller.join(CALL_TIMEOUT + ANSWER_BOUND)
            assert not caller.is_alive(), "the call was not answered"
            assert [result.text for result in outcome] == [f"finished {tag}"]
        gc.collect()  # an unretrieved task exception is reported when the task is collected
    finally:
        logging.getLogger("asyncio").removeHandler(errors)
    assert not [message for message in errors.messages if "never retrieved" in message], errors.messages
    assert world.http_events.count("run", tag=tag) == 1


@pytest.mark.timeout(300)
def test_stopping_a_task_call_at_any_step_is_exact(world: World) -> None:
    run_model(world, "task-life")


@pytest.mark.stateful_long
@pytest.mark.timeout(1800)
def test_stopping_a_task_call_at_any_step_is_exact_long(world: World) -> None:
    run_model(world, "task-life-long")
