"""The server's sampling and elicitation requests run as tasks, when a 2025-11-25 server asks.

Such a server may add `task` to a `sampling/createMessage` or `elicitation/create` request (only
when the client declared `tasks.requests.sampling.createMessage` / `.elicitation.create`): the
client then answers at once with the task it created, runs the handler in the background, and
answers the server's `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` for it.

The SDK's client knows none of the `tasks/*` methods (its 2025-11-25 types leave them out), so
this sits between the SDK's client and the transport, through the transport's public stream
interface: it adds the `tasks` capability to the `initialize` request, takes these requests off
the read stream and writes their answers to the write stream; every other message passes
through untouched. The handlers run as every handler does (`ServerRequestBridge`: a daemon
thread, the handler deadline); `tasks/cancel` sets the request's `cancelled` Event and drops the
late answer. A task is kept for its ttl after it was created (a running one until it ends), then
forgotten; when the connection ends, the handlers still running are told to stop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from mcp_types import methods
from pydantic import ValidationError

from .server_requests import ServerRequestBridge
from .transports import ReadStreamWrapper

__all__ = ["RequestTasks"]

logger = logging.getLogger("mcp_sync")

_VERSION: Final = "2025-11-25"
_RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
_TASK_METHODS: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
_HANDSHAKE_METHODS: Final = frozenset({"initialize", "server/discover"})
DEFAULT_TTL_MS: Final = 3_600_000
"""How long a task is kept when the server does not say (one hour)."""
MAX_TTL_MS: Final = 86_400_000
"""The longest a task is kept, whatever the server asks (one day)."""
POLL_INTERVAL_MS: Final = 500
"""How often the server is told to poll a task's status."""
_CLOSE_BOUND: Final = 5.0
"""Seconds the connection's end waits for its task runners to settle."""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z")


class _Failure(Exception):
    """A `tasks/*` request that gets a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.error = types.ErrorData(code=code, message=message)


@dataclasses.dataclass
class _Task:
    """One request the server asked to run as a task, and where it stands (loop thread only)."""

    task_id: str
    method: str
    ttl_ms: int
    created: float = dataclasses.field(default_factory=time.monotonic)
    created_at: str = dataclasses.field(default_factory=_now)
    last_updated_at: str = ""
    status: str = "working"
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: types.ErrorData | None = None
    ended: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    runner: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.last_updated_at = self.created_at

    def end(self, status: str, message: str | None = None) -> None:
        self.status, self.status_message = status, message
        self.last_updated_at = _now()
        self.ended.set()

    def expired(self, now: float) -> bool:
        return self.ended.is_set() and now - self.created >= self.ttl_ms / 1000

    def wire(self) -> dict[str, Any]:
        """The task as the protocol's `Task` object."""
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttl": self.ttl_ms,
            "pollInterval": POLL_INTERVAL_MS,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        return task


class RequestTasks:
    """One connection's tasks run for the server; `wrap()` puts it between the SDK and the transport."""

    def __init__(self, server_name: str, bridge: ServerRequestBridge) -> None:
        self._name = server_name
        self._bridge = bridge
        self._methods = bridge.task_methods()
        self._tasks: dict[str, _Task] = {}
        self._answers: set[asyncio.Task[None]] = set()
        self._write: Any = None
        self._initialize_sent = False
        self.intercepting = True
        """Whether the server may send the requests taken here: until the handshake is over, then only
        where it was `initialize` (2025), which declared the capability; a 2026-07-28 session never did."""

    def capability(self) -> dict[str, Any]:
        """The client's `tasks` capability: the requests it runs as tasks, listing and cancelling."""
        requests: dict[str, Any] = {}
        if "sampling/createMessage" in self._methods:
            requests["sampling"] = {"createMessage": {}}
        if "elicitation/create" in self._methods:
            requests["elicitation"] = {"create": {}}
        return {"list": {}, "cancel": {}, "requests": requests}

    @asynccontextmanager
    async def wrap(self, transport: Any) -> AsyncIterator[tuple[Any, Any]]:
        """The transport's streams, with the tasks taken care of; at the end running handlers stop."""
        async with transport as (read_stream, write_stream):
            self._write = write_stream
            try:
                yield _TaskReadStream(read_stream, self), _TaskWriteStream(write_stream, self)
            finally:
                await self._stop()

    # -- loop side ------------------------------------------------------------------------------------

    def intercept(self, item: object) -> bool:
        """Take `item` if it is a request of ours (answered in the background); False to pass it on."""
        if not isinstance(item, SessionMessage) or not isinstance(item.message, types.JSONRPCRequest):
            return False
        request = item.message
        params = request.params or {}
        if request.method in _TASK_METHODS:
            self._spawn(self._answer_task_request(request.id, request.method, params))
            return True
        if request.method in self._methods and isinstance(params.get("task"), Mapping):
            self._spawn(self._create(request.id, request.method, params))
            return True
        return False

    def with_capability(self, item: SessionMessage) -> SessionMessage:
        """The `initialize` request with the `tasks` capability added; any other message as it is."""
        message = item.message
        if not isinstance(message, types.JSONRPCRequest) or message.method != "initialize":
            return item
        self._initialize_sent = True
        params = dict(message.params or {})
        capabilities = dict(params.get("capabilities") or {})
        capabilities["tasks"] = self.capability()
        params["capabilities"] = capabilities
        return dataclasses.replace(item, message=message.model_copy(update={"params": params}))

    def handshake_over(self) -> None:
        """The session speaks: from now on only a 2025 session (`initialize` sent) may get these requests."""
        self.intercepting = self._initialize_sent

    def _spawn(self, coroutine: Any) -> None:
        answer = asyncio.get_running_loop().create_task(coroutine)
        self._answers.add(answer)
        answer.add_done_callback(self._answers.discard)

    async def _send(self, request_id: types.RequestId, outcome: dict[str, Any] | types.ErrorData) -> None:
        message: types.JSONRPCResponse | types.JSONRPCError
        if isinstance(outcome, types.ErrorData):
            message = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=outcome)
        else:
            message = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=outcome)
        try:
            await self._write.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("server %r: an answer about a task was dropped: the connection closed", self._name)

    async def _create(self, request_id: types.RequestId, method: str, params: Mapping[str, Any]) -> None:
        try:
            parsed = methods.parse_server_request(method, _VERSION, params)
        except ValidationError as exc:  # its text would echo the values: name the fields only
            errors = exc.errors(include_input=False)
            fields = "; ".join(f"{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in errors)
            await self._send(
                request_id, types.ErrorData(code=types.INVALID_PARAMS, message=f"invalid {method}: {fields}")
            )
            return
        self._forget_expired()
        asked = params["task"].get("ttl")
        ttl_ms = DEFAULT_TTL_MS if not isinstance(asked, int | float) or asked < 0 else int(asked)
        task = _Task(task_id=uuid.uuid4().hex, method=method, ttl_ms=min(ttl_ms, MAX_TTL_MS))
        self._tasks[task.task_id] = task
        task.runner = asyncio.get_running_loop().create_task(self._run(task, parsed))
        logger.debug("server %r: %s runs as task %s", self._name, method, task.task_id)
        await self._send(request_id, {"task": task.wire()})

    async def _run(self, task: _Task, request: Any) -> None:
        """Run the handler for `task` and keep its outcome, unless the task was cancelled first."""
        try:
            answer = await self._bridge.answer(request)
        except asyncio.CancelledError:
            if not task.ended.is_set():
                task.end("cancelled", "the connection closed")
            raise
        except Exception as exc:  # the answer could not be made into a result
            answer = types.ErrorData(code=types.INTERNAL_ERROR, message=f"client: {type(exc).__name__}")
        if task.ended.is_set():
            logger.debug("server %r: task %s ended before its handler answered", self._name, task.task_id)
            return
        if isinstance(answer, types.ErrorData):
            task.error = answer
            task.end("failed", answer.message)
        else:
            task.result = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
            task.end("completed")

    async def _answer_task_request(
        self, request_id: types.RequestId, method: str, params: Mapping[str, Any]
    ) -> None:
        try:
            outcome: dict[str, Any] | types.ErrorData = await self._task_request(method, params)
        except _Failure as failure:
            outcome = failure.error
        await self._send(request_id, outcome)

    async def _task_request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any] | types.ErrorData:
        self._forget_expired()
        if method == "tasks/list":
            return {"tasks": [task.wire() for task in self._tasks.values()]}
        task = self._task(params)
        if method == "tasks/get":
            return task.wire()
        if method == "tasks/cancel":
            if task.ended.is_set():
                raise _Failure(
                    types.INVALID_PARAMS, f"cannot cancel task {task.task_id}: it is already {task.status}"
                )
            task.end("cancelled", "cancelled by the server")
            if task.runner is not None:
                task.runner.cancel()  # sets the request's `cancelled` Event; its late answer is dropped
            logger.info("server %r cancelled the %s task %s", self._name, task.method, task.task_id)
            return task.wire()
        await task.ended.wait()  # tasks/result: blocks until the handler ended (its deadline bounds it)
        if task.status == "completed" and task.result is not None:
            meta = {**task.result.get("_meta", {}), _RELATED_TASK: {"taskId": task.task_id}}
            return {**task.result, "_meta": meta}
        if task.error is not None:
            return task.error
        return types.ErrorData(code=types.INTERNAL_ERROR, message=f"task {task.task_id} was {task.status}")

    def _task(self, params: Mapping[str, Any]) -> _Task:
        task_id = params.get("taskId")
        task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise _Failure(types.INVALID_PARAMS, f"task not found: {task_id!r}")
        return task

    def _forget_expired(self) -> None:
        now = time.monotonic()
        for task_id in [task_id for task_id, task in self._tasks.items() if task.expired(now)]:
            del self._tasks[task_id]

    async def _stop(self) -> None:
        """The connection ends: stop the running handlers (their `cancelled` Event) and the answers."""
        runners = [task.runner for task in self._tasks.values() if task.runner is not None]
        pending = [job for job in [*runners, *self._answers] if not job.done()]
        for job in pending:
            job.cancel()
        if pending:
            # Shielded: each runner sets its request's `cancelled` Event when it runs again, which must
            # happen even where the connection is torn down by cancellation.
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_BOUND):
                await asyncio.gather(*pending, return_exceptions=True)
        self._tasks.clear()


class _TaskReadStream(ReadStreamWrapper):
    """The transport's read stream, without the requests `RequestTasks` answers itself."""

    def __init__(self, inner: Any, tasks: RequestTasks) -> None:
        super().__init__(inner)
        self._tasks = tasks

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not self._tasks.intercepting or not self._tasks.intercept(item):
                return item

    async def __anext__(self) -> Any:  # `receive` inlined: this runs for every message
        try:
            while True:
                item = await self._inner.receive()
                if not self._tasks.intercepting or not self._tasks.intercept(item):
                    return item
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _TaskWriteStream:
    """The transport's write stream, declaring the `tasks` capability in the `initialize` request.

    Once the handshake is over (the first request that is neither `initialize` nor `server/discover`),
    `send` is the transport's own: no message after it needs looking at."""

    def __init__(self, inner: Any, tasks: RequestTasks) -> None:
        self._inner = inner
        self._tasks = tasks
        self.send: Callable[[SessionMessage], Awaitable[None]] = self._send_during_handshake

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def _send_during_handshake(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCRequest) and message.method not in _HANDSHAKE_METHODS:
            self._tasks.handshake_over()
            self.send = self._inner.send
        await self._inner.send(self._tasks.with_capability(item))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _TaskWriteStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result
