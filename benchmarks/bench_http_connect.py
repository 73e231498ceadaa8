"""Connecting to a Streamable HTTP server: the shared TLS client context vs one built per connection.

A hub makes an HTTP client for each remote server it connects (and again at each reconnect and
sign-in). httpx builds a TLS context for each client it makes, reading the system's certificate store;
mcp_sync builds one per process (`mcp_sync._os.tls`). Measured: `MCPHub([one http server]).start()`
then `close()`, wall time and this process's CPU, with the shipped shared context and with a context
built per connection as httpx would (the same function, its cache cleared before every connection), in
alternating rounds against one fixture server started once. Target: the shared context costs no more
than the per-connection one (ratio at most 1.0 on CPU).

    python benchmarks/bench_http_connect.py [--quick]
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import _common as c

from mcp_sync import MCPHub
from mcp_sync._os import tls

CONNECTS_PER_ROUND = 10


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _connects(url: str, fresh_context: bool, cpu: list[float]) -> Callable[[], list[float]]:
    def run() -> list[float]:
        walls = []
        for _ in range(CONNECTS_PER_ROUND):
            if fresh_context:
                tls._built = None  # as httpx: a context built for this connection
            started, cpu_started = time.perf_counter(), time.process_time()
            hub = MCPHub([{"server_name": "web", "transport": "streamable-http", "url": url}]).start()
            walls.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
            assert hub.servers["web"].state == "ready", hub.servers["web"].error
            hub.close()
        return walls

    return run


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.print_header("HTTP connect: shared TLS context vs one per connection", args.quick)
    port = _free_port()
    server = subprocess.Popen(
        [c.PYTHON, str(c.FIXTURE_SERVER), "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
    )
    try:
        c.wait_until(lambda: _listening(port), timeout=120.0, interval=0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        shared_cpu: list[float] = []
        fresh_cpu: list[float] = []
        shared = c.Side("shared context", _connects(url, False, shared_cpu))
        fresh = c.Side("context per connection", _connects(url, True, fresh_cpu))
        c.alternate([shared, fresh], rounds=2 if args.quick else 12, progress="connects")
    finally:
        server.terminate()
        server.wait(30)
    # The warm-up round's CPU is in the lists too: compare the measured rounds only.
    measured = len(shared.samples)
    shared_cpu, fresh_cpu = shared_cpu[-measured:], fresh_cpu[-measured:]
    c.note(f"start() wall, shared:   {c.summary(shared.samples, 1e3, ' ms')}")
    c.note(f"start() wall, per-conn: {c.summary(fresh.samples, 1e3, ' ms')}")
    cpu_ratio = c.ratio(c.median(shared_cpu), c.median(fresh_cpu))
    results = c.Results()
    results.add(
        "start() CPU of this process, median",
        c.ms(c.median(shared_cpu)),
        c.ms(c.median(fresh_cpu)),
        c.x(cpu_ratio),
        "<= 1.0",
        cpu_ratio <= 1.0,
    )
    wall_ratio = c.ratio(c.median(shared.samples), c.median(fresh.samples))
    results.add(
        "start() wall, median",
        c.ms(c.median(shared.samples)),
        c.ms(c.median(fresh.samples)),
        c.x(wall_ratio),
    )
    results.print()


if __name__ == "__main__":
    main()
