"""OpenTelemetry spans of tool calls, resource reads and prompt gets (`MCPHub(tracing=...)`).

Spans are read from the SDK's `InMemorySpanExporter` on a tracer provider of the test's own (never
the process-wide one, which the other tests share); the process-wide provider is tested in a fresh
interpreter.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys
import textwrap
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcp_sync import (
    MCPHub,
    ServerDisconnectedError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
)
from tests.hub_harness import fixture_server, started_hub
from tests.support import REPO_ROOT, EventLog, HttpServer, ReferenceServers, stdio_config, wait_until

# What a traced hub's spans carry about the call's server, per transport.
TRANSPORTS = [pytest.param("stdio", id="stdio"), pytest.param("http", id="http")]
SECRET = "tracing-secret-value-8f3a"  # an env value of the server's configuration: never in a span
ARGUMENT = "argument-value-that-stays-local"


class Spans:
    """A private tracer provider and the spans it ended."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("test")

    def ended(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.ended() if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        """The one span called `name`, waited for (a span ends when the caller has the outcome)."""
        spans = wait_until(lambda: self.named(name), timeout=10.0, message=f"no span {name!r} ended")
        assert len(spans) == 1, spans
        return spans[0]

    def clear(self) -> None:
        self.exporter.clear()


@pytest.fixture(scope="module")
def spans() -> Spans:
    return Spans()


@pytest.fixture(scope="module", params=[p.values[0] for p in TRANSPORTS], ids=[p.id for p in TRANSPORTS])
def traced(
    request: pytest.FixtureRequest, spans: Spans, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[MCPHub, EventLog, str]]:
    transport = request.param
    events = EventLog(tmp_path_factory.mktemp("events") / "events.jsonl")
    overrides: dict[str, Any] = {"env": {"TRACED_TOKEN": SECRET}} if transport == "stdio" else {}
    with (
        fixture_server("fx", transport, "legacy", events=events, **overrides) as served,
        started_hub(served.config, tracing=spans.provider) as hub,
    ):
        yield hub, events, transport


@pytest.fixture(autouse=True)
def _fresh(spans: Spans) -> None:
    spans.clear()


def _every_value(span: ReadableSpan) -> str:
    """Everything a span says, as one text: attributes, status, events."""
    parts = [span.name, repr(dict(span.attributes or {})), span.status.description or ""]
    parts += [f"{event.name} {dict(event.attributes or {})!r}" for event in span.events]
    return "\n".join(parts)


def test_a_tool_call_is_a_client_span_named_and_described_by_the_mcp_conventions(
    traced: Any, spans: Spans
) -> None:
    hub, _, transport = traced
    assert hub.call_tool("mcp__fx__echo", {"text": ARGUMENT}).text == ARGUMENT
    span = spans.one("tools/call echo")
    attributes = dict(span.attributes or {})
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == "echo"
    assert attributes["mcp_sync.server.name"] == "fx"
    assert attributes["mcp_sync.tool.public_name"] == "mcp__fx__echo"
    assert attributes["mcp.protocol.version"] == hub.servers["fx"].protocol_version
    assert "error.type" not in attributes
    if transport == "stdio":
        assert attributes["network.transport"] == "pipe"
        assert "mcp.session.id" not in attributes
    else:
        assert attributes["network.transport"] == "tcp"
        assert attributes["network.protocol.name"] == "http"
        assert attributes["server.address"] == "127.0.0.1"
        assert isinstance(attributes["server.port"], int)
        assert attributes["mcp.session.id"]
    assert ARGUMENT not in _every_value(span)
    assert span.end_time is not None and span.start_time is not None and span.end_time > span.start_time


def test_a_call_to_an_sse_server_is_a_tcp_span_with_its_address_and_port(
    spans: Spans, tmp_path_factory: pytest.TempPathFactory
) -> None:
    events = EventLog(tmp_path_factory.mktemp("events") / "events.jsonl")
    with HttpServer(events=events, transport="sse") as server:
        config = {"server_name": "web", "transport": "sse", "url": server.url}
        with started_hub(config, tracing=spans.provider) as hub:
            assert hub.call_tool("mcp__web__echo", {"text": ARGUMENT}).text == ARGUMENT
            attributes = dict(spans.one("tools/call echo").attributes or {})
    assert attributes["network.transport"] == "tcp"
    assert attributes["network.protocol.name"] == "http"
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == urllib.parse.urlsplit(server.url).port


def test_a_resource_read_is_a_span_with_its_uri_not_in_its_name(traced: Any, spans: Spans) -> None:
    hub, _, _ = traced
    assert hub.read_resource("fixture://text/readme").text == "fixture readme"
    span = spans.one("resources/read")
    attributes = dict(span.attributes or {})
    assert span.kind is SpanKind.CLIENT
    assert attributes["mcp.method.name"] == "resources/read"
    assert attributes["mcp.resource.uri"] == "fixture://text/readme"
    assert "gen_ai.operation.name" not in attributes
    assert "fixture readme" not in _every_value(span)


def test_a_prompt_get_is_a_span_named_for_its_prompt(traced: Any, spans: Spans) -> None:
    hub, _, _ = traced
    assert hub.get_prompt("mcp__fx__greet", {"name": ARGUMENT}).messages
    span = spans.one("prompts/get greet")
    attributes = dict(span.attributes or {})
    assert attributes["mcp.method.name"] == "prompts/get"
    assert attributes["gen_ai.prompt.name"] == "greet"
    assert ARGUMENT not in _every_value(span)


def test_the_span_is_a_child_of_the_callers_current_span(traced: Any, spans: Spans) -> None:
    hub, _, _ = traced
    with spans.tracer.start_as_current_span("agent step") as step:
        hub.call_tool("mcp__fx__echo", {"text": "x"})
        hub.read_resource("fixture://text/readme")
    for name in ("tools/call echo", "resources/read"):
        span = spans.one(name)
        assert span.parent is not None
        assert span.parent.span_id == step.get_span_context().span_id
        assert span.context.trace_id == step.get_span_context().trace_id


def test_calls_from_a_thread_pool_are_each_the_child_of_their_own_callers_span(
    traced: Any, spans: Spans
) -> None:
    hub, _, _ = traced

    def step(i: int) -> tuple[int, int]:
        with spans.tracer.start_as_current_span(f"step {i}") as caller:
            text = hub.call_tool("mcp__fx__echo_meta").text
        sent = json.loads(text)["traceparent"].split("-")
        return caller.get_span_context().trace_id, int(sent[1], 16)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(step, range(24)))
    calls = spans.named("tools/call echo_meta")
    assert len(calls) == 24
    callers = {span.context.span_id: span for span in spans.ended() if span.name.startswith("step ")}
    for call in calls:
        assert call.parent is not None and call.parent.span_id in callers
        assert call.context.trace_id == callers[call.parent.span_id].context.trace_id
    # Each request carried its own caller's trace, whichever loop turn started it.
    for caller_trace, sent_trace in outcomes:
        assert sent_trace == caller_trace


def test_the_request_meta_carries_the_client_spans_trace_context(traced: Any, spans: Spans) -> None:
    hub, _, _ = traced
    with spans.tracer.start_as_current_span("agent step"):
        meta = json.loads(hub.call_tool("mcp__fx__echo_meta").text)
    span = spans.one("tools/call echo_meta")
    version, trace_id, span_id, flags = meta["traceparent"].split("-")
    assert version == "00"
    assert int(trace_id, 16) == span.context.trace_id
    assert int(span_id, 16) == span.context.span_id
    assert int(flags, 16) & 0x01  # sampled


def test_a_submitted_call_ends_its_span_when_its_future_is_done(traced: Any, spans: Spans) -> None:
    hub, _, _ = traced
    with spans.tracer.start_as_current_span("agent step") as step:
        future = hub.submit("mcp__fx__echo", {"text": "x"})
    assert future.result(timeout=10).text == "x"
    span = spans.one("tools/call echo")
    assert span.parent is not None and span.parent.span_id == step.get_span_context().span_id
    assert span.status.status_code is StatusCode.UNSET


def test_a_cancelled_submitted_call_ends_its_span_as_cancelled(traced: Any, spans: Spans) -> None:
    hub, events, _ = traced
    future = hub.submit("mcp__fx__sleep", {"seconds": 30, "tag": "trace-submit"})
    events.wait_for("started", tag="trace-submit")
    assert future.cancel()
    span = spans.one("tools/call sleep")
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "cancelled"
    events.wait_for("cancelled", tag="trace-submit")


def test_a_timed_out_call_ends_its_span_with_error_type_timeout(traced: Any, spans: Spans) -> None:
    hub, events, _ = traced
    with pytest.raises(ToolCallTimeoutError):
        hub.call_tool("mcp__fx__sleep", {"seconds": 30, "tag": "trace-timeout"}, timeout=0.5)
    span = spans.one("tools/call sleep")
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "timeout"
    events.wait_for("cancelled", tag="trace-timeout")


def test_a_call_cancelled_by_its_event_ends_its_span_as_cancelled(traced: Any, spans: Spans) -> None:
    hub, events, _ = traced
    cancel = threading.Event()
    waiter = threading.Thread(
        target=lambda: (events.wait_for("started", tag="trace-cancel"), cancel.set()), daemon=True
    )
    waiter.start()
    with pytest.raises(ToolCallCancelledError):
        hub.call_tool("mcp__fx__sleep", {"seconds": 30, "tag": "trace-cancel"}, cancel=cancel, timeout=30)
    waiter.join(10)
    span = spans.one("tools/call sleep")
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "cancelled"


def test_a_tool_error_result_marks_the_span_as_a_tool_error(traced: Any, spans: Spans) -> None:
    hub, _, _ = traced
    assert hub.call_tool("mcp__fx__fail", {"message": ARGUMENT}).is_error
    span = spans.one("tools/call fail")
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "tool_error"
    assert ARGUMENT not in _every_value(span)


def test_a_server_error_is_the_json_rpc_code_and_never_shows_a_secret(traced: Any, spans: Spans) -> None:
    hub, _, transport = traced
    with pytest.raises(ToolCallError) as raised:
        hub.call_tool("mcp__fx__fail_with_env", {"name": "TRACED_TOKEN"})
    span = spans.one("tools/call fail_with_env")
    attributes = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.ERROR
    assert raised.value.code is not None
    assert attributes["error.type"] == str(raised.value.code)
    assert attributes["rpc.response.status_code"] == str(raised.value.code)
    if transport == "stdio":  # the value is a secret of this hub's configuration only over stdio
        assert SECRET not in _every_value(span)


def test_a_call_to_a_server_that_went_away_ends_its_span_with_the_error_type(spans: Spans) -> None:
    with (
        started_hub(stdio_config("gone"), tracing=spans.provider) as hub,
        pytest.raises(ServerDisconnectedError),
    ):
        hub.call_tool("mcp__gone__crash")
    span = spans.one("tools/call crash")
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "ServerDisconnectedError"


def test_a_hub_without_tracing_makes_no_span(spans: Spans) -> None:
    with started_hub(stdio_config("plain")) as hub, spans.tracer.start_as_current_span("agent step"):
        hub.call_tool("mcp__plain__echo", {"text": "x"})
    assert [span.name for span in spans.ended()] == ["agent step"]


_PROCESS_WIDE = textwrap.dedent(
    """
    import json, sys
    from tests.support import stdio_config
    from mcp_sync import MCPHub

    report = {}
    with MCPHub([stdio_config("plain")]) as hub:
        hub.call_tool("mcp__plain__echo", {"text": "x"})
        hub.read_resource("fixture://text/readme")
    report["tracing_module_when_off"] = "mcp_sync._hub.tracing" in sys.modules
    report["sdk_when_off"] = "opentelemetry.sdk" in sys.modules

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    with MCPHub([stdio_config("plain")]) as hub:
        hub.call_tool("mcp__plain__echo", {"text": "x"})
    report["spans_when_off"] = [span.name for span in exporter.get_finished_spans()]
    exporter.clear()
    with MCPHub([stdio_config("traced")], tracing=True) as hub:
        meta = json.loads(hub.call_tool("mcp__traced__echo_meta").text)
    spans = {span.context.span_id: span for span in exporter.get_finished_spans()}
    sent = int(meta["traceparent"].split("-")[2], 16)
    ours = [span for span in spans.values() if span.name == "tools/call echo_meta"]
    report["ours"] = len(ours)
    # The SDK's own request span (process-wide provider) is our span's child, and is what it sends.
    report["sent"] = spans[sent].name if sent in spans else None
    report["sent_parent_is_ours"] = bool(ours) and sent in spans and (
        spans[sent].parent.span_id == ours[0].context.span_id
    )
    print(json.dumps(report))
    """
)


def test_without_tracing_nothing_of_it_is_imported_and_with_it_the_process_wide_provider_is_used() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROCESS_WIDE],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["tracing_module_when_off"] is False
    assert report["sdk_when_off"] is False
    # Off: only the mcp SDK's own per-request span ("MCP send ..."), none of ours.
    assert not [name for name in report["spans_when_off"] if not name.startswith("MCP send")]
    assert report["ours"] == 1
    assert report["sent"] == "MCP send tools/call echo_meta"
    assert report["sent_parent_is_ours"] is True


def test_tracing_takes_true_false_or_a_tracer_provider() -> None:
    with pytest.raises(TypeError, match="TracerProvider"):
        MCPHub([], tracing="yes")  # type: ignore[arg-type]


# -- a call that runs as an MCP task ---------------------------------------------------------------------

RESEARCH = "mcp__ref__simulate-research-query"


@pytest.fixture(scope="module")
def research(spans: Spans, reference_servers: ReferenceServers) -> Iterator[MCPHub]:
    """The official reference server over stdio, traced: its `simulate-research-query` runs as a task. On
    its fast clock (`ReferenceServers.everything_argv`): the four stages take 0.1 s each."""
    config = reference_servers.everything_config("ref", fast=True)
    with started_hub(config, tracing=spans.provider) as hub:
        yield hub


@pytest.fixture
def research_real_clock(spans: Spans, reference_servers: ReferenceServers) -> Iterator[MCPHub]:
    """The same on its real clock: a research task lasts four seconds, longer than a call's short timeout."""
    with started_hub(reference_servers.everything_config("ref"), tracing=spans.provider) as hub:
        yield hub


def test_a_task_call_is_one_span_with_the_task_id_and_its_final_status(
    research: MCPHub, spans: Spans
) -> None:
    statuses: list[str] = []
    result = research.call_tool(
        RESEARCH,
        {"topic": ARGUMENT},
        timeout=60,
        progress=lambda _done, _total, message: statuses.append(message),
    )
    assert not result.is_error and statuses  # four stages, polled at the server's pollInterval
    span = spans.one("tools/call simulate-research-query")
    assert [span.name for span in spans.ended()] == ["tools/call simulate-research-query"]
    attributes = dict(span.attributes or {})
    assert attributes["mcp_sync.task.status"] == "completed"
    [task] = [task for task in research.list_tasks("ref") if task.task_id == attributes["mcp_sync.task.id"]]
    assert task.status == "completed"
    assert span.status.status_code is StatusCode.UNSET
    assert ARGUMENT not in _every_value(span)


def test_a_submitted_task_call_is_one_span_ended_with_its_future(research: MCPHub, spans: Spans) -> None:
    future = research.submit(RESEARCH, {"topic": "tides"}, timeout=60)
    assert not future.result(timeout=90).is_error
    span = spans.one("tools/call simulate-research-query")
    assert [span.name for span in spans.ended()] == ["tools/call simulate-research-query"]
    attributes = dict(span.attributes or {})
    assert attributes["mcp_sync.task.id"] and attributes["mcp_sync.task.status"] == "completed"


def test_a_task_call_that_times_out_is_one_span_with_its_task_id(
    research_real_clock: MCPHub, spans: Spans
) -> None:
    with pytest.raises(ToolCallTimeoutError):
        research_real_clock.call_tool(RESEARCH, {"topic": "tides"}, timeout=1.5)
    span = spans.one("tools/call simulate-research-query")
    attributes = dict(span.attributes or {})
    assert attributes["error.type"] == "timeout"
    assert attributes["mcp_sync.task.status"] == "working"  # the last status learnt before the stop
    handle = research_real_clock.task("ref", str(attributes["mcp_sync.task.id"]))
    # The call raises as soon as it stops; its tasks/cancel goes out after it.
    wait_until(lambda: handle.refresh(timeout=10).status == "cancelled", 20, interval=0.2)
