"""The stdio transport: a server child process of our own, speaking JSON-RPC lines on its pipes.

Owning the process (rather than going through the SDK's `stdio_client`) gives what the
connection needs and the SDK keeps to itself:

- the child's pid and its process tree (a process group of its own on POSIX, a Job Object on
  Windows: see `_os.processes`; Ctrl-C in a terminal does not reach it), so that closing
  can kill it however it behaves, from any thread, and a hub that must stop at once can kill
  it without waiting;
- its stderr, read line by line into the `mcp_sync.server.<name>` logger (never the user's
  terminal: a notebook's `sys.stderr` has no file descriptor to give a child anyway), with
  the last lines kept to explain an exit;
- its exit status, and the moment its stdout ends (a server that dies while idle says
  nothing else);
- a decoding policy: a line that is not valid UTF-8 is decoded with replacement characters
  and a warning, instead of ending the reader and leaving a session that looks alive;
- what it wrote to stdout that is not MCP before its first message, to explain a server that
  never answers, and to fail one that keeps writing such text instead of answering (see
  `NOT_MCP_PATIENCE`).

Shutdown follows the protocol's order, every wait bounded: close stdin, wait, SIGTERM to
the process group, wait, SIGKILL. Once the server's own process has gone, what is left of its
tree (helpers it started, which may outlive it) gets the same SIGTERM, wait, SIGKILL. Windows
has no soft stop for a tree: there the step after closing stdin kills the whole job.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from subprocess import PIPE

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from .._os.processes import ProcessTree, describe_returncode, process_command
from .._values.errors import ConfigError
from .._values.secrets import scrub

__all__ = [
    "NOT_MCP_LINE_LIMIT",
    "NOT_MCP_PATIENCE",
    "SIGTERM_GRACE",
    "STDERR_TAIL_MARKER",
    "STDIN_CLOSE_GRACE",
    "StdioProcess",
    "TransportStreams",
    "open_stdio",
]

logger = logging.getLogger("mcp_sync")

TransportStreams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]
"""What a transport yields to `mcp.Client`: the stream it reads messages from, the one it writes to."""

# Grace for a server to exit by itself after its stdin closes (the protocol's first step).
STDIN_CLOSE_GRACE = 1.0
# Grace after SIGTERM before SIGKILL (for the server, and for what it leaves in its process group); none
# on Windows, which has no SIGTERM for a tree.
SIGTERM_GRACE = 1.0
# Time for the loop to observe a SIGKILL; only an unkillable (stopped, traced) process runs it out.
_KILL_REAP_TIMEOUT = 1.0
# Time for the writer to flush messages already accepted (a cancellation, say) before stdin closes.
_WRITER_FLUSH_TIMEOUT = 0.5
# How often to look at the exit status while waiting for the child to end.
_EXIT_POLL_INTERVAL = 0.01
# The longest stdout or stderr line taken; a longer one is cut (stderr) or refused (stdout).
_LINE_LIMIT = 64 * 1024 * 1024
_STDERR_LINE_LIMIT = 64 * 1024
# What is kept of stderr to explain an exit: the last lines, within a byte budget.
STDERR_TAIL_LINES = 20
STDERR_TAIL_BYTES = 4096
# How long a server may keep writing lines of stdout that are not MCP messages (timed from the first after
# our first request, with no MCP message before them) before that proves it does not speak MCP there (see
# `StdioProcess._count_line`). A banner, however long, is written at once and proves nothing.
NOT_MCP_PATIENCE = 5.0
# The fewest such lines that prove it: a line now and then over that time may be a slow start's progress.
NOT_MCP_LINE_LIMIT = 10
# How much of the first such line an error message quotes.
_NOT_MCP_QUOTE_CHARS = 200
# What introduces that tail in an error message (the command line shortens it to the line that says why).
STDERR_TAIL_MARKER = "; its stderr ended with:"
# Time closing gives the stderr reader to take the last lines of a child that has exited.
_STDERR_DRAIN_TIMEOUT = 0.5
# Time for the pipes of a child that has exited to close (only the loop's own bookkeeping is waited for).
_PIPES_CLOSE_TIMEOUT = 0.5


class StdioProcess:
    """The child as the connection sees it: pid, exit status, the tail of its stderr, a kill switch."""

    def __init__(self, server_name: str) -> None:
        self.server_name = server_name
        self.pid: int | None = None
        self.returncode: int | None = None
        self._child: anyio.abc.Process | None = None
        self._stderr_closed: anyio.Event | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._undecodable_lines = 0
        self.tree = ProcessTree()
        self._saw_message = False
        self._not_mcp_lines = 0
        self._first_not_mcp: str | None = None
        self._first_request_at: float | None = None
        self._lines_since_request = 0
        self._writing_since: float | None = None
        self._proved_not_mcp = False

    async def wait_for_exit(self, timeout: float) -> None:
        """Wait (bounded) until the child has exited and its stderr has been read to the end, so that
        `describe_end()` can say why it went."""
        with anyio.move_on_after(timeout):
            if self._stderr_closed is not None:
                await self._stderr_closed.wait()
            while self._child is not None and self._child.returncode is None:
                await anyio.sleep(_EXIT_POLL_INTERVAL)
        if self._child is not None and self.returncode is None:
            self.returncode = self._child.returncode

    def describe_end(self) -> str:
        """What ended the child, for an error message: its exit status and the last lines of its stderr."""
        if self.pid is None:
            return ""
        text = f" (the process {self.exit_description() or 'closed its output'})"
        not_mcp = self.not_mcp_note()
        if not_mcp:
            text += f"; {not_mcp}"
        tail = self.stderr_tail()
        if tail:
            text += f"{STDERR_TAIL_MARKER}\n" + "\n".join(f"    {line}" for line in tail.splitlines())
        return text

    def not_mcp_note(self) -> str:
        """`it wrote 3 lines to stdout that are not MCP messages, the first: '...'` while no line of stdout
        has been an MCP message, else "": why a server that never answered did not."""
        if self._saw_message or self._first_not_mcp is None:
            return ""
        count = self._not_mcp_lines
        first = self._first_not_mcp
        if count == 1:
            return f"it wrote 1 line to stdout that is not an MCP message: '{first}'"
        return f"it wrote {count} lines to stdout that are not MCP messages, the first: '{first}'"

    def _sent_request(self) -> None:
        """Note the time our first message reached the server's stdin (its answer is due from then)."""
        if self._first_request_at is None:
            self._first_request_at = anyio.current_time()

    def _count_line(self, line: str, parsed: SessionMessage | Exception) -> bool:
        """Count a line of stdout read now; True (once) when the lines that are not MCP prove that the
        server will not answer: with no MCP message before them, they have kept coming for
        `NOT_MCP_PATIENCE` since the first of them after our first request, `NOT_MCP_LINE_LIMIT` at least.

        That is a program that is not an MCP server and logs to stdout, or a server that writes its log
        there and never reads its stdin. Lines written at once prove nothing, however many: a
        server may print a banner and then answer (every host passes over such lines, and so does the
        session); they are named in the error if the server then exits or the connection times out.
        After the first MCP message nothing is counted: a session that works is not ended for noise.
        """
        if not isinstance(parsed, Exception):
            self._saw_message = True
            return False
        if self._saw_message:
            return False
        self._not_mcp_lines += 1
        if self._first_not_mcp is None:
            self._first_not_mcp = _quotable(line)
        if self._first_request_at is None or self._proved_not_mcp:
            return False
        now = anyio.current_time()  # only here: the clock is not read for the lines of a working session
        self._lines_since_request += 1
        if self._writing_since is None:
            self._writing_since = now
        self._proved_not_mcp = (
            self._lines_since_request >= NOT_MCP_LINE_LIMIT and now - self._writing_since >= NOT_MCP_PATIENCE
        )
        return self._proved_not_mcp

    def kill(self) -> None:
        """Kill the child's process tree now, from any thread, whether or not the child itself is
        still there (its helpers may be); a no-op once the tree is known to be empty."""
        self.tree.kill()

    def stderr_tail(self) -> str:
        """The last lines the child wrote to stderr, at most `STDERR_TAIL_BYTES` of them."""
        lines: list[str] = []
        size = 0
        for line in reversed(self._stderr_tail):
            size += len(line.encode()) + 1
            if size > STDERR_TAIL_BYTES:
                break
            lines.append(line)
        return "\n".join(reversed(lines))

    def exit_description(self) -> str | None:
        """'exited with status 3' or 'was killed by SIGKILL', once the child has been reaped."""
        code = self.returncode
        if code is None:
            return None
        return describe_returncode(code)


@asynccontextmanager
async def open_stdio(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    process: StdioProcess,
    on_end: Callable[[], None],
    on_not_mcp: Callable[[], None],
) -> AsyncIterator[TransportStreams]:
    """Start the server and yield its message streams; `on_end()` fires once its stdout has ended,
    `on_not_mcp()` once the text that is not MCP it keeps writing proves it will not answer (see
    `StdioProcess._count_line`).

    Raises `OSError` when the command cannot be started (a missing executable: FileNotFoundError), and
    `ConfigError` for an argument a Windows batch launcher cannot be given (a line break).
    """
    try:
        started = process_command(command, args)  # on Windows a .cmd launcher's line for cmd.exe
    except ConfigError as exc:
        raise ConfigError(f"server {process.server_name!r}: {exc}") from None
    child = await anyio.open_process(
        started,
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        env=dict(env),
        cwd=cwd,
        **ProcessTree.start_options(),
    )
    process.pid = child.pid
    process.tree.adopt(child.pid)
    process._child = child
    # No awaits until the task group holds the child: a cancellation in the gap would leak it.
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    stderr_done = process._stderr_closed = anyio.Event()
    shutting_down = False
    server_logger = logging.getLogger(f"mcp_sync.server.{process.server_name}")

    async def read_stdout() -> None:
        assert child.stdout is not None
        try:
            async with read_writer:
                async for line in _lines(child.stdout, _LINE_LIMIT):
                    if not line.strip():
                        continue
                    text = _decode_stdout(line, process)
                    parsed = _parse(text)
                    if process._count_line(text, parsed):
                        on_not_mcp()
                    try:
                        await read_writer.send(parsed)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # our own shutdown closed the pipe under the read
        except ValueError as exc:  # a line over the limit: the stream cannot be resynchronised
            logger.warning("server %r wrote an over-long line to stdout: %s", process.server_name, exc)
        finally:
            if not shutting_down:  # the child ended (or closed stdout) by itself
                on_end()

    async def read_stderr() -> None:
        assert child.stderr is not None
        try:
            async for raw in _lines(child.stderr, _STDERR_LINE_LIMIT, cut=True):
                text = raw.decode(errors="replace").rstrip()
                process._stderr_tail.append(text)
                server_logger.debug("%s", text)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            stderr_done.set()

    async def write_stdin() -> None:
        assert child.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    payload = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await child.stdin.send((payload + "\n").encode())
                    process._sent_request()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The child may still run: close the read side so the session sees the end, not a hang.
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def shut_down() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(_WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        try:
            await _stop(child, process)
        finally:
            process.tree.close()
        with anyio.move_on_after(_STDERR_DRAIN_TIMEOUT):
            await stderr_done.wait()
        if child.returncode is not None:
            # Closes the pipes themselves too, which closing the streams does not: a pipe another process
            # still holds open (a helper outside the tree) would be left to asyncio's finalizer, which
            # fails once the loop has closed. Its wait is for the child, which has exited.
            with (
                anyio.move_on_after(_PIPES_CLOSE_TIMEOUT),
                contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError),
            ):
                await child.aclose()
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await stream.aclose()
        await read_writer.aclose()
        await write_reader.aclose()

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(read_stdout)
        task_group.start_soon(read_stderr)
        task_group.start_soon(write_stdin)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            # Shielded so that a cancelled owner still stops the child; every wait inside is bounded.
            with anyio.CancelScope(shield=True):
                await shut_down()
            task_group.cancel_scope.cancel()


async def _stop(child: anyio.abc.Process, process: StdioProcess) -> None:
    """Close stdin, then SIGTERM, then SIGKILL the process tree, each after its grace (Windows: close
    stdin, then kill); then stop what is left of the tree."""
    assert child.stdin is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await child.stdin.aclose()
    terminated_at: float | None = None
    if not await _exited(child, process, STDIN_CLOSE_GRACE):
        process.tree.terminate()
        terminated_at = anyio.current_time()
        if not process.tree.has_soft_stop or not await _exited(child, process, SIGTERM_GRACE):
            process.tree.kill()
            if not await _exited(child, process, _KILL_REAP_TIMEOUT):
                logger.warning(
                    "server %r (pid %d) survived SIGKILL; abandoning it", process.server_name, child.pid
                )
                return
    await _stop_group(process, terminated_at)


async def _stop_group(process: StdioProcess, terminated_at: float | None) -> None:
    """SIGTERM (unless the tree had it at `terminated_at`), then SIGKILL after the grace, the processes
    left in the tree of a server that has gone."""
    if terminated_at is None:
        if not process.tree.terminate():
            return  # the usual end: nothing left
        logger.debug("server %r left processes in its group; stopping them", process.server_name)
        terminated_at = anyio.current_time()
    if process.tree.has_soft_stop and await _group_ended(
        process, terminated_at + SIGTERM_GRACE - anyio.current_time()
    ):
        return
    process.tree.kill()
    if not await _group_ended(process, _KILL_REAP_TIMEOUT):
        logger.warning(
            "processes of server %r (process tree of pid %d) survived being killed; abandoning them",
            process.server_name,
            process.pid,
        )


async def _group_ended(process: StdioProcess, timeout: float) -> bool:
    """Whether the process tree is empty within `timeout` (checked at least once)."""
    with anyio.move_on_after(max(timeout, 0.0)):
        while process.tree.alive():
            await anyio.sleep(_EXIT_POLL_INTERVAL)
        return True
    return not process.tree.alive()


async def _exited(child: anyio.abc.Process, process: StdioProcess, timeout: float) -> bool:
    """Whether the child ended within `timeout`, polling its exit status.

    Not `child.wait()`: on asyncio it also waits for the pipes to close, and a grandchild that
    inherited them would make an exited server look hung.
    """
    with anyio.move_on_after(timeout):
        while child.returncode is None:
            await anyio.sleep(_EXIT_POLL_INTERVAL)
    process.returncode = child.returncode
    return child.returncode is not None


async def _lines(
    stream: anyio.abc.ByteReceiveStream, limit: int, *, cut: bool = False
) -> AsyncIterator[bytes]:
    """The stream's lines (without the newline); the last one even without a newline."""
    buffer = bytearray()
    while True:
        try:
            chunk = await stream.receive()
        except anyio.EndOfStream:
            break
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            yield bytes(buffer[:end])
            del buffer[: end + 1]
        if len(buffer) > limit:
            if not cut:
                raise ValueError(f"a line longer than {limit} bytes")
            yield bytes(buffer[:limit])
            buffer.clear()
    if buffer:
        yield bytes(buffer)


def _decode_stdout(line: bytes, process: StdioProcess) -> str:
    try:
        return line.decode()
    except UnicodeDecodeError as exc:
        process._undecodable_lines += 1
        logger.warning(
            "server %r wrote a line that is not valid UTF-8 (byte %d); decoded it with replacement "
            "characters (%d such lines so far)",
            process.server_name,
            exc.start,
            process._undecodable_lines,
        )
        return line.decode(errors="replace")


def _quotable(line: str) -> str:
    """A line of the server's output as an error may quote it: scrubbed of secrets while whole (a cut
    could split a secret, and escaping could change one, so that it no longer matches), then cut to
    `_NOT_MCP_QUOTE_CHARS`, with control characters shown as escapes (never sent to a terminal)."""
    text = scrub(line.strip())
    if len(text) > _NOT_MCP_QUOTE_CHARS:
        text = text[: _NOT_MCP_QUOTE_CHARS - 1] + "…"
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _parse(line: str) -> SessionMessage | Exception:
    """One JSON-RPC message, or the parse error as a value for the session to report."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc
