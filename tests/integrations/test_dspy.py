"""DSPy adapter: a real `dspy.ReAct` with a scripted language model (`DummyLM`) calls MCP tools through
`dspy_tools(hub)` over stdio and Streamable HTTP.

DSPy is imported when a test runs, not when the module is collected: every test process collects every
test module, and only the one that runs these tests needs the framework."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from mcp_sync import ConfigError, MCPHub, ToolCallCancelledError, ToolCallTimeoutError
from tests.docstrings import undocumented_classes
from tests.integrations.support import (
    PDF,
    PNG,
    RESEARCH_REPORT,
    RESEARCH_SERVER,
    RESEARCH_TOOL,
    RICH_ARGUMENTS,
    RICH_SCHEMA,
    WAV,
    TwoServers,
    new_task_ids,
    task_ids,
    unique,
)
from tests.support import assert_stopped_if_started, wait_until

if TYPE_CHECKING:
    import dspy
    from dspy.utils.dummies import DummyLM

Call = tuple[str, dict[str, Any]]


def scripted(*calls: Call, answer: str = "done") -> DummyLM:
    """A model that makes `calls` one per step, then finishes and answers `answer`."""
    from dspy.utils.dummies import DummyLM

    steps = [
        {"next_thought": f"step {i}", "next_tool_name": name, "next_tool_args": args}
        for i, (name, args) in enumerate(calls)
    ]
    steps.append({"next_thought": "enough", "next_tool_name": "finish", "next_tool_args": {}})
    steps.append({"reasoning": "read the observations", "answer": answer})
    return DummyLM(steps)


def run_react(lm: DummyLM, tools: list[dspy.Tool]) -> dspy.Prediction:
    import dspy

    with dspy.context(lm=lm):
        return dspy.ReAct("question -> answer", tools=tools)(question="go")


def observations(prediction: dspy.Prediction) -> list[Any]:
    trajectory = prediction.trajectory
    return [trajectory[key] for key in trajectory if key.startswith("observation_")][:-1]  # less finish's


# -- ReAct over both transports ----------------------------------------------------------------------


def test_react_calls_a_tool_and_reads_its_text(servers: TwoServers) -> None:
    from mcp_sync.integrations.dspy import dspy_tools

    prediction = run_react(scripted(("mcp__a__echo", {"text": "hello"})), dspy_tools(servers.hub))
    assert observations(prediction) == ["hello"]
    assert prediction.answer == "done"


def test_tool_error_result_is_an_observation_the_model_reads(servers: TwoServers) -> None:
    from mcp_sync.integrations.dspy import dspy_tools

    prediction = run_react(scripted(("mcp__a__fail", {"message": "disk full"})), dspy_tools(servers.hub))
    [observed] = observations(prediction)
    assert observed.startswith("Execution error in mcp__a__fail")
    assert "ToolResultError" in observed and "disk full" in observed


def test_timeout_is_an_observation_and_stops_the_call_on_the_server(servers: TwoServers) -> None:
    from mcp_sync.integrations.dspy import dspy_tools

    tag = unique("dspy-timeout-")
    lm = scripted(("mcp__a__sleep", {"seconds": 30, "tag": tag}))
    [observed] = observations(run_react(lm, dspy_tools(servers.hub, timeout=0.5)))
    assert "ToolCallTimeoutError" in observed
    assert_stopped_if_started(
        servers.events, tag, lambda: servers.hub.call_tool("mcp__a__echo", {"text": "after"})
    )


def test_same_raw_name_on_two_servers_gives_two_tools(servers: TwoServers) -> None:
    from mcp_sync.integrations.dspy import dspy_tools

    prediction = run_react(scripted(("mcp__a__pid", {}), ("mcp__b__pid", {})), dspy_tools(servers.hub))
    first, second = observations(prediction)
    assert first.isdigit() and second.isdigit() and first != second


def test_raw_names_that_collide_are_refused(servers: TwoServers) -> None:
    from mcp_sync.integrations.dspy import dspy_tools

    with pytest.raises(ConfigError, match=r"'add' \(mcp__a__add, mcp__b__add\)"):
        dspy_tools(servers.hub, raw_names=True)


def test_raw_names_on_request_when_they_do_not_collide(servers: TwoServers) -> None:
    from mcp_sync.integrations.dspy import dspy_tools

    tools = dspy_tools(servers.hub, raw_names=True, include=lambda tool: tool.server_name == "b")
    assert observations(run_react(scripted(("echo", {"text": "raw"})), tools)) == ["raw"]


def test_react_built_per_question_offers_a_tool_that_appeared(servers: TwoServers) -> None:
    from mcp_sync.integrations.dspy import dspy_tools

    late = unique("late_dspy_")
    run_react(scripted(("mcp__a__add_tool", {"name": late})), dspy_tools(servers.hub))
    servers.tool_events.wait_for(("added", f"mcp__a__{late}"))
    prediction = run_react(scripted((f"mcp__a__{late}", {"text": "fresh"})), dspy_tools(servers.hub))
    assert observations(prediction) == ["fresh"]


def test_react_finds_a_tool_that_appeared_mid_run_with_the_search_tool_and_calls_it(
    servers: TwoServers,
) -> None:
    from dspy.utils.dummies import DummyLM

    from mcp_sync.integrations.dspy import dspy_tools

    late = unique("zeppelin_dspy_")

    def steps() -> Iterator[dict[str, Any]]:
        """The model's answers, one per step; DummyLM takes the next when the step asks."""
        add = {"name": "mcp__a__add_tool", "arguments": {"name": late}}
        yield {"next_thought": "add", "next_tool_name": "mcp__call_tool", "next_tool_args": add}
        servers.tool_events.wait_for(("added", f"mcp__a__{late}"))
        yield {
            "next_thought": "search",
            "next_tool_name": "mcp__search_tools",
            "next_tool_args": {"query": late},
        }
        call = {"name": f"mcp__a__{late}", "arguments": {"text": "fresh"}}
        yield {"next_thought": "call", "next_tool_name": "mcp__call_tool", "next_tool_args": call}
        yield {"next_thought": "enough", "next_tool_name": "finish", "next_tool_args": {}}
        yield {"reasoning": "read the observations", "answer": "done"}

    tools = dspy_tools(servers.hub, discovery=True)
    assert [tool.name for tool in tools] == ["mcp__search_tools", "mcp__call_tool"]
    added, searched, called = observations(run_react(DummyLM(steps()), tools))
    assert added == f"added {late}"
    assert f"mcp__a__{late}" in [tool["name"] for tool in json.loads(searched)]
    assert called == "fresh"


def test_react_built_before_a_tool_appeared_cannot_call_it(servers: TwoServers) -> None:
    import dspy
    from dspy.utils.dummies import DummyLM
    from dspy.utils.exceptions import AdapterParseError

    from mcp_sync.integrations.dspy import dspy_tools

    late = unique("early_dspy_")
    react = dspy.ReAct("question -> answer", tools=dspy_tools(servers.hub))
    servers.hub.call_tool("mcp__a__add_tool", {"name": late})
    servers.tool_events.wait_for(("added", f"mcp__a__{late}"))
    call = {"next_thought": "try", "next_tool_name": f"mcp__a__{late}", "next_tool_args": {"text": "early"}}
    # The name is not one ReAct's signature allows: DSPy refuses the answer (and its JSON retry) and raises.
    with dspy.context(lm=DummyLM([call, call])), pytest.raises(AdapterParseError):
        react(question="go")
    assert f"mcp__a__{late}" not in react.tools


def test_tool_removed_after_react_was_built_is_an_observation(servers: TwoServers) -> None:
    from mcp_sync.integrations.dspy import dspy_tools

    gone = unique("gone_dspy_")
    servers.hub.call_tool("mcp__a__add_tool", {"name": gone})
    servers.tool_events.wait_for(("added", f"mcp__a__{gone}"))
    tools = dspy_tools(servers.hub)
    servers.hub.call_tool("mcp__a__remove_tool", {"name": gone})
    servers.tool_events.wait_for(("removed", f"mcp__a__{gone}"))
    [observed] = observations(run_react(scripted((f"mcp__a__{gone}", {"text": "late"})), tools))
    assert "ToolNotFoundError" in observed


def test_aforward_cancellation_cancels_on_the_server(servers: TwoServers) -> None:
    import dspy

    from mcp_sync.integrations.dspy import dspy_tools

    tag = unique("dspy-cancel-")
    lm = scripted(("mcp__a__sleep", {"seconds": 30, "tag": tag}))
    react = dspy.ReAct("question -> answer", tools=dspy_tools(servers.hub))

    async def main() -> None:
        with dspy.context(lm=lm):
            task = asyncio.create_task(react.acall(question="go"))
            # Waiting in a thread: this only returns while the loop runs, i.e. the call does not block it.
            await asyncio.to_thread(servers.events.wait_for, "started", tag)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(main())
    servers.events.wait_for("cancelled", tag=tag)


def test_images_reach_the_model_as_image_parts(servers: TwoServers) -> None:
    import dspy

    from mcp_sync.integrations.dspy import dspy_tools

    lm = scripted(("mcp__a__blocks", {}))
    [observed] = observations(run_react(lm, dspy_tools(servers.hub)))
    text, image = observed
    assert text == "first\nsecond\nthird"
    assert isinstance(image, dspy.Image) and image.url.startswith("data:image/png;base64,")
    # The step after the call shows the model the image itself.
    content = lm.history[1]["messages"][-1]["content"]
    assert any(part.get("type") == "image_url" for part in content if isinstance(part, dict))


# -- the adapter on its own ------------------------------------------------------------------------------


def test_audio_files_and_image_resources_reach_the_model_as_their_parts(media_hub: MCPHub) -> None:
    import dspy

    from mcp_sync.integrations.dspy import dspy_tools

    lm = scripted(("media", {}))
    [observed] = observations(run_react(lm, dspy_tools(media_hub)))
    text, audio, document, image = observed
    assert text == "the recording"
    assert isinstance(audio, dspy.Audio) and audio.audio_format == "wav"
    assert base64.b64decode(audio.data) == WAV
    assert isinstance(document, dspy.File) and document.filename == "report.pdf"
    assert document.file_data == "data:application/pdf;base64," + base64.b64encode(PDF).decode()
    assert isinstance(image, dspy.Image)
    assert image.url == "data:image/png;base64," + base64.b64encode(PNG).decode()
    # The step after the call shows the model each of them.
    content = lm.history[1]["messages"][-1]["content"]
    kinds = [part.get("type") for part in content if isinstance(part, dict)]
    assert {"input_audio", "file", "image_url"} <= set(kinds)


def test_schema_reaches_the_model_whole(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.dspy import dspy_tools

    lm = scripted(("book_trip", RICH_ARGUMENTS))
    [observed] = observations(run_react(lm, dspy_tools(rich_hub)))
    assert json.loads(observed) == RICH_ARGUMENTS
    [tool] = dspy_tools(rich_hub)
    assert tool.desc == "Book a trip for a group."
    assert tool.args["mode"]["enum"] == ["train", "plane"]
    assert tool.args["travellers"]["items"]["properties"]["name"]["description"] == "Full name."
    # `$ref`s are inlined; the reference's own description wins over its target's.
    assert tool.args["home"]["description"] == "Where the travellers live."
    assert tool.args["home"]["properties"]["country"]["enum"] == ["FR", "DE"]
    instructions = lm.history[0]["messages"][0]["content"]
    assert "(1) book_trip, whose description is <desc>Book a trip for a group.</desc>" in instructions
    assert "'Where the travellers live.'" in instructions and "['FR', 'DE']" in instructions
    assert "Required arguments: ['city', 'mode', 'travellers']." in instructions
    # Function calling gets the server's schema whole.
    assert tool.format_as_litellm_function_call()["function"]["parameters"] == RICH_SCHEMA


def test_a_program_with_hub_tools_can_be_deep_copied(rich_hub: MCPHub) -> None:
    import dspy

    from mcp_sync.integrations.dspy import dspy_tools

    agent = dspy.ReAct("question -> answer", tools=dspy_tools(rich_hub))
    copied = copy.deepcopy(agent)  # as optimizers copy programs
    assert json.loads(copied.tools["book_trip"](**RICH_ARGUMENTS)) == RICH_ARGUMENTS


def test_blocking_call_works_inside_a_running_event_loop(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.dspy import dspy_tool

    tool = dspy_tool(rich_hub, "book_trip")

    async def in_a_notebook_cell() -> Any:
        return tool(**{**RICH_ARGUMENTS, "city": "Paris"})

    assert json.loads(asyncio.run(in_a_notebook_cell()))["city"] == "Paris"


def test_acall_awaits_the_call(rich_hub: MCPHub) -> None:
    from mcp_sync.integrations.dspy import dspy_tool

    tool = dspy_tool(rich_hub, "book_trip")
    assert json.loads(asyncio.run(tool.acall(**RICH_ARGUMENTS))) == RICH_ARGUMENTS


def test_cancel_event_ends_a_blocking_call(servers: TwoServers) -> None:
    from mcp_sync.integrations.dspy import dspy_tool

    cancel = threading.Event()
    tag = unique("dspy-event-")
    tool = dspy_tool(servers.hub, "mcp__a__sleep", cancel=cancel)
    threading.Thread(target=lambda: (servers.events.wait_for("started", tag=tag), cancel.set())).start()
    with pytest.raises(ToolCallCancelledError):
        tool(seconds=30, tag=tag)
    servers.events.wait_for("cancelled", tag=tag)


# -- a tool that runs as a task -------------------------------------------------------------------------


def test_react_runs_a_task_tool_as_a_blocking_call(research_hub: MCPHub) -> None:
    from mcp_sync.integrations.dspy import dspy_tools

    tools = dspy_tools(research_hub, include=lambda tool: tool.name == RESEARCH_TOOL)
    [observation] = observations(run_react(scripted((RESEARCH_TOOL, {"topic": "tides"})), tools))
    assert str(observation).startswith(RESEARCH_REPORT)


def test_a_task_tools_timeout_cancels_the_task_on_the_server(research_hub_real_clock: MCPHub) -> None:
    from mcp_sync.integrations.dspy import dspy_tool

    hub = research_hub_real_clock  # the task outlasts the timeout
    before = task_ids(hub)
    tool = dspy_tool(hub, RESEARCH_TOOL, timeout=1.5)
    with pytest.raises(ToolCallTimeoutError):
        tool(topic="tides")
    [task_id] = new_task_ids(hub, before)
    # The call raised at once; its tasks/cancel goes on in the background.
    wait_until(lambda: hub.task(RESEARCH_SERVER, task_id).refresh(timeout=10).status == "cancelled", 20)


def test_every_public_class_of_the_adapter_documents_its_public_members() -> None:
    from mcp_sync.integrations import dspy

    assert not undocumented_classes(dspy), "what help() shows a user of the adapter"
