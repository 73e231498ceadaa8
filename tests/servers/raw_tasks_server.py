"""A raw 2025-11-25 MCP stdio server with one task tool, ``job`` (taskSupport "required"), whose answers
are what the reference server cannot be made to give on demand; for the mcp_sync task tests.

Run as ``python raw_tasks_server.py MODE LOG`` (``gated``: ``... gated LOG GATES EVENTS``). Every
request's method is appended to LOG, one a line.
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
  gated       the tool is ``gated(tag, hold=[], ask=False)`` and each call is a task of its own, as the
              tasks server's ``gated`` (tests/servers/tasks_server.py): it runs until the gate file
              ``<tag>.finish`` exists in the folder GATES, then completes "finished <tag>"; ``ask``: it
              first needs input, asked (``elicitation/create``, its message ending with the tag) while
              the client waits on ``tasks/result``. The steps named in ``hold`` are held once each until
              ``<tag>.<step>`` exists: "create" (the ``tools/call`` answer, the task already created),
              "poll" (a ``tasks/get`` answer), "update" (the task's taking the input it was given),
              "cancel" (the ``tasks/cancel`` answer, the task already cancelled).
              Its events go to EVENTS, one JSON object a line, with the tasks server's names: ready
              (pid), task_created (tool, task_id, tag, pid), run (tool, tag, task_id), get (task_id),
              held / released (task_id, tag, step), status (task_id, tag, status), input_required /
              input_received (task_id), cancel_request (task_id, status), cancelled (task_id),
              request_cancelled (request_id: a ``notifications/cancelled``)
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
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


class Gated:
    """The ``gated`` mode: many tasks, each held at the steps its call names, with their events."""

    TERMINAL = ("completed", "failed", "cancelled")

    def __init__(self, gates: str, events: str) -> None:
        self.gates, self.events = gates, events
        self.tasks: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.answers: dict[str, dict[str, Any]] = {}
        self.answered = threading.Condition(self.lock)
        self.ids = itertools.count(1)

    def write(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, "time": time.time(), **fields}) + "\n"
        with self.lock, open(self.events, "a", encoding="utf-8") as f:
            f.write(line)

    def wire(self, record: dict[str, Any]) -> dict[str, Any]:
        return {
            "taskId": record["task_id"],
            "status": record["status"],
            "createdAt": NOW,
            "lastUpdatedAt": NOW,
            "ttl": 600000,
            "pollInterval": 50,
        }

    def set(self, record: dict[str, Any], status: str) -> bool:
        """Move a task on, unless it already ended (a cancel won)."""
        with self.lock:
            if record["status"] in self.TERMINAL:
                return False
            record["status"] = status
        self.write("status", task_id=record["task_id"], tag=record["tag"], status=status)
        return True

    def hold(self, record: dict[str, Any], step: str) -> None:
        if step not in record["holds"]:
            return
        record["holds"].discard(step)
        self.write("held", task_id=record["task_id"], tag=record["tag"], step=step)
        while not os.path.exists(os.path.join(self.gates, f"{record['tag']}.{step}")):
            time.sleep(0.02)
        self.write("released", task_id=record["task_id"], tag=record["tag"], step=step)

    def find(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any] | None:
        record = self.tasks.get(str(params.get("taskId")))
        if record is None:
            error = {"code": -32602, "message": "Failed to retrieve task: Task not found"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
        return record

    def work(self, record: dict[str, Any]) -> None:
        self.write("run", tool="gated", tag=record["tag"], task_id=record["task_id"])
        if record["ask"] and self.set(record, "input_required"):
            self.write("input_required", task_id=record["task_id"])
            while record["answer"] is None and record["status"] == "input_required":
                time.sleep(0.02)
        finish = os.path.join(self.gates, f"{record['tag']}.finish")
        while not os.path.exists(finish) and record["status"] not in self.TERMINAL:
            time.sleep(0.02)
        self.set(record, "completed")

    def ask(self, record: dict[str, Any]) -> None:
        """Ask the client for the task's input (once), as the server's request related to the task."""
        if record["asked"]:
            return
        record["asked"] = True
        request_id = f"ask-{next(self.ids)}"
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        related = {"io.modelcontextprotocol/related-task": {"taskId": record["task_id"]}}
        params = {"message": f"Who are you? {record['tag']}", "requestedSchema": schema, "_meta": related}
        send({"jsonrpc": "2.0", "id": request_id, "method": "elicitation/create", "params": params})
        with self.answered:
            self.answered.wait_for(lambda: request_id in self.answers or record["status"] in self.TERMINAL)
            answer = self.answers.pop(request_id, None)
        if answer is None:
            return
        self.write("input_received", task_id=record["task_id"], answer=answer)
        self.hold(record, "update")
        record["answer"] = answer
        self.set(record, "working")

    def answer(self, method: str, request_id: Any, params: dict[str, Any]) -> None:
        if method == "initialize":
            capabilities = {"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}}
            result: Any = {
                "protocolVersion": "2025-11-25",
                "serverInfo": {"name": "raw-gated-tasks", "version": "1"},
                "capabilities": capabilities,
            }
        elif method == "tools/list":
            properties = {"tag": {"type": "string"}, "hold": {"type": "array"}, "ask": {"type": "boolean"}}
            gated = {
                "name": "gated",
                "inputSchema": {"type": "object", "properties": properties},
                "execution": {"taskSupport": "required"},
            }
            result = {"tools": [gated]}
        elif method == "tools/call":
            arguments = params.get("arguments") or {}
            tag = str(arguments.get("tag", ""))
            record: dict[str, Any] = {
                "task_id": secrets.token_hex(16),
                "tag": tag,
                "status": "working",
                "holds": {str(step) for step in arguments.get("hold") or ()},
                "ask": bool(arguments.get("ask")),
                "asked": False,
                "answer": None,
            }
            self.tasks[record["task_id"]] = record
            self.write("task_created", tool="gated", task_id=record["task_id"], tag=tag, pid=os.getpid())
            threading.Thread(target=self.work, args=(record,), daemon=True).start()
            self.hold(record, "create")
            result = {"task": self.wire(record)}
        elif method == "tasks/get":
            self.write("get", task_id=params.get("taskId"))
            found = self.find(request_id, params)
            if found is None:
                return
            self.hold(found, "poll")
            result = self.wire(found)
        elif method == "tasks/result":
            found = self.find(request_id, params)
            if found is None:
                return
            if found["ask"]:
                self.ask(found)
            while found["status"] not in self.TERMINAL:
                time.sleep(0.02)
            if found["status"] != "completed":
                error = {"code": -32603, "message": f"task {found['status']}"}
                send({"jsonrpc": "2.0", "id": request_id, "error": error})
                return
            text = f"finished {found['tag']}"
            related = {"io.modelcontextprotocol/related-task": {"taskId": found["task_id"]}}
            result = {"content": [{"type": "text", "text": text}], "isError": False, "_meta": related}
        elif method == "tasks/cancel":
            found = self.find(request_id, params)
            if found is None:
                return
            before = found["status"]
            self.write("cancel_request", task_id=found["task_id"], status=before)
            if not self.set(found, "cancelled"):
                error = {
                    "code": -32602,
                    "message": f"Cannot cancel task: already in terminal status {before!r}",
                }
                send({"jsonrpc": "2.0", "id": request_id, "error": error})
                return
            self.write("cancelled", task_id=found["task_id"])
            with self.answered:
                self.answered.notify_all()
            self.hold(found, "cancel")
            result = self.wire(found)
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no {method}"}})
            return
        send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def answered_by_client(self, message: dict[str, Any]) -> None:
        with self.answered:
            self.answers[str(message.get("id"))] = message.get("result") or {"error": message.get("error")}
            self.answered.notify_all()


def main() -> None:
    gated = Gated(sys.argv[3], sys.argv[4]) if MODE == "gated" else None
    if gated is not None:
        gated.write("ready", pid=os.getpid())
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method:
            note(method)
        if gated is not None:
            if method is None and request_id is not None:  # the client's answer to our request
                gated.answered_by_client(message)
            elif method == "notifications/cancelled":
                gated.write("request_cancelled", request_id=(message.get("params") or {}).get("requestId"))
            elif request_id is not None:
                threading.Thread(
                    target=gated.answer, args=(method, request_id, message.get("params") or {}), daemon=True
                ).start()
            continue
        if method is None or request_id is None:
            continue
        # Each request on a thread of its own: a held answer (slow_create, tasks/result) holds no other.
        threading.Thread(
            target=answer, args=(method, request_id, message.get("params") or {}), daemon=True
        ).start()


if __name__ == "__main__":
    main()
