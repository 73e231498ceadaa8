"""Every tool of the official reference server, over stdio and Streamable HTTP, with the handlers a user
would give (roots, elicitation form and URL, sampling): each one's call succeeds.

Before tasks, 16 of its 19 tools worked: `simulate-research-query` (taskSupport "required") was refused,
and the two `trigger-*-async` tools are offered only to a client that runs the server's requests as tasks.
Now all 19 do.

What is checked is that each call succeeds, not how long it takes: the server runs on its fast clock
(`ReferenceServers.everything_argv`), where the research query's four stages and the async tools' polls
of the client take 0.1 s instead of 1 s.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import MCPHub
from tests.hub_harness import started_hub
from tests.support import ReferenceServers
from tests.tasks_harness import RESEARCH, Answers, EverythingHttp, http_entry

pytestmark = pytest.mark.node

ARGUMENTS: dict[str, dict[str, Any]] = {
    "echo": {"message": "hello"},
    "get-annotated-message": {"messageType": "success", "includeImage": True},
    "get-env": {},
    "get-resource-links": {"count": 2},
    "get-resource-reference": {"resourceType": "Text", "resourceId": 1},
    "get-roots-list": {},
    "get-structured-content": {"location": "Chicago"},
    "get-sum": {"a": 2, "b": 3},
    "get-tiny-image": {},
    "gzip-file-as-resource": {"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8gd29ybGQ="},
    RESEARCH: {"topic": "tasks"},
    "toggle-simulated-logging": {},
    "toggle-subscriber-updates": {},
    "trigger-elicitation-request": {},
    "trigger-long-running-operation": {"duration": 0.2, "steps": 2},
    "trigger-sampling-request": {"prompt": "What is six times seven?"},
    "trigger-url-elicitation": {"url": "https://example.com/consent"},
}
"""Arguments that make each tool succeed (no network: the gzip tool gets a data URI)."""
ASYNC_ARGUMENTS: dict[str, dict[str, Any]] = {
    "trigger-elicitation-request-async": {},
    "trigger-sampling-request-async": {"prompt": "What is six times seven?"},
}
"""The two tools offered only to a client that runs the server's requests as tasks (this hub's handlers
make it one)."""


@pytest.fixture(params=["stdio", "http"])
def everything_hub(
    request: pytest.FixtureRequest, reference_servers: ReferenceServers, tmp_path: Path
) -> Iterator[tuple[MCPHub, Answers]]:
    answers = Answers()
    options: dict[str, Any] = {"roots": ["/srv/project"], "tool_call_timeout_ms": 30000}
    if request.param == "stdio":
        with started_hub(
            reference_servers.everything_config("ev", fast=True, **options), **answers.hub_options()
        ) as hub:
            yield hub, answers
    else:
        with (
            EverythingHttp(reference_servers, tmp_path, fast=True) as server,
            started_hub(http_entry("ev", server.url, **options), **answers.hub_options()) as hub,
        ):
            yield hub, answers


@pytest.mark.timeout(180)
def test_every_tool_of_the_reference_server_succeeds(everything_hub: tuple[MCPHub, Answers]) -> None:
    hub, answers = everything_hub
    every = {**ARGUMENTS, **ASYNC_ARGUMENTS}
    listed = {tool.raw_name: tool for tool in hub.servers["ev"].tools}
    assert set(listed) == set(every), "the server lists other tools than expected"
    failures = {}
    for raw_name, arguments in sorted(every.items()):
        result = hub.call_tool(listed[raw_name].name, arguments)
        if result.is_error:
            failures[raw_name] = result.text
    assert failures == {}
    assert any(request.mode == "url" for request in answers.elicitations)
    assert any(request.mode == "form" for request in answers.elicitations)
    assert answers.samplings
    working = sum(1 for raw_name in listed if raw_name not in failures)
    assert (working, len(listed)) == (19, 19)
