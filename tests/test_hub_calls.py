"""Blocking calls through the hub: results, timeouts and cancellation seen by the server, threads."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcp_sync import (
    MCPHub,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
    ToolNotFoundError,
    public_tool_name,
)
from tests.hub_harness import TRANSPORTS_AND_ERAS, ToolEvents, fixture_server, started_hub
from tests.support import EventLog, stdio_config


@pytest.fixture
def events(tmp_path: Path) -> EventLog:
    return EventLog(tmp_path / "events.jsonl")


@pytest.fixture(scope="module")
def hub() -> object:
    """One stdio fixture server shared by the tests that only read results."""
    with started_hub(stdio_config("fx")) as hub:
        yield hub


@dataclass
class Served:
    hub: MCPHub
    events: EventLog


@pytest.fixture(
    scope="module", params=[p.values for p in TRANSPORTS_AND_ERAS], ids=[p.id for p in TRANSPORTS_AND_ERAS]
)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One fixture server and hub per transport and era, shared by the tests below that run on all
    four: each of them waits for its own calls' events, by a tag no other test uses."""
    transport, era = request.param
    events = EventLog(tmp_path_factory.mktemp(f"{transport}-{era}") / "events.jsonl")
    with fixture_server("fx", transport, era, events=events) as server, started_hub(server.config) as hub:
        yield Served(hub, events)


def test_call_returns_the_text_result(served: Served) -> None:
    result = served.hub.call_tool("mcp__fx__echo", {"text": "hello"})
    assert (result.text, result.is_error) == ("hello", False)


def test_text_blocks_join_with_newlines_and_images_stay_out_of_the_text(hub: MCPHub) -> None:
    result = hub.call_tool("mcp__fx__blocks")
    assert result.text == "first\nsecond\nthird"


def test_images_are_offered_decoded_with_their_mime_type(hub: MCPHub) -> None:
    result = hub.call_tool("mcp__fx__blocks")
    [image] = result.images
    assert image.mime_type == "image/png"
    assert image.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert image.data_url.startswith("data:image/png;base64,iVBORw0KGgo")


def test_every_content_block_is_kept_in_order(hub: MCPHub) -> None:
    result = hub.call_tool("mcp__fx__blocks")
    assert [block.type for block in result.content] == ["text", "text", "image", "text"]


def test_error_result_is_returned_not_raised(hub: MCPHub) -> None:
    result = hub.call_tool("mcp__fx__fail", {"message": "disk full"})
    assert result.is_error
    assert "disk full" in result.text


def test_structured_content_is_kept(hub: MCPHub) -> None:
    result = hub.call_tool("mcp__fx__add", {"a": 2, "b": 3})
    assert result.structured_content == {"result": 5}
    assert result.text == "5"


def test_unknown_tool_raises_tool_not_found(hub: MCPHub) -> None:
    with pytest.raises(ToolNotFoundError, match="mcp__fx__nope"):
        hub.call_tool("mcp__fx__nope")


def test_server_receives_the_raw_name_of_a_normalised_tool() -> None:
    with started_hub(stdio_config("fx")) as hub:
        tools = ToolEvents().attach(hub)
        hub.call_tool("mcp__fx__add_tool", {"name": "files.read"})
        public = public_tool_name("fx", "files.read")
        tools.wait_for(("added", public))
        result = hub.call_tool(public, {"text": "raw name reached the server"})
    assert public != "mcp__fx__files.read"
    assert (result.text, result.is_error) == ("raw name reached the server", False)


def test_default_timeout_comes_from_the_server_config(events: EventLog) -> None:
    config = stdio_config("fx", events=events, tool_call_timeout_ms=300)
    with started_hub(config) as hub, pytest.raises(ToolCallTimeoutError, match=r"0\.3 s"):
        hub.call_tool("mcp__fx__sleep", {"seconds": 30, "tag": "default"})
    events.wait_for("cancelled", tag="default")


def test_timeout_cancels_the_request_on_the_server(served: Served) -> None:
    hub, events = served.hub, served.events
    with pytest.raises(ToolCallTimeoutError) as raised:
        hub.call_tool("mcp__fx__sleep", {"seconds": 30, "tag": "t"}, timeout=0.5)
    assert isinstance(raised.value, TimeoutError)
    events.wait_for("cancelled", tag="t")
    assert hub.call_tool("mcp__fx__echo", {"text": "still here"}).text == "still here"


def test_cancel_event_cancels_the_request_on_the_server(served: Served) -> None:
    hub, events = served.hub, served.events
    cancel = threading.Event()
    threading.Thread(target=lambda: (events.wait_for("started", tag="c"), cancel.set())).start()
    with pytest.raises(ToolCallCancelledError):
        hub.call_tool("mcp__fx__sleep", {"seconds": 30, "tag": "c"}, cancel=cancel)
    events.wait_for("cancelled", tag="c")
    assert hub.call_tool("mcp__fx__echo", {"text": "ok"}).text == "ok"


def test_future_cancel_cancels_the_request_on_the_server(served: Served) -> None:
    hub, events = served.hub, served.events
    future = hub.submit("mcp__fx__sleep", {"seconds": 30, "tag": "f"})
    events.wait_for("started", tag="f")
    assert future.cancel()
    events.wait_for("cancelled", tag="f")
    with pytest.raises(concurrent.futures.CancelledError):
        future.result(timeout=1)


def test_keyboard_interrupt_cancels_the_request_on_the_server(events: EventLog) -> None:
    with started_hub(stdio_config("fx", events=events)) as hub:
        # A real SIGINT, as Ctrl-C sends: it interrupts the main thread's blocking wait.
        interrupter = threading.Thread(
            target=lambda: (events.wait_for("started", tag="k"), os.kill(os.getpid(), signal.SIGINT))
        )
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            hub.call_tool("mcp__fx__sleep", {"seconds": 30, "tag": "k"})
        interrupter.join(10)
        events.wait_for("cancelled", tag="k")


def test_submit_returns_a_future_with_the_result(hub: MCPHub) -> None:
    future = hub.submit("mcp__fx__echo", {"text": "later"})
    assert future.result(timeout=10).text == "later"


def test_submit_of_unknown_tool_raises_at_once(hub: MCPHub) -> None:
    with pytest.raises(ToolNotFoundError):
        hub.submit("mcp__fx__missing")


def test_progress_reaches_the_callback_before_the_result(hub: MCPHub) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    result = hub.call_tool("mcp__fx__progress", {"steps": 3}, progress=lambda p, t, m: seen.append((p, t, m)))
    assert result.text == "done"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_sixteen_threads_get_their_own_results(hub: MCPHub) -> None:
    def worker(thread: int) -> list[bool]:
        return [
            hub.call_tool("mcp__fx__echo", {"text": f"{thread}-{i}"}).text == f"{thread}-{i}"
            for i in range(25)
        ]

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        outcomes = [ok for oks in pool.map(worker, range(16)) for ok in oks]
    assert len(outcomes) == 400
    assert all(outcomes)


def test_calls_from_many_threads_run_at_once_on_one_session(events: EventLog) -> None:
    with (
        started_hub(stdio_config("fx", events=events)) as hub,
        concurrent.futures.ThreadPoolExecutor(8) as pool,
    ):
        futures = [
            pool.submit(hub.call_tool, "mcp__fx__sleep", {"seconds": 0.5, "tag": f"m{i}"}) for i in range(8)
        ]
        for future in futures:
            future.result(timeout=30)
    names = [event["event"] for event in events.events() if event.get("tool") == "sleep" or "tag" in event]
    started = [i for i, name in enumerate(names) if name == "started"]
    finished = [i for i, name in enumerate(names) if name == "finished"]
    assert len(started) == len(finished) == 8
    assert max(started) < min(finished)  # all eight were running before any finished


def test_native_tool_is_callable_through_call_tool() -> None:
    hub = MCPHub()
    hub.registry.register_native("shout", lambda text: text.upper(), input_schema={"type": "object"})
    with hub:
        assert hub.call_tool("shout", {"text": "hi"}).text == "HI"


def test_native_tool_exception_becomes_an_error_result() -> None:
    def broken() -> str:
        raise ValueError("bad input")

    hub = MCPHub()
    hub.registry.register_native("broken", broken)
    with hub:
        result = hub.call_tool("broken")
    assert result.is_error
    assert "ValueError: bad input" in result.text


def test_configured_headers_reach_an_http_server() -> None:
    with (
        fixture_server("web", "http", "modern", headers={"X-Team": "blue"}) as served,
        started_hub(served.config) as hub,
    ):
        assert hub.call_tool("mcp__web__get_header", {"name": "X-Team"}).text == "blue"


def test_arguments_that_are_not_a_mapping_raise_type_error(hub: MCPHub) -> None:
    with pytest.raises(TypeError, match="must be a mapping, not list"):
        hub.call_tool("mcp__fx__echo", ["hello"])  # type: ignore[arg-type]


def test_arguments_that_cannot_be_json_raise_a_call_error(hub: MCPHub) -> None:
    with pytest.raises(ToolCallError, match="cannot be sent as JSON"):
        hub.call_tool("mcp__fx__echo", {"text": object()})
    assert hub.call_tool("mcp__fx__echo", {"text": "after"}).text == "after"


def test_arguments_that_contain_themselves_raise_a_call_error(hub: MCPHub) -> None:
    looped: dict[str, object] = {}
    looped["self"] = looped
    with pytest.raises(ToolCallError, match="cannot be sent as JSON"):
        hub.call_tool("mcp__fx__echo", {"text": looped})
    assert hub.call_tool("mcp__fx__echo", {"text": "after"}).text == "after"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_result_without_result_type_is_a_complete_result(transport: str) -> None:
    """A 2026-07-28 result that leaves out `resultType` means "complete" (SEP-2322): it is the
    call's result, not an invalid answer."""
    with (
        fixture_server("fx", transport, "modern", "--untyped-results") as server,
        started_hub(server.config) as hub,
    ):
        assert hub.servers["fx"].protocol_version == "2026-07-28"  # type: ignore[union-attr]
        result = hub.call_tool("mcp__fx__add", {"a": 2, "b": 3})
        assert (result.text, result.structured_content, result.is_error) == ("5", {"result": 5}, False)
        assert hub.call_tool("mcp__fx__fail", {"message": "no"}).is_error
