"""The server's sampling and elicitation requests run as tasks (MCP 2025-11-25), when the server asks.

Against the official server-everything over stdio and Streamable HTTP (its two `-async` tools ask
the client to run a request as a task, poll `tasks/get` every second and fetch `tasks/result`), and
a fixture server of our own that drives the tasks one request at a time (`tasks/cancel` included,
which the reference server never sends). server-everything runs on its fast clock, where it polls every
0.1 s (`ReferenceServers.everything_argv`): what is checked is what it gets back, not when.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_sync import ElicitationRequest, MCPHub, SamplingRequest, SamplingResponse, ServerConnection
from tests.hub_harness import started_hub
from tests.support import SERVERS_DIR, ReferenceServers, http_config, stdio_config
from tests.tasks_harness import EverythingHttp

TASK_SERVER = SERVERS_DIR / "task_requests_server.py"
ASYNC_TOOLS = {"trigger-sampling-request-async", "trigger-elicitation-request-async"}
CALL_TIMEOUT = 45.0  # a bound: the reference server polls until the client's task ends


class Answers:
    """Handlers that record what they were asked, and the threads they ran on."""

    def __init__(self) -> None:
        self.samplings: list[SamplingRequest] = []
        self.elicitations: list[ElicitationRequest] = []
        self.threads: list[str] = []

    def sample(self, request: SamplingRequest) -> SamplingResponse:
        self.samplings.append(request)
        self.threads.append(threading.current_thread().name)
        return SamplingResponse(text="forty-two", model="reference-test-model")

    def elicit(self, request: ElicitationRequest) -> dict[str, Any]:
        self.elicitations.append(request)
        self.threads.append(threading.current_thread().name)
        return {"name": "Ada Lovelace", "favoriteColor": "Blue", "agreeToTerms": True}


@pytest.fixture(scope="module")
def everything_http(
    reference_servers: ReferenceServers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """server-everything over Streamable HTTP, on its fast clock; its URL."""
    with EverythingHttp(reference_servers, tmp_path_factory.mktemp("everything"), fast=True) as server:
        yield server.url


@pytest.fixture(params=["stdio", "http"])
def everything_config(request: pytest.FixtureRequest, reference_servers: ReferenceServers) -> dict[str, Any]:
    if request.param == "stdio":
        return reference_servers.everything_config("ev", fast=True)
    return http_config("ev", request.getfixturevalue("everything_http"))


def _async_tools(hub: MCPHub) -> set[str]:
    return {tool.raw_name for tool in hub.tools() if tool.raw_name in ASYNC_TOOLS}


# -- the reference server -----------------------------------------------------------------------------


@pytest.mark.node
def test_the_async_tools_are_offered_to_a_hub_with_both_handlers(everything_config: dict[str, Any]) -> None:
    answers = Answers()
    with started_hub(everything_config, sampling=answers.sample, elicitation=answers.elicit) as hub:
        assert _async_tools(hub) == ASYNC_TOOLS


@pytest.mark.node
def test_async_sampling_runs_the_handler_as_a_task_and_the_server_gets_its_reply(
    everything_config: dict[str, Any],
) -> None:
    answers = Answers()
    with started_hub(everything_config, sampling=answers.sample, elicitation=answers.elicit) as hub:
        result = hub.call_tool(
            "mcp__ev__trigger-sampling-request-async", {"prompt": "the answer?"}, timeout=CALL_TIMEOUT
        )
    assert result.text.startswith("[COMPLETED] Async sampling completed!"), result.text
    assert "Task created: " in result.text
    assert '"text": "forty-two"' in result.text and '"model": "reference-test-model"' in result.text
    assert [request.system_prompt for request in answers.samplings] == ["You are a helpful test server."]
    assert "the answer?" in answers.samplings[0].messages[0]["content"]
    _assert_ran_off_the_loop(answers)


@pytest.mark.node
def test_async_elicitation_runs_the_handler_as_a_task_and_the_server_gets_the_answer(
    everything_config: dict[str, Any],
) -> None:
    answers = Answers()
    with started_hub(everything_config, sampling=answers.sample, elicitation=answers.elicit) as hub:
        result = hub.call_tool("mcp__ev__trigger-elicitation-request-async", timeout=CALL_TIMEOUT)
    assert result.text.startswith("[COMPLETED] User provided the requested information!"), result.text
    assert "- Name: Ada Lovelace" in result.text and "- Favorite Color: Blue" in result.text
    assert "- Agreed to terms: true" in result.text
    asked = answers.elicitations[0].requested_schema["properties"]
    assert set(asked) == {"name", "favoriteColor", "agreeToTerms"}
    _assert_ran_off_the_loop(answers)


def _assert_ran_off_the_loop(answers: Answers) -> None:
    """A task's handler runs on a thread of its own: never the server's loop thread, nor the caller's."""
    assert answers.threads, "no handler ran"
    for name in answers.threads:
        assert name.startswith("mcp-sync:") and name != "mcp-sync:ev", name
        assert name != threading.main_thread().name


@pytest.mark.node
def test_the_async_tools_are_not_offered_without_the_handlers(reference_servers: ReferenceServers) -> None:
    with started_hub(reference_servers.everything_config("ev"), elicitation=None, sampling=None) as hub:
        assert _async_tools(hub) == set()


@pytest.mark.node
def test_only_the_async_tool_of_the_handler_given_is_offered(reference_servers: ReferenceServers) -> None:
    answers = Answers()
    config = reference_servers.everything_config("ev")
    with started_hub(config, elicitation=None, sampling=answers.sample) as hub:
        assert _async_tools(hub) == {"trigger-sampling-request-async"}


@pytest.mark.node
def test_a_handler_that_raises_fails_the_task_and_the_server_is_told(
    reference_servers: ReferenceServers,
) -> None:
    def broken(request: SamplingRequest) -> SamplingResponse:
        raise RuntimeError("the model is down")

    with started_hub(reference_servers.everything_config("ev", fast=True), sampling=broken) as hub:
        result = hub.call_tool(
            "mcp__ev__trigger-sampling-request-async", {"prompt": "the answer?"}, timeout=CALL_TIMEOUT
        )
    assert result.text.startswith("[FAILED] client: the sampling handler failed"), result.text
    assert "the model is down" in result.text


# -- a server that drives the tasks itself --------------------------------------------------------------


def _task_server(name: str = "ts") -> dict[str, Any]:
    return stdio_config(name, script=TASK_SERVER)


def _ask(hub: MCPHub, tool: str, **arguments: Any) -> Any:
    """Call a tool of the task server: what the server got back from the client."""
    return json.loads(hub.call_tool(f"mcp__ts__{tool}", arguments, timeout=20).text)


class Gate:
    """An elicitation handler that reports it started, then waits for its cancellation (or, with
    `until_released`, for `release`) and answers."""

    def __init__(self, until_released: bool = False) -> None:
        self.until_released = until_released
        self.started = threading.Event()
        self.release = threading.Event()
        self.returned = threading.Event()
        self.saw_cancel: bool | None = None
        self.thread: threading.Thread | None = None

    def __call__(self, request: ElicitationRequest) -> dict[str, Any]:
        self.thread = threading.current_thread()
        self.started.set()
        try:
            if self.until_released:
                self.release.wait(20)
            else:
                self.saw_cancel = request.cancelled.wait(20)
            return {"name": "late"}
        finally:
            self.returned.set()


def test_the_client_declares_the_task_capability_for_its_handlers() -> None:
    answers = Answers()
    with started_hub(_task_server(), elicitation=answers.elicit, sampling=answers.sample) as hub:
        tasks = _ask(hub, "capabilities")["tasks"]
    assert tasks == {
        "list": {},
        "cancel": {},
        "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}},
    }


def test_the_client_declares_no_task_capability_without_handlers() -> None:
    with started_hub(_task_server(), elicitation=None, sampling=None) as hub:
        assert "tasks" not in _ask(hub, "capabilities")


def test_a_task_request_is_answered_with_the_task_at_once_and_its_result_later() -> None:
    gate = Gate(until_released=True)
    with started_hub(_task_server(), elicitation=gate) as hub:
        created = _ask(hub, "elicit_task", ttl_ms=60000)["result"]["task"]
        assert created["status"] == "working" and created["ttl"] == 60000
        assert {"taskId", "createdAt", "lastUpdatedAt", "pollInterval"} <= set(created)
        task_id = created["taskId"]
        assert gate.started.wait(10)
        assert _ask(hub, "task_request", method="tasks/get", task_id=task_id)["result"]["status"] == "working"
        listed = _ask(hub, "task_request", method="tasks/list")["result"]["tasks"]
        assert [task["taskId"] for task in listed] == [task_id]
        arguments = {"method": "tasks/result", "task_id": task_id}
        waiting = hub.submit("mcp__ts__task_request", arguments, timeout=20)
        gate.release.set()
        result = json.loads(waiting.result(timeout=20).text)["result"]
        assert result["action"] == "accept" and result["content"] == {"name": "late"}
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        status = _ask(hub, "task_request", method="tasks/get", task_id=task_id)["result"]["status"]
        assert status == "completed"


def test_a_sampling_task_completes_with_the_handlers_reply() -> None:
    answers = Answers()
    with started_hub(_task_server(), sampling=answers.sample) as hub:
        task_id = _ask(hub, "sample_task")["result"]["task"]["taskId"]
        result = _ask(hub, "task_request", method="tasks/result", task_id=task_id)["result"]
    assert result["content"] == {"type": "text", "text": "forty-two"}
    assert result["model"] == "reference-test-model"


def test_cancel_tells_the_handler_to_stop_and_drops_its_late_answer() -> None:
    gate = Gate()
    with started_hub(_task_server(), elicitation=gate) as hub:
        task_id = _ask(hub, "elicit_task")["result"]["task"]["taskId"]
        assert gate.started.wait(10)
        cancelled = _ask(hub, "task_request", method="tasks/cancel", task_id=task_id)["result"]
        assert cancelled["taskId"] == task_id and cancelled["status"] == "cancelled"
        assert gate.returned.wait(10) and gate.saw_cancel is True
        after = _ask(hub, "task_request", method="tasks/get", task_id=task_id)["result"]
        assert after["status"] == "cancelled"
        assert "error" in _ask(hub, "task_request", method="tasks/result", task_id=task_id)
        again = _ask(hub, "task_request", method="tasks/cancel", task_id=task_id)
        assert again["error"]["code"] == -32602 and "already cancelled" in again["error"]["message"]


def test_a_failed_task_gives_the_handlers_error_as_its_result() -> None:
    def broken(request: ElicitationRequest) -> dict[str, Any]:
        raise ValueError("no one is there")

    with started_hub(_task_server(), elicitation=broken) as hub:
        task_id = _ask(hub, "elicit_task")["result"]["task"]["taskId"]
        error = _ask(hub, "task_request", method="tasks/result", task_id=task_id)["error"]
        status = _ask(hub, "task_request", method="tasks/get", task_id=task_id)["result"]
    assert "the elicitation handler failed" in error["message"] and "no one is there" in error["message"]
    assert status["status"] == "failed" and status["statusMessage"] == error["message"]


def test_an_unknown_task_is_an_invalid_params_error() -> None:
    answers = Answers()
    with started_hub(_task_server(), elicitation=answers.elicit) as hub:
        error = _ask(hub, "task_request", method="tasks/get", task_id="no-such-task")["error"]
    assert error["code"] == -32602 and "no-such-task" in error["message"]


def test_an_invalid_task_request_is_refused_naming_the_field_not_its_value() -> None:
    answers = Answers()
    with started_hub(_task_server(), elicitation=answers.elicit) as hub:
        error = _ask(hub, "elicit_task", schema="sk-secret-value")["error"]
        assert _ask(hub, "task_request", method="tasks/list")["result"]["tasks"] == []
    assert error["code"] == -32602 and "requestedSchema" in error["message"]
    assert "sk-secret-value" not in error["message"] and not answers.elicitations


def test_an_ended_task_is_forgotten_after_its_ttl() -> None:
    answers = Answers()
    with started_hub(_task_server(), elicitation=answers.elicit) as hub:
        task_id = _ask(hub, "elicit_task", ttl_ms=0)["result"]["task"]["taskId"]
        _ask(hub, "task_request", method="tasks/result", task_id=task_id)  # waits for its end, or forgotten
        error = _ask(hub, "task_request", method="tasks/get", task_id=task_id)["error"]
        assert error["code"] == -32602
        assert _ask(hub, "task_request", method="tasks/list")["result"]["tasks"] == []


def test_a_handler_still_running_at_close_is_told_to_stop_and_its_thread_ends() -> None:
    gate = Gate()
    hub = MCPHub([_task_server()], elicitation=gate)
    hub.start()
    try:
        _ask(hub, "elicit_task")
        assert gate.started.wait(10)
    finally:
        hub.close()
    assert gate.returned.wait(10) and gate.saw_cancel is True
    assert gate.thread is not None
    gate.thread.join(10)
    assert not gate.thread.is_alive()


def test_a_handler_still_running_when_the_server_is_killed_is_told_to_stop() -> None:
    gate = Gate()
    with started_hub(_task_server(), elicitation=gate) as hub:
        _ask(hub, "elicit_task")
        assert gate.started.wait(10)
        server = hub.servers["ts"]
        assert isinstance(server, ServerConnection)
        server.kill()
        assert gate.returned.wait(10) and gate.saw_cancel is True
