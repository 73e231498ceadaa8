"""A TCP proxy on 127.0.0.1 that breaks HTTP connections on purpose, for the network-fault tests.

It forwards every connection to an upstream port (a Streamable HTTP fixture server) and reads
the client's side as HTTP/1.1 requests (head, then a `Content-Length` body), so it can count
requests and break the connection of the ones a `Fault` picks:

- reset (RST: `SO_LINGER` 0, then close) when the request arrives, before the server sees it;
- or forward it and reset after N bytes of its response (N=0: once the server starts answering,
  so the server has the request and the client has no answer);
- `reset_all()` resets every open connection now (a blip between calls);
- `refuse()` closes the listening socket (new connections are refused by the kernel, and the open
  ones reset) until `accept()` opens it again on the same port.

It runs an asyncio loop on a daemon thread; every wait is bounded, and leaving the `with` block
stops it. Counters (`requests`, `resets`, `connections`) and each fault's `fired` event let a
test wait for what happened instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Fault", "FaultProxy"]

# Bound on the proxy's own start, stop and each command run on its loop.
_COMMAND_TIMEOUT = 10.0
# The largest request head the proxy reads before giving up on the connection.
_MAX_HEAD = 64 * 1024


@dataclass
class Fault:
    """Which requests to break and how. A request is picked when it contains every byte string of
    `match` (head and body) and, with `every`, when the proxy's request count is a multiple of it;
    `times` bounds how many it picks (None: no bound). `response_bytes` None resets the connection
    when the request arrives (the server never sees it); a number forwards the request and resets
    after that many bytes of its response. `response_match` instead resets when a chunk of the
    response contains it, before that chunk is forwarded (`b'"result"'`: the server has answered, so
    it ran the call)."""

    match: tuple[bytes, ...] = ()
    every: int | None = None
    response_bytes: int | None = 0
    response_match: bytes | None = None
    times: int | None = 1
    fired_count: int = 0
    fired: threading.Event = field(default_factory=threading.Event)

    def picks(self, request: bytes, number: int) -> bool:
        if self.times is not None and self.fired_count >= self.times:
            return False
        if self.every is not None and number % self.every != 0:
            return False
        return all(part in request for part in self.match)


class _Link:
    """One client connection and its upstream connection."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream = upstream
        self.reset_after: int | None = None
        """Bytes of the current response still to forward before resetting; None: no reset pending."""
        self.fault: Fault | None = None
        """The fault that will reset this connection, told once it has."""
        self.closed = False
        self.ended = asyncio.Event()


class FaultProxy:
    """A fault-injecting TCP proxy to `127.0.0.1:<upstream_port>`; use as a context manager."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self.requests = 0
        """HTTP requests seen from clients (every method), counted from the start."""
        self.resets = 0
        """Connections this proxy reset (by a fault, `reset_all()` or `refuse()`)."""
        self.connections = 0
        """Client connections accepted."""
        self.request_lines: list[bytes] = []
        """The first line of every request seen (`b"POST /mcp HTTP/1.1"`), in order."""
        self._faults: list[Fault] = []
        self._links: set[_Link] = set()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)

    # -- control (any thread) -----------------------------------------------------------------------

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        self._run(self._listen())
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self._run(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_COMMAND_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()

    @property
    def open_connections(self) -> int:
        """Client connections open now (a server's event stream, an idle connection kept for reuse)."""
        return len(self._links)

    def count(self, method: str) -> int:
        """How many requests with this HTTP method were seen."""
        prefix = method.encode() + b" "
        return sum(1 for line in list(self.request_lines) if line.startswith(prefix))

    def url(self, upstream_url: str) -> str:
        """`upstream_url` with its port replaced by the proxy's."""
        return upstream_url.replace(f":{self.upstream_port}/", f":{self.port}/", 1)

    def add(self, fault: Fault) -> Fault:
        """Start applying `fault` to the requests that arrive from now on."""
        self._loop.call_soon_threadsafe(self._faults.append, fault)
        return fault

    def remove(self, fault: Fault) -> None:
        self._loop.call_soon_threadsafe(lambda: fault in self._faults and self._faults.remove(fault))

    def reset_all(self) -> int:
        """Reset every open connection now; how many were reset."""
        return self._run(self._reset_all())

    def refuse(self) -> None:
        """Stop listening (new connections are refused) and reset the open ones, until `accept()`."""
        self._run(self._refuse())

    def accept(self) -> None:
        """Listen again on the same port."""
        self._run(self._listen())

    @contextlib.contextmanager
    def fault(self, fault: Fault) -> Iterator[Fault]:
        """`fault` applied for the duration of a `with` block."""
        self.add(fault)
        try:
            yield fault
        finally:
            self.remove(fault)

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(_COMMAND_TIMEOUT)

    # -- the loop -------------------------------------------------------------------------------------

    async def _listen(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _refuse(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()  # stops listening: new connections are refused
        await self._reset_all()
        if server is not None:
            # Since Python 3.12.1 wait_closed() also waits for the connections' handlers, which end once
            # their connections are reset: so it comes after the reset (bounded all the same).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), _COMMAND_TIMEOUT / 2)

    async def _shutdown(self) -> None:
        await self._refuse()
        # Every connection was reset: its tasks end by themselves (cancelling a connection's task
        # would make asyncio log it as an error).
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        if others:
            _done, pending = await asyncio.wait(others, timeout=_COMMAND_TIMEOUT)
            for task in pending:
                task.cancel()

    async def _reset_all(self) -> int:
        links = list(self._links)
        for link in links:
            self._reset(link)
        return len(links)

    def _reset(self, link: _Link) -> None:
        if link.closed:
            return
        link.closed = True
        self.resets += 1
        self._links.discard(link)
        sock = link.client.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        link.client.transport.abort()
        link.upstream.transport.abort()
        link.ended.set()
        if link.fault is not None:
            link.fault.fired.set()

    async def _serve(self, client_reader: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            upstream_reader, upstream = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client.transport.abort()
            return
        link = _Link(client, upstream)
        self._links.add(link)
        responses = asyncio.ensure_future(self._pump_responses(link, upstream_reader))
        try:
            await self._pump_requests(link, client_reader)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            if not link.closed:
                with contextlib.suppress(OSError):
                    upstream.write_eof()
            await asyncio.wait([responses], timeout=_COMMAND_TIMEOUT)
            if not link.closed:
                link.closed = True
                self._links.discard(link)
                client.transport.abort()
                upstream.transport.abort()
                link.ended.set()

    async def _pump_requests(self, link: _Link, reader: asyncio.StreamReader) -> None:
        """Forward the client's requests one at a time, applying the faults to each."""
        while not link.closed:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.LimitOverrunError:
                return
            except asyncio.IncompleteReadError:
                return
            if len(head) > _MAX_HEAD:
                return
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length) if length else b""
            self.requests += 1
            self.request_lines.append(head.split(b"\r\n", 1)[0])
            request = head + body
            fault = next((f for f in self._faults if f.picks(request, self.requests)), None)
            if fault is not None:
                fault.fired_count += 1
                link.fault = fault
                if fault.response_bytes is None:
                    self._reset(link)
                    return
                # Forwarded; `_pump_responses` resets the connection once the response got that far.
                link.reset_after = fault.response_bytes
                link.upstream.write(request)
                await link.upstream.drain()
                await link.ended.wait()
                return
            link.upstream.write(request)
            await link.upstream.drain()

    async def _pump_responses(self, link: _Link, reader: asyncio.StreamReader) -> None:
        """Forward the server's bytes, resetting once a pending fault's byte count is reached."""
        try:
            while not link.closed:
                data = await reader.read(65536)
                if not data:
                    with contextlib.suppress(OSError):
                        link.client.write_eof()
                    return
                if link.closed:
                    return
                fault = link.fault
                if fault is not None and fault.response_match is not None and fault.response_match in data:
                    self._reset(link)
                    return
                if link.reset_after is not None and (fault is None or fault.response_match is None):
                    if len(data) >= link.reset_after:
                        link.client.write(data[: link.reset_after])
                        with contextlib.suppress(OSError, ConnectionError):
                            await link.client.drain()
                        self._reset(link)
                        link.reset_after = None
                        return
                    link.reset_after -= len(data)
                link.client.write(data)
                await link.client.drain()
        except (OSError, ConnectionError):
            pass
