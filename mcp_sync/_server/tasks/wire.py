"""What the task runner needs from a protocol era: each era's requests behind one interface.

`legacy` speaks the 2025-11-25 tasks (`task` on `tools/call`, `tasks/get`, `tasks/result`,
`tasks/cancel`, `tasks/list`); `extension` speaks the 2026-07-28 tasks extension
(`io.modelcontextprotocol/tasks`: `resultType: "task"`, `tasks/get`, `tasks/update`, `tasks/cancel`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcp.client import Client
    from mcp_types import CallToolResult

    from ..._values.tasks import TaskInfo


class TaskWire(Protocol):
    """One era's task requests on a connected client. Every method raises the SDK's own errors
    (`MCPError` and the like); the runner turns them into this package's typed errors."""

    async def start(
        self, client: Client, raw_name: str, arguments: dict[str, Any], *, ttl: float | None
    ) -> TaskInfo | CallToolResult:
        """Call the tool asking for a task; a server may answer with the result at once."""
        ...

    async def get(self, client: Client, task_id: str) -> TaskInfo:
        """The task's status now (`tasks/get`)."""
        ...

    async def answer_input(self, client: Client, task_id: str, info: TaskInfo) -> None:
        """Give an `input_required` task what it asked for, through the hub's own handlers."""
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
