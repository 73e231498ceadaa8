"""What a task adds over a plain call of one tool: `call_tool` of a tool run as a task, against the same tool
called plainly.

One hub, two servers over stdio running the same code: the tasks fixture server
(`tests/servers/tasks_server.py`, the 2026-07-28 tasks extension), and the same server without the
extension (`_plain_tasks_server.py`). Its `maybe_task` tool answers at once ("echo <text>"): in a task
where the server offers the extension (a client that declares it leaves the choice to the server, and
this server always takes a task), as a plain result otherwise. In alternating rounds, the same number
of blocking calls:

- plain: `call_tool("mcp__plain__maybe_task", ...)`, one `tools/call`;
- task: `call_tool("mcp__tasks__maybe_task", ..., task=True)`, the `tools/call` that creates the task,
  then `tasks/get` until it has ended (paced by the server's poll interval, here `--poll-ms`), which
  carries the result.

Printed: the median wall time per call of each side and their ratio (the polling included: a task that
has not ended when it is created waits one poll interval before its first `tasks/get`), and the client
CPU per call.

    python benchmarks/bench_tasks.py [--quick]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import _common as c

TASKS_SERVER = c.REPO_ROOT / "tests" / "servers" / "tasks_server.py"
PLAIN_SERVER = c.REPO_ROOT / "benchmarks" / "_plain_tasks_server.py"
POLL_MS = 50  # the server's poll interval: what a task call may wait between its requests


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    rounds, calls = (4, 5) if args.quick else (20, 20)
    c.print_header("what a task adds: call_tool of one tool as a task vs as a plain call", args.quick)

    from mcp_sync import MCPHub

    configs = [
        {
            "server_name": name,
            "transport": "stdio",
            "command": c.PYTHON,
            "args": [str(script), "--poll-ms", str(POLL_MS)],
        }
        for name, script in (("tasks", TASKS_SERVER), ("plain", PLAIN_SERVER))
    ]
    load = c.LoadMeter()
    hub = MCPHub(configs).start()
    try:
        assert all(s.state == "ready" for s in hub.servers.values()), hub.servers
        tool = hub.registry.get("mcp__tasks__maybe_task")
        assert tool is not None and tool.task_support == "optional", tool
        clock = time.perf_counter_ns
        cpu: dict[str, list[float]] = {"plain": [], "task": []}

        def loop(label: str, name: str, options: dict[str, Any]) -> Callable[[], list[float]]:
            call_tool: Any = hub.call_tool

            def run() -> list[float]:
                out = []
                cpu0 = time.process_time()
                for i in range(calls):
                    t0 = clock()
                    result = call_tool(name, {"text": f"x{i}"}, **options)
                    out.append((clock() - t0) / 1e9)
                    assert result.text == f"echo x{i}", result
                cpu[label].append((time.process_time() - cpu0) / calls)
                return out

            return run

        sides = {
            "plain": c.Side("plain", loop("plain", "mcp__plain__maybe_task", {})),
            "task": c.Side("task", loop("task", "mcp__tasks__maybe_task", {"task": True})),
        }
        c.note(
            f"{rounds} rounds x {calls} calls per side, alternating (plus 1 warm-up round); "
            f"the server's poll interval {POLL_MS} ms"
        )
        c.alternate(list(sides.values()), rounds, warmup=1, progress="tasks")
        for label in cpu:
            cpu[label] = cpu[label][1:]  # the warm-up round
        for label, side in sides.items():
            wall = c.summary(side.samples, 1e3, " ms")
            c.note(f"{label}: wall {wall}; CPU/call {c.us(c.median(cpu[label]))}")
        plain, task = c.median(sides["plain"].samples), c.median(sides["task"].samples)
        plain_cpu, task_cpu = c.median(cpu["plain"]), c.median(cpu["task"])
        c.note(f"a task adds {c.ms(task - plain)} per call (median), polling included")
        c.note(load.report())
        results = c.Results()
        results.add(
            "call_tool median per call, as a task (stdio, 2026-07-28)",
            c.ms(task),
            c.ms(plain) + " (plain call)",
            c.x(c.ratio(task, plain)),
        )
        results.add(
            "client CPU per call, as a task",
            c.us(task_cpu),
            c.us(plain_cpu) + " (plain call)",
            c.x(c.ratio(task_cpu, plain_cpu)),
        )
        results.print()
    finally:
        hub.close()


if __name__ == "__main__":
    main()
