"""An MCP server speaking the 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``), built on
the `mcp` 2.x SDK's server extension interface, for the mcp_sync task tests.

Run as ``python tasks_server.py [--transport stdio|http] [--port N] [--events PATH] [--poll-ms N]
[--create-delay-ms N] [--hold-cancel] [--gates DIR]`` (``--create-delay-ms``: a ``tools/call`` answers
with its task, created at once, only N ms later; ``--hold-cancel``: a ``tasks/cancel`` cancels the task
at once but is answered only once the ``release_cancels`` tool was called, or a minute later;
``--gates``: the folder of the ``gated`` tool's gate files).
Over HTTP it listens on 127.0.0.1 at ``/mcp`` and prints one line ``LISTENING <port>``. The tasks live
in one store for the whole process, not per connection: over HTTP a second client (or process) can
follow a task another one started.

For a client that declares the extension on the request, the task tools below answer ``tools/call``
with a task (``resultType: "task"``) and run in the background; ``tasks/get`` carries the status,
the status message, the outstanding ``inputRequests``, the result or the error; ``tasks/update``
delivers input; ``tasks/cancel`` cancels. An unknown task id is ``-32602``. A client that does not
declare the extension gets ``-32021`` for a tool that needs a task, and the plain result of a tool that
may run either way.

Tools (``task`` means the server always answers with a task for a declaring client)
-----------------------------------------------------------------------------------
stages(count=3, delay=0.2, tag="", lockstep=False)
                                     task: ``count`` stages of ``delay`` s, status message "stage i of
                                     count" each; result "done <count> stages <tag>". ``lockstep``: a
                                     stage ends only after a ``tasks/get`` has seen it
ask(mode="form", tag="")             task: input_required with one elicitation (form: {name: str};
                                     url: a URL to visit); result "accept <content JSON>" / "decline" /
                                     "cancel"
fail_task(message, code=-32603)      task: fails with the JSON-RPC error ``code`` ``message``
error_result(message)                task: completes with an ``isError: true`` result carrying ``message``
vanish(tag="")                       task: the server forgets it at the first ``tasks/get`` (not found)
maybe_task(text)                     a task for a declaring client, the plain result otherwise: "echo <text>"
wrong_output()                       task: completes with ``structuredContent`` {"result": 42}, which its
                                     output schema (a string) refuses
optional_ask(delay=0.3)              task: input_required with an optional question, then completes
                                     "done without the answer" after ``delay`` s, answered or not
status_secret()                      task: a status message, then a failure, each naming the server's
                                     ``API_KEY`` environment value
gated(tag, hold=[], ask=False)       task: runs until the gate file ``<tag>.finish`` exists in the
                                     ``--gates`` folder, then completes "finished <tag>"; ``ask``: first
                                     input_required (a form whose message ends with the tag). Each step
                                     named in ``hold`` is held once, until ``<tag>.<step>`` exists, after
                                     a ``held`` event: "create" (the ``tools/call`` answer, the task
                                     already created), "poll" (a ``tasks/get`` answer; "poll_after_input":
                                     one after the input arrived), "update" (the
                                     ``tasks/update`` answer), "cancel" (the ``tasks/cancel`` answer,
                                     the task already cancelled)
records()                            what the server recorded, as JSON: ``runs`` (tool -> times it
                                     started), ``cancelled`` (task ids cancelled by ``tasks/cancel``),
                                     ``status`` (task id -> status now)
release_cancels()                    ``--hold-cancel``: the held ``tasks/cancel`` answers go out

Tags that change the server's answers: an ``ask`` task tagged "reject" has its ``tasks/update``
refused with -32602 (its input does not match); a task tagged "strict" has a ``tasks/cancel`` after
its end refused with -32602 (already terminal); one tagged "committing" has its ``tasks/cancel`` refused
while it runs with -32603 "cannot cancel: committing", and one tagged "locked" with -32602 "cannot
cancel: the task holds a lock" (either way it runs on).

Events (``--events PATH``, one JSON object per line): ready, task_created (tool, task_id, tag, pid),
get (task_id, name_header: the ``Mcp-Name`` HTTP header, None over stdio), run (tool, tag, task_id),
stage (task_id, stage), input_required / input_received (task_id), cancel_request (task_id, status:
the task's before it), cancelled (task_id: a running task that ``tasks/cancel`` stopped),
cancel_answered (task_id), task_done (task_id, status), dropped (task_id); for ``gated`` tasks
also status (task_id, tag, status), held / released (task_id, tag, step), and answer_dropped
(task_id, tag, step: the held request's handler was cancelled, as a ``notifications/cancelled``
does, before it answered).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.server import require_client_extension
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolRequestParams, RequestParams

EXTENSION_ID = "io.modelcontextprotocol/tasks"
TTL_MS = 600_000
HOLD_CANCEL_SECONDS = 60.0
"""``--hold-cancel``: the longest a ``tasks/cancel`` answer is held when nobody calls ``release_cancels``."""


class EventSink:
    """Appends one JSON object per line to the events file (no-op without one)."""

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._lock = threading.Lock()

    def write(self, event: str, **fields: Any) -> None:
        if self._path is None:
            return
        line = json.dumps({"event": event, "time": time.time(), **fields}) + "\n"
        with self._lock, open(self._path, "a", encoding="utf-8") as f:
            f.write(line)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z")


@dataclass
class TaskRecord:
    """One task, as the store keeps it."""

    task_id: str
    tool: str
    poll_ms: int
    status: str = "working"
    status_message: str | None = None
    created_at: str = field(default_factory=_now)
    last_updated_at: str = field(default_factory=_now)
    input_requests: dict[str, Any] | None = None
    responses: dict[str, Any] = field(default_factory=dict)
    input_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    seen: asyncio.Event = field(default_factory=asyncio.Event)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    tag: str = ""
    drop_on_get: bool = False
    runner: asyncio.Task[None] | None = None
    holds: set[str] = field(default_factory=set)
    """The steps still to hold (a ``gated`` task's), each once."""
    events: EventSink | None = None
    """Where each status change goes (a ``gated`` task's)."""

    def set(self, status: str, message: str | None = None) -> None:
        self.status = status
        self.status_message = message
        self.last_updated_at = _now()
        if self.events is not None:
            self.events.write("status", task_id=self.task_id, tag=self.tag, status=status)

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttlMs": TTL_MS,
            "pollIntervalMs": self.poll_ms,
        }
        if self.status_message is not None:
            out["statusMessage"] = self.status_message
        if self.status == "input_required" and self.input_requests:
            out["inputRequests"] = self.input_requests
        if self.status == "completed":
            out["result"] = self.result
        if self.status == "failed":
            out["error"] = self.error
        return out


class TaskStore:
    """Every task of this process (over HTTP: of every connection), and what happened to them."""

    def __init__(
        self,
        events: EventSink,
        poll_ms: int,
        create_delay_ms: int = 0,
        hold_cancel: bool = False,
        gates: str | None = None,
    ) -> None:
        self.events = events
        self.poll_ms = poll_ms
        self.create_delay_ms = create_delay_ms
        self.hold_cancel = hold_cancel
        self.cancels_released: asyncio.Event | None = None  # made on the server's loop, at the first use
        self.gates = gates
        self.tasks: dict[str, TaskRecord] = {}
        self.runs: dict[str, int] = {}
        self.cancelled: list[str] = []

    def record_run(self, tool: str, tag: str = "", task_id: str | None = None) -> None:
        self.runs[tool] = self.runs.get(tool, 0) + 1
        self.events.write("run", tool=tool, tag=tag, task_id=task_id)

    def gate(self, tag: str, step: str) -> str:
        if self.gates is None:
            raise MCPError(code=INVALID_PARAMS, message="the server runs without --gates")
        return os.path.join(self.gates, f"{tag}.{step}")

    async def hold(self, record: TaskRecord, step: str) -> None:
        """Hold `step` of a gated task once, until its gate file exists; a cancelled hold is recorded."""
        if step not in record.holds:
            return
        record.holds.discard(step)
        path = self.gate(record.tag, step)
        self.events.write("held", task_id=record.task_id, tag=record.tag, step=step)
        try:
            while not os.path.exists(path):
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            self.events.write("answer_dropped", task_id=record.task_id, tag=record.tag, step=step)
            raise
        self.events.write("released", task_id=record.task_id, tag=record.tag, step=step)

    def create(
        self,
        tool: str,
        body: Callable[[TaskRecord], Awaitable[None]],
        tag: str,
        holds: Sequence[str] = (),
    ) -> TaskRecord:
        record = TaskRecord(task_id=secrets.token_hex(16), tool=tool, poll_ms=self.poll_ms, tag=tag)
        if tool == "gated":
            record.holds, record.events = set(holds), self.events
        self.tasks[record.task_id] = record
        self.events.write("task_created", tool=tool, task_id=record.task_id, tag=tag, pid=os.getpid())
        record.runner = asyncio.get_running_loop().create_task(self._run(record, body))
        return record

    async def _run(self, record: TaskRecord, body: Callable[[TaskRecord], Awaitable[None]]) -> None:
        try:
            await body(record)
        except asyncio.CancelledError:
            record.set("cancelled", "cancelled by the client")
        except MCPError as error:
            record.error = {"code": error.code, "message": error.message}
            record.set("failed", error.message)
        except Exception as error:  # a fixture bug: report it as the task's failure
            record.error = {"code": INTERNAL_ERROR, "message": repr(error)}
            record.set("failed", repr(error))
        self.events.write("task_done", task_id=record.task_id, status=record.status)

    def released(self) -> asyncio.Event:
        """Set once the held ``tasks/cancel`` answers may go out (``release_cancels``)."""
        if self.cancels_released is None:
            self.cancels_released = asyncio.Event()
        return self.cancels_released

    def find(self, task_id: str) -> TaskRecord:
        record = self.tasks.get(task_id)
        if record is None:
            raise MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")
        return record


def _text(text: str, is_error: bool = False) -> dict[str, Any]:
    """A tool result as the tools' declared output (a string) makes it."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if not is_error:
        result["structuredContent"] = {"result": text}
    return result


# --- the task tools' bodies ------------------------------------------------------------------------


def stages_body(
    store: TaskStore, count: int, delay: float, tag: str, lockstep: bool
) -> Callable[[TaskRecord], Awaitable[None]]:
    async def body(record: TaskRecord) -> None:
        store.record_run("stages", tag)
        for stage in range(1, count + 1):
            record.set("working", f"stage {stage} of {count}")
            store.events.write("stage", task_id=record.task_id, stage=stage)
            if lockstep:  # the next stage starts only once a tasks/get has seen this one
                record.seen.clear()
                await record.seen.wait()
            await asyncio.sleep(delay)
        record.result = _text(f"done {count} stages {tag}".rstrip())
        record.set("completed", "all stages done")

    return body


def ask_body(store: TaskStore, mode: str, tag: str) -> Callable[[TaskRecord], Awaitable[None]]:
    async def body(record: TaskRecord) -> None:
        store.record_run("ask", tag)
        key = f"{mode}-1"
        if mode == "url":
            params: dict[str, Any] = {
                "mode": "url",
                "message": "Sign the form on the web page",
                "url": f"https://example.com/approve/{record.task_id}",
            }
        else:
            params = {
                "mode": "form",
                "message": "Who are you?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            }
        record.input_requests = {key: {"method": "elicitation/create", "params": params}}
        record.set("input_required", "waiting for an answer")
        store.events.write("input_required", task_id=record.task_id)
        while key not in record.responses:
            record.input_arrived.clear()
            await record.input_arrived.wait()
        answer = record.responses[key]
        store.events.write("input_received", task_id=record.task_id, answer=answer)
        record.input_requests = None
        record.set("working", "answer received")
        action = answer.get("action")
        text = (
            f"accept {json.dumps(answer.get('content') or {}, sort_keys=True)}"
            if action == "accept"
            else str(action)
        )
        record.result = _text(text)
        record.set("completed")

    return body


def fail_body(store: TaskStore, message: str, code: int) -> Callable[[TaskRecord], Awaitable[None]]:
    async def body(record: TaskRecord) -> None:
        store.record_run("fail_task")
        await asyncio.sleep(0)
        raise MCPError(code=code, message=message)

    return body


def wrong_output_body(store: TaskStore) -> Callable[[TaskRecord], Awaitable[None]]:
    async def body(record: TaskRecord) -> None:
        store.record_run("wrong_output")
        record.result = {
            "content": [{"type": "text", "text": "42"}],
            "structuredContent": {"result": 42},
            "isError": False,
        }
        record.set("completed")

    return body


def optional_ask_body(store: TaskStore, delay: float) -> Callable[[TaskRecord], Awaitable[None]]:
    async def body(record: TaskRecord) -> None:
        store.record_run("optional_ask")
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        params = {"mode": "form", "message": "Optional: your name?", "requestedSchema": schema}
        record.input_requests = {"optional-1": {"method": "elicitation/create", "params": params}}
        record.set("input_required", "an optional question")
        await asyncio.sleep(delay)
        record.input_requests = None
        record.result = _text("done without the answer")
        record.set("completed")

    return body


def status_secret_body(store: TaskStore) -> Callable[[TaskRecord], Awaitable[None]]:
    async def body(record: TaskRecord) -> None:
        store.record_run("status_secret")
        key = os.environ.get("API_KEY", "")
        record.set("working", f"using key {key}")
        await record.seen.wait()  # a tasks/get has seen the message
        raise MCPError(code=INTERNAL_ERROR, message=f"upstream rejected key {key}")

    return body


def error_result_body(store: TaskStore, message: str) -> Callable[[TaskRecord], Awaitable[None]]:
    async def body(record: TaskRecord) -> None:
        store.record_run("error_result")
        record.result = _text(message, is_error=True)
        record.set("completed")

    return body


def vanish_body(store: TaskStore, tag: str) -> Callable[[TaskRecord], Awaitable[None]]:
    async def body(record: TaskRecord) -> None:
        store.record_run("vanish", tag)
        record.drop_on_get = True
        await asyncio.sleep(3600)

    return body


def gated_body(store: TaskStore, tag: str, ask: bool) -> Callable[[TaskRecord], Awaitable[None]]:
    async def body(record: TaskRecord) -> None:
        store.record_run("gated", tag, record.task_id)
        finish = store.gate(tag, "finish")
        if ask:
            schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
            params = {"mode": "form", "message": f"Who are you? {tag}", "requestedSchema": schema}
            record.input_requests = {"gated-1": {"method": "elicitation/create", "params": params}}
            record.set("input_required", "waiting for an answer")
            store.events.write("input_required", task_id=record.task_id)
            while "gated-1" not in record.responses:
                record.input_arrived.clear()
                await record.input_arrived.wait()
            store.events.write("input_received", task_id=record.task_id, answer=record.responses["gated-1"])
            record.input_requests = None
            record.set("working", "answer received")
        while not os.path.exists(finish):
            await asyncio.sleep(0.02)
        record.result = _text(f"finished {tag}")
        record.set("completed")

    return body


def echo_body(store: TaskStore, text: str) -> Callable[[TaskRecord], Awaitable[None]]:
    async def body(record: TaskRecord) -> None:
        store.record_run("maybe_task")
        record.result = _text(f"echo {text}")
        record.set("completed")

    return body


# --- the extension ---------------------------------------------------------------------------------


class TaskIdParams(RequestParams):
    task_id: str


class UpdateParams(RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class ServerTasks(Extension):
    """The server side of the tasks extension over one process-wide `TaskStore`."""

    identifier = EXTENSION_ID

    def __init__(self, store: TaskStore) -> None:
        self.store = store

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", TaskIdParams, self._get),
            MethodBinding("tasks/update", UpdateParams, self._update),
            MethodBinding("tasks/cancel", TaskIdParams, self._cancel),
        )

    def _body(
        self, name: str, arguments: dict[str, Any]
    ) -> tuple[Callable[[TaskRecord], Awaitable[None]], str] | None:
        store = self.store
        tag = str(arguments.get("tag", ""))
        if name == "stages":
            count, delay = int(arguments.get("count", 3)), float(arguments.get("delay", 0.2))
            lockstep = bool(arguments.get("lockstep", False))
            return stages_body(store, count, delay, tag, lockstep), tag
        if name == "ask":
            return ask_body(store, str(arguments.get("mode", "form")), tag), tag
        if name == "fail_task":
            code = int(arguments.get("code", INTERNAL_ERROR))
            return fail_body(store, str(arguments.get("message", "it failed")), code), tag
        if name == "error_result":
            return error_result_body(store, str(arguments.get("message", "bad input"))), tag
        if name == "vanish":
            return vanish_body(store, tag), tag
        if name == "maybe_task":
            return echo_body(store, str(arguments.get("text", ""))), tag
        if name == "gated":
            return gated_body(store, tag, bool(arguments.get("ask", False))), tag
        if name == "wrong_output":
            return wrong_output_body(store), tag
        if name == "optional_ask":
            return optional_ask_body(store, float(arguments.get("delay", 0.3))), tag
        if name == "status_secret":
            return status_secret_body(store), tag
        return None

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        found = self._body(params.name, dict(params.arguments or {}))
        if found is None:
            return await call_next(ctx)
        capabilities = ctx.session.client_capabilities
        declared = bool(capabilities and capabilities.extensions and EXTENSION_ID in capabilities.extensions)
        if not declared:
            if params.name == "maybe_task":
                return await call_next(ctx)
            require_client_extension(ctx, EXTENSION_ID)
        body, tag = found
        holds = [str(step) for step in (params.arguments or {}).get("hold") or ()]
        record = self.store.create(params.name, body, tag, holds)
        if self.store.create_delay_ms:
            await asyncio.sleep(self.store.create_delay_ms / 1000)
        await self.store.hold(record, "create")
        return {"resultType": "task", **record.wire()}

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        require_client_extension(ctx, EXTENSION_ID)
        headers = getattr(ctx.request, "headers", None)
        name_header = headers.get("mcp-name") if headers is not None else None
        self.store.events.write("get", task_id=params.task_id, name_header=name_header)
        record = self.store.find(params.task_id)
        if record.drop_on_get:
            del self.store.tasks[record.task_id]
            if record.runner is not None:
                record.runner.cancel()
            self.store.events.write("dropped", task_id=record.task_id)
            raise MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")
        await self.store.hold(record, "poll")
        if record.responses:
            await self.store.hold(record, "poll_after_input")
        answer = {"resultType": "complete", **record.wire()}
        record.seen.set()
        return answer

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateParams) -> HandlerResult:
        require_client_extension(ctx, EXTENSION_ID)
        record = self.store.find(params.task_id)
        if record.tool == "ask" and record.tag == "reject":
            raise MCPError(code=INVALID_PARAMS, message="inputResponses do not match the requested schema")
        outstanding = record.input_requests or {}
        for key, response in params.input_responses.items():
            if key in outstanding and key not in record.responses:
                record.responses[key] = response
        record.input_arrived.set()
        await self.store.hold(record, "update")
        return {"resultType": "complete"}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        require_client_extension(ctx, EXTENSION_ID)
        record = self.store.find(params.task_id)
        ended = record.status in ("completed", "failed", "cancelled")
        self.store.events.write("cancel_request", task_id=record.task_id, status=record.status)
        if ended and record.tag == "strict":
            message = f"Cannot cancel task: already in terminal status {record.status!r}"
            raise MCPError(code=INVALID_PARAMS, message=message)
        if not ended and record.tag == "committing":
            raise MCPError(code=INTERNAL_ERROR, message="cannot cancel: committing")
        if not ended and record.tag == "locked":
            raise MCPError(code=INVALID_PARAMS, message="cannot cancel: the task holds a lock")
        if not ended and record.runner is not None:
            self.store.cancelled.append(record.task_id)
            self.store.events.write("cancelled", task_id=record.task_id)
            record.runner.cancel()
        await self.store.hold(record, "cancel")
        if self.store.hold_cancel:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.store.released().wait(), HOLD_CANCEL_SECONDS)
        self.store.events.write("cancel_answered", task_id=record.task_id)
        return {"resultType": "complete"}


class _UntypedResults:
    """Middleware: `tools/call` results leave out `resultType` (which means "complete")."""

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await call_next(ctx)
        if isinstance(result, dict) and ctx.method == "tools/call" and result.get("resultType") == "complete":
            result.pop("resultType", None)
        return result


def build_server(store: TaskStore, untyped_results: bool = False) -> MCPServer:
    middleware = [_UntypedResults()] if untyped_results else []
    server = MCPServer("tasks-fixture", extensions=[ServerTasks(store)], middleware=middleware)

    def needs_task() -> str:
        raise MCPError(code=INTERNAL_ERROR, message="this tool runs only as a task")

    @server.tool(description="Runs in stages as a task, with a status message per stage.")
    def stages(count: int = 3, delay: float = 0.2, tag: str = "", lockstep: bool = False) -> str:
        return needs_task()

    @server.tool(description="A task that asks for input (form or URL elicitation).")
    def ask(mode: str = "form", tag: str = "") -> str:
        return needs_task()

    @server.tool(description="A task that fails with a JSON-RPC error.")
    def fail_task(message: str = "it failed", code: int = INTERNAL_ERROR) -> str:
        return needs_task()

    @server.tool(description="A task whose result breaks its output schema.")
    def wrong_output() -> str:
        return needs_task()

    @server.tool(description="A task that asks an optional question and ends without the answer.")
    def optional_ask(delay: float = 0.3) -> str:
        return needs_task()

    @server.tool(description="A task whose status message and error name a secret.")
    def status_secret() -> str:
        return needs_task()

    @server.tool(description="A task whose result is a tool error.")
    def error_result(message: str = "bad input") -> str:
        return needs_task()

    @server.tool(description="A task that runs until the test lets it finish; its steps can be held.")
    def gated(tag: str = "", hold: list[str] | None = None, ask: bool = False) -> str:
        return needs_task()

    @server.tool(description="A task the server forgets.")
    def vanish(tag: str = "") -> str:
        return needs_task()

    @server.tool(description="A task for a client that takes one, a plain result otherwise.")
    def maybe_task(text: str = "") -> str:
        store.record_run("maybe_task")
        return f"echo {text}"

    @server.tool(description="A plain tool that sleeps; its start, end or cancellation is an event.")
    async def plain_slow(seconds: float = 60.0) -> str:
        store.events.write("plain_started")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            store.events.write("plain_cancelled")
            raise
        store.events.write("plain_finished")
        return "slept"

    @server.tool(description="A plain tool that reports progress, then answers at once.")
    async def plain_progress(ctx: Context, steps: int = 5) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        return f"{steps} steps"

    @server.tool(description="Lets the held tasks/cancel answers go out (--hold-cancel).")
    async def release_cancels() -> str:
        store.released().set()
        return "released"

    @server.tool(description="What the server recorded, as JSON.")
    def records() -> str:
        status = {task_id: record.status for task_id, record in store.tasks.items()}
        return json.dumps(
            {"runs": store.runs, "cancelled": store.cancelled, "status": status}, sort_keys=True
        )

    return server


async def serve_http(server: MCPServer, port: int, events: EventSink) -> None:
    app = server.streamable_http_app(host="127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=2, lifespan="on"
    )
    web = uvicorn.Server(config)
    task = asyncio.create_task(web.serve(sockets=[sock]))
    while not web.started:
        if task.done():
            await task
            raise SystemExit("uvicorn stopped before it started listening")
        await asyncio.sleep(0.01)
    events.write("ready", pid=os.getpid(), transport="http", port=port)
    sys.stdout.write(f"LISTENING {port}\n")
    sys.stdout.flush()
    await task


async def serve_stdio(server: MCPServer, events: EventSink) -> None:
    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    async with stdio_server() as (read_stream, write_stream):
        events.write("ready", pid=os.getpid(), transport="stdio")
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="mcp_sync tasks-extension fixture server")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--events", default=None)
    parser.add_argument("--poll-ms", type=int, default=50)
    parser.add_argument("--create-delay-ms", type=int, default=0)
    parser.add_argument("--untyped-results", action="store_true")
    parser.add_argument("--hold-cancel", action="store_true")
    parser.add_argument("--gates", default=None)
    options, _unknown = parser.parse_known_args(argv)
    events = EventSink(options.events)
    store = TaskStore(events, options.poll_ms, options.create_delay_ms, options.hold_cancel, options.gates)
    server = build_server(store, options.untyped_results)
    if options.transport == "http":
        asyncio.run(serve_http(server, options.port, events))
    else:
        anyio.run(serve_stdio, server, events, backend="asyncio")


if __name__ == "__main__":
    main()
