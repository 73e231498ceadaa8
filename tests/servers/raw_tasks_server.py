"""A raw 2025-11-25 MCP stdio server with one task tool, ``job`` (taskSupport "required"), whose answers
are what the reference server cannot be made to give on demand; for the mcp_sync task tests.

Run as ``python raw_tasks_server.py MODE LOG``. Every request's method is appended to LOG, one a line.
Modes:
  plain       the task works for 0.6 s, then completes with "done" (so in every mode but slow_create)
  slow_create ``tools/call`` creates the task at once but answers (the ``CreateTaskResult``) only
              after 1 s; the task works for 6 s
  progress    while the task works the server sends three ``notifications/progress`` on the
              ``tools/call``'s progress token, messages "server progress 1" .. "3"
  hugepoll    ``tasks/get`` answers a ``pollInterval`` and ``ttl`` of 401 digits
  badstatus   ``tasks/get`` answers status "paused" (no 2025-11-25 status)
  failnotfound the task fails, and ``tasks/result`` answers its error: -32602 "input file not found"
  wrongoutput ``job`` declares an output schema (``result``: a string) its result breaks (42)
  badlist     ``tasks/list`` is refused with -32602 "Invalid cursor"
  endlesslist ``tasks/list`` answers every page with a next cursor
  inputfail   the task starts ``input_required``, then fails; ``tasks/result`` answers its error,
              -32602 "input file not found", only once a ``tasks/get`` has answered ``failed``
  refusecancel ``tasks/cancel`` is refused with -32603 "cannot cancel: committing"; the task works on
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

MODE, LOG = sys.argv[1], sys.argv[2]
NOW = "2025-01-01T00:00:00Z"
_lock = threading.Lock()
_state: dict[str, Any] = {"status": "input_required" if MODE == "inputfail" else "working"}
_failure_seen = threading.Event()  # inputfail: a tasks/get has answered "failed"


def send(message: dict[str, Any] | str) -> None:
    with _lock:
        sys.stdout.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        sys.stdout.flush()


def note(method: str) -> None:
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(method + "\n")


def task(status: str | None = None) -> dict[str, Any]:
    return {
        "taskId": "T1",
        "status": status or _state["status"],
        "createdAt": NOW,
        "lastUpdatedAt": NOW,
        "ttl": 60000,
        "pollInterval": 50,
        "statusMessage": "busy",
    }


def work(token: Any) -> None:
    for step in range(3):
        time.sleep(2.0 if MODE == "slow_create" else 0.2)
        if MODE == "progress" and token is not None:
            message = f"server progress {step + 1}"
            params = {"progressToken": token, "progress": step + 1, "total": 3, "message": message}
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
    with _lock:
        if _state["status"] in ("working", "input_required"):
            _state["status"] = "failed" if MODE in ("failnotfound", "inputfail") else "completed"


def answer(method: str, request_id: Any, params: dict[str, Any]) -> None:
    if method == "initialize":
        capabilities = {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}
        result: Any = {
            "protocolVersion": "2025-11-25",
            "serverInfo": {"name": "raw-tasks", "version": "1"},
            "capabilities": capabilities,
        }
    elif method == "tools/list":
        job = {"name": "job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}
        if MODE == "wrongoutput":
            job["outputSchema"] = {
                "type": "object",
                "properties": {"result": {"type": "string"}},
                "required": ["result"],
            }
        result = {"tools": [job]}
    elif method == "tools/call":
        token = (params.get("_meta") or {}).get("progressToken")
        threading.Thread(target=work, args=(token,), daemon=True).start()
        if MODE == "slow_create":
            time.sleep(1.0)
        result = {"task": task()}
    elif method == "tasks/get":
        if MODE == "hugepoll":
            huge = "1" + "0" * 400
            body = task()
            body.update(ttl="@", pollInterval="@")
            text = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": body})
            send(text.replace('"@"', huge))
            return
        result = task("paused" if MODE == "badstatus" else None)
        if MODE == "inputfail" and result["status"] == "failed":
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
            _failure_seen.set()
            return
    elif method == "tasks/result":
        while _state["status"] in ("working", "input_required"):
            time.sleep(0.02)
        if MODE == "inputfail":
            _failure_seen.wait(30)
        if MODE in ("failnotfound", "inputfail"):
            error = {"code": -32602, "message": "input file not found"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        result = {"content": [{"type": "text", "text": "done"}], "isError": False}
        if MODE == "wrongoutput":
            result["structuredContent"] = {"result": 42}
    elif method == "tasks/cancel":
        if MODE == "refusecancel":
            error = {"code": -32603, "message": "cannot cancel: committing"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        with _lock:
            _state["status"] = "cancelled"
        result = task()
    elif method == "tasks/list":
        if MODE == "badlist":
            error = {"code": -32602, "message": "Invalid cursor"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        result = {"tasks": [task()]}
        if MODE == "endlesslist":
            result["nextCursor"] = f"page-{(params.get('cursor') or 'page-0').split('-')[-1]}1"
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no {method}"}})
        return
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method:
            note(method)
        if method is None or request_id is None:
            continue
        # Each request on a thread of its own: a held answer (slow_create, tasks/result) holds no other.
        threading.Thread(
            target=answer, args=(method, request_id, message.get("params") or {}), daemon=True
        ).start()


if __name__ == "__main__":
    main()
