"""The tasks fixture server (`tests/servers/tasks_server.py`) without the tasks extension: the same tools,
the same code, but the server does not offer `io.modelcontextprotocol/tasks`, so a client calls
`maybe_task` as a plain tool. `bench_tasks.py` uses it as the plain side of its comparison (a client
that declares the extension lets the server decide, and the tasks server always answers with a task).

    python benchmarks/_plain_tasks_server.py [the tasks server's flags]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "servers"))
import tasks_server  # the fixture server, from its folder


class _WithoutExtensions(MCPServer):
    """An `MCPServer` that leaves out the extensions it is given."""

    def __init__(self, *args: Any, extensions: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)


tasks_server.MCPServer = _WithoutExtensions  # type: ignore[misc]  # what build_server() builds

if __name__ == "__main__":
    tasks_server.main()
