"""The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the SDK's public
extension interface.

The client declares the extension in every request's capabilities (the SDK stamps what
`Client(extensions=[TasksExtension()])` advertises); the server alone decides, per `tools/call`,
whether to answer with a task (`resultType: "task"`) instead of the result. The task is then
followed with `tasks/get` (which carries the result, the error or the `inputRequests` inline),
given input with `tasks/update` and stopped with `tasks/cancel`; each of the three sends the task
id as the `Mcp-Name` header on Streamable HTTP. There is no `tasks/list` and no client-chosen ttl.

Two ways in:
- `ExtensionTaskWire`: the runner's `TaskWire`, one request at a time. `start` calls the tool
  through `Client.call_tool` (so multi-round-trip input before the task exists, and the
  re-listing on a header mismatch, stay the SDK's), and takes the task out of the claim. Every
  call to a server that offers the extension goes this way (`Session.call`), since any call may
  become a task: the runner then polls it, reports its status messages and cancels it if stopped.
- `TasksExtension`'s claim resolver, for a plain `Client.call_tool` whose server answers with a
  task unasked (one that did not advertise the extension): it follows the task to its end
  (polling at the server's interval, answering input with the client's callbacks) and cancels it
  if the caller is cancelled.

Input is asked of the user once per request key (the SEP's dedup), however often the task is polled.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import anyio
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    ErrorData,
    InputRequest,
    InputResponse,
    Request,
    RequestParams,
    Result,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from ..._values.errors import UnsupportedFeatureError
from ..._values.secrets import scrub
from ..._values.tasks import TERMINAL_STATUSES, TaskInfo, TaskStatus
from .wire import ProgressSink

if TYPE_CHECKING:
    from mcp.client import Client
    from mcp.client.session import ClientSession

__all__ = [
    "EXTENSION_ID",
    "TASK_NOT_FOUND_CODE",
    "ExtensionTaskWire",
    "TasksExtension",
    "server_offers_tasks",
    "wire",
]

logger = logging.getLogger(__name__)

EXTENSION_ID: Final = "io.modelcontextprotocol/tasks"
"""The extension's identifier, in both sides' capabilities."""

TASK_NOT_FOUND_CODE: Final = INVALID_PARAMS
"""What a server answers `tasks/get` (MUST) and `tasks/update` / `tasks/cancel` (SHOULD) for a task it
does not know: never existed, expired or dropped. Only on `tasks/get` does it say so alone: on
`tasks/update` and `tasks/cancel` it is also how the request itself is refused (input that does not
match, a task that already ended), so there a `tasks/get` tells which it was."""

# The resolver's polling follows the task runner's rules (runner.py), so both paths poll alike.
DEFAULT_POLL_INTERVAL: Final = 0.5
"""Seconds between polls when the server gives no `pollIntervalMs` (the SEP leaves it to the client)."""

MIN_POLL_INTERVAL: Final = 0.05
"""Floor on the poll interval: a server that says 0 is not polled in a busy loop."""

MAX_POLL_INTERVAL: Final = 5.0
"""Ceiling on the poll interval: the end of a task is seen within it, however long the server asks."""

CANCEL_TIMEOUT: Final = 2.0
"""Bound on the `tasks/cancel` the resolver sends for a caller that went away."""

MAX_REMEMBERED_TASKS: Final = 1000
"""Bound on the tasks a wire remembers answers for: a caller that stops waiting on tasks that wait for
input leaves them there, and the oldest are forgotten first (at worst, input is asked for again)."""

_CAPTURE: contextvars.ContextVar[bool] = contextvars.ContextVar("mcp_sync_task_capture", default=False)
"""Set while `ExtensionTaskWire.start` calls a tool: the claim hands the task back instead of following it."""


class _TaskIdParams(RequestParams):
    task_id: str


class _UpdateTaskParams(RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class _GetTaskRequest(Request[_TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: _TaskIdParams
    name_param = "taskId"


class _UpdateTaskRequest(Request[_UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: _UpdateTaskParams
    name_param = "taskId"


class _CancelTaskRequest(Request[_TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: _TaskIdParams
    name_param = "taskId"


class _Ack(Result):
    """The empty acknowledgement of `tasks/update` and `tasks/cancel`."""

    result_type: str | None = None


class _TaskFields(Result):
    """The task as both the creation answer and `tasks/get` carry it."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: float | None = None
    poll_interval_ms: float | None = None


class CreateTaskResult(_TaskFields):
    """A `tools/call` answered with a task (`resultType: "task"`): the task's first state."""

    result_type: Literal["task"] = "task"


class _DetailedTask(_TaskFields):
    """A `tasks/get` answer: the task, with its result, error or outstanding input inline."""

    result_type: str | None = None
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


ResultT = TypeVar("ResultT", bound=Result)

_INPUT_REQUEST: Final[TypeAdapter[InputRequest]] = TypeAdapter(InputRequest)


class _TaskCreated(Exception):
    """Carries a created task out of `Client.call_tool` to `ExtensionTaskWire.start` (never escapes it)."""

    def __init__(self, task: CreateTaskResult) -> None:
        super().__init__(task.task_id)
        self.task = task


def server_offers_tasks(client: Client) -> bool:
    """Whether the session speaks 2026-07-28 and the server's `server/discover` answer advertises the
    tasks extension."""
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    extensions = client.server_capabilities.extensions
    return extensions is not None and EXTENSION_ID in extensions


def wire(server: str) -> ExtensionTaskWire:
    """The runner's wire for a 2026-07-28 session of the server named `server`."""
    return ExtensionTaskWire(server)


class TasksExtension(ClientExtension):
    """Declares the tasks extension and claims `resultType: "task"` on `tools/call`."""

    identifier = EXTENSION_ID

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._resolve),)

    async def _resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
        if _CAPTURE.get():
            raise _TaskCreated(created)
        return await follow(ctx.session, created)


def _timestamp(value: str | None) -> datetime.datetime | None:
    if value is None:
        return None
    try:
        return datetime.datetime.fromisoformat(value)
    except ValueError:
        return None


def _info(server: str, task: CreateTaskResult | _DetailedTask) -> TaskInfo:
    return TaskInfo(
        server=server,
        task_id=task.task_id,
        status=task.status,
        status_message=scrub(task.status_message) if task.status_message is not None else None,
        created_at=_timestamp(task.created_at),
        last_updated_at=_timestamp(task.last_updated_at),
        ttl=task.ttl_ms / 1000 if task.ttl_ms is not None else None,
        poll_interval=task.poll_interval_ms / 1000 if task.poll_interval_ms is not None else None,
    )


def poll_interval(info: TaskInfo) -> float:
    """Seconds to wait before the next `tasks/get`: the server's interval, within sane bounds."""
    interval = info.poll_interval if info.poll_interval is not None else DEFAULT_POLL_INTERVAL
    return min(max(interval, MIN_POLL_INTERVAL), MAX_POLL_INTERVAL)


class ExtensionTaskWire:
    """The runner's `TaskWire` for 2026-07-28 sessions whose client carries `TasksExtension`.

    Remembers each task's last `tasks/get` answer (its inline result, error and input requests)
    and the input keys it answered, so `outcome` and `answer_input` need no second request and no
    input is asked of the user twice: also not by two waits on one task, the second of which waits
    for the first's answer.
    """

    input_brings_result = False  # tasks/update only acknowledges: the result comes by polling

    def __init__(self, server: str) -> None:
        self._server = server
        self._last: dict[str, _DetailedTask] = {}
        self._answered: dict[str, set[str]] = {}
        self._asking: dict[str, asyncio.Event] = {}
        """The tasks whose input a wait is asking for now; the Event is set when it is done."""

    async def start(
        self,
        client: Client,
        raw_name: str,
        arguments: dict[str, Any],
        *,
        ttl: float | None,
        progress: ProgressSink | None = None,
    ) -> TaskInfo | CallToolResult:
        """Call the tool; the server decides whether a task comes back (no ttl can be asked for)."""
        if ttl is not None:
            logger.debug(
                "server %r sets its tasks' ttl itself (2026-07-28): ttl=%g not sent", self._server, ttl
            )
        token = _CAPTURE.set(True)
        try:
            return await client.call_tool(raw_name, arguments, progress_callback=progress)
        except _TaskCreated as created:
            return _info(self._server, created.task)
        finally:
            _CAPTURE.reset(token)

    async def get(self, client: Client, task_id: str) -> TaskInfo:
        task = await _get(client.session, task_id)
        if task.status in TERMINAL_STATUSES or task.status == "input_required":
            self._last[task_id] = task
            _forget_oldest(self._last)
        else:
            self._last.pop(task_id, None)
        return _info(self._server, task)

    async def answer_input(
        self, client: Client, task_id: str, info: TaskInfo, given: dict[str, Any] | None = None
    ) -> CallToolResult | None:
        """Answer the outstanding input with one `tasks/update`; the result comes by polling (None). While
        another wait on the task asks the user, this one waits for that, then answers only what is left.
        An answer in `given` (this wait's, from an earlier connection) is sent again, not asked again."""
        while (asking := self._asking.get(task_id)) is not None:
            await asking.wait()
        task = self._last.get(task_id)
        if task is None or task.status != "input_required":
            task = await _get(client.session, task_id)
        answered = self._answered.setdefault(task_id, set())
        _forget_oldest(self._answered)
        self._asking[task_id] = done = asyncio.Event()
        try:
            await _answer(client.session, task, answered, given)
        finally:
            del self._asking[task_id]
            done.set()
        return None

    async def outcome(self, client: Client, task_id: str, info: TaskInfo) -> CallToolResult:
        task = self._last.pop(task_id, None)
        if task is None or task.status not in TERMINAL_STATUSES:
            task = await _get(client.session, task_id)
        self._answered.pop(task_id, None)
        return _outcome(task)

    async def cancel(self, client: Client, task_id: str) -> TaskInfo:
        """`tasks/cancel`, then the status the server reports: it acknowledges at once and may take
        its time (or finish the work anyway). A task the server forgot on cancelling reads as cancelled;
        a cancel refused with -32602 is answered by `tasks/get`: the task's end, or "not found"; for a
        task that has not ended, the refusal is raised."""
        self._last.pop(task_id, None)
        self._answered.pop(task_id, None)
        try:
            await _cancel(client.session, task_id)
        except MCPError as refused:
            if refused.code != TASK_NOT_FOUND_CODE:
                raise
            logger.debug("server %r refused tasks/cancel of %r: %s", self._server, task_id, refused)
            info = await self.get(client, task_id)
            if not info.done:
                raise
            return info
        try:
            return await self.get(client, task_id)
        except MCPError as error:
            if error.code != TASK_NOT_FOUND_CODE:
                raise
            return TaskInfo(server=self._server, task_id=task_id, status="cancelled")

    async def list(self, client: Client) -> list[TaskInfo]:
        raise UnsupportedFeatureError(
            f"server {self._server!r} speaks the 2026-07-28 tasks extension, which has no tasks/list: "
            "keep the ids of the tasks you start"
        )


def _forget_oldest(remembered: dict[str, Any]) -> None:
    while len(remembered) > MAX_REMEMBERED_TASKS:
        del remembered[next(iter(remembered))]


async def _send(
    session: ClientSession, request: Request[Any, Any], task_id: str, answer: type[ResultT]
) -> ResultT:
    """Send a task request, its errors as the server gave them: -32602 means "unknown task" only on
    `tasks/get` (the runner's `not_found` says so there); on `tasks/update` or `tasks/cancel` it may be
    the request's own refusal, which a `tasks/get` tells apart."""
    return await session.send_request(request, answer)


async def _get(session: ClientSession, task_id: str) -> _DetailedTask:
    request = _GetTaskRequest(params=_TaskIdParams(task_id=task_id))
    task = await _send(session, request, task_id, _DetailedTask)
    if task.task_id != task_id:
        raise MCPError(code=INTERNAL_ERROR, message=f"tasks/get for {task_id!r} answered about another task")
    return task


async def _cancel(session: ClientSession, task_id: str) -> None:
    await _send(session, _CancelTaskRequest(params=_TaskIdParams(task_id=task_id)), task_id, _Ack)


async def _answer(
    session: ClientSession, task: _DetailedTask, answered: set[str], given: dict[str, Any] | None = None
) -> None:
    """Answer the task's outstanding input requests not answered before, with the client's own
    callbacks (elicitation form and URL, sampling, roots), in one `tasks/update`; a request whose answer
    is in `given` gets that answer again, and each new answer goes into `given`."""
    pending = {key: value for key, value in (task.input_requests or {}).items() if key not in answered}
    if not pending:
        return
    responses: dict[str, Any] = {}
    for key, raw in pending.items():
        if given is not None and key in given:
            responses[key] = given[key]
            continue
        request = _INPUT_REQUEST.validate_python(raw, by_name=False)
        meta = request.params.meta if request.params is not None else None
        context = ClientRequestContext(session=session, request_id=key, meta=meta)
        response: InputResponse | ErrorData = await session.dispatch_input_request(context, request)
        if isinstance(response, ErrorData):
            raise MCPError.from_error_data(response)
        responses[key] = response.model_dump(by_alias=True, mode="json", exclude_none=True)
        if given is not None:
            given[key] = responses[key]
    update = _UpdateTaskRequest(params=_UpdateTaskParams(task_id=task.task_id, input_responses=responses))
    await _send(session, update, task.task_id, _Ack)
    answered.update(responses)


def _outcome(task: _DetailedTask) -> CallToolResult:
    """A terminal task's `CallToolResult`; a failed one raises its JSON-RPC error, a cancelled one an
    `MCPError` saying so."""
    if task.status == "completed":
        if task.result is None:
            raise MCPError(code=INTERNAL_ERROR, message=f"task {task.task_id!r} completed without a result")
        return CallToolResult.model_validate(task.result, by_name=False)
    if task.status == "failed":
        error = task.error or {}
        code = error.get("code")
        message = error.get("message") or task.status_message or "the task failed"
        raise MCPError(
            code=code if isinstance(code, int) else INTERNAL_ERROR,
            message=str(message),
            data=error.get("data"),
        )
    if task.status == "cancelled":
        raise MCPError(code=INTERNAL_ERROR, message=f"task {task.task_id!r} was cancelled")
    raise MCPError(code=INTERNAL_ERROR, message=f"task {task.task_id!r} has not ended ({task.status})")


async def follow(session: ClientSession, created: CreateTaskResult) -> CallToolResult:
    """Follow a task to its end for a plain `Client.call_tool`: poll at the server's interval, answer
    its input, return its result; a caller cancelled on the way cancels the task on the server."""
    task_id = created.task_id
    answered: set[str] = set()
    status: TaskStatus = created.status
    interval = poll_interval(_info("", created))
    try:
        while True:
            if status not in TERMINAL_STATUSES:
                await anyio.sleep(interval)
            task = await _get(session, task_id)
            status = task.status
            interval = poll_interval(_info("", task))
            if status in TERMINAL_STATUSES:
                return _outcome(task)
            if status == "input_required":
                await _answer(session, task, answered)
    except BaseException:
        if status not in TERMINAL_STATUSES:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_TIMEOUT):
                try:
                    await _cancel(session, task_id)
                except Exception as error:  # the caller's own error matters more
                    logger.debug("could not cancel task %r: %s", task_id, error)
        raise
