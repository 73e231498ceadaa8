"""A 2025-11-25 stdio server that asks the client to run its requests as tasks, and drives those tasks.

Plain JSON-RPC on stdin/stdout (no SDK: the SDK's server has no `tasks/*` requests to send). It
answers `server/discover` with "method not found" (a 2025 server) and `initialize` as 2025-11-25,
keeping the client's capabilities. Each tool sends one request to the client and returns what it
got back, as JSON text (`{"result": ...}` or `{"error": ...}`), so the test reads what the server
received:

- ``capabilities()``: the capabilities the client declared in `initialize`.
- ``elicit_task(ttl_ms=60000, schema=...)``: `elicitation/create` with `task: {ttl}` (and that
  `requestedSchema`); the client's answer (a `CreateTaskResult` when it ran it as a task).
- ``sample_task(ttl_ms=60000)``: the same with `sampling/createMessage`.
- ``task_request(method, task_id="")``: `tasks/get`, `tasks/result`, `tasks/cancel` (with `taskId`)
  or `tasks/list`; the client's answer.

While it waits for an answer it keeps other messages for later (one request at a time, in order).
"""

from __future__ import annotations

import json
import sys
from collections import deque
from typing import Any

_ELICIT_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Your name"}},
    "required": ["name"],
}

TOOLS = [
    {"name": "capabilities", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "elicit_task",
        "inputSchema": {"type": "object", "properties": {"ttl_ms": {"type": "integer"}, "schema": {}}},
    },
    {
        "name": "sample_task",
        "inputSchema": {"type": "object", "properties": {"ttl_ms": {"type": "integer"}}},
    },
    {
        "name": "task_request",
        "inputSchema": {
            "type": "object",
            "properties": {"method": {"type": "string"}, "task_id": {"type": "string"}},
            "required": ["method"],
        },
    },
]


class Server:
    def __init__(self) -> None:
        self.backlog: deque[dict[str, Any]] = deque()
        self.client_capabilities: dict[str, Any] = {}
        self.next_id = 0

    def write(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        sys.stdout.flush()

    def read(self) -> dict[str, Any] | None:
        line = sys.stdin.readline()
        return json.loads(line) if line else None

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request to the client and wait for its answer, keeping what else comes for later."""
        self.next_id += 1
        request_id = f"server-{self.next_id}"
        self.write({"id": request_id, "method": method, "params": params})
        while True:
            message = self.read()
            if message is None:
                raise SystemExit(0)
            if message.get("id") == request_id and "method" not in message:
                return {key: message[key] for key in ("result", "error") if key in message}
            if "method" in message and "id" in message:
                self.backlog.append(message)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        ttl = {"ttl": arguments.get("ttl_ms", 60000)}
        if name == "capabilities":
            return self.client_capabilities
        if name == "elicit_task":
            schema = arguments.get("schema", _ELICIT_SCHEMA)
            params = {"task": ttl, "message": "Who are you?", "requestedSchema": schema}
            return self.ask("elicitation/create", params)
        if name == "sample_task":
            messages = [{"role": "user", "content": {"type": "text", "text": "the answer?"}}]
            return self.ask("sampling/createMessage", {"task": ttl, "messages": messages, "maxTokens": 10})
        if name == "task_request":
            method = arguments["method"]
            params = {} if method == "tasks/list" else {"taskId": arguments.get("task_id", "")}
            return self.ask(method, params)
        raise KeyError(name)

    def handle(self, message: dict[str, Any]) -> None:
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            return  # a notification
        params = message.get("params") or {}
        if method == "initialize":
            self.client_capabilities = params.get("capabilities", {})
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "task-requests", "version": "1"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            got = self.call_tool(params["name"], params.get("arguments") or {})
            result = {"content": [{"type": "text", "text": json.dumps(got)}]}
        else:
            self.write({"id": request_id, "error": {"code": -32601, "message": "Method not found"}})
            return
        self.write({"id": request_id, "result": result})

    def run(self) -> None:
        while True:
            message = self.backlog.popleft() if self.backlog else self.read()
            if message is None:
                return
            self.handle(message)


if __name__ == "__main__":
    Server().run()
