"""Reliability against bad input: configurations, call arguments, and secrets in logs.

- any configuration, from Python or from a file, gives a hub or a `ConfigError`, never another
  exception (property-based, plus hand-made hostile files);
- any JSON-ish argument dict gives a `ToolResult` or a typed `MCPSyncError`, and never takes the
  session down (property-based, on one shared hub);
- a configured secret (a header value, an env value) appears in no log record of any logger at
  DEBUG, and in no repr or error message, through a start, calls, failures and close.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import socket
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sync import (
    ConfigError,
    MCPHub,
    MCPSyncError,
    ServerDisconnectedError,
    ToolCallTimeoutError,
    ToolResult,
    load_config_entries,
    parse_server_entries,
)
from tests.hub_harness import fixture_server, started_hub
from tests.support import HttpServer, http_config, stdio_config

# -- configurations ---------------------------------------------------------------------------------

KEYS = [
    "server_name", "serverName", "transport", "type", "command", "args", "env", "cwd", "url", "httpUrl",
    "headers", "tool_call_timeout_ms", "toolCallTimeoutMs", "connect_timeout_ms", "connectTimeoutMs",
    "timeout", "enabled", "disabled", "required", "include_tools", "includeTools", "exclude_tools",
    "excludeTools",
]  # fmt: skip
PLAUSIBLE_STRINGS = [
    "a", "srv-1", "x" * 33, "", " ", "stdio", "streamable-http", "http", "sse", "python",
    "http://127.0.0.1:9/mcp", "https://example.invalid/mcp?token=abc", "ftp://x", "http://", "http://[::1",
    "http://user:pw@127.0.0.1:1/", "${HOME}", "${MCP_SYNC_SURELY_UNSET}", "${A:-fallback}", "${env:PATH}",
    "$${literal", "${", "${}", "${1BAD}", "$HOME", "a\nb", "a\x00b", "ünï😀",
]  # fmt: skip

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(PLAUSIBLE_STRINGS)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
entries = st.dictionaries(
    st.sampled_from(KEYS) | st.text(max_size=10),
    st.sampled_from(PLAUSIBLE_STRINGS)
    | json_values
    | st.lists(st.sampled_from(PLAUSIBLE_STRINGS), max_size=3),
    max_size=8,
)
config_lists = st.lists(entries | json_values, max_size=4) | json_values
environ = st.dictionaries(st.sampled_from(["HOME", "PATH", "A", "TOKEN"]), st.text(max_size=8), max_size=4)


@settings(max_examples=300, deadline=None)
@given(configs=config_lists, env=environ)
def test_any_configuration_parses_or_raises_config_error(configs: Any, env: dict[str, str]) -> None:
    try:
        parsed = parse_server_entries(configs, environ=env, strict=True).configs
    except ConfigError:
        return
    assert isinstance(parsed, list)


@settings(max_examples=150, deadline=None)
@given(configs=config_lists)
def test_any_configuration_builds_a_hub_or_raises_config_error(configs: Any) -> None:
    try:
        hub = MCPHub(configs)
    except ConfigError:
        return
    hub.close()  # never started: nothing to stop, but closing must be fine too


documents = (
    st.fixed_dictionaries({"servers": config_lists})
    | st.fixed_dictionaries(
        {"mcpServers": st.dictionaries(st.text(max_size=8) | st.integers(), entries, max_size=3)}
    )
    | json_values
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=documents, as_json=st.booleans())
def test_any_config_file_loads_or_raises_config_error(document: Any, as_json: bool) -> None:
    try:
        text = json.dumps(document) if as_json else yaml.safe_dump(document, allow_unicode=True)
    except (ValueError, yaml.YAMLError):
        return  # not representable in that format: nothing to write
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / ("servers.json" if as_json else "servers.yaml")
        path.write_text(text, encoding="utf-8")
        with contextlib.suppress(ConfigError):
            load_config_entries(path, strict=True)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=200) | st.binary(max_size=200))
def test_any_file_content_loads_or_raises_config_error(text: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "servers.yaml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        with contextlib.suppress(ConfigError):
            load_config_entries(path, strict=True)


HOSTILE_FILES = {
    "deeply-nested.json": '{"servers": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "deeply-nested.yaml": "servers: " + "[" * 5_000 + "]" * 5_000 + "\n",
    "huge-integer.json": '{"servers": [{"server_name": "a", "command": "c", "tool_call_timeout_ms": 1'
    + "0" * 5_000
    + "}]}",
    "huge-integer.yaml": "servers:\n- {server_name: a, command: c, tool_call_timeout_ms: 1"
    + "0" * 5_000
    + "}\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_hostile_config_file_raises_config_error(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_text(HOSTILE_FILES[name], encoding="utf-8")
    with pytest.raises(ConfigError):
        load_config_entries(path, strict=True)


def test_config_file_of_nested_yaml_aliases_is_rejected_quickly(tmp_path: Path) -> None:
    # 400 bytes that alias their way to a million strings: a project's .mcp.json is not always ours.
    lines = ['l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 6)]
    lines.append("mcpServers: {a: {command: c, args: *l5}}")
    path = tmp_path / ".mcp.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    started = time.monotonic()
    # The entry's value limit refuses it while it is read: validation would refuse the nested lists
    # too, but only after a million strings had been copied.
    with pytest.raises(ConfigError, match=r"over \d+ values"):
        load_config_entries(path, strict=True)
    elapsed = time.monotonic() - started
    # Expanded, the aliases are a million strings: tens of seconds. Refused, well under a second;
    # the bound leaves room for a loaded machine.
    assert elapsed < 5, f"a {path.stat().st_size}-byte file took {elapsed:.2f}s to read"


def test_deeply_nested_configuration_from_python_is_a_config_error() -> None:
    nested: Any = "arg"
    for _ in range(5_000):
        nested = [nested]
    entry = {"server_name": "a", "command": "c", "args": nested}
    with pytest.raises(ConfigError, match="nested deeper"):
        parse_server_entries([entry], strict=True)
    with MCPHub([entry]) as hub:  # each entry stands alone: this one fails, and the hub starts
        assert hub.servers["a"].state == "failed"
        assert isinstance(hub.servers["a"].error, ConfigError)


# -- call arguments ---------------------------------------------------------------------------------

# Hypothesis' text() leaves out lone surrogates; `test_argument_that_cannot_be_encoded_fails_alone`
# covers those on its own hub (here one would take the shared session down for every later example).
argument_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
arguments = st.dictionaries(
    st.sampled_from(["text", "extra"]) | st.text(max_size=10), argument_values, max_size=5
)


@pytest.fixture(scope="module")
def echo_hub() -> Iterator[MCPHub]:
    with started_hub(stdio_config("fx")) as hub:
        yield hub


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=arguments)
def test_any_arguments_give_a_result_or_a_typed_error(echo_hub: MCPHub, args: dict[str, Any]) -> None:
    try:
        result = echo_hub.call_tool("mcp__fx__echo", args, timeout=10)
    except MCPSyncError:
        pass
    else:
        assert isinstance(result, ToolResult)
        if isinstance(args.get("text"), str):
            assert (result.text, result.is_error) == (args["text"], False)
    # A bad argument fails its own call at most: the session is still up.
    assert echo_hub.servers["fx"].state == "ready", repr(echo_hub.servers["fx"])


@pytest.mark.parametrize(
    ("transport", "era"),
    [pytest.param("stdio", "modern", id="stdio-2026"), pytest.param("http", "legacy", id="http-2025")],
)
def test_argument_that_cannot_be_encoded_fails_alone(transport: str, era: str) -> None:
    # json.loads('"\\ud800"') gives such a string: a model's output can contain one.
    with fixture_server("fx", transport, era) as served, started_hub(served.config) as hub:
        running = hub.submit("mcp__fx__sleep", {"seconds": 0.5, "tag": "bystander"})
        try:  # a typed error for this call, or a result (were the string sent escaped): either is fine
            hub.call_tool("mcp__fx__echo", {"text": "lone surrogate \ud800"}, timeout=10)
        except MCPSyncError as exc:
            assert not isinstance(exc, ServerDisconnectedError), (
                f"one bad argument took the session down: {exc}"
            )
        assert hub.servers["fx"].state == "ready", repr(hub.servers["fx"])
        done, _ = concurrent.futures.wait([running], 10)
        assert done and running.exception() is None, repr(running.exception())
        assert hub.call_tool("mcp__fx__echo", {"text": "still fine"}).text == "still fine"


# -- secrets ----------------------------------------------------------------------------------------


class Capture(logging.Handler):
    """Every record of every logger, formatted (with its traceback, if any)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def every_log_record() -> Iterator[Capture]:
    capture = Capture()
    root = logging.getLogger()
    level = root.level
    # Named loggers with their own level would drop DEBUG records before they reach the root.
    named = {
        name: logger.level
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    for name in named:
        logging.getLogger(name).setLevel(logging.NOTSET)
    root.addHandler(capture)
    root.setLevel(logging.DEBUG)
    try:
        yield capture
    finally:
        root.removeHandler(capture)
        root.setLevel(level)
        for name, old in named.items():
            logging.getLogger(name).setLevel(old)


def test_secrets_never_reach_a_log_record_a_repr_or_an_error(every_log_record: Capture) -> None:
    header_secret = f"hdr-{uuid.uuid4().hex}"
    env_secret = f"env-{uuid.uuid4().hex}"
    secrets = (header_secret, env_secret)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    texts: list[str] = []
    with HttpServer() as web:
        configs = [
            http_config("web", web.url, headers={"Authorization": f"Bearer {header_secret}"}),
            stdio_config("local", env={"API_TOKEN": env_secret}),
            http_config("gone", f"http://127.0.0.1:{closed_port}/mcp", headers={"X-Api-Key": header_secret}),
            {"server_name": "nocmd", "transport": "stdio", "command": "mcp-sync-no-such-command",
             "env": {"API_TOKEN": env_secret}},
        ]  # fmt: skip
        hub = MCPHub(configs)
        try:
            hub.start()
            assert hub.servers["web"].state == "ready" and hub.servers["local"].state == "ready"
            assert hub.call_tool("mcp__web__echo", {"text": "hi"}).text == "hi"
            assert hub.call_tool("mcp__local__echo", {"text": "hi"}).text == "hi"
            assert hub.call_tool("mcp__local__fail", {"message": "boom"}).is_error
            for name in ("web", "local"):
                with pytest.raises(ToolCallTimeoutError) as raised:
                    hub.call_tool(f"mcp__{name}__sleep", {"seconds": 5}, timeout=0.2)
                texts += [str(raised.value), repr(raised.value)]
            texts += [repr(hub), *(repr(server) for server in hub.servers.values())]
            texts += [repr(server.config) for server in hub.servers.values()]
            texts += [f"{server.error} {server.error!r}" for server in hub.servers.values() if server.error]
            web.kill()  # and a failure mid-session
            with pytest.raises(MCPSyncError) as lost:
                hub.call_tool("mcp__web__echo", {"text": "anyone?"}, timeout=10)
            texts += [str(lost.value), repr(lost.value), repr(hub)]
        finally:
            hub.close()
        texts += [repr(hub)]
    assert hub.servers == {}
    assert every_log_record.lines, "nothing was logged: the capture is broken"
    for secret in secrets:
        leaked = [line for line in every_log_record.lines if secret in line]
        assert not leaked, f"a secret reached {len(leaked)} log records, e.g. {leaked[0][:300]!r}"
        assert not [text for text in texts if secret in text], "a secret reached a repr or error message"
