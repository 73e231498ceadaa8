"""Per-call cost of tracing: `MCPHub.call_tool` with tracing off, on without an SDK, and on recording.

Three hubs in one process, each with its own fixture server over stdio, call `echo` the same
number of times per round, in alternating rounds:

- off: `MCPHub(...)` (the default; nothing of tracing is imported);
- on, API only: `MCPHub(..., tracing=True)` with no tracer provider set, so every span is the
  OpenTelemetry API's non-recording one (what a host that installed nothing more pays);
- on, recording: `MCPHub(..., tracing=provider)`, an `opentelemetry-sdk` `TracerProvider` whose
  spans go to a `SimpleSpanProcessor` and an exporter that drops them (the cost of making,
  filling and ending real spans, without any export I/O).

Printed: the median wall time per call, and the client CPU time per call (all threads of this
process: caller and loop threads), which does not depend on how fast the server answers; each as
a ratio to "off". Needs `opentelemetry-sdk` (the `test` extra) for the recording side.

    python benchmarks/bench_tracing_overhead.py [--quick]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import _common as c

TARGET_RATIO = 1.05  # tracing on (recording) vs off, median wall time per call


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    rounds, calls = (4, 20) if args.quick else (30, 100)
    c.print_header(
        "per-call cost of tracing: call_tool with tracing off / on (API only) / on (recording)", args.quick
    )

    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    from mcp_sync import MCPHub

    class DropSpans(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(DropSpans()))
    load = c.LoadMeter()
    hubs = {
        "off": MCPHub([c.fixture_config("off")]).start(),
        "on, API only": MCPHub([c.fixture_config("api")], tracing=True).start(),
        "on, recording": MCPHub([c.fixture_config("rec")], tracing=provider).start(),
    }
    names = {"off": "mcp__off__echo", "on, API only": "mcp__api__echo", "on, recording": "mcp__rec__echo"}
    clock = time.perf_counter_ns
    cpu: dict[str, list[float]] = {label: [] for label in hubs}
    try:
        for hub in hubs.values():
            assert all(s.state == "ready" for s in hub.servers.values()), hub.servers

        def loop(label: str) -> Callable[[], list[float]]:
            call_tool: Any = hubs[label].call_tool
            name = names[label]
            arguments = {"text": "x"}

            def run() -> list[float]:
                out = []
                cpu0 = time.process_time()
                for _ in range(calls):
                    t0 = clock()
                    call_tool(name, arguments)
                    out.append((clock() - t0) / 1e9)
                cpu[label].append((time.process_time() - cpu0) / calls)
                return out

            return run

        sides = {label: c.Side(label, loop(label)) for label in hubs}
        c.note(f"{rounds} rounds x {calls} calls per side, alternating (plus 2 warm-up rounds)")
        c.alternate(list(sides.values()), rounds, warmup=2, progress="tracing")
        for label in cpu:
            cpu[label] = cpu[label][2:]  # the warm-up rounds

        results = c.Results()
        off_wall, off_cpu = c.median(sides["off"].samples), c.median(cpu["off"])
        for label, side in sides.items():
            c.note(
                f"{label}: wall {c.summary(side.samples, 1e6, ' µs')}; CPU/call {c.us(c.median(cpu[label]))}"
            )
        for label, side in sides.items():
            if label == "off":
                continue
            wall, cpu_per_call = c.median(side.samples), c.median(cpu[label])
            wall_ratio, cpu_ratio = c.ratio(wall, off_wall), c.ratio(cpu_per_call, off_cpu)
            results.add(
                f"call_tool median per call, tracing {label} (stdio)",
                c.us(wall),
                c.us(off_wall) + " (tracing off)",
                c.x(wall_ratio),
                f"≤ {TARGET_RATIO}",
                wall_ratio <= TARGET_RATIO,
            )
            results.add(
                f"client CPU per call, tracing {label}",
                c.us(cpu_per_call),
                c.us(off_cpu) + " (tracing off)",
                c.x(cpu_ratio),
            )
        c.note(load.report())
        results.print()
    finally:
        for hub in hubs.values():
            hub.close()
        provider.shutdown()


if __name__ == "__main__":
    main()
