"""Parallel tool calls from a thread pool, one of them cancelled, one timed out.

Calls from many threads share each server's one session: they run side by side, not in
turn. A call ends early three ways, and each also cancels the request on the server:

- its `cancel` Event is set (from any thread);
- its `timeout` runs out;
- `future.cancel()` on a call started with `hub.submit()`.

Run from the repository root, with the virtualenv active:

    python examples/parallel_calls.py
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mcp_sync import MCPHub, ToolCallCancelledError, ToolCallTimeoutError


def main() -> None:
    with MCPHub.from_file("examples/servers.yaml") as hub, ThreadPoolExecutor(max_workers=4) as pool:
        cancel = threading.Event()
        started = threading.Event()

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            started.set()  # the server reports progress 0 as soon as the long call begins

        def long_call() -> str:
            hub.call_tool("mcp__demo__sleep", {"seconds": 60}, cancel=cancel, progress=on_progress)
            return "finished (unexpected)"

        begin = time.monotonic()
        long_future = pool.submit(long_call)
        quick: dict[str, tuple[str, dict[str, Any]]] = {
            "word_count": ("mcp__demo__word_count", {"text": "calls run side by side"}),
            "calculate": ("mcp__demo__calculate", {"expression": "2 ** 10 - 24"}),
            "slugify": ("mcp__demo__slugify", {"text": "Parallel Calls, Done Right"}),
        }
        futures = {label: pool.submit(hub.call_tool, *call) for label, call in quick.items()}
        for label, future in futures.items():
            text = future.result(timeout=30).text
            print(f"{label}: {' '.join(text.split())}")
        print(f"three quick calls done in {time.monotonic() - begin:.2f} s while sleep(60) runs")

        if not started.wait(10):
            raise SystemExit("the long call never started")
        cancelled_at = time.monotonic()
        cancel.set()
        try:
            long_future.result(timeout=10)
        except ToolCallCancelledError as exc:
            print(f"cancelled: {exc} ({time.monotonic() - cancelled_at:.2f} s after the Event was set)")

        begin = time.monotonic()
        try:
            hub.call_tool("mcp__demo__sleep", {"seconds": 60}, timeout=0.5)
        except ToolCallTimeoutError as exc:
            print(f"timed out: {exc} (after {time.monotonic() - begin:.2f} s)")

        submitted = hub.submit("mcp__demo__sleep", {"seconds": 60})
        print(f"future.cancel() on a running call: {submitted.cancel()}")


if __name__ == "__main__":
    main()
