"""Reliability under load: many threads, many calls, random timeouts and cancellations.

Eight threads call three servers (stdio in both protocol eras, and Streamable HTTP) at once:
echoes with unique payloads, short sleeps with shorter timeouts, calls cancelled through a
`threading.Event` and through `Future.cancel()`. Every call must end, with its own correct result
or a typed error; afterwards no call is left pending and the sessions still work. First, the
servers' events show that eight blocking calls really are in flight at once (not one at a time).
How fast the calls are is the benchmarks' business: the bounds here are about hanging.

Short by default (150 calls a thread); ``MCP_SYNC_SOAK=full`` runs 1,000 calls a thread.
"""

from __future__ import annotations

import concurrent.futures
import heapq
import itertools
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mcp_sync import (
    MCPHub,
    MCPSyncError,
    ToolCallCancelledError,
    ToolCallTimeoutError,
)
from tests.hub_harness import started_hub
from tests.support import EventLog, HttpServer, http_config, stdio_config, wait_until

FULL = os.environ.get("MCP_SYNC_SOAK") == "full"
THREADS = 8
CALLS_PER_THREAD = 1000 if FULL else 150
# stdio at 2026-07-28 and at 2025-11-25, and Streamable HTTP at 2025-11-25 (2026-07-28 over HTTP
# costs ~50 ms a request in the SDK, which would time the transport rather than the hub).
SERVERS = ("modern", "legacy", "web")
# No single call may take longer than this, whatever it was (the longest timeout used is 2 s): a
# bound on hanging, not on speed, so that a loaded machine does not fail it.
CALL_BOUND = 15.0
# The calls proven concurrent sleep this long: far past the wait for all of them to start, so one
# that ran alone (the others waiting for it) would keep the rest from starting in time.
TOGETHER_SLEEP = 60.0
TOGETHER_START_BOUND = 30.0
# How long `concurrent.futures.wait()` may take to see a future it was just cancelled as done.
CANCELLED_BOUND = 1.0


class Canceller:
    """One thread that sets `threading.Event`s at given times (instead of a timer thread per call)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, threading.Event]] = []
        self._order = itertools.count()
        self._condition = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="test-canceller", daemon=True)
        self._thread.start()

    def cancel_after(self, event: threading.Event, delay: float) -> None:
        with self._condition:
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._order), event))
            self._condition.notify()

    def stop(self) -> None:
        with self._condition:
            self._stopped = True
            self._condition.notify()
        self._thread.join(5)

    def _run(self) -> None:
        with self._condition:
            while not self._stopped:
                if not self._heap:
                    self._condition.wait()
                    continue
                due, _, event = self._heap[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._condition.wait(wait)
                    continue
                heapq.heappop(self._heap)
                event.set()


@dataclass
class Outcomes:
    counts: Counter[str] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)
    slowest: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, elapsed: float, problem: str | None = None) -> None:
        with self.lock:
            self.counts[kind] += 1
            self.slowest = max(self.slowest, elapsed)
            if problem is not None:
                self.wrong.append(problem)


@pytest.fixture
def load_hub(tmp_path: Path) -> Iterator[tuple[MCPHub, EventLog]]:
    events = EventLog(tmp_path / "events.jsonl")
    with HttpServer("--era", "legacy", events=events) as web:
        configs = [
            stdio_config("modern", "--era", "modern", events=events),
            stdio_config("legacy", "--era", "legacy", events=events),
            http_config("web", web.url),
        ]
        with started_hub(*configs) as hub:
            yield hub, events


def all_in_flight_at_once(hub: MCPHub, events: EventLog) -> None:
    """Eight threads each make a blocking call to a long sleep; every sleep starts on its server while
    all the calls are still running, then each call is cancelled through its Event."""
    tags = [f"together-{i}" for i in range(THREADS)]
    cancels = [threading.Event() for _ in tags]
    endings: dict[str, str] = {}

    def call(i: int) -> None:
        try:
            hub.call_tool(
                f"mcp__{SERVERS[i % len(SERVERS)]}__sleep",
                {"seconds": TOGETHER_SLEEP, "tag": tags[i]},
                timeout=2 * TOGETHER_SLEEP,
                cancel=cancels[i],
            )
            endings[tags[i]] = "finished"
        except ToolCallCancelledError:
            endings[tags[i]] = "cancelled"
        except Exception as exc:
            endings[tags[i]] = f"{type(exc).__name__}: {exc}"

    callers = [threading.Thread(target=call, args=(i,), name=f"test-{tag}") for i, tag in enumerate(tags)]
    for caller in callers:
        caller.start()

    def started() -> set[str]:
        return {event["tag"] for event in events.find("started") if event["tag"] in tags}

    def all_started_or_one_ended() -> bool:
        # The servers' events are read first: if no call has ended after that, all were in flight.
        return started() == set(tags) or bool(endings)

    try:
        wait_until(
            all_started_or_one_ended,
            timeout=TOGETHER_START_BOUND,
            message=f"not all {THREADS} calls started within {TOGETHER_START_BOUND:.0f} s (each sleeps "
            f"{TOGETHER_SLEEP:.0f} s): they do not run at once",
        )
        ended_early = dict(endings)
    finally:
        for cancel in cancels:
            cancel.set()
        for caller in callers:
            caller.join(CALL_BOUND)
    assert not ended_early, f"a call ended before all had started: {ended_early}"
    assert endings == dict.fromkeys(tags, "cancelled"), endings


def sleep_result(seconds: float) -> str:
    return f"slept {seconds}"


def run_worker(hub: MCPHub, canceller: Canceller, outcomes: Outcomes, worker: int, calls: int) -> None:
    rng = random.Random(worker * 7919 + 17)
    for i in range(calls):
        server = rng.choice(SERVERS)
        tag = f"w{worker}-{i}"
        payload = f"{tag}-{rng.getrandbits(64):016x}"
        seconds = round(rng.uniform(0.001, 0.02), 6)
        roll = rng.random()
        kind = "?"
        started = time.monotonic()
        try:
            if roll < 0.35:
                kind = "echo"
                result = hub.call_tool(f"mcp__{server}__echo", {"text": payload}, timeout=10)
                outcome = (
                    "ok" if result.text == payload and not result.is_error else f"wrong result {result!r}"
                )
            elif roll < 0.45:
                kind = "echo-future"
                future = hub.submit(f"mcp__{server}__echo", {"text": payload}, timeout=10)
                done, _ = concurrent.futures.wait([future], CALL_BOUND)
                if not done:
                    outcome = "hung"
                else:
                    result = future.result()
                    outcome = "ok" if result.text == payload else f"wrong result {result!r}"
            elif roll < 0.65:
                kind = "sleep-timeout"
                timeout = rng.choice([0.001, 0.005, 0.01, 0.02, 0.05, 2.0])
                try:
                    result = hub.call_tool(
                        f"mcp__{server}__sleep", {"seconds": seconds, "tag": tag}, timeout=timeout
                    )
                    outcome = "ok" if result.text == sleep_result(seconds) else f"wrong result {result!r}"
                except ToolCallTimeoutError:
                    outcome = "timeout"
            elif roll < 0.85:
                kind = "cancel-event"
                cancel = threading.Event()
                delay = rng.choice([0.0, 0.001, 0.005, 0.01, 0.03])
                if delay == 0.0:
                    cancel.set()  # cancelled before the call even starts
                else:
                    canceller.cancel_after(cancel, delay)
                try:
                    result = hub.call_tool(
                        f"mcp__{server}__sleep", {"seconds": seconds, "tag": tag}, timeout=10, cancel=cancel
                    )
                    outcome = "ok" if result.text == sleep_result(seconds) else f"wrong result {result!r}"
                except ToolCallCancelledError:
                    outcome = "cancelled" if cancel.is_set() else "cancelled without being asked"
            else:
                kind = "cancel-future"
                future = hub.submit(f"mcp__{server}__sleep", {"seconds": seconds, "tag": tag}, timeout=10)
                if rng.random() < 0.5:
                    time.sleep(rng.uniform(0, 0.02))  # part of the workload: cancel at a random point
                cancelled = future.cancel()
                # A cancelled future is done at once, also for `wait()` and `as_completed()`.
                done, _ = concurrent.futures.wait([future], CANCELLED_BOUND if cancelled else CALL_BOUND)
                if not done:
                    outcome = (
                        "cancelled, but concurrent.futures.wait() does not see it done"
                        if cancelled
                        else "hung"
                    )
                elif cancelled:
                    try:
                        future.result()
                        outcome = "cancelled future returned a result"
                    except concurrent.futures.CancelledError:
                        outcome = "cancelled"
                else:
                    result = future.result()  # too late to cancel: it must be this call's result
                    outcome = "ok" if result.text == sleep_result(seconds) else f"wrong result {result!r}"
        except MCPSyncError as exc:
            outcome = f"unexpected {type(exc).__name__}: {exc}"
        except Exception as exc:
            outcome = f"untyped {type(exc).__name__}: {exc}"
        elapsed = time.monotonic() - started
        problem = None
        if outcome not in ("ok", "timeout", "cancelled"):
            problem = f"{tag} {kind} on {server}: {outcome}"
        elif elapsed > CALL_BOUND:
            problem = f"{tag} {kind} on {server}: took {elapsed:.1f}s"
        outcomes.record(f"{kind}:{outcome if problem is None else 'WRONG'}", elapsed, problem)


@pytest.mark.soak
@pytest.mark.timeout(900 if FULL else 120)
def test_eight_threads_of_mixed_calls_timeouts_and_cancellations(load_hub: tuple[MCPHub, EventLog]) -> None:
    hub, events = load_hub
    all_in_flight_at_once(hub, events)
    canceller = Canceller()
    outcomes = Outcomes()
    try:
        with concurrent.futures.ThreadPoolExecutor(THREADS, thread_name_prefix="load") as pool:
            workers = [
                pool.submit(run_worker, hub, canceller, outcomes, worker, CALLS_PER_THREAD)
                for worker in range(THREADS)
            ]
            done, _ = concurrent.futures.wait(workers, 600 if FULL else 100)
            assert len(done) == THREADS, "a worker thread never finished: a call hung"
            for worker in workers:
                worker.result()
    finally:
        canceller.stop()

    for name in SERVERS:
        connection = hub.servers[name]
        # A private attribute, in this one check: the set of call tasks still on the server's loop.
        wait_until(
            lambda c=connection: not c._session.calls.tasks(),
            timeout=5,
            message=f"calls left pending on {name}",
        )
        assert connection.state == "ready"
        assert hub.call_tool(f"mcp__{name}__echo", {"text": "after the storm"}).text == "after the storm"

    # Server side, every sleep that started also ended (finished, or cancelled by the protocol):
    # a timed-out or cancelled call is not left running on the server.
    def unfinished() -> set[str]:
        seen = events.events()
        started = {event["tag"] for event in seen if event.get("event") == "started"}
        ended = {event["tag"] for event in seen if event.get("event") in ("finished", "cancelled")}
        return started - ended

    wait_until(lambda: not unfinished(), timeout=10, message="sleeps still running on the servers")

    total = sum(outcomes.counts.values())
    print(
        f"\n{total} calls; slowest {outcomes.slowest:.3f}s; "
        + ", ".join(sorted(f"{k}={v}" for k, v in outcomes.counts.items()))
    )
    assert total == THREADS * CALLS_PER_THREAD
    assert not outcomes.wrong, f"{len(outcomes.wrong)} calls went wrong, e.g.: " + "; ".join(
        outcomes.wrong[:10]
    )
    # The mix really exercised every ending.
    for ending in ("echo:ok", "sleep-timeout:timeout", "cancel-event:cancelled", "cancel-future:cancelled"):
        assert outcomes.counts[ending] > 0, f"no {ending} in {outcomes.counts}"
