"""The owner of one server's session, on the server's loop thread.

One task (the owner) enters the `mcp.Client`, registers the first listing, keeps the tools
in sync, waits until it is told to stop or the transport ends, and leaves the `Client` in
the same task, as the SDK requires. Calls are tasks of their own on the same loop, so many
callers share the session. Everything here runs on the loop thread; the connection's
caller-side methods only schedule onto it.

How it ends: `request_stop()` (graceful: calls in flight are cancelled on the server, the
transport closes stdin and waits) or `request_stop(abort=True)` (the child is killed at
once: for a server still in its handshake, or a hub that must stop now), or the transport
ends by itself. The end state is reached once, before the (possibly slow) teardown, and no
call starts after it. A stdio server that goes away is described by how its process ended
(exit status or signal, last stderr lines); a call that lost it waits (bounded) for that end,
so it fails with that description, and the state says disconnected by the time it does.

Why one file of over 400 lines: it is one owner task's whole life (connect, list, stay in sync,
call, end), and each step's bounded waits depend on how the others end.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, Protocol

import anyio
import httpx2
import mcp_types as types
import pydantic
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._auth.server_auth import ServerAuth
from .._config import HttpServerConfig, ServerConfig, SseServerConfig
from .._runtime.callbacks import CallbackDispatcher, ProgressCallback
from .._runtime.calls import LoopCalls, request_failure, timed_out
from .._runtime.lifecycle import ConnectionState
from .._values.errors import (
    AuthError,
    MCPSyncError,
    ServerDisconnectedError,
    TaskCancelRefusedError,
    ToolCallError,
    ToolCallMayHaveRunError,
    ToolCallTimeoutError,
    describe,
)
from .._values.naming import server_label
from .._values.results import ToolResult, complete_result_of, from_call_tool_result
from .._values.secrets import SecretHandle, scrub
from .._values.tasks import TaskInfo
from .._values.tool import Tool
from .features import ServerFeatures
from .leases import ToolLease
from .stdio import SIGTERM_GRACE, STDIN_CLOSE_GRACE, StdioProcess
from .tasks.extension import TasksExtension, server_offers_tasks
from .tasks.legacy import LegacyTaskWire
from .tasks.runner import (
    Aftercare,
    StatusUpdates,
    cancel_task,
    follow_task,
    not_found,
    run_task,
    start_task,
    wire_for,
)
from .tasks.wire import TaskFailure, TaskWire
from .tool_sync import ToolSync
from .transports import HttpObservations, answer_lost, open_transport, warn_legacy_sse
from .warm_up import RESULT_VALIDATION, ValidatorWarmer, build_result_checks

__all__ = ["Session", "SessionHost"]

logger = logging.getLogger("mcp_sync")

# At the end, how long calls being cancelled get to send their cancellation before the transport closes.
_CANCEL_FLUSH_TIMEOUT = 1.0
# At the end, how long stopped task calls get to cancel their tasks (a task being created: once the server
# gives its id) before the transport closes. On a stop, both flushes share what is left of the connection's
# `CLOSE_TIMEOUT` (`_CLOSE_BUDGET`) once the transport's own stop is set aside (`_flush_deadline`).
_AFTERCARE_FLUSH_TIMEOUT = 2.0
# The bound `ServerConnection.join` gives a stop (`_hub.connection.CLOSE_TIMEOUT`, not importable here).
_CLOSE_BUDGET = 4.0
# What a stdio server's stop takes beyond its graces: killing and reaping one that ignored both.
_STDIO_STOP_SLACK = 0.3
# What an HTTP transport's close takes at most (ending its session, closing its client, the loop's exit).
_HTTP_STOP_ALLOWANCE = 1.0
# When a stdio server goes away by itself, how long to wait for its exit status and last stderr lines.
_EXIT_DETAILS_TIMEOUT = 0.5
# How long a call that lost its stdio server waits for the session to end with those details (the owner
# waits `_EXIT_DETAILS_TIMEOUT` for them, then ends it); past this the call fails without them.
_CALL_LOSS_TIMEOUT = _EXIT_DETAILS_TIMEOUT + 2.0
# A call without a timer of its own on the loop enters this instead of `asyncio.timeout`.
_NO_TIMER = contextlib.nullcontext()
# How long after it started sessions wait, before they say ready, for the import of result validation
# (`_server.warm_up`): once it has run that long, no session waits for it any more.
_WARM_UP_TIMEOUT = 5.0


class SessionHost(Protocol):
    """What a session reads from and reports to: its connection (`ServerConnection`)."""

    name: str
    original_name: str | None
    config: ServerConfig
    protocol_version: str | None
    server_info: types.Implementation | None

    @property
    def lease(self) -> ToolLease | None: ...

    @property
    def state(self) -> ConnectionState: ...

    def _set_state(self, state: ConnectionState, error: BaseException | None = None) -> None: ...

    def call_soon(self, callback: Callable[..., object], *args: Any) -> bool: ...

    def not_ready_error(self, public_name: str) -> MCPSyncError: ...

    def make_auth(self) -> httpx2.Auth | None: ...

    @property
    def features(self) -> ServerFeatures | None: ...

    @property
    def tools(self) -> list[Tool]: ...


class Session:
    """The loop-side half of a `ServerConnection`: its owner task and its calls."""

    def __init__(self, connection: SessionHost, dispatcher: CallbackDispatcher) -> None:
        self._connection = connection
        self._name = connection.name
        self._label = server_label(connection.name, connection.original_name)
        """The server as messages name it: with the name its host's file gave it, when that differs."""
        self._config = connection.config
        self._dispatcher = dispatcher
        self.process = StdioProcess(self._name)
        self.http = HttpObservations()
        self.client: Client | None = None
        self._offers_tasks = False
        """Whether the server may answer any call with a task (`server_offers_tasks` of `client`)."""
        self._sync: ToolSync | None = None
        self._owner: asyncio.Task[None] | None = None
        self._owner_cancelled = False
        """The owner was cancelled to end the session (`_end_owner`): a second cancel would cut short the
        teardown it is doing, shielded only from anyio's own cancellation."""
        self._wake: asyncio.Event | None = None
        self._stopping = False
        self._output_ended = False
        self._ended = False
        self._ended_event: asyncio.Event | None = None
        self._end_cause: BaseException | None = None
        self._loss: tuple[BaseException, str] | None = None
        """The end cause `_lose` made, and its problem ("closed its connection (...)")."""
        self.calls = LoopCalls(connection.call_soon, self._abandoned)
        """The tool calls in flight; callers hand theirs over with `calls.hand_over(..., self.call, ...)`."""
        self.secrets: SecretHandle | None = None
        self._auth: httpx2.Auth | None = None
        self._task_wire: tuple[Client, TaskWire] | None = None
        """The task wire of the current client's protocol era, made at the first task."""
        self.aftercare = Aftercare()
        """The `tasks/cancel`s that stopped calls left to send; the session's end waits (bounded) for them."""
        self._stop_requested_at: float | None = None
        """When a stop was first asked for (monotonic): the end's flushes fit in what is left of its bound."""
        self._handing_over = False
        """Stopped to be replaced by a connection to the same server: the tasks calls follow go on there."""

    # -- the owner task ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Connect, list, keep in sync until told to stop or the transport ends; then tear down."""
        self._owner = asyncio.current_task()
        self._wake = asyncio.Event()
        self._ended_event = asyncio.Event()
        try:
            if self._stopping:  # closed before the loop even started
                return
            RESULT_VALIDATION.start()
            async with AsyncExitStack() as stack:
                try:
                    async with asyncio.timeout(self._config.connect_timeout) as deadline:
                        await self._connect(stack)
                except TimeoutError:
                    not_mcp = self.process.not_mcp_note()
                    raise TimeoutError(
                        scrub(
                            f"server {self._label} did not connect and list its tools within "
                            f"{self._config.connect_timeout:g} s (connect_timeout_ms)"
                            + (f"; {not_mcp}" if not_mcp else "")
                        )
                    ) from None
                # Worth waiting for (first calls then skip the import), but never past the connect deadline:
                # the server is connected and listed, and without it the first calls import lazily.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout_at(deadline.when()):
                        await RESULT_VALIDATION.wait(_WARM_UP_TIMEOUT)
                if self.client is not None:
                    build_result_checks(self.client.protocol_version)
                self._connection._set_state("ready")
                await self._wake.wait()
                if self._output_ended and not self._stopping and self._end_cause is None:
                    await self.process.wait_for_exit(_EXIT_DETAILS_TIMEOUT)
                    self._lose("closed its connection" + self.process.describe_end())
                self._end(self._end_cause)
                await self._flush_cancellations()
        except BaseException as exc:
            self._end(self._end_cause or _unwrap(exc))
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
        finally:
            self._end(None)
            if self.secrets is not None:
                self.secrets.release()
            if isinstance(self._auth, ServerAuth):
                self._auth.release_secrets()

    async def _connect(self, stack: AsyncExitStack) -> None:
        auth = self._auth = self._connection.make_auth()
        if isinstance(auth, ServerAuth):
            auth.on_failure = self._auth_failed
        features = self._connection.features
        try:
            client = await self._open_client(stack, auth)
        except Exception as streamable_error:
            if not self._falls_back_to_sse():
                raise
            assert isinstance(self._config, HttpServerConfig)
            logger.info(
                "server %r answered HTTP %s to Streamable HTTP; trying the legacy SSE transport, "
                "as the host that wrote its entry does",
                self._name,
                self.http.first_post_status,
            )
            streamable = (self._config, self.http)
            self._config, self.http = self._config.as_sse(), HttpObservations()
            try:
                client = await self._open_client(stack, auth, sse_notice=False)
            except Exception:
                # Neither transport: what Streamable HTTP was told says more than the SSE attempt.
                self._config, self.http = streamable
                raise streamable_error from None
            warn_legacy_sse(self._name)  # only now: a fallback that failed says nothing about SSE
        self._offers_tasks = server_offers_tasks(client)
        self.client = client  # calls are accepted from here on, so a tool is callable once announced
        self._connection.protocol_version = client.protocol_version
        self._connection.server_info = client.server_info
        assert self._connection.lease is not None, "a connection starts only once its name is reserved"
        warmer = ValidatorWarmer(client, lambda: self._connection.tools, _WARM_UP_TIMEOUT)
        sync = self._sync = ToolSync(
            self._config, self._connection.lease, on_synced=warmer.listed, ended=self._transport_over
        )
        task_group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(task_group.cancel_scope.cancel)
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # Subscribe before the first listing, so no change falls between the two.
            await task_group.start(functools.partial(sync.listen, client, on_lost=self._subscription_lost))
        await sync.sync(client, initial=True)
        task_group.start_soon(sync.resync_when_dirty, client)
        task_group.start_soon(warmer.run)
        if features is not None:
            await features.connected(client, task_group)

    async def _open_client(
        self, stack: AsyncExitStack, auth: httpx2.Auth | None, *, sse_notice: bool = True
    ) -> Client:
        """The SDK client on the configured transport, connected (initialized)."""
        transport = open_transport(
            self._config,
            process=self.process,
            http=self.http,
            on_end=self._transport_ended,
            on_refused=self.check_alive,
            on_not_mcp=self._not_speaking_mcp,
            auth=auth,
            sse_notice=sse_notice,
        )
        features = self._connection.features
        options = features.client_options() if features is not None else {}
        if features is not None:
            transport = features.wrap_transport(transport)
        if isinstance(self._config, SseServerConfig):
            options["mode"] = "legacy"  # the SSE transport predates `server/discover`: no probe, no wait
        # Declared on 2026-07-28 sessions only (the SDK leaves it out of a 2025 handshake): a server may
        # then answer any call with a task, which the extension follows to its result.
        options["extensions"] = [TasksExtension()]
        client = Client(transport, cache=None, message_handler=self._on_message, **options)
        await stack.enter_async_context(client)
        return client

    def _falls_back_to_sse(self) -> bool:
        """A host entry without an explicit transport whose server answered the first POST with a 4xx
        (401 is a sign-in, not a transport question): the hosts then try SSE, and so do we."""
        status = self.http.first_post_status
        return (
            isinstance(self._config, HttpServerConfig)
            and self._config.sse_fallback
            and status is not None
            and 400 <= status < 500
            and status != 401
            and not self._stopping
        )

    def request_stop(self, abort: bool, handing_over: bool | None = None) -> None:
        """Stop gracefully, or (`abort`, or still connecting) kill the child and cancel the owner now.
        `handing_over`: a new connection to the same server replaces this one, and the calls following
        a task go on with it there: their tasks are not cancelled (None: as said before)."""
        if not self._stopping:
            self._stop_requested_at = time.monotonic()
        self._stopping = True
        if handing_over is not None:
            self._handing_over = handing_over
        if abort or self._connection.state == "connecting":
            self.process.kill()
            self._end_owner()
        if self._wake is not None:
            self._wake.set()

    def cancel_owner(self) -> None:
        """The last resort for a session whose end is stuck: cancel the owner, also in its teardown."""
        if self._owner is not None:
            self._owner.cancel()

    def _end_owner(self) -> None:
        """Cancel the owner to end the session now, once: a later cause finds it ending already. Another
        `Task.cancel()` would reach into the transport's shielded teardown (the shield holds off anyio's
        cancellation only) and abandon the child before it is reaped and its pipes closed."""
        if self._owner is not None and not self._owner_cancelled:
            self._owner_cancelled = True
            self._owner.cancel()

    def check_alive(self) -> None:
        """Something suggests the server is gone: re-list, which fails and ends the session if it is."""
        if self._sync is not None and not self._stopping:
            self._sync.mark_dirty()

    def _auth_failed(self, error: BaseException) -> None:
        """The server needs a sign-in (or refused the credentials): end the session with that as its cause,
        at once even while connecting (the SDK would otherwise wait for an answer that never comes)."""
        if self._stopping:
            return
        self._end_cause = self._end_cause or error
        if self._connection.state == "connecting":
            self._end_owner()
        elif self._wake is not None:
            self._wake.set()

    def _not_speaking_mcp(self) -> None:
        """The server keeps writing text that is not MCP to its stdout instead of answering: while connecting,
        fail now with what it wrote, rather than wait for an answer that will not come (see
        `StdioProcess._count_line`)."""
        if self._stopping or self._connection.state != "connecting" or self._owner is None:
            return
        self._end_cause = self._end_cause or ServerDisconnectedError(
            scrub(f"server {self._label} does not speak MCP on its stdout: {self.process.not_mcp_note()}")
        )
        self._end_owner()

    def _transport_ended(self) -> None:
        self._output_ended = True
        if self.process.pid is not None:  # stdio: the owner waits for how the process ended
            if self._wake is not None:
                self._wake.set()
        elif self._connection.state == "connecting" and self._owner is not None and not self._stopping:
            # HTTP, in the handshake: its answer can no longer come (over SSE a refused message POST
            # stops the SDK's writer), so fail now, with what the transport saw, rather than wait it out.
            ended = self._end_details()
            self._end_cause = self._end_cause or ServerDisconnectedError(
                scrub(f"server {self._label} went away while connecting{ended}")
            )
            self._end_owner()
        else:  # HTTP: nothing more to learn
            self._lose("closed its connection")

    def _transport_over(self) -> bool:
        """Whether the transport has ended (or is being closed): failing requests then say nothing new."""
        return self._output_ended or self._stopping or self._ended

    def _subscription_lost(self, problem: str) -> None:
        if self._output_ended and self.process.pid is not None:
            return  # the stdio server's output ended: the owner says how its process ended
        self._lose(problem)

    def _lose(self, problem: str) -> None:
        """End the session as disconnected, with `problem` as the cause."""
        if not self._stopping and self._end_cause is None:
            self._end_cause = ServerDisconnectedError(scrub(f"server {self._label} {problem}"))
            self._loss = (self._end_cause, problem)
        if self._wake is not None:
            self._wake.set()

    def _end(self, cause: BaseException | None) -> None:
        """Reach the end state once: closed if we stopped it, failed or disconnected otherwise; calls in
        flight are cancelled now, not after the transport's (possibly slow) shutdown."""
        if self._ended:
            return
        self._ended = True
        if self._ended_event is not None:
            self._ended_event.set()
        self.client = None
        if self._stopping:
            self._connection._set_state("closed")
        elif self._connection.state == "connecting":
            self._connection._set_state("failed", _describe_failure(self._label, cause, self._end_details()))
        else:
            self._connection._set_state("disconnected", _describe_loss(self._label, cause))
        self.calls.end()

    def _end_details(self) -> str:
        """What the transport saw of the end: the child's exit and stderr, or the last HTTP error."""
        if self.process.pid is not None:
            return self.process.describe_end()
        return f" ({self.http.problem})" if self.http.problem else ""

    async def _flush_cancellations(self) -> None:
        """Give cancelled calls a moment to send their cancellation, and their tasks' `tasks/cancel`,
        before the transport closes."""
        deadline = self._flush_deadline()
        tasks = self.calls.tasks()
        if tasks:
            await asyncio.wait(tasks, timeout=min(_CANCEL_FLUSH_TIMEOUT, _left(deadline)))
        await self.aftercare.flush(min(_AFTERCARE_FLUSH_TIMEOUT, _left(deadline)))

    def _flush_deadline(self) -> float | None:
        """On a stop, when the flushes must be over (monotonic) for the transport's stop to still fit in
        the connection's close bound; None when the session ended by itself (nobody waits on a bound)."""
        if self._stop_requested_at is None:
            return None
        stop = (
            STDIN_CLOSE_GRACE + SIGTERM_GRACE + _STDIO_STOP_SLACK
            if self.process.pid is not None
            else _HTTP_STOP_ALLOWANCE
        )
        return self._stop_requested_at + _CLOSE_BUDGET - stop

    async def _on_message(self, message: Any) -> None:
        # Spawned off the read loop by the SDK: only mark dirty; the re-sync task does the work.
        if isinstance(message, types.ToolListChangedNotification) and self._sync is not None:
            self._sync.mark_dirty()
        elif isinstance(message, types.ProgressNotification):
            wire = self._task_wire[1] if self._task_wire is not None else None
            if isinstance(wire, LegacyTaskWire):  # a task call's progress, after its tools/call returned
                await wire.progress_notified(message.params)
        elif self._connection.features is not None:
            self._connection.features.on_message(message)

    # -- calls -------------------------------------------------------------------------------------

    def _abandoned(self, label: str) -> BaseException:
        """The error of a call cut short by the session's end: why it ended, if that is known."""
        if self._loss is not None and self._loss[0] is self._end_cause:
            during = f"the call to {label}" if label else "a call"
            return ServerDisconnectedError(
                scrub(f"server {self._label} disconnected during {during}: it {self._loss[1]}"),
                tool=label or None,
            )
        error: BaseException = self._end_cause or ServerDisconnectedError(
            f"server {self._label} is {self._connection.state}; the call was abandoned"
        )
        # A call that ended the session for want of a sign-in (a 403 insufficient_scope) says so itself.
        return error if isinstance(error, ToolCallError | AuthError) else ServerDisconnectedError(str(error))

    async def call(
        self,
        raw_name: str,
        arguments: dict[str, Any],
        public_name: str,
        timeout: float | None,
        progress: ProgressCallback | None,
        replay: bool | None = None,
    ) -> ToolResult:
        """One tool call (a task of `calls`): its result, or its typed error. `timeout` None: no timer
        here (a blocking caller keeps the time itself and abandons the call when it runs out).
        `replay`: whether a call whose connection broke is sent again (None: the server's policy)."""
        client = self.client
        if client is None:
            raise self._connection.not_ready_error(public_name)
        on_progress = self._progress_forwarder(progress) if progress is not None else None
        timer = asyncio.timeout(timeout) if timeout is not None else None
        try:
            async with timer or _NO_TIMER:
                try:
                    if self._offers_tasks:
                        result = await self._call_once(client, raw_name, arguments, public_name, on_progress)
                    else:  # `_call_once` inlined: one coroutine fewer to resume at each step of a plain call
                        try:
                            result = await client.call_tool(
                                raw_name, arguments, progress_callback=on_progress
                            )
                        except pydantic.ValidationError as invalid:
                            result = await _untagged_result(client, raw_name, invalid)
                except MCPError as lost:
                    if not self._answer_lost(lost):
                        raise
                    result = await self._replay(
                        lost, client, raw_name, arguments, public_name, on_progress, replay
                    )
        except MCPSyncError:  # the task runner's own typed errors stand as they are
            raise
        except Exception as exc:
            if isinstance(exc, TimeoutError) and timer is not None and timer.expired():
                raise timed_out(public_name, timeout or 0, "the server") from None
            raise await self._failure(exc, public_name) from exc
        return _tool_result(result, public_name)

    async def _call_once(
        self, client: Client, raw_name: str, arguments: dict[str, Any], public_name: str, on_progress: Any
    ) -> types.CallToolResult:
        """Send the call once and wait for its result."""
        try:
            if self._offers_tasks:
                # The server may answer any call with a task (2026-07-28 tasks extension): the
                # runner follows it, its status messages to `progress`, cancelling it if stopped.
                _client, wire = self._task_client(public_name)
                result = await run_task(
                    wire,
                    client,
                    raw_name,
                    arguments,
                    label=public_name,
                    progress=on_progress,
                    certain=False,
                    aftercare=self.aftercare,
                )
                await _check_output(client, raw_name, result)
                return result
            return await client.call_tool(raw_name, arguments, progress_callback=on_progress)
        except pydantic.ValidationError as invalid:
            return await _untagged_result(client, raw_name, invalid)

    # -- a call whose connection broke ---------------------------------------------------------------

    def _answer_lost(self, exc: BaseException) -> bool:
        """Whether `exc` says a request's connection broke while the session lives on (a network blip
        over Streamable HTTP: see `transports`), so the server may have run it."""
        return answer_lost(exc) and isinstance(self._config, HttpServerConfig) and not self._transport_over()

    def _replays(self, public_name: str, replay: bool | None) -> bool:
        """Whether to send again a call whose connection broke: the caller's word, else the server's
        `replay_calls`, whose default goes by the tool's hints (read-only or idempotent, not destructive)."""
        if replay is not None:
            return replay
        policy = self._config.replay_calls if isinstance(self._config, HttpServerConfig) else "never"
        if policy != "hints":
            return policy == "always"
        tool = next((tool for tool in self._connection.tools if tool.name == public_name), None)
        hints = tool.annotations if tool is not None else None
        return hints is not None and hints.idempotent and not hints.destructive

    async def _replay(
        self,
        lost: MCPError,
        client: Client,
        raw_name: str,
        arguments: dict[str, Any],
        public_name: str,
        on_progress: Any,
        replay: bool | None,
    ) -> types.CallToolResult:
        """The answer to a call whose connection broke after it was sent: the call sent once more if
        `_replays` says so, else `ToolCallMayHaveRunError`."""
        lost_method = lost.data.get("method") if isinstance(lost.data, dict) else None
        if lost_method not in (None, "tools/call") or (lost_method is None and self._offers_tasks):
            # Lost while following the task the call became (a poll's connection broke twice): that
            # task may still run, so calling the tool again could run it twice, whatever its hints.
            raise self._may_have_run(
                public_name, replayed=False, why="its task may still be running"
            ) from lost
        if not self._replays(public_name, replay):
            self.check_alive()  # a re-list: if the server itself is gone, that ends the session
            raise self._may_have_run(public_name, replayed=False) from lost
        if self.client is not client:  # the session ended meanwhile: its end says why
            raise self._abandoned(public_name) from lost
        logger.info(
            "server %r: the connection broke during the call to %s; sending it again", self._name, public_name
        )
        try:
            return await self._call_once(client, raw_name, arguments, public_name, on_progress)
        except MCPError as again:
            if self._answer_lost(again):
                raise self._may_have_run(public_name, replayed=True) from again
            raise

    def _may_have_run(
        self, public_name: str, *, replayed: bool, why: str | None = None
    ) -> ToolCallMayHaveRunError:
        if replayed:
            why = "it was sent again once, and that connection broke too"
        elif why is not None:
            why = f"it was not sent again: {why}"
        else:
            why = "it was not sent again: its tool is not marked read-only or idempotent (see replay_calls)"
        return ToolCallMayHaveRunError(
            f"server {self._label}: the connection broke after the call to {public_name} was sent and before "
            f"its answer came, so the server may have run it; {why}",
            tool=public_name,
            replayed=replayed,
        )

    async def _failure(self, exc: Exception, public_name: str, what: str | None = None) -> BaseException:
        """The typed error for a request about `public_name` that failed with `exc` (`what` says what
        the request was; default: the call)."""
        if isinstance(exc, TaskFailure):  # the task's own end, not a request the server refused
            subject = what or (
                f"task {exc.task_id!r} of {public_name}" if exc.task_id else f"the task of {public_name}"
            )
            return ToolCallError(
                scrub(f"server {self._label}: {subject} failed: {exc.message} (code {exc.code})"),
                tool=public_name,
                code=exc.code,
                task_id=exc.task_id,
            )
        if what is None and self._answer_lost(exc):
            self.check_alive()
            return self._may_have_run(public_name, replayed=False)
        failure = request_failure(
            exc,
            self._name,
            what or f"the call to {public_name}",
            tool=public_name,
            http_problem=self.http.problem,
        )
        if failure is not None:
            if isinstance(failure, ServerDisconnectedError) and self.process.pid is not None:
                await self._await_loss()  # the session's end cancels this task: see `_abandoned`
                if self._ended:
                    return self._abandoned(public_name)
            if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
                # Over HTTP one stream's end proves little; the re-list that this triggers does: if the
                # server is gone its request fails and takes the transport, and so this session, down.
                self.check_alive()
            return failure
        if isinstance(exc, ValueError | RuntimeError):  # the answer failed validation (schema or protocol)
            return ToolCallError(
                scrub(f"server {self._label} sent an invalid result for {public_name}: {describe(exc)}"),
                tool=public_name,
            )
        return _our_bug(public_name, exc)

    # -- tasks (long-running calls) -------------------------------------------------------------------

    def _task_client(self, public_name: str) -> tuple[Client, TaskWire]:
        client = self.client
        if client is None:
            raise self._connection.not_ready_error(public_name)
        if self._task_wire is None or self._task_wire[0] is not client:
            self._task_wire = (client, wire_for(self._name, client.protocol_version))
        return client, self._task_wire[1]

    async def task_call(
        self,
        raw_name: str,
        arguments: dict[str, Any],
        public_name: str,
        timeout: float | None,
        progress: ProgressCallback | None,
    ) -> ToolResult:
        """A tool call run as a task (a task of `calls`): started, polled to its end, its result; stopped
        (timeout, cancel, session end), it cancels the task on the server. Status messages go to
        `progress`."""
        client, wire = self._task_client(public_name)
        on_progress = self._progress_forwarder(progress) if progress is not None else None
        timer = asyncio.timeout(timeout) if timeout is not None else None
        created: list[str] = []  # the task's id, once the server made it: each error names it
        try:
            try:
                async with timer or _NO_TIMER:
                    result = await run_task(
                        wire,
                        client,
                        raw_name,
                        arguments,
                        label=public_name,
                        progress=on_progress,
                        aftercare=self.aftercare,
                        on_created=created.append,
                    )
                    await _check_output(client, raw_name, result)
            except MCPSyncError:  # the runner's own typed errors stand as they are
                raise
            except Exception as exc:
                if isinstance(exc, TimeoutError) and timer is not None and timer.expired():
                    if not created:
                        raise timed_out(public_name, timeout or 0, "the server") from None
                    raise ToolCallTimeoutError(
                        f"call to {public_name} did not finish within {timeout or 0:g} s; tasks/cancel was "
                        f"sent for task {created[0]!r} (its outcome is logged)",
                        tool=public_name,
                    ) from None
                failure = await self._failure(exc, public_name)
                raise self._unless_cut_short(failure, public_name, created[0] if created else None) from exc
        except asyncio.CancelledError:
            # The session's end cancels this call: while its task ran, or while a failed request's
            # error waited for that end (`_failure`). Either way the error names the task.
            cut_short = self._task_cut_short(public_name, created[0] if created else None)
            if cut_short is None:
                raise
            raise cut_short from None
        except ToolCallError as error:
            if created and error.task_id is None:
                error.task_id = created[0]
            raise
        return _tool_result(result, public_name)

    def _unless_cut_short(
        self, failure: BaseException, public_name: str, task_id: str | None
    ) -> BaseException:
        """`failure`, unless it is the session's end: then the error of a task call that end cut short,
        which says what became of the task. The end reaches a call as a failed request or as a
        cancellation, depending on timing and on the Python version."""
        if isinstance(failure, ServerDisconnectedError):
            return self._task_cut_short(public_name, task_id) or failure
        return failure

    def _task_cut_short(self, public_name: str, task_id: str | None) -> ServerDisconnectedError | None:
        """The error of a task call the session's end cut short (None if it was not that): what became
        of its task, whose `tasks/cancel` (or wait for its id) the runner left to the aftercare."""
        if not self.calls.closed:
            return None
        abandoned = self._abandoned(public_name)
        if not isinstance(abandoned, ServerDisconnectedError):
            return None
        if task_id is None:
            fate = (
                "the server may have started it as a task before its answer was lost; such a task is "
                "cancelled if its id comes before the connection closes, else it could not be told to "
                "cancel it and it may still be running (the log says which)"
            )
        else:
            fate = (
                f"its task {task_id!r} was cancelled if the connection could still send tasks/cancel "
                "(its outcome is logged)"
            )
        return ServerDisconnectedError(
            f"{abandoned}; {fate}", tool=public_name, code=abandoned.code, task_id=task_id
        )

    async def start_task(
        self,
        raw_name: str,
        arguments: dict[str, Any],
        public_name: str,
        ttl: float | None,
        progress: ProgressCallback | None = None,
        certain: bool = True,
    ) -> TaskInfo | ToolResult:
        """Ask for a task and return once the server created it (or answered at once with the result);
        stopped meanwhile, it cancels the task the server created (`certain`), or the call itself, as a
        plain call is (not `certain`: a call the server only may answer with a task)."""
        client, wire = self._task_client(public_name)
        on_progress = self._progress_forwarder(progress) if progress is not None else None
        try:
            try:
                started = await self._started_task(
                    client, wire, raw_name, arguments, ttl, on_progress, certain
                )
            except MCPSyncError:  # the runner's own typed errors stand as they are
                raise
            except Exception as exc:
                failure = await self._failure(exc, public_name)
                raise self._unless_cut_short(failure, public_name, None) from exc
        except asyncio.CancelledError:  # the session's end: while the task started, or a failure waited
            cut_short = self._task_cut_short(public_name, None)
            if cut_short is None:
                raise
            raise cut_short from None
        if isinstance(started, types.CallToolResult):
            return _tool_result(started, public_name)
        return started

    async def _started_task(
        self,
        client: Client,
        wire: TaskWire,
        raw_name: str,
        arguments: dict[str, Any],
        ttl: float | None,
        on_progress: Any,
        certain: bool,
    ) -> TaskInfo | types.CallToolResult:
        """`start_task`'s answer: the task the server created, or its result at once (checked)."""
        try:
            started = await start_task(
                wire,
                client,
                raw_name,
                arguments,
                ttl=ttl,
                progress=on_progress,
                certain=certain,
                aftercare=self.aftercare,
            )
        except pydantic.ValidationError as invalid:  # checked against the output schema there
            return await _untagged_result(client, raw_name, invalid)
        if isinstance(started, types.CallToolResult):
            await _check_output(client, raw_name, started)
        return started

    async def follow_task(
        self,
        task_id: str,
        info: TaskInfo | None,
        label: str,
        progress: ProgressCallback | None,
        on_info: Callable[[TaskInfo], object] | None,
        updates: StatusUpdates | None = None,
        raw_name: str | None = None,
        cancel_on_close: bool = False,
    ) -> ToolResult:
        """Wait on the loop for an existing task to end, and its result (`info`: its last known state,
        None to ask first); stopped, the task keeps running, unless `cancel_on_close` (a call's own
        task) and the session ends because it is closed, not handed over to a new connection to the
        same server: nobody will wait for the task any more.
        `raw_name`: the task's tool, when known, whose output schema its result must meet."""
        client, wire = self._task_client(label)
        on_progress = self._progress_forwarder(progress) if progress is not None else None
        try:
            return await self._follow(
                client, wire, task_id, info, label, on_progress, on_info, updates, raw_name
            )
        except asyncio.CancelledError:
            if cancel_on_close and self._stopping and not self._handing_over:
                self.aftercare.spawn(cancel_task(wire, client, task_id))  # the session's end waits for it
            raise

    async def _follow(
        self,
        client: Client,
        wire: TaskWire,
        task_id: str,
        info: TaskInfo | None,
        label: str,
        on_progress: Any,
        on_info: Callable[[TaskInfo], object] | None,
        updates: StatusUpdates | None,
        raw_name: str | None,
    ) -> ToolResult:
        try:
            if info is None:
                try:
                    info = await wire.get(client, task_id)
                except MCPError as exc:
                    missing = not_found(exc, self._name, task_id, label)
                    if missing is not None:
                        raise missing from exc
                    raise
            result = await follow_task(
                wire,
                client,
                info,
                tool=None,  # `label` names the task for the caller (a handle), who names its errors
                progress=on_progress,
                cancel_when_stopped=False,
                on_info=on_info,
                updates=updates,
            )
            if raw_name is not None:
                await _check_output(client, raw_name, result)
        except MCPSyncError:  # the runner's own typed errors stand as they are
            raise
        except Exception as exc:
            what = label if isinstance(exc, TaskFailure) else f"the wait for task {task_id!r}"
            raise await self._failure(exc, label, what) from exc
        return _tool_result(result, label)

    async def task_request(self, kind: str, task_id: str) -> TaskInfo | list[TaskInfo]:
        """`tasks/get` ("get"), `tasks/cancel` ("cancel": the status after, also for a task that had
        already ended) or `tasks/list` ("list", `task_id` unused)."""
        label = f"task {task_id!r}" if kind != "list" else "the task list"
        client, wire = self._task_client(label)
        try:
            if kind == "list":
                return await wire.list(client)
            if kind == "cancel":
                try:
                    return await wire.cancel(client, task_id)
                except MCPError as refused:
                    if refused.code == types.CONNECTION_CLOSED:  # not refused: the connection went
                        raise
                    if refused.code != types.INVALID_PARAMS:
                        raise self._cancel_refused(refused, task_id) from refused
                    # Cancelling a task that already ended is refused with the same "invalid params" as
                    # an unknown one: its status (or tasks/get's "not found") says which it was. One that
                    # has not ended was refused for a reason of the server's own.
                    logger.debug("server %r refused tasks/cancel of %r: %s", self._name, task_id, refused)
                    info = await wire.get(client, task_id)
                    if not info.done:
                        raise self._cancel_refused(refused, task_id) from refused
                    return info
            return await wire.get(client, task_id)
        except MCPSyncError:  # the runner's own typed errors stand as they are
            raise
        except Exception as exc:
            # Only a request about one task can be refused for not knowing it, and only tasks/get's
            # answer says so (a refused tasks/cancel is answered by tasks/get above).
            missing = not_found(exc, self._name, task_id) if kind != "list" else None
            if missing is not None:
                raise missing from exc
            raise await self._failure(exc, label, f"tasks/{kind} of {label}") from exc

    def _cancel_refused(self, refused: MCPError, task_id: str) -> TaskCancelRefusedError:
        """The error for a `tasks/cancel` the server answered with an error other than "invalid params"
        (which is how it says the task already ended): the task may still run, so the caller must know."""
        reason = scrub(refused.message)
        return TaskCancelRefusedError(
            f"server {self._label} refused to cancel task {task_id!r}: {reason} (code {refused.code}); "
            "the task may still be running",
            server=self._name,
            task_id=task_id,
            reason=reason,
            code=refused.code,
        )

    def cancel_task_soon(self, task_id: str, label: str) -> None:
        """Have `tasks/cancel` sent for a task whose caller gave up, without waiting for the answer (its
        outcome is logged; the session's end waits for it, bounded)."""
        try:
            client, wire = self._task_client(label)
        except MCPSyncError as exc:
            logger.info("could not cancel %s: %s", label, exc)
            return
        self.aftercare.spawn(cancel_task(wire, client, task_id))

    async def _await_loss(self) -> None:
        """A call lost its stdio server: wait (bounded) until the owner has ended the session with how the
        process ended, so that the call fails with that and the state says disconnected when it does."""
        if self._ended or self._ended_event is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ended_event.wait(), _CALL_LOSS_TIMEOUT)

    def _progress_forwarder(self, progress: ProgressCallback) -> Any:
        dispatcher = self._dispatcher

        async def forward(value: float, total: float | None, message: str | None) -> None:
            # A server's message may quote a secret of its configuration, as its errors may.
            dispatcher.post((progress,), value, total, scrub(message) if message is not None else None)

        return forward


async def _untagged_result(
    client: Client, raw_name: str, invalid: pydantic.ValidationError
) -> types.CallToolResult:
    """A `tools/call` result that failed validation only for leaving out `resultType` (a complete
    result), checked against the tool's output schema as the SDK checks one it accepted; any other
    invalid result re-raises `invalid`."""
    complete = complete_result_of(invalid)
    if complete is None:
        raise invalid
    await _check_output(client, raw_name, complete)
    return complete


async def _check_output(client: Client, raw_name: str, result: types.CallToolResult) -> None:
    """Check a task's result against the tool's output schema, as the SDK checks a plain call's
    (`RuntimeError` when it does not conform); a tool's own failure (`is_error`) is not checked."""
    if not result.is_error:
        await client.session.validate_tool_result(raw_name, result)


def _tool_result(result: types.CallToolResult, public_name: str) -> ToolResult:
    try:
        return from_call_tool_result(result, public_name)
    except Exception as exc:
        raise _our_bug(public_name, exc) from exc


def _our_bug(public_name: str, exc: Exception) -> ToolCallError:
    """An error of mcp_sync's own during a call: logged with its traceback, never blamed on the server."""
    logger.error("unexpected error in mcp_sync while calling %s", public_name, exc_info=exc)
    return ToolCallError(
        scrub(
            f"mcp_sync failed while calling {public_name} (a bug in mcp_sync, not the server's fault): "
            f"{describe(exc)}"
        ),
        tool=public_name,
    )


def _unwrap(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio wraps what escapes a Client)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe_loss(label: str, cause: BaseException | None) -> BaseException:
    """Why a ready server ended, as a `ServerDisconnectedError` (the transport's own error as its cause)."""
    if isinstance(cause, MCPSyncError):
        return cause
    loss = ServerDisconnectedError(
        scrub(f"server {label} connection lost" + (f": {describe(cause)}" if cause is not None else ""))
    )
    loss.__cause__ = cause
    return loss


def _describe_failure(label: str, cause: BaseException | None, ended: str) -> BaseException:
    """Why a server never became ready: its own typed error, or a `ServerDisconnectedError` that says
    how its process ended and what it last wrote to stderr."""
    if isinstance(cause, MCPSyncError | TimeoutError):
        return cause
    if isinstance(cause, asyncio.CancelledError):
        return ServerDisconnectedError(f"server {label} was stopped while connecting")
    if isinstance(cause, FileNotFoundError):
        return ServerDisconnectedError(scrub(f"server {label} could not start: {cause}"))
    if cause is None or (ended and isinstance(cause, MCPError) and cause.code == types.CONNECTION_CLOSED):
        return ServerDisconnectedError(scrub(f"server {label} went away while connecting{ended}"))
    failure = ServerDisconnectedError(scrub(f"server {label} failed to connect: {describe(cause)}{ended}"))
    failure.__cause__ = cause
    return failure


def _left(deadline: float | None) -> float:
    """Seconds until `deadline` (monotonic), never below zero; no limit for None."""
    return float("inf") if deadline is None else max(0.0, deadline - time.monotonic())
