"""Legacy HTTP+SSE servers (`transport: sse`, opt-in): connected through the SDK's SSE client to a real
SSE server on 127.0.0.1 (the fixture server's ``--transport sse``), with the guarantees of the other
transports: calls, timeouts and cancellation that reach the server, disconnects, reconnection,
secrets kept out of errors and logs, and clear configuration errors."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_sync import (
    ConfigError,
    HttpServerConfig,
    MCPHub,
    ServerDisconnectedError,
    SseServerConfig,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
    ToolNotFoundError,
    load_config_entries,
    parse_server_entries,
)
from mcp_sync._config.secrets import secrets_of
from tests.support import EventLog, HttpServer, Records, wait_until

TOKEN = "sse-bearer-4f1c9a7e2b"
API_KEY = "sse-api-key-93d0b6a1c8"
QUERY_KEY = "sse-query-key-5e72c0f9"
SECRETS = (TOKEN, API_KEY, QUERY_KEY)
DEPRECATION = "uses the legacy SSE transport (deprecated in MCP 2025-03-26)"
# Generous bounds: these are about "does not hang" on a loaded machine, not speed.
CALL_TIMEOUT = 20.0
STATE_TIMEOUT = 15.0


@pytest.fixture
def sse_server(events: EventLog) -> Iterator[HttpServer]:
    """The fixture server over legacy SSE, its events in `events`."""
    with HttpServer(events=events, transport="sse") as server:
        yield server


def sse_config(name: str, url: str, **overrides: Any) -> dict[str, Any]:
    return {"server_name": name, "transport": "sse", "url": url, **overrides}


@pytest.fixture
def hub(sse_server: HttpServer) -> Iterator[MCPHub]:
    with MCPHub([sse_config("web", sse_server.url)]) as started:
        yield started


def wait_for_state(hub: MCPHub, state: str, server: str = "web") -> None:
    wait_until(
        lambda: hub.servers[server].state == state,
        timeout=STATE_TIMEOUT,
        message=f"{server} did not become {state}: {hub.servers[server]!r}",
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --------------------------------------------------------------------------- tools and calls


def test_lists_the_tools_and_calls_one(hub: MCPHub) -> None:
    server = hub.servers["web"]
    assert (server.state, server.transport) == ("ready", "sse")
    assert {"mcp__web__echo", "mcp__web__sleep", "mcp__web__add"} <= {tool.name for tool in hub.tools()}
    assert hub.call_tool("mcp__web__echo", {"text": "over sse"}).text == "over sse"
    assert hub.call_tool("mcp__web__add", {"a": 2, "b": 3}).structured_content == {"result": 5}


def test_the_session_is_a_handshake_era_one(hub: MCPHub) -> None:
    # The SSE transport predates `server/discover`: the client starts with `initialize`.
    assert hub.servers["web"].protocol_version in HANDSHAKE_PROTOCOL_VERSIONS


def test_progress_notifications_arrive(hub: MCPHub) -> None:
    seen: list[float] = []
    result = hub.call_tool(
        "mcp__web__progress", {"steps": 3}, progress=lambda progress, total, message: seen.append(progress)
    )
    assert (result.text, seen) == ("done", [1, 2, 3])


def test_a_call_that_times_out_is_cancelled_on_the_server(hub: MCPHub, events: EventLog) -> None:
    with pytest.raises(ToolCallTimeoutError):
        hub.call_tool("mcp__web__sleep", {"seconds": 30, "tag": "t"}, timeout=0.5)
    events.wait_for("cancelled", tag="t")
    assert hub.call_tool("mcp__web__echo", {"text": "still here"}).text == "still here"


def test_a_call_cancelled_through_an_event_is_cancelled_on_the_server(hub: MCPHub, events: EventLog) -> None:
    cancel = threading.Event()
    threading.Thread(target=lambda: (events.wait_for("started", tag="c"), cancel.set()), daemon=True).start()
    with pytest.raises(ToolCallCancelledError):
        hub.call_tool("mcp__web__sleep", {"seconds": 30, "tag": "c"}, cancel=cancel, timeout=CALL_TIMEOUT)
    events.wait_for("cancelled", tag="c")
    assert hub.call_tool("mcp__web__echo", {"text": "ok"}).text == "ok"


# --------------------------------------------------------------------------- the server going away


def test_a_server_that_goes_away_mid_call_fails_the_call_as_disconnected(
    hub: MCPHub, sse_server: HttpServer, events: EventLog
) -> None:
    future = hub.submit("mcp__web__sleep", {"seconds": 30, "tag": "gone"})
    events.wait_for("started", tag="gone")
    sse_server.kill()
    with pytest.raises(ServerDisconnectedError) as raised:
        future.result(timeout=CALL_TIMEOUT)
    assert "closed its connection" in str(raised.value)
    wait_for_state(hub, "disconnected")
    assert isinstance(hub.servers["web"].error, ServerDisconnectedError)
    with pytest.raises(ToolNotFoundError):
        hub.call_tool("mcp__web__echo", {"text": "anyone?"})


def test_a_server_that_crashes_during_a_call_is_disconnected(hub: MCPHub) -> None:
    with pytest.raises(ServerDisconnectedError):
        hub.call_tool("mcp__web__crash", timeout=CALL_TIMEOUT)
    wait_for_state(hub, "disconnected")
    assert "mcp__web__echo" not in hub.registry


def test_an_idle_server_that_goes_away_is_noticed_without_a_call(hub: MCPHub, sse_server: HttpServer) -> None:
    sse_server.kill()
    wait_for_state(hub, "disconnected")
    assert "mcp__web__echo" not in hub.registry


def test_a_message_the_server_refuses_ends_the_session_instead_of_hanging_the_call(hub: MCPHub) -> None:
    # The SDK's SSE writer stops at the first failed POST: nothing could be sent any more.
    with pytest.raises(ServerDisconnectedError):
        hub.call_tool("mcp__web__http_error", {"status": 500}, timeout=CALL_TIMEOUT)
    wait_for_state(hub, "disconnected")


def test_a_server_restarted_on_the_same_port_is_reconnected(events: EventLog, tmp_path: Path) -> None:
    first = HttpServer(events=events, transport="sse").start()
    port = first.port
    policy = {"initial_delay_ms": 100, "max_delay_ms": 300, "max_attempts": 40}
    try:
        with MCPHub([sse_config("web", first.url, reconnect=policy)]) as hub:
            states: list[str] = []
            ready_again = threading.Event()

            def record(name: str, state: str, error: BaseException | None) -> None:
                states.append(state)
                if state == "ready" and "disconnected" in states:
                    ready_again.set()

            hub.on_server_state(record)
            first.kill()
            wait_until(lambda: "disconnected" in states, timeout=STATE_TIMEOUT, message=f"saw {states}")
            with HttpServer("--port", str(port), events=EventLog(tmp_path / "second.jsonl"), transport="sse"):
                assert ready_again.wait(30), f"not ready again; saw {states}"
                assert hub.call_tool("mcp__web__echo", {"text": "back"}).text == "back"
    finally:
        first.stop()
        first.close()


# --------------------------------------------------------------------------- headers and secrets


def secret_config(server: HttpServer, **overrides: Any) -> dict[str, Any]:
    """An SSE entry whose credentials are a bearer token, an API key header and a query value."""
    return sse_config(
        "web",
        f"{server.url}?api_key={QUERY_KEY}",
        headers={"Authorization": f"Bearer {TOKEN}", "X-Api-Key": API_KEY},
        **overrides,
    )


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} in {where}: {text}"


def test_headers_reach_the_server_on_its_stream_and_its_messages(sse_server: HttpServer) -> None:
    with MCPHub([secret_config(sse_server)]) as hub:
        assert hub.call_tool("mcp__web__get_header", {"name": "X-Api-Key"}).text == API_KEY
        assert hub.call_tool("mcp__web__get_header", {"name": "Authorization"}).text == f"Bearer {TOKEN}"


def test_header_secrets_are_never_in_an_error_a_repr_or_a_log_record(
    events: EventLog, records: Records
) -> None:
    with HttpServer("--echo-in-errors", events=events, transport="sse") as server:
        config = parse_server_entries([secret_config(server)], strict=True).configs[0]
        assert secrets_of(config) >= set(SECRETS)
        with MCPHub([config]) as hub:
            with pytest.raises(ToolCallError) as echoed:  # the server puts the token in its error
                hub.call_tool("mcp__web__get_header", {"name": "Authorization"}, timeout=CALL_TIMEOUT)
            with pytest.raises(ServerDisconnectedError) as refused:  # and in the body of an HTTP 401
                hub.call_tool("mcp__web__http_error", {"status": 401}, timeout=CALL_TIMEOUT)
            wait_for_state(hub, "disconnected")
            state_error = hub.servers["web"].error
            texts = {
                "the echoed error": str(echoed.value),
                "the refused call": str(refused.value),
                "the state's error": repr(state_error),
                "the config": repr(config),
                "the hub": repr(hub.servers["web"]),
            }
    for where, text in texts.items():
        assert_no_secret(text, where)
    assert {name.split(".")[0] for name, _ in records.lines} >= {"httpx2", "mcp", "mcp_sync"}
    for name, line in records.lines:
        assert_no_secret(line, f"a record of {name}")


def test_a_host_auth_signs_the_requests_in(sse_server: HttpServer) -> None:
    class Bearer(httpx2.Auth):
        def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
            request.headers["Authorization"] = f"Bearer {TOKEN}"
            yield request

    with MCPHub([sse_config("web", sse_server.url)], auth={"web": Bearer()}) as hub:
        assert hub.call_tool("mcp__web__get_header", {"name": "Authorization"}).text == f"Bearer {TOKEN}"


# --------------------------------------------------------------------------- the deprecation notice


def test_the_deprecation_is_one_warning_per_connection(sse_server: HttpServer, records: Records) -> None:
    with MCPHub([sse_config("web", sse_server.url)]) as hub:
        for text in ("one", "two", "three"):
            assert hub.call_tool("mcp__web__echo", {"text": text}).text == text
    warnings = [line for name, line in records.lines if DEPRECATION in line]
    assert warnings == [
        "mcp_sync WARNING server 'web' uses the legacy SSE transport (deprecated in MCP 2025-03-26); "
        "prefer streamable-http if the server offers it"
    ]


def test_other_transports_give_no_deprecation_warning(records: Records) -> None:
    with HttpServer() as server, MCPHub([{"server_name": "web", "url": server.url}]) as hub:
        assert hub.servers["web"].state == "ready"
    assert not [line for _, line in records.lines if "legacy SSE" in line]


# --------------------------------------------------------------------------- connection failures


def test_nothing_listening_fails_the_server_saying_so() -> None:
    port = free_port()
    with MCPHub([sse_config("web", f"http://127.0.0.1:{port}/sse", connect_timeout_ms=10_000)]) as hub:
        server = hub.servers["web"]
        assert server.state == "failed"
        assert f"nothing accepted a connection at 127.0.0.1:{port}" in str(server.error)


def test_a_wrong_path_fails_the_server_with_the_status_and_a_hint(sse_server: HttpServer) -> None:
    url = sse_server.url.replace("/sse", "/nothing-here")
    with MCPHub([sse_config("web", url, connect_timeout_ms=10_000)]) as hub:
        server = hub.servers["web"]
        assert server.state == "failed"
        assert "HTTP 404 Not Found from GET" in str(server.error)
        assert "most servers serve /sse" in str(server.error)


# --------------------------------------------------------------------------- configuration


def test_transport_sse_gives_an_sse_config_with_the_common_fields() -> None:
    [config] = parse_server_entries(
        [
            sse_config(
                "web",
                "https://mcp.example.com/sse",
                headers={"X-Team": "tools"},
                toolCallTimeoutMs=1500,
                include_tools=["echo"],
                reconnect=True,
                roots=["/srv"],
            )
        ],
        environ={}, strict=True,
    ).configs
    assert isinstance(config, SseServerConfig)
    assert (config.transport, config.url, dict(config.headers)) == (
        "sse",
        "https://mcp.example.com/sse",
        {"X-Team": "tools"},
    )
    assert (config.tool_call_timeout, config.include_tools, config.roots) == (
        1.5,
        ("echo",),
        ("file:///srv",),
    )
    assert config.reconnect is not None


def test_sse_is_never_inferred_from_the_url() -> None:
    [config] = parse_server_entries(
        [{"server_name": "web", "url": "https://mcp.example.com/sse"}], environ={}, strict=True
    ).configs
    assert isinstance(config, HttpServerConfig)


def config_error(entry: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as raised:
        parse_server_entries([entry], environ={}, strict=True)
    return str(raised.value)


def test_sign_in_is_refused_clearly_over_sse() -> None:
    message = config_error(sse_config("web", "https://mcp.example.com/sse", auth="oauth"))
    assert "'auth' (sign-in) is not available over the legacy SSE transport" in message
    assert "headers" in message


@pytest.mark.parametrize("key", ["command", "args", "env", "cwd", "inherit_env"])
def test_stdio_fields_are_unknown_keys_for_sse(key: str) -> None:
    message = config_error(sse_config("web", "https://mcp.example.com/sse", **{key: "x"}))
    assert f"unknown key '{key}' for transport 'sse'" in message


@pytest.mark.parametrize("url", ["mcp.example.com/sse", "ftp://mcp.example.com/sse", "http://", "not a url"])
def test_a_bad_url_is_a_clear_error(url: str) -> None:
    message = config_error(sse_config("web", url))
    assert "field 'url': must be an http:// or https:// URL with a host" in message


def test_a_header_secret_is_not_in_a_config_error_or_the_repr() -> None:
    message = config_error(sse_config("web", "https://h/sse", headers={"X-Api-Key": f"{API_KEY}\n"}))
    assert "the value of X-Api-Key contains a line break" in message
    assert API_KEY not in message
    [config] = parse_server_entries(
        [sse_config("web", f"https://h/sse?api_key={QUERY_KEY}", headers={"X-Api-Key": API_KEY})],
        environ={},
        strict=True,
    ).configs
    assert_no_secret(repr(config), "the repr")


@pytest.mark.parametrize("host_key", ["type", "transport"])
def test_a_host_file_entry_of_type_sse_is_an_sse_server(tmp_path: Path, host_key: str) -> None:
    path = tmp_path / "mcp.json"
    entry = {
        host_key: "sse",
        "url": "https://mcp.example.com/sse",
        "headers": {"Authorization": "Bearer ${T}"},
    }
    path.write_text(json.dumps({"mcpServers": {"legacy": entry}}), encoding="utf-8")
    [config] = load_config_entries(path, environ={"T": TOKEN}, strict=True).configs
    assert isinstance(config, SseServerConfig)
    assert (config.server_name, config.url) == ("legacy", "https://mcp.example.com/sse")
    assert config.headers["Authorization"] == f"Bearer {TOKEN}"


def test_a_host_file_oauth_on_an_sse_entry_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    entry = {"type": "sse", "url": "https://mcp.example.com/sse", "oauth": {"clientId": "c"}}
    path.write_text(json.dumps({"mcpServers": {"legacy": entry}}), encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config_entries(path, environ={}, strict=True)
    assert "mcpServers.legacy: 'auth' (sign-in) is not available over the legacy SSE transport" in str(
        raised.value
    )


def test_a_message_endpoint_that_refuses_the_handshake_fails_the_server_with_the_status(
    events: EventLog,
) -> None:
    with (
        HttpServer("--refuse-messages", "401", events=events, transport="sse") as server,
        MCPHub([sse_config("web", server.url, connect_timeout_ms=20_000)]) as hub,
    ):
        failed = hub.servers["web"]
        assert failed.state == "failed"
        message = str(failed.error)
        assert "did not connect" not in message  # failed on the refusal, not on waiting it out
        assert "HTTP 401 Unauthorized from POST" in message
        assert "the server wants credentials" in message
