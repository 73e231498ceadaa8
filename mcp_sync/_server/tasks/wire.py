"""What the task runner needs from a protocol era: each era's requests behind one interface.

`legacy` speaks the 2025-11-25 tasks (`task` on `tools/call`, `tasks/get`, `tasks/result`,
`tasks/cancel`, `tasks/list`); `extension` speaks the 2026-07-28 tasks extension
(`io.modelcontextprotocol/tasks`: `resultType: "task"`, `tasks/get`, `tasks/update`, `tasks/cancel`).
A wire is made for one server (`wire(server_name)`): the `TaskInfo`s it returns carry that name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    from mcp.client import Client
    from mcp_types import CallToolResult

    from ..._values.tasks import TaskInfo

__all__ = ["ProgressSink", "TaskFailure", "TaskWire"]

ProgressSink = ProgressFnT
"""Where progress goes on the loop: `await sink(progress, total, message)`, the SDK's `progress_callback`."""


class TaskFailure(MCPError):
    """A task's own failure: the error it ended with, as the server gave it. Never "task not found",
    whatever its code (a task may fail with -32602 "... not found" of its own). `task_id`: the task's."""

    task_id: str | None = None

    @classmethod
    def of(cls, error: MCPError, task_id: str | None = None) -> TaskFailure:
        failure = error if isinstance(error, TaskFailure) else cls(error.code, error.message, error.data)
        failure.task_id = failure.task_id or task_id
        return failure


class TaskWire(Protocol):
    """One era's task requests on a connected client. Every method raises the SDK's own errors
    (`MCPError` and the like); the runner turns them into this package's typed errors."""

    input_brings_result: bool
    """Whether `answer_input` may return the task's result (2025-11-25: `tasks/result`); where it
    cannot, an answer still being given when the task ends is dropped."""

    async def start(
        self,
        client: Client,
        raw_name: str,
        arguments: dict[str, Any],
        *,
        ttl: float | None,
        progress: ProgressSink | None = None,
    ) -> TaskInfo | CallToolResult:
        """Call the tool asking for a task (`ttl` in seconds); a server may answer with the result at
        once. `progress` gets the server's own progress notifications for the call, where they come."""
        ...

    async def get(self, client: Client, task_id: str) -> TaskInfo:
        """The task's status now (`tasks/get`)."""
        ...

    async def answer_input(
        self, client: Client, task_id: str, info: TaskInfo, given: dict[str, Any] | None = None
    ) -> CallToolResult | None:
        """Give an `input_required` task what it asked for, through the hub's own handlers. The runner
        keeps polling meanwhile. Returns the task's result where answering brings it (2025-11-25:
        the requests arrive on `tasks/result`, which returns once the task ended), else None. `given`:
        the answers this wait gave before, by request key (where the era names its requests: 2026-07-28),
        given again rather than asked again; each new answer is added to it."""
        ...

    async def outcome(self, client: Client, task_id: str, info: TaskInfo) -> CallToolResult:
        """A terminal task's result (or its failure, raised)."""
        ...

    async def cancel(self, client: Client, task_id: str) -> TaskInfo:
        """Ask the server to cancel the task (`tasks/cancel`); its status after."""
        ...

    async def list(self, client: Client) -> list[TaskInfo]:
        """The server's tasks (`tasks/list`); `UnsupportedFeatureError` where the era has none."""
        ...
