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
from typing import Any

import mcp_types as types
import pydantic
from mcp.client import Client

from ..._values.errors import UnsupportedFeatureError
from ..._values.secrets import scrub
from ..._values.tasks import TaskInfo
from .wire import ProgressSink

__all__ = ["LegacyTaskWire", "task_info"]

logger = logging.getLogger("mcp_sync")

# A `tasks/list` whose cursor never ends cannot hang the caller: past this many pages it is refused.
_MAX_LIST_PAGES = 100
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
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name=raw_name, arguments=arguments, task=task)
        )
        try:
            answer = await client.session.send_request(
                request, self._call_or_task, progress_callback=progress
            )
        except pydantic.ValidationError as invalid:
            created = _created_task_of(invalid)
            if created is None:
                raise
            return task_info(self.server, created.task)
        if isinstance(answer, types.CreateTaskResult):
            return task_info(self.server, answer.task)
        return answer

    async def get(self, client: Client, task_id: str) -> TaskInfo:
        request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
        return task_info(self.server, await client.session.send_request(request, types.GetTaskResult))

    async def answer_input(self, client: Client, task_id: str, info: TaskInfo) -> types.CallToolResult | None:
        return await self.outcome(client, task_id, info)

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
        raise UnsupportedFeatureError(
            f"server {self.server!r}: its tasks/list did not end within {_MAX_LIST_PAGES} pages"
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
