"""No secret leaves through an error's chain: servers that echo a token, a header or an `env` value back in
their errors, over Streamable HTTP and stdio, and every exception reachable from what mcp_sync raises or
stores (`__cause__`, `__context__`, group members, notes, start failures) and its printed traceback,
checked after the hub is closed, when the secrets are no longer registered."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sync import (
    AuthError,
    ConfigError,
    MCPHub,
    ResourceNotFoundError,
    ServerStartError,
    SignInRequiredError,
    ToolCallError,
    ToolResult,
)
from mcp_sync._config import parse_server_entries
from mcp_sync._values.scrubbed_errors import ScrubbedError, scrub_exception
from mcp_sync._values.secrets import register
from tests.support import SERVERS_DIR, HttpServer, Records, http_config, stdio_config, wait_until
from tests.test_remote_oauth import control, remote, signed_in, stored_record

TOKEN = "tok-Rr31-never-print-this"
API_KEY = "key-Qw90-never-print-this"
QUERY_KEY = "qk-Ty62-never-print-this"
ENV_SECRET = "env-Pp47-never-print-this"
CLIENT_SECRET = "cs-Vb18-never-print-this"
SECRETS = (TOKEN, API_KEY, QUERY_KEY, ENV_SECRET, CLIENT_SECRET)

STATUS_SERVER = SERVERS_DIR / "status_server.py"
OAUTH_SERVER = SERVERS_DIR / "oauth_server.py"
CALL_TIMEOUT = 30.0

# A stdio server that answers every request with a JSON-RPC error holding its SERVICE_TOKEN.
REFUSING_STDIO_SERVER = (
    "import json, os, sys\n"
    "token = os.environ['SERVICE_TOKEN']\n"
    "for line in sys.stdin:\n"
    "    message = json.loads(line)\n"
    "    if 'id' in message:\n"
    "        error = {'code': -32603, 'message': 'cannot start with ' + token, 'data': [token]}\n"
    "        print(json.dumps({'jsonrpc': '2.0', 'id': message['id'], 'error': error}), flush=True)\n"
)
# A stdio server that dies at start, saying its SERVICE_TOKEN on stderr.
CRASHING_STDIO_SERVER = (
    "import os, sys; print('bad token ' + os.environ['SERVICE_TOKEN'], file=sys.stderr); sys.exit(3)"
)


# --------------------------------------------------------------------------- what is checked


def chain(error: BaseException) -> list[BaseException]:
    """Every exception reachable from `error`: causes, contexts, group members, `failures` values."""
    found: list[BaseException] = []
    todo: list[BaseException | None] = [error]
    while todo:
        current = todo.pop()
        if current is None or any(current is seen for seen in found):
            continue
        found.append(current)
        todo += [current.__cause__, current.__context__, *getattr(current, "exceptions", ())]
        todo += list(getattr(current, "failures", {}).values())
    return found


def assert_no_secret(error: BaseException, secrets: tuple[str, ...] = SECRETS) -> None:
    """No secret in the error's traceback as printed, nor in any exception of its chain."""
    texts = {"traceback": "".join(traceback.format_exception(error))}
    for index, member in enumerate(chain(error)):
        texts[f"{index} str"] = str(member)
        texts[f"{index} repr"] = repr(member)
        texts[f"{index} args"] = repr(member.args)
        texts[f"{index} notes"] = repr(getattr(member, "__notes__", None))
    for where, text in texts.items():
        for secret in secrets:
            assert secret not in text, f"{secret} in {where}: {text}"


def single_line(error: BaseException) -> str:
    return " ".join(str(error).split())


# --------------------------------------------------------------------------- servers that echo secrets


@pytest.fixture(scope="module")
def echoing_http() -> Iterator[HttpServer]:
    """The fixture server over HTTP: `http_error` echoes the request's credentials in an HTTP error."""
    with HttpServer() as server:
        yield server


def web(server: HttpServer, **overrides: Any) -> dict[str, Any]:
    """An HTTP entry whose credentials are a bearer token, an API key header and a query value."""
    return http_config(
        "web",
        f"{server.url}?api_key={QUERY_KEY}",
        headers={"Authorization": f"Bearer {TOKEN}", "X-Api-Key": API_KEY},
        connect_timeout_ms=20_000,
        **overrides,
    )


def fx(*flags: str, **overrides: Any) -> dict[str, Any]:
    """The fixture server over stdio, with a secret in its environment."""
    return stdio_config("fx", *flags, env={"SERVICE_TOKEN": ENV_SECRET}, **overrides)


def python_server(code: str, **overrides: Any) -> dict[str, Any]:
    return {
        "server_name": "py",
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-c", code],
        "env": {"SERVICE_TOKEN": ENV_SECRET},
        **overrides,
    }


# --------------------------------------------------------------------------- call errors


@pytest.mark.parametrize("status", [401, 500])
def test_a_call_refused_over_http_with_the_credentials_echoed_holds_none_of_them(
    echoing_http: HttpServer, status: int
) -> None:
    with MCPHub([web(echoing_http)]) as hub, pytest.raises(ToolCallError) as raised:
        hub.call_tool("mcp__web__http_error", {"status": status}, timeout=CALL_TIMEOUT)
    error = raised.value

    assert "rejected *** *** api_key=***" in str(error)  # the server did echo them
    assert_no_secret(error)


def test_a_submitted_call_refused_over_http_holds_no_credential(echoing_http: HttpServer) -> None:
    with MCPHub([web(echoing_http)]) as hub:
        future = hub.submit("mcp__web__http_error", {"status": 401})
        error = future.exception(timeout=CALL_TIMEOUT)

    assert isinstance(error, ToolCallError)
    assert_no_secret(error)


def test_a_resource_read_refused_over_http_holds_no_credential(echoing_http: HttpServer) -> None:
    with MCPHub([web(echoing_http)]) as hub, pytest.raises(ToolCallError) as raised:
        hub.read_resource("fixture://http-error/401", server="web", timeout=CALL_TIMEOUT)

    assert "rejected" in str(raised.value)
    assert_no_secret(raised.value)


def test_the_safe_call_message_holds_no_credential(echoing_http: HttpServer) -> None:
    with MCPHub([web(echoing_http)]) as hub:
        result = hub.call_tool_safe("mcp__web__http_error", {"status": 401}, timeout=CALL_TIMEOUT)

    assert result.is_error and "rejected" in result.text
    for secret in SECRETS:
        assert secret not in result.text
        assert secret not in repr(result)


def test_a_result_holds_what_the_server_echoed_but_its_repr_does_not_show_it(
    echoing_http: HttpServer,
) -> None:
    with MCPHub([web(echoing_http)]) as hub:
        result = hub.call_tool("mcp__web__get_header", {"name": "x-api-key"}, timeout=CALL_TIMEOUT)
        shown = repr(result)

    assert result.text == API_KEY  # the answer itself is the tool's, unchanged
    assert API_KEY not in shown
    assert "ToolResult(text='***'" in shown


def test_a_stdio_call_failing_with_an_env_secret_holds_none_of_it() -> None:
    with MCPHub([fx()]) as hub:
        with pytest.raises(ToolCallError) as raised:
            hub.call_tool("mcp__fx__fail_with_env", {"name": "SERVICE_TOKEN"}, timeout=CALL_TIMEOUT)
        future = hub.submit("mcp__fx__fail_with_env", {"name": "SERVICE_TOKEN"})
        submitted = future.exception(timeout=CALL_TIMEOUT)

    assert "cannot go on: SERVICE_TOKEN=***" in str(raised.value)
    assert_no_secret(raised.value)
    assert isinstance(submitted, ToolCallError)
    assert_no_secret(submitted)


def test_a_stdio_resource_read_failing_with_an_env_secret_holds_none_of_it() -> None:
    with MCPHub([fx()]) as hub, pytest.raises((ToolCallError, ResourceNotFoundError)) as raised:
        hub.read_resource("fixture://env-error/SERVICE_TOKEN", server="fx", timeout=CALL_TIMEOUT)

    assert "***" in str(raised.value)
    assert_no_secret(raised.value)


# --------------------------------------------------------------------------- connect failures


@pytest.fixture(scope="module")
def refusing_http() -> Iterator[HttpServer]:
    """Answers every request with an HTTP error whose JSON-RPC error (not "connection closed") echoes
    the request's credentials."""
    with HttpServer("--code", "-32603", script=STATUS_SERVER) as server:
        yield server


def refusing_web(server: HttpServer, status: int, **overrides: Any) -> dict[str, Any]:
    url = f"http://127.0.0.1:{server.port}/{status}/mcp?api_key={QUERY_KEY}"
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Api-Key": API_KEY}
    return http_config("web", url, headers=headers, connect_timeout_ms=20_000, **overrides)


@pytest.mark.parametrize("status", [401, 500])
def test_an_http_server_refusing_the_connection_with_the_credentials_echoed_stores_none_of_them(
    refusing_http: HttpServer, status: int
) -> None:
    with MCPHub([refusing_web(refusing_http, status)]) as hub:
        error = hub.servers["web"].error

    assert error is not None
    assert "failed to connect: MCPError: rejected *** *** api_key=***" in single_line(error)
    assert_no_secret(error)


def test_a_required_http_server_refusing_with_the_credentials_echoed_raises_none_of_them(
    refusing_http: HttpServer,
) -> None:
    hub = MCPHub([refusing_web(refusing_http, 401, required=True)])
    with pytest.raises(ServerStartError) as raised:
        hub.start()

    assert "rejected" in str(raised.value.failures["web"])
    assert_no_secret(raised.value)


@pytest.mark.parametrize("code", [REFUSING_STDIO_SERVER, CRASHING_STDIO_SERVER])
def test_a_stdio_server_failing_at_start_with_an_env_secret_stores_none_of_it(code: str) -> None:
    with MCPHub([python_server(code)]) as hub:
        error = hub.servers["py"].error

    assert error is not None
    assert "***" in str(error)
    assert_no_secret(error)


@pytest.mark.parametrize("code", [REFUSING_STDIO_SERVER, CRASHING_STDIO_SERVER])
def test_a_required_stdio_server_failing_with_an_env_secret_raises_none_of_it(code: str) -> None:
    hub = MCPHub([python_server(code, required=True)])
    with pytest.raises(ServerStartError) as raised:
        hub.start()

    assert "***" in str(raised.value)
    assert_no_secret(raised.value)


def test_a_refused_client_secret_that_the_authorization_server_repeats_is_stored_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_SYNC_TOKEN_DIR", str(tmp_path / "tokens"))
    flags = ("--client-id", "reporting-service", "--client-secret", "the-right-secret-0000")
    with HttpServer(*flags, script=OAUTH_SERVER) as server:
        auth = {
            "type": "client_credentials",
            "client_id": "reporting-service",
            "client_secret": CLIENT_SECRET,
            "issuer": server.url.removesuffix("/mcp"),
        }
        with MCPHub([http_config("remote", server.url, auth=auth, connect_timeout_ms=20_000)]) as hub:
            error = hub.servers["remote"].error

    assert isinstance(error, AuthError)
    assert_no_secret(error)


def test_a_sign_in_revoked_mid_session_leaves_no_token_in_the_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_dir = tmp_path / "tokens"
    monkeypatch.setenv("MCP_SYNC_TOKEN_DIR", str(token_dir))
    with HttpServer(script=OAUTH_SERVER) as server:
        signed_in(server)
        tokens = stored_record(token_dir)["tokens"]
        with MCPHub([remote(server)]) as hub:
            control(server, "revoke-refresh-tokens")
            control(server, "expire-access-tokens")
            with pytest.raises(SignInRequiredError) as raised:
                hub.call_tool("mcp__remote__echo", {"text": "hello?"}, timeout=CALL_TIMEOUT)
            wait_until(lambda: hub.servers["remote"].state != "ready", timeout=CALL_TIMEOUT)
            stored = hub.servers["remote"].error

    assert isinstance(stored, SignInRequiredError)
    secrets = (tokens["access_token"], tokens["refresh_token"])
    assert_no_secret(raised.value, secrets)
    assert_no_secret(stored, secrets)


# --------------------------------------------------------------------------- log records


def test_log_records_of_refused_calls_and_connections_hold_no_secret(
    records: Records, echoing_http: HttpServer, refusing_http: HttpServer
) -> None:
    with MCPHub([web(echoing_http), fx()]) as hub:
        with pytest.raises(ToolCallError):
            hub.call_tool("mcp__web__http_error", {"status": 401}, timeout=CALL_TIMEOUT)
        with pytest.raises(ToolCallError):
            hub.call_tool("mcp__fx__fail_with_env", {"name": "SERVICE_TOKEN"}, timeout=CALL_TIMEOUT)
    with MCPHub([refusing_web(refusing_http, 500), python_server(REFUSING_STDIO_SERVER)]):
        pass

    assert {name.split(".")[0] for name, _ in records.lines} >= {"httpx2", "mcp", "mcp_sync"}
    for name, line in records.lines:
        for secret in SECRETS:
            assert secret not in line, (name, line)


# --------------------------------------------------------------------------- config errors


def test_a_config_error_about_an_entry_with_secrets_holds_none_of_them(tmp_path: Path) -> None:
    bad = {"server_name": "web", "url": f"https://h/mcp?api_key={QUERY_KEY}", "headers": {"X": [TOKEN]}}
    with pytest.raises(ConfigError) as raised:
        parse_server_entries([bad], environ={}, strict=True)
    assert_no_secret(raised.value)

    broken = tmp_path / "mcp.json"
    broken.write_text(f'{{"servers": [{{"server_name": "web", "headers": {{"A": "{TOKEN}"}}, }}, ]')
    with pytest.raises(ConfigError) as raised:
        MCPHub.from_file(broken)
    assert_no_secret(raised.value)


# --------------------------------------------------------------------------- the mechanism itself


def raised(error: BaseException, cause: BaseException | None = None) -> BaseException:
    """`error` as it is once raised (from `cause`, when given): with its traceback and links."""
    try:
        if cause is None:
            raise error
        raise error from cause
    except BaseException as caught:
        return caught


def test_an_error_without_a_secret_is_handed_over_as_it_is() -> None:
    inner = raised(ValueError("plain"))
    error = raised(ToolCallError("refused"), inner)

    with register([TOKEN]):
        handed = scrub_exception(error)

    assert handed is error
    assert handed.__cause__ is inner


def test_a_cause_holding_a_secret_is_replaced_by_a_stand_in_keeping_its_type_name_and_frames() -> None:
    inner = raised(KeyError(f"token {TOKEN}"))
    error = raised(ToolCallError("refused"), inner)

    with register([TOKEN]):
        handed = scrub_exception(error)

    assert handed is error
    cause = handed.__cause__
    assert isinstance(cause, ScrubbedError)
    assert cause.type_name == "KeyError"
    assert "KeyError: 'token ***'" in "".join(traceback.format_exception(handed))
    assert cause.__traceback__ is inner.__traceback__
    assert_no_secret(handed)


def test_a_secret_in_a_group_member_or_a_note_is_scrubbed() -> None:
    member = raised(OSError(f"connect with {TOKEN}"))
    member.add_note(f"note: {TOKEN}")
    group = raised(ExceptionGroup("unhandled errors in a TaskGroup", [member, ValueError("plain")]))
    error = raised(ToolCallError(f"refused {TOKEN}"), group)
    error.add_note(f"hint {TOKEN}")

    with register([TOKEN]):
        handed = scrub_exception(error)

    assert str(handed) == "refused ***"
    assert handed.__notes__ == ["hint ***"]
    members = handed.__cause__.exceptions  # type: ignore[union-attr]
    assert [type(member).__name__ for member in members] == ["ScrubbedError", "ValueError"]
    assert "OSError: connect with ***" in "".join(traceback.format_exception(handed))
    assert_no_secret(handed)


def test_a_group_whose_own_message_holds_a_secret_stays_a_group() -> None:
    group = raised(BaseExceptionGroup(f"failed with {TOKEN}", [ValueError("plain"), KeyboardInterrupt()]))
    error = raised(ToolCallError("refused"), group)

    with register([TOKEN]):
        handed = scrub_exception(error)

    stand_in = handed.__cause__
    assert isinstance(stand_in, BaseExceptionGroup) and len(stand_in.exceptions) == 2
    assert "failed with ***" in str(stand_in)
    assert_no_secret(handed)


def test_a_suppressed_context_is_dropped_whatever_it_holds() -> None:
    try:
        try:
            raise RuntimeError("a secret that is no longer registered: " + TOKEN)
        except RuntimeError:
            raise AuthError("signing in failed") from None
    except AuthError as caught:
        error = caught

    handed = scrub_exception(error)  # nothing registered: only the chain's shape can keep it out

    assert handed.__context__ is None
    assert_no_secret(handed)


def test_the_failures_of_a_start_error_are_scrubbed() -> None:
    failure = raised(ToolCallError("refused"), raised(RuntimeError(f"echo {TOKEN}")))
    error = ServerStartError(f"required server(s) failed to start: web: {TOKEN}", {"web": failure})

    with register([TOKEN]):
        handed = scrub_exception(error)

    assert str(handed) == "required server(s) failed to start: web: ***"
    assert_no_secret(handed)


def test_a_chain_that_loops_is_cut_not_followed_forever() -> None:
    first, second = ValueError(f"first {TOKEN}"), ValueError("second")
    first.__context__, second.__context__ = second, first
    error = raised(ToolCallError("refused"), first)

    with register([TOKEN]):
        handed = scrub_exception(error)

    assert_no_secret(handed)


def test_a_result_is_a_tool_result_whose_repr_is_scrubbed() -> None:
    with register([TOKEN]):
        shown = repr(ToolResult(text=f"the token is {TOKEN}", is_error=True))

    assert shown.startswith("ToolResult(text='the token is ***', is_error=True")
