"""What the task tests share: the reference server over Streamable HTTP, a TCP relay whose connections
can be cut (the connection drops, the server stays), and the handlers a user would give a hub."""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import subprocess
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from mcp_sync import ElicitationRequest, ElicitationResponse, SamplingRequest, SamplingResponse
from tests.support import ReferenceServers, wait_until

RESEARCH = "simulate-research-query"
ASYNC_TOOLS = ("trigger-elicitation-request-async", "trigger-sampling-request-async")
"""Offered only to a client that runs the server's requests as tasks (not declared yet)."""


class Answers:
    """The handlers a user would give: elicitation (form and URL) and sampling, recording what came."""

    def __init__(self) -> None:
        self.elicitations: list[ElicitationRequest] = []
        self.samplings: list[SamplingRequest] = []
        self._lock = threading.Lock()

    def elicit(self, request: ElicitationRequest) -> ElicitationResponse | dict[str, Any]:
        with self._lock:
            self.elicitations.append(request)
        if request.mode == "url":
            return ElicitationResponse.accept()
        properties = request.requested_schema.get("properties", {})
        if "interpretation" in properties:  # the research query's clarification: pick the second option
            return {"interpretation": properties["interpretation"]["oneOf"][1]["const"]}
        return {"name": "Ada Lovelace", "check": True, "email": "ada@example.com"}

    def sample(self, request: SamplingRequest) -> SamplingResponse:
        with self._lock:
            self.samplings.append(request)
        return SamplingResponse(text="forty-two", model="reference-test-model")

    def hub_options(self) -> dict[str, Any]:
        return {"elicitation": self.elicit, "sampling": self.sample}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class EverythingHttp:
    """server-everything over Streamable HTTP (`streamableHttp`, its port from `PORT`), for `with` blocks.
    `fast`: on its fast clock (`ReferenceServers.everything_argv`)."""

    def __init__(
        self, reference: ReferenceServers, folder: Path, startup_timeout: float = 30.0, *, fast: bool = False
    ) -> None:
        self._argv = reference.everything_argv("streamableHttp", fast=fast)
        self._stderr_path = folder / "everything-http.stderr"
        self._startup_timeout = startup_timeout
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> EverythingHttp:
        for _attempt in range(3):  # a port taken between probing and listening: try another
            self.port = _free_port()
            with self._stderr_path.open("wb") as stderr:
                self._process = subprocess.Popen(
                    self._argv,
                    env={**os.environ, "PORT": str(self.port)},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    start_new_session=True,
                )
            try:
                wait_until(
                    self._listening_or_gone,
                    timeout=self._startup_timeout,
                    message="server-everything did not listen",
                )
            except BaseException:
                self.__exit__()  # a server that never said it listens must not outlive the test
                raise
            if self._process.poll() is None:
                return self
        raise AssertionError(f"server-everything could not listen: {self._stderr()}")

    def _listening_or_gone(self) -> bool:
        assert self._process is not None
        return self._process.poll() is not None or "listening on port" in self._stderr()

    def _stderr(self) -> str:
        return self._stderr_path.read_text(errors="replace") if self._stderr_path.exists() else ""

    def __exit__(self, *exc: object) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


class Relay:
    """A TCP relay on 127.0.0.1 to `port`: `cut()` resets every connection through it (the client's
    connections drop; the server and its MCP sessions stay), and new connections are relayed again."""

    def __init__(self, port: int) -> None:
        self._target = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self.cuts = 0
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, args=(self._listener,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> Relay:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closed.set()
        self._stop_listening()
        self.cut()
        self._thread.join(5)

    def go_down(self) -> None:
        """Refuse new connections and reset the open ones: to the client the server is unreachable."""
        self._stop_listening()
        self._thread.join(5)
        self.cut()

    def _stop_listening(self) -> None:
        # A close() alone leaves the socket listening while the accept thread is blocked in accept()
        # (Linux): the port stays taken. shutdown() wakes that accept() and stops the listening.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()

    def come_back(self) -> None:
        """Relay again, on the same port."""
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._thread = threading.Thread(target=self._accept, args=(self._listener,), daemon=True)
        self._thread.start()

    def connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    def cut(self) -> None:
        """Reset every open connection (RST, as a dropped network does), both ways."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
            self.cuts += 1
        for pair in pairs:
            for end in pair:
                with contextlib.suppress(OSError):
                    end.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    end.close()

    def _accept(self, listener: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                client, _address = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        with selectors.DefaultSelector() as selector:
            try:  # a cut may have closed them already
                selector.register(client, selectors.EVENT_READ, upstream)
                selector.register(upstream, selectors.EVENT_READ, client)
                while True:
                    for key, _events in selector.select(timeout=1.0):
                        source: socket.socket = key.fileobj  # type: ignore[assignment]
                        data = source.recv(65536)
                        if not data:
                            return
                        key.data.sendall(data)
                    if self._closed.is_set():
                        return
            except (OSError, ValueError):
                return
            finally:
                for end in (client, upstream):
                    with contextlib.suppress(OSError):
                        end.close()


def http_entry(name: str, url: str, **overrides: Any) -> dict[str, Any]:
    """An mcp_sync Streamable HTTP entry for `url`."""
    return {"server_name": name, "transport": "streamable-http", "url": url, **overrides}
