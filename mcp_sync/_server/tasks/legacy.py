"""The 2025-11-25 tasks on the wire: `tools/call` with `task`, then `tasks/get`, `tasks/result`,
`tasks/cancel` and `tasks/list`.

The SDK keeps the models of these requests (`mcp_types.CreateTaskResult`, `GetTaskResult`, ...) but
leaves their methods out of its protocol tables on purpose, so they are sent with the public
`ClientSession.send_request`. Its result check for `tools/call` knows only `CallToolResult`: a
`CreateTaskResult` fails it, and is read back from that validation error's input (as
`_values.results.complete_result_of` reads a result without its tag). In this era the server's
requests for an `input_required` task (elicitation, with the related-task `_meta`) arrive while the
client waits on `tasks/result`, and the hub's handlers answer them as any other request.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from typing import Any

import mcp_types as types
import pydantic
from mcp.client import Client

from ..._values.errors import ToolCallError, UnsupportedFeatureError
from ..._values.secrets import scrub
from ..._values.tasks import TaskInfo
from .wire import ProgressSink

__all__ = ["LegacyTaskWire", "task_info"]

logger = logging.getLogger("mcp_sync")

# A `tasks/list` whose cursor never ends cannot hang the caller: past this many pages it is refused.
_MAX_LIST_PAGES = 100
# Progress routes of task calls never followed to their end (the caller went away) are forgotten past this.
_MAX_PROGRESS_ROUTES = 256
# The longest duration read from the wire (about 31 700 years): any more is the same to a client.
_MAX_MILLISECONDS = 10**15


class LegacyTaskWire:
    """The 2025-11-25 task requests of one server (`server` is its configured name)."""

    input_brings_result = True  # the server's requests arrive on tasks/result, which returns the result

    def __init__(self, server: str) -> None:
        self.server = server
        self._call_or_task: pydantic.TypeAdapter[types.CallToolResult | types.CreateTaskResult] = (
            pydantic.TypeAdapter(types.CallToolResult | types.CreateTaskResult)
        )
        self._progress: dict[str, ProgressSink] = {}
        """Where the server's progress goes, by the progress token of the `tools/call` that started it."""
        self._tokens: dict[str, str] = {}
        """The progress token of each task started here with progress, by task id."""

    async def start(
        self,
        client: Client,
        raw_name: str,
        arguments: dict[str, Any],
        *,
        ttl: float | None,
        progress: ProgressSink | None = None,
    ) -> TaskInfo | types.CallToolResult:
        task = types.TaskMetadata(ttl=round(ttl * 1000) if ttl is not None else None)
        # The server's progress notifications go on after the `CreateTaskResult`, on the call's token,
        # where the SDK no longer routes them: the token is ours, and `progress_notified` routes them.
        token = f"mcp_sync-task-{uuid.uuid4().hex}" if progress is not None else None
        params = types.CallToolRequestParams(
            name=raw_name,
            arguments=arguments,
            task=task,
            _meta={"progress_token": token} if token is not None else None,
        )
        if token is not None and progress is not None:
            self._progress[token] = progress
            while len(self._progress) > _MAX_PROGRESS_ROUTES:  # calls never followed to their end
                del self._progress[next(iter(self._progress))]
        try:
            answer = await client.session.send_request(
                types.CallToolRequest(params=params), self._call_or_task
            )
        except pydantic.ValidationError as invalid:
            created = _created_task_of(invalid)
            if created is None:
                self._forget_progress(token)
                raise
            return self._started(task_info(self.server, created.task), token)
        except BaseException:
            self._forget_progress(token)
            raise
        if isinstance(answer, types.CreateTaskResult):
            return self._started(task_info(self.server, answer.task), token)
        self._forget_progress(token)
        return answer

    async def progress_notified(self, params: types.ProgressNotificationParams) -> None:
        """Give a server's progress notification to the call whose token it carries, if it is ours."""
        sink = self._progress.get(params.progress_token) if isinstance(params.progress_token, str) else None
        if sink is not None:
            await sink(params.progress, params.total, params.message)

    def ended(self, task_id: str) -> None:
        """The task is no longer followed here: its progress goes nowhere now."""
        self._forget_progress(self._tokens.pop(task_id, None))

    def _started(self, info: TaskInfo, token: str | None) -> TaskInfo:
        if token is not None:
            self._tokens[info.task_id] = token
        return info

    def _forget_progress(self, token: str | None) -> None:
        if token is not None:
            self._progress.pop(token, None)

    async def get(self, client: Client, task_id: str) -> TaskInfo:
        request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
        return task_info(self.server, await client.session.send_request(request, types.GetTaskResult))

    async def answer_input(
        self, client: Client, task_id: str, info: TaskInfo, given: dict[str, Any] | None = None
    ) -> types.CallToolResult | None:
        return await self.outcome(client, task_id, info)  # the server asks on tasks/result: no keys here

    async def outcome(self, client: Client, task_id: str, info: TaskInfo) -> types.CallToolResult:
        request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
        return await client.session.send_request(request, types.CallToolResult)

    async def cancel(self, client: Client, task_id: str) -> TaskInfo:
        request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
        return task_info(self.server, await client.session.send_request(request, types.CancelTaskResult))

    async def list(self, client: Client) -> list[TaskInfo]:
        tasks = client.server_capabilities.tasks
        if tasks is None or tasks.list is None:
            raise UnsupportedFeatureError(f"server {self.server!r} does not list its tasks (no tasks.list)")
        found: list[TaskInfo] = []
        cursor: str | None = None
        for _page in range(_MAX_LIST_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            page = await client.session.send_request(
                types.ListTasksRequest(params=params), types.ListTasksResult
            )
            found.extend(task_info(self.server, task) for task in page.tasks)
            cursor = page.next_cursor
            if cursor is None:
                return found
        raise ToolCallError(
            f"server {self.server!r}: its tasks/list did not end within {_MAX_LIST_PAGES} pages (each page "
            "gave the cursor of another); the listing was stopped there"
        )


def task_info(server: str, task: types.Task) -> TaskInfo:
    """A wire `Task` as the caller sees it: times as datetimes, durations in seconds."""
    return TaskInfo(
        server=server,
        task_id=task.task_id,
        status=task.status,
        status_message=scrub(task.status_message) if task.status_message is not None else None,
        created_at=_timestamp(task.created_at),
        last_updated_at=_timestamp(task.last_updated_at),
        ttl=_seconds(task.ttl),
        poll_interval=_seconds(task.poll_interval),
    )


def _seconds(milliseconds: int | None) -> float | None:
    """A wire duration in seconds; one too long to be a float (a server may send any integer) is
    clamped to `_MAX_MILLISECONDS`, which every use of it treats as "long"."""
    if milliseconds is None:
        return None
    return min(milliseconds, _MAX_MILLISECONDS) / 1000


def _timestamp(text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        logger.debug("a task's timestamp is not ISO 8601: %r", text)
        return None


def _created_task_of(invalid: pydantic.ValidationError) -> types.CreateTaskResult | None:
    """The `CreateTaskResult` that failed the SDK's `tools/call` result check (it knows only
    `CallToolResult`); None when the answer is not one either."""
    problems = invalid.errors(include_url=False)
    raw = problems[0].get("input") if problems else None
    if not isinstance(raw, dict) or "task" not in raw or "content" in raw:
        return None
    try:
        return types.CreateTaskResult.model_validate(raw, by_name=False)
    except pydantic.ValidationError:
        return None
