"""Shared helpers for the benchmark scripts: timing, statistics, result lines, fixture servers.

Every benchmark script imports this module (``import _common``; a script's own folder is first
on ``sys.path`` when it is run as ``python benchmarks/bench_<name>.py``).

Conventions the scripts follow:

- both sides of a comparison run in one process, in alternating rounds (A B, B A, A B, ...),
  so drift of the machine (frequency, other load, cache) hits both sides alike;
- each script takes ``--quick`` (small counts, a smoke run) and ends with one markdown
  table row per metric, ``| metric | mcp_sync | baseline | ratio | target | met? |``,
  ready to paste under the header it prints first.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURE_SERVER = REPO_ROOT / "tests" / "servers" / "fixture_server.py"
PYTHON = sys.executable

if str(REPO_ROOT) not in sys.path:  # so a checkout without an installed package still runs
    sys.path.insert(0, str(REPO_ROOT))

T = TypeVar("T")

# ---------------------------------------------------------------------------------------------------
# command line and machine


def parse_args(
    description: str, extra: Callable[[argparse.ArgumentParser], None] | None = None
) -> argparse.Namespace:
    """The common flags: ``--quick`` for a smoke run; a script may add its own with `extra`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run of a few seconds")
    if extra is not None:
        extra(parser)
    return parser.parse_args()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def print_header(title: str, quick: bool) -> None:
    """What ran where: printed first by every script, so a pasted result keeps its context."""
    print(f"# {title}{' (--quick)' if quick else ''}")
    print(
        f"# python {platform.python_version()} | nproc {os.cpu_count()} | cpu {cpu_model()} | "
        f"mcp {package_version('mcp')} | mcp-syncio {package_version('mcp-syncio')}"
    )
    sys.stdout.flush()


def note(text: str) -> None:
    """A progress or detail line (not a result line)."""
    print(f"  {text}")
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------------------
# statistics


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100), linear between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * p / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(values: Sequence[float], scale: float = 1.0, unit: str = "") -> str:
    """``n=.. p50=.. p90=.. p99=.. max=..`` of `values` times `scale`, for detail lines."""
    if not values:
        return "n=0"
    parts = [f"n={len(values)}"]
    for label, p in (("p50", 50), ("p90", 90), ("p99", 99)):
        parts.append(f"{label}={percentile(values, p) * scale:.1f}{unit}")
    parts.append(f"max={max(values) * scale:.1f}{unit}")
    return " ".join(parts)


def ratio(a: float, b: float) -> float:
    return a / b if b else math.inf


# ---------------------------------------------------------------------------------------------------
# interleaved rounds


@dataclass
class Side:
    """One side of a comparison: `run()` does one round and returns its samples (or one sample)."""

    name: str
    run: Callable[[], float | Sequence[float]]
    samples: list[float] = field(default_factory=list)
    rounds: list[list[float]] = field(default_factory=list)


def alternate(sides: Sequence[Side], rounds: int, warmup: int = 1, progress: str | None = None) -> None:
    """Run `rounds` rounds of every side, reversing the order each round (A B, B A, ...).

    The first `warmup` rounds are run and thrown away. A full garbage collection runs before
    each side's round, outside the timing, so one side's garbage is not collected on the other's clock.
    """
    total = warmup + rounds
    for index in range(total):
        order = sides if index % 2 == 0 else list(reversed(sides))
        for side in order:
            gc.collect()
            out = side.run()
            values = [float(out)] if isinstance(out, int | float) else [float(v) for v in out]
            if index >= warmup:
                side.samples.extend(values)
                side.rounds.append(values)
        if progress and (index + 1) % max(1, total // 5) == 0:
            note(f"{progress}: round {index + 1}/{total}")


# ---------------------------------------------------------------------------------------------------
# result lines

TABLE_HEADER = "| metric | mcp_sync | baseline | ratio | target | met? |\n|---|---|---|---|---|---|"


@dataclass
class Result:
    metric: str
    value: str
    baseline: str = "-"
    ratio: str = "-"
    target: str = "-"
    met: bool | None = None

    def row(self) -> str:
        met = "-" if self.met is None else ("yes" if self.met else "**no**")
        return f"| {self.metric} | {self.value} | {self.baseline} | {self.ratio} | {self.target} | {met} |"


class Results:
    """Collects the metrics of one script and prints them as table rows at the end."""

    def __init__(self) -> None:
        self.items: list[Result] = []

    def add(
        self,
        metric: str,
        value: str,
        baseline: str = "-",
        ratio: str = "-",
        target: str = "-",
        met: bool | None = None,
    ) -> None:
        self.items.append(Result(metric, value, baseline, ratio, target, met))

    def print(self) -> None:
        print()
        print(TABLE_HEADER)
        for item in self.items:
            print(item.row())
        sys.stdout.flush()


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def sec(seconds: float) -> str:
    return f"{seconds:.3f} s"


def x(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}x" if math.isfinite(value) else "inf"


# ---------------------------------------------------------------------------------------------------
# fixture servers


def fixture_args(*flags: str, events: str | os.PathLike[str] | None = None) -> list[str]:
    args = [str(FIXTURE_SERVER), *flags]
    if events is not None:
        args += ["--events", os.fspath(events)]
    return args


def fixture_config(
    name: str, *flags: str, events: str | os.PathLike[str] | None = None, **overrides: Any
) -> dict[str, Any]:
    """An `MCPHub` stdio entry running the fixture server with `flags`."""
    config: dict[str, Any] = {
        "server_name": name,
        "transport": "stdio",
        "command": PYTHON,
        "args": fixture_args(*flags, events=events),
    }
    config.update(overrides)
    return config


def fixture_params(*flags: str, events: str | os.PathLike[str] | None = None) -> Any:
    """`StdioServerParameters` for a raw `mcp.Client` running the same fixture command line.

    The child gets the parent's environment, as `mcp_sync` gives it (minus nothing that matters
    to the fixture), so both sides start the same program the same way.
    """
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=PYTHON, args=fixture_args(*flags, events=events), env=dict(os.environ)
    )


def match(event: str, **fields: Any) -> Callable[[dict[str, Any]], bool]:
    """A predicate for event lines: ``match("started", tag="h1")``."""

    def predicate(line: dict[str, Any]) -> bool:
        return line.get("event") == event and all(line.get(k) == v for k, v in fields.items())

    return predicate


class EventFile:
    """The fixture's ``--events`` file (JSON lines, each with ``event`` and a wall-clock ``time``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._offset = 0
        self._seen: list[dict[str, Any]] = []
        self._partial = ""

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def read_new(self) -> list[dict[str, Any]]:
        """Events appended since the last read (incremental: cheap to poll at a high rate)."""
        try:
            with open(self.path, encoding="utf-8") as f:
                f.seek(self._offset)
                chunk = f.read()
                self._offset = f.tell()
        except FileNotFoundError:
            return []
        text = self._partial + chunk
        lines = text.split("\n")
        self._partial = lines.pop()  # "" after a complete last line
        new = []
        for line in lines:
            if line.strip():
                try:
                    new.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        self._seen.extend(new)
        return new

    def seen(self, predicate: Callable[[dict[str, Any]], bool]) -> bool:
        """Whether any event so far matches (reads what is new first; newest events checked first)."""
        self.read_new()
        return any(predicate(event) for event in reversed(self._seen))

    def all(self) -> list[dict[str, Any]]:
        self.read_new()
        return list(self._seen)

    def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0, interval: float = 0.0005
    ) -> tuple[dict[str, Any], float]:
        """Poll until an event matches; returns it and the `time.time()` at which it was first seen."""
        deadline = time.monotonic() + timeout
        for event in self._seen:
            if predicate(event):
                return event, time.time()
        while True:
            for event in self.read_new():
                if predicate(event):
                    return event, time.time()
            if time.monotonic() > deadline:
                raise TimeoutError(f"no matching event within {timeout} s in {self.path}")
            time.sleep(interval)


# ---------------------------------------------------------------------------------------------------
# a raw `mcp.Client` on its own asyncio loop, driven from the calling thread


class RawSession:
    """A raw `mcp.Client` on a private asyncio loop that runs only inside `run()`, in the caller's thread.

    That is how an async program uses the SDK: the code that times a call is on the loop.
    The Client is entered and left by one owner task, as the SDK requires; calls are made from
    the coroutines given to `run()`. Between `run()`s the loop is stopped and everything on it
    (including the transport's reader) waits.
    """

    def __init__(self, server: Any, **client_kwargs: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self._server = server
        self._kwargs = client_kwargs
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self.client: Any = None

    def open(self, timeout: float = 60.0) -> RawSession:
        ready: asyncio.Future[Any] = self.loop.create_future()

        async def own() -> None:
            from mcp import Client

            self._stop = asyncio.Event()
            try:
                async with Client(self._server, **self._kwargs) as client:
                    ready.set_result(client)
                    await self._stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                raise

        async def start() -> Any:
            self._owner = asyncio.ensure_future(own())
            return await asyncio.wait_for(asyncio.shield(ready), timeout)

        self.client = self.loop.run_until_complete(start())
        return self

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def close(self, timeout: float = 10.0) -> None:
        if self._owner is not None and self._stop is not None:
            self._stop.set()
            try:
                self.loop.run_until_complete(asyncio.wait_for(self._owner, timeout))
            except BaseException as exc:
                note(f"raw client close: {type(exc).__name__}: {exc}")
        try:
            pending = [task for task in asyncio.all_tasks(self.loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.wait(pending, timeout=2.0))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()

    def __enter__(self) -> RawSession:
        return self.open()

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------------
# process facts


def _status_field(pid: int | str, name: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def rss_bytes(pid: int | str = "self") -> int:
    """Resident set size of a process (VmRSS), in bytes; 0 if unknown."""
    kib = _status_field(pid, "VmRSS")
    return (kib or 0) * 1024


def os_thread_count(pid: int | str = "self") -> int:
    """Threads of a process as the OS counts them (Python threads plus any native ones)."""
    return _status_field(pid, "Threads") or 0


def descendant_pids(pid: int | None = None) -> list[int]:
    """Every live descendant of `pid` (default: this process), found through /proc."""
    root = os.getpid() if pid is None else pid
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        parents.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs, from the first line of /proc/stat."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def pids_cpu_seconds(pids: Iterable[int]) -> float:
    """CPU seconds (user + system) used so far by the given live processes."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            raw = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def tree_cpu_seconds() -> float:
    """CPU seconds of this process, its live descendants and its reaped children."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime + pids_cpu_seconds(descendant_pids())


class LoadMeter:
    """How busy the machine was while a benchmark ran, and how much of that was the benchmark.

    Other work on a small machine (a test run, a build) shows up here; read the numbers with it.
    """

    def __init__(self) -> None:
        self._t0 = time.monotonic()
        self._ticks0 = _machine_ticks()
        self._ours0 = tree_cpu_seconds()

    def report(self) -> str:
        elapsed = max(time.monotonic() - self._t0, 1e-9)
        busy1, total1 = _machine_ticks()
        busy0, total0 = self._ticks0
        cores = os.cpu_count() or 1
        busy_cores = (busy1 - busy0) / max(total1 - total0, 1) * cores
        ours = (tree_cpu_seconds() - self._ours0) / elapsed
        return (
            f"machine load over {elapsed:.1f} s: {busy_cores:.2f} of {cores} cores busy on average; "
            f"this benchmark (process + its servers) ~{ours:.2f}, "
            f"everything else ~{max(busy_cores - ours, 0):.2f}"
        )


def mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:.1f} MiB"


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.001) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout} s")
        time.sleep(interval)


def cpu_recorded(
    cpu: dict[str, list[float]], name: str, body: Callable[[], list[int]]
) -> Callable[[], list[float]]:
    """`body` (one round of calls, returning each call's nanoseconds) as a `Side`'s run: the calls in
    seconds, and this process's CPU time per call appended to `cpu[name]`."""

    def run() -> list[float]:
        cpu0 = time.process_time()
        out = body()
        cpu.setdefault(name, []).append((time.process_time() - cpu0) / len(out))
        return [v / 1e9 for v in out]

    return run


def thread_batch(
    threads: int,
    calls: int,
    call: Callable[[], object],
    timeout: float,
    *,
    on_start: Callable[[], None] | None = None,
) -> tuple[float, list[float]]:
    """`threads` threads released together, each making `calls` sequential `call()`s: the batch's wall
    time and each call's latency. `on_start()` runs just before the release (e.g. to read CPU
    counters). Raises if a call fails or the batch is not done within `timeout`."""
    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []
    seen: list[float] = []

    def worker() -> None:
        try:
            barrier.wait(30)
            for _ in range(calls):
                t0 = time.perf_counter()
                call()
                seen.append(time.perf_counter() - t0)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for thread in workers:
        thread.start()
    if on_start is not None:
        on_start()
    barrier.wait(30)
    t0 = time.perf_counter()
    join_all(workers, timeout)
    wall = time.perf_counter() - t0
    if any(thread.is_alive() for thread in workers):
        raise RuntimeError(f"batch of {threads} threads not done within {timeout} s")
    if errors:
        raise RuntimeError(f"{len(errors)} of {threads} threads failed, first: {errors[0]!r}")
    return wall, seen


def with_cpu(
    rows: list[tuple[float, float, float]], server: set[int], run: Callable[[], float]
) -> Callable[[], float]:
    """`run` (one round, returning its wall time), also appending to `rows` the round's
    (CPU of this process, CPU of the `server` processes, wall)."""

    def measured() -> float:
        own0, server0 = time.process_time(), pids_cpu_seconds(server)
        wall = run()
        rows.append((time.process_time() - own0, pids_cpu_seconds(server) - server0, wall))
        return wall

    return measured


async def task_batch(
    tasks: int, calls: int, call: Callable[[], Coroutine[Any, Any, object]], timeout: float
) -> tuple[float, list[float]]:
    """The async counterpart of `thread_batch`: `tasks` asyncio tasks on the running loop, each
    awaiting `calls` sequential `call()`s; the batch's wall time and each call's latency."""
    seen: list[float] = []

    async def worker() -> None:
        for _ in range(calls):
            t0 = time.perf_counter()
            await call()
            seen.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(tasks))), timeout)
    return time.perf_counter() - t0, seen


def join_all(threads: Iterable[threading.Thread], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def quiet_logs() -> None:
    """Keep mcp_sync's INFO chatter (server ready, tools +N) off the benchmark's output."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="  log %(levelname)s %(name)s: %(message)s")
