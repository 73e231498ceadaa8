"""Server configuration: models, aliases, interpolation, file formats, errors and secret redaction."""

from __future__ import annotations

import contextlib
import json
import logging
import traceback
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from mcp_sync._config import (
    HttpServerConfig,
    RedactedMapping,
    ServerConfig,
    SseServerConfig,
    StdioServerConfig,
    load_config_entries,
    parse_server_entries,
    suggest_server_name,
    unmatched_tool_filters,
    warn_unmatched_tool_filters,
)
from mcp_sync._values.errors import ConfigError
from mcp_sync._values.naming import server_name_from_host

SECRET = "s3cr3t-Zq8x-do-not-print"
NO_ENV: dict[str, str] = {}


def stdio(**fields: Any) -> dict[str, Any]:
    return {"server_name": "fs", "command": "npx", **fields}


def http(**fields: Any) -> dict[str, Any]:
    return {"server_name": "web", "url": "https://mcp.example.com/mcp", **fields}


def parse_one(entry: Any, environ: dict[str, str] | None = None) -> ServerConfig:
    [config] = parse_server_entries(
        [entry], environ=NO_ENV if environ is None else environ, strict=True
    ).configs
    return config


def parse_stdio(entry: Any, environ: dict[str, str] | None = None) -> StdioServerConfig:
    config = parse_one(entry, environ)
    assert isinstance(config, StdioServerConfig)
    return config


def parse_http(entry: Any, environ: dict[str, str] | None = None) -> HttpServerConfig:
    config = parse_one(entry, environ)
    assert isinstance(config, HttpServerConfig)
    return config


def config_error(entries: Any, environ: dict[str, str] | None = None, source: str | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        parse_server_entries(
            entries, environ=NO_ENV if environ is None else environ, source=source, strict=True
        )
    return str(info.value)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load_config_entries(path, environ=NO_ENV if environ is None else environ, strict=True)
    return str(info.value)


# --------------------------------------------------------------------------- fields and defaults


def test_stdio_entry_has_documented_defaults() -> None:
    config = parse_one({"transport": "stdio", "server_name": "fs", "command": "npx"})

    assert isinstance(config, StdioServerConfig)
    assert (config.args, dict(config.env), config.cwd) == ((), {}, None)
    assert (config.tool_call_timeout_ms, config.connect_timeout_ms) == (60_000, 30_000)
    assert (config.enabled, config.required) == (True, False)
    assert (config.include_tools, config.exclude_tools) == (None, ())


def test_http_entry_has_documented_defaults() -> None:
    config = parse_one(
        {"transport": "streamable-http", "server_name": "web", "url": "http://127.0.0.1:8000/mcp"}
    )

    assert isinstance(config, HttpServerConfig)
    assert dict(config.headers) == {}
    assert (config.tool_call_timeout_ms, config.connect_timeout_ms) == (60_000, 30_000)
    assert (config.enabled, config.required) == (True, False)
    assert (config.include_tools, config.exclude_tools) == (None, ())


def test_every_stdio_field_is_read() -> None:
    config = parse_one(
        stdio(
            transport="stdio",
            args=["-y", "@modelcontextprotocol/server-filesystem"],
            env={"ROOT": "/srv"},
            cwd="/srv",
            tool_call_timeout_ms=1500,
            connect_timeout_ms=2500,
            enabled=False,
            required=True,
            include_tools=["read_file", "list"],
            exclude_tools=["list"],
        )
    )

    assert isinstance(config, StdioServerConfig)
    assert config.server_name == "fs"
    assert config.command == "npx"
    assert config.args == ("-y", "@modelcontextprotocol/server-filesystem")
    assert dict(config.env) == {"ROOT": "/srv"}
    assert config.cwd == "/srv"
    assert (config.tool_call_timeout_ms, config.connect_timeout_ms) == (1500, 2500)
    assert (config.enabled, config.required) == (False, True)
    assert (config.include_tools, config.exclude_tools) == (("read_file", "list"), ("list",))


def test_every_http_field_is_read() -> None:
    config = parse_one(
        http(transport="streamable-http", headers={"Authorization": "Bearer x"}, required=True)
    )

    assert isinstance(config, HttpServerConfig)
    assert config.url == "https://mcp.example.com/mcp"
    assert dict(config.headers) == {"Authorization": "Bearer x"}
    assert config.required is True


@pytest.mark.parametrize(
    ("snake", "camel", "value"),
    [
        ("server_name", "serverName", "gh"),
        ("tool_call_timeout_ms", "toolCallTimeoutMs", 1234),
        ("connect_timeout_ms", "connectTimeoutMs", 4321),
        ("include_tools", "includeTools", ["a", "b"]),
        ("exclude_tools", "excludeTools", ["c"]),
    ],
)
def test_camel_case_alias_is_accepted_like_snake_case(snake: str, camel: str, value: Any) -> None:
    base = {"transport": "stdio", "server_name": "fs", "command": "npx"}
    base.pop(snake, None)

    by_name = parse_one({**base, snake: value})
    by_alias = parse_one({**base, camel: value})

    assert by_name == by_alias
    assert getattr(by_alias, snake) == (tuple(value) if isinstance(value, list) else value)


def test_both_spellings_of_one_field_are_refused() -> None:
    message = config_error([stdio(tool_call_timeout_ms=1, toolCallTimeoutMs=2)])

    assert "'tool_call_timeout_ms' and 'toolCallTimeoutMs'" in message


def test_models_can_be_built_directly_with_snake_case_names() -> None:
    config = StdioServerConfig(server_name="fs", command="npx", args=("a",), env={"A": "1"})

    assert config.transport == "stdio"
    assert config.env == {"A": "1"}


def test_timeouts_are_also_given_in_seconds() -> None:
    config = parse_stdio(stdio(tool_call_timeout_ms=1500, connect_timeout_ms=250))

    assert config.tool_call_timeout == 1.5
    assert config.connect_timeout == 0.25


@pytest.mark.parametrize("field", ["tool_call_timeout_ms", "connect_timeout_ms"])
@pytest.mark.parametrize("value", [0, -5])
def test_timeout_must_be_positive(field: str, value: int) -> None:
    message = config_error([stdio(**{field: value})])

    assert f"servers[0] (\"fs\"): field '{field}': must be greater than 0" in message


def test_timeout_above_the_limit_is_refused() -> None:
    message = config_error([stdio(tool_call_timeout_ms=2**31)])

    assert "field 'tool_call_timeout_ms'" in message


def test_timeout_refuses_a_boolean() -> None:
    message = config_error([stdio(connect_timeout_ms=True)])

    assert "field 'connect_timeout_ms': must be a whole number of milliseconds" in message


def test_timeout_error_names_the_camel_case_key_the_user_wrote() -> None:
    message = config_error([stdio(toolCallTimeoutMs=0)])

    assert "field 'toolCallTimeoutMs': must be greater than 0" in message


@pytest.mark.parametrize(
    ("name", "reason", "suggestion"),
    [
        ("has space", "contains a space", "has_space"),
        ("a" * 33, "is 33 characters long", "a" * 32),
        ("dotted.name", "contains '.'", "dotted_name"),
        ("ünï", "contains 'ï' and 'ü'", "uni"),
        ("a/b", "contains '/'", "a_b"),
    ],
)
def test_server_name_outside_the_pattern_is_refused_with_a_valid_suggestion(
    name: str, reason: str, suggestion: str
) -> None:
    message = config_error([stdio(server_name=name)])

    assert f"field 'server_name': {name!r} cannot be used: it {reason}; a server name is 1 to 32" in message
    assert message.endswith(f"; use {suggestion!r}")


def test_empty_server_name_is_refused() -> None:
    assert "field 'server_name': is empty; a server name is 1 to 32" in config_error([stdio(server_name="")])


@pytest.mark.parametrize("name", ["a", "A-z_09", "x" * 32])
def test_server_name_inside_the_pattern_is_accepted(name: str) -> None:
    assert parse_stdio(stdio(server_name=name)).server_name == name


def test_missing_server_name_names_both_spellings() -> None:
    message = config_error([{"command": "npx"}])

    assert "servers[0]: field 'server_name' (or 'serverName'): is required" in message


@pytest.mark.parametrize("command", ["", "   "])
def test_empty_command_is_refused(command: str) -> None:
    message = config_error([stdio(command=command)])

    assert "field 'command'" in message


def test_empty_cwd_is_refused() -> None:
    assert "field 'cwd'" in config_error([stdio(cwd="")])


@pytest.mark.parametrize("url", ["ftp://example.com/mcp", "example.com/mcp", "http://", "file:///tmp/x"])
def test_url_must_be_http_or_https_with_a_host(url: str) -> None:
    message = config_error([http(url=url)])

    assert "field 'url': must be an http:// or https:// URL with a host" in message


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/mcp", "https://mcp.example.com/mcp", "HTTPS://EXAMPLE.COM"]
)
def test_http_and_https_urls_are_accepted(url: str) -> None:
    assert parse_http(http(url=url)).url == url


def test_args_list_is_stored_as_a_tuple() -> None:
    assert parse_stdio(stdio(args=["a", "b"])).args == ("a", "b")


def test_non_string_arg_error_names_its_index() -> None:
    message = config_error([stdio(args=["--port", 8080])])

    assert "field 'args[1]': must be a string (put numbers and true/false in quotes)" in message


def test_non_string_env_value_error_names_the_variable() -> None:
    message = config_error([stdio(env={"PORT": 8080})])

    assert "field 'env.PORT': must be a string" in message


@pytest.mark.parametrize("name", ["", "A=B"])
def test_env_variable_name_must_be_usable(name: str) -> None:
    assert "field 'env'" in config_error([stdio(env={name: "x"})])


def test_header_name_must_be_an_http_token() -> None:
    message = config_error([http(headers={"Bad Header": "x"})])

    assert "'Bad Header' is not a valid header name" in message


def test_header_value_with_a_line_break_is_refused() -> None:
    message = config_error([http(headers={"X-Api-Key": f"{SECRET}\r\nInjected: 1"})])

    assert "the value of X-Api-Key contains a line break" in message
    assert SECRET not in message


def test_enabled_and_required_are_read() -> None:
    config = parse_stdio(stdio(enabled=False, required=True))

    assert (config.enabled, config.required) == (False, True)


def test_allows_every_tool_without_filters() -> None:
    assert parse_stdio(stdio()).allows_tool("anything")


def test_include_list_allows_only_its_tools() -> None:
    config = parse_stdio(stdio(include_tools=["read_file"]))

    assert config.allows_tool("read_file")
    assert not config.allows_tool("write_file")


def test_exclude_list_wins_over_include_list() -> None:
    config = parse_stdio(stdio(include_tools=["read_file", "write_file"], exclude_tools=["write_file"]))

    assert config.allows_tool("read_file")
    assert not config.allows_tool("write_file")


def test_empty_include_list_allows_nothing() -> None:
    assert not parse_stdio(stdio(include_tools=[])).allows_tool("read_file")


# --------------------------------------------------------------------------- transport and discriminator


def test_entry_with_command_and_no_transport_is_stdio() -> None:
    assert isinstance(parse_one({"server_name": "fs", "command": "npx"}), StdioServerConfig)


def test_entry_with_url_and_no_transport_is_streamable_http() -> None:
    assert isinstance(parse_one({"server_name": "web", "url": "http://localhost/mcp"}), HttpServerConfig)


def test_entry_with_neither_command_nor_url_nor_transport_is_refused() -> None:
    message = config_error([{"server_name": "fs"}])

    assert "servers[0] (\"fs\"): field 'transport': missing" in message


def test_entry_with_command_and_url_but_no_transport_is_refused() -> None:
    message = config_error([{"server_name": "x", "command": "npx", "url": "http://localhost"}])

    assert "has both 'command' (stdio) and 'url' (streamable-http)" in message


@pytest.mark.parametrize("transport", ["http", "websocket", 3, None])
def test_unknown_transport_is_refused(transport: Any) -> None:
    message = config_error([stdio(transport=transport)])

    assert "field 'transport': must be 'stdio', 'streamable-http' or 'sse'" in message


def test_sse_transport_is_opt_in_and_gives_an_sse_config() -> None:
    config = parse_one(http(transport="sse", url="https://mcp.example.com/sse"))

    assert isinstance(config, SseServerConfig)
    assert config.url == "https://mcp.example.com/sse"


def test_discriminated_union_validates_to_the_matching_model() -> None:
    adapter: TypeAdapter[ServerConfig] = TypeAdapter(ServerConfig)

    assert isinstance(adapter.validate_python({"transport": "stdio", **stdio()}), StdioServerConfig)
    assert isinstance(adapter.validate_python({"transport": "streamable-http", **http()}), HttpServerConfig)
    assert isinstance(adapter.validate_python({"transport": "sse", **http()}), SseServerConfig)
    with pytest.raises(ValidationError):
        adapter.validate_python({"transport": "websocket", **http()})


def test_stdio_key_on_an_http_entry_is_an_unknown_key() -> None:
    message = config_error([http(transport="streamable-http", command="npx")])

    assert "servers[0] (\"web\"): unknown key 'command' for transport 'streamable-http'" in message


def test_unknown_key_is_refused_naming_key_and_entry() -> None:
    message = config_error([stdio(), stdio(server_name="gh", timeout_ms=5)])

    assert message == "servers[1] (\"gh\"): unknown key 'timeout_ms'"


def test_models_pass_through_unchanged() -> None:
    model = HttpServerConfig(
        server_name="web", url="http://localhost/mcp", headers={"A": "${NOT_INTERPOLATED}"}
    )

    [config] = parse_server_entries([model], environ=NO_ENV, strict=True).configs

    assert config is model


def test_dicts_and_models_may_be_mixed_in_order() -> None:
    model = StdioServerConfig(server_name="one", command="a")

    configs = parse_server_entries([model, stdio(server_name="two")], environ=NO_ENV, strict=True).configs

    assert [c.server_name for c in configs] == ["one", "two"]


def test_entry_that_is_not_a_mapping_is_refused() -> None:
    assert config_error([["server_name", "fs"]]) == "servers[0]: expected a mapping of settings, got list"


@pytest.mark.parametrize("entries", ["servers.yaml", None, 3])
def test_entries_that_are_not_a_list_or_a_mapping_are_refused(entries: Any) -> None:
    assert "expected a list of server entries or a mapping with 'servers' or 'mcpServers'" in config_error(
        entries
    )


def test_a_file_name_instead_of_entries_points_at_the_file_loader() -> None:
    assert "to read a file, use load_config_entries() or MCPHub.from_file()" in config_error("servers.yaml")


def test_one_entry_instead_of_a_list_is_refused_as_a_document_of_neither_shape() -> None:
    assert config_error(stdio()) == "has neither 'servers' (a list) nor 'mcpServers' (a map)"


def test_every_invalid_entry_is_reported_at_once() -> None:
    message = config_error([stdio(server_name="a", command=""), stdio(server_name="b"), http(url="ftp://x")])

    assert "servers[0] (\"a\"): field 'command'" in message
    assert "servers[2] (\"web\"): field 'url'" in message
    assert "servers[1]" not in message


def test_several_problems_in_one_entry_are_listed() -> None:
    message = config_error([stdio(tool_call_timeout_ms=0, extra_key=1)])

    assert message.startswith('servers[0] ("fs"): 2 problems:\n')
    assert "  - field 'tool_call_timeout_ms': must be greater than 0" in message
    assert "  - unknown key 'extra_key'" in message


def test_source_prefixes_every_message() -> None:
    message = config_error([stdio(command="")], source="servers.yaml")

    assert message.startswith("servers.yaml: servers[0] (\"fs\"): field 'command'")


# --------------------------------------------------------------------------- value semantics


def test_equal_configs_are_equal_and_hash_alike() -> None:
    one = parse_stdio(stdio(args=["a"], env={"A": "1"}, include_tools=["x"]))
    two = parse_one(
        {"serverName": "fs", "command": "npx", "args": ["a"], "env": {"A": "1"}, "includeTools": ["x"]}
    )

    assert one == two
    assert hash(one) == hash(two)
    assert len({one, two}) == 1


def test_configs_differing_in_one_env_value_are_unequal() -> None:
    assert parse_stdio(stdio(env={"A": "1"})) != parse_stdio(stdio(env={"A": "2"}))


def test_configs_differing_in_one_header_value_are_unequal() -> None:
    assert parse_http(http(headers={"A": "1"})) != parse_http(http(headers={"A": "2"}))


def test_default_and_explicit_default_are_equal() -> None:
    assert parse_stdio(stdio()) == parse_stdio(
        stdio(args=[], env={}, enabled=True, tool_call_timeout_ms=60000)
    )


def test_config_is_frozen() -> None:
    config = parse_stdio(stdio())

    with pytest.raises(ValidationError):
        config.command = "other"


def test_env_mapping_cannot_be_modified() -> None:
    config = parse_stdio(stdio(env={"A": "1"}))

    with pytest.raises(TypeError):
        config.env["A"] = "2"  # type: ignore[index]


def test_env_reads_like_a_dict_with_real_values() -> None:
    config = parse_stdio(stdio(env={"API_KEY": SECRET}))

    assert config.env["API_KEY"] == SECRET
    assert dict(config.env) == {"API_KEY": SECRET}
    assert config.model_dump()["env"] == {"API_KEY": SECRET}


def test_redacted_mapping_equals_a_dict_with_the_same_items() -> None:
    assert RedactedMapping({"A": "1"}) == {"A": "1"}
    assert RedactedMapping({"A": "1"}) != {"A": "2"}


# --------------------------------------------------------------------------- secrets


def test_repr_and_str_mask_env_values_but_show_keys() -> None:
    config = parse_stdio(stdio(env={"API_KEY": SECRET}))

    for text in (repr(config), str(config), repr(config.env), str(config.env)):
        assert SECRET not in text
        assert "{'API_KEY': '***'}" in text


def test_repr_and_str_mask_header_values_but_show_keys() -> None:
    config = parse_http(http(headers={"Authorization": f"Bearer {SECRET}"}))

    for text in (repr(config), str(config)):
        assert SECRET not in text
        assert "{'Authorization': '***'}" in text


def test_repr_masks_url_password_and_query_values() -> None:
    config = parse_http(http(url=f"https://user:{SECRET}@mcp.example.com/mcp?api_key={SECRET}&v=1"))

    assert SECRET not in repr(config)
    assert "https://user:***@mcp.example.com/mcp?api_key=***&v=***" in repr(config)


@pytest.mark.parametrize(
    "entry",
    [
        stdio(env={"API_KEY": [SECRET]}),
        stdio(env={"API_KEY": {"nested": SECRET}}),
        stdio(env={"API_KEY": SECRET + "\0"}),
        stdio(env=[SECRET]),
        stdio(env=SECRET),
        http(headers={"Authorization": [SECRET]}),
        http(headers={"Authorization": 12345, "X-Key": SECRET}),
        http(headers=SECRET),
        http(headers={"X-Key": SECRET}, tool_call_timeout_ms=0),
        http(headers={"X-Key": SECRET}, url=f"ftp://{SECRET}"),
        http(headers={"X-Key": f"${{BROKEN {SECRET}"}),
        http(headers={"X-Key": f"{SECRET}${{MISSING}}"}),
        {"server_name": "web", "url": f"https://{SECRET}", "command": SECRET},
    ],
)
def test_config_error_never_shows_a_secret_value(entry: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as info:
        parse_server_entries([entry], environ=NO_ENV, strict=True)

    assert SECRET not in str(info.value)
    assert SECRET not in "".join(traceback.format_exception(info.value))


def test_config_error_is_not_chained_to_pydantic_error() -> None:
    with pytest.raises(ConfigError) as info:
        parse_server_entries([http(headers={"Authorization": [SECRET]})], environ=NO_ENV, strict=True)

    assert info.value.__cause__ is None
    assert info.value.__context__ is None


def test_directly_built_model_error_does_not_echo_a_secret() -> None:
    with pytest.raises(ValidationError) as info:
        HttpServerConfig(server_name="web", url="http://localhost", headers={"Authorization": [SECRET]})  # type: ignore[dict-item]

    assert SECRET not in str(info.value)


def test_unset_variable_error_does_not_show_the_rest_of_the_value() -> None:
    message = config_error([http(headers={"Authorization": f"{SECRET} ${{TOKEN}}"})])

    assert "${TOKEN}" in message
    assert SECRET not in message


def test_secret_is_not_logged(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")
    entry = {
        "url": "https://x/mcp",
        "headers": {"A": SECRET},
        "oauth": {"clientId": "mcp-sync-test", "clientSecret": SECRET},
        "trust": True,
    }
    path = write(tmp_path, "settings.json", json.dumps({"mcpServers": {"web": entry}, "apiKey": SECRET}))

    load_config_entries(path, environ=NO_ENV, strict=True)

    assert caplog.records
    assert SECRET not in caplog.text


# --------------------------------------------------------------------------- interpolation


def test_braced_variable_is_substituted() -> None:
    config = parse_http(http(headers={"Authorization": "Bearer ${TOKEN}"}), {"TOKEN": "abc"})

    assert config.headers["Authorization"] == "Bearer abc"


def test_env_prefixed_variable_is_substituted() -> None:
    config = parse_stdio(stdio(env={"TOKEN": "${env:GH_TOKEN}"}), {"GH_TOKEN": "abc"})

    assert config.env["TOKEN"] == "abc"


def test_default_is_used_when_the_variable_is_unset() -> None:
    config = parse_http(http(url="${MCP_URL:-http://localhost:8000/mcp}"), {})

    assert config.url == "http://localhost:8000/mcp"


def test_default_is_used_when_the_variable_is_empty() -> None:
    config = parse_stdio(stdio(args=["${LEVEL:-info}"]), {"LEVEL": ""})

    assert config.args == ("info",)


def test_default_is_ignored_when_the_variable_is_set() -> None:
    config = parse_stdio(stdio(args=["${LEVEL:-info}"]), {"LEVEL": "debug"})

    assert config.args == ("debug",)


def test_empty_default_gives_an_empty_string() -> None:
    assert parse_stdio(stdio(args=["x${SUFFIX:-}"]), {}).args == ("x",)


def test_env_prefixed_variable_takes_a_default() -> None:
    assert parse_stdio(stdio(args=["${env:LEVEL:-info}"]), {}).args == ("info",)


def test_set_but_empty_variable_without_default_is_an_empty_string() -> None:
    assert parse_stdio(stdio(args=["a${EMPTY}b"]), {"EMPTY": ""}).args == ("ab",)


def test_bare_dollar_variable_stays_literal() -> None:
    config = parse_stdio(stdio(env={"DB_PASSWORD": "pa$$word$HOME"}), {"HOME": "/home/user"})

    assert config.env["DB_PASSWORD"] == "pa$$word$HOME"


def test_double_dollar_brace_is_a_literal_brace() -> None:
    config = parse_stdio(stdio(args=["$${NOT_A_VAR}"]), {})

    assert config.args == ("${NOT_A_VAR}",)


def test_several_references_in_one_string_are_substituted() -> None:
    config = parse_http(
        http(url="https://${HOST}:${PORT:-443}/${PATH_PART}"), {"HOST": "h", "PATH_PART": "mcp"}
    )

    assert config.url == "https://h:443/mcp"


def test_interpolation_reaches_lists_and_dict_values_but_not_keys() -> None:
    config = parse_stdio(
        stdio(command="${CMD}", args=["--root", "${ROOT}"], env={"${KEY_NAME}": "${ROOT}"}),
        {"CMD": "node", "ROOT": "/srv", "KEY_NAME": "unused"},
    )

    assert config.command == "node"
    assert config.args == ("--root", "/srv")
    assert dict(config.env) == {"${KEY_NAME}": "/srv"}


def test_interpolation_reaches_include_and_exclude_lists() -> None:
    config = parse_stdio(stdio(include_tools=["${TOOL}"], exclude_tools=["${OTHER:-x}"]), {"TOOL": "read"})

    assert (config.include_tools, config.exclude_tools) == (("read",), ("x",))


def test_substituted_value_is_not_interpolated_again() -> None:
    config = parse_stdio(stdio(env={"A": "${OUTER}"}), {"OUTER": "${INNER}"})

    assert config.env["A"] == "${INNER}"


def test_interpolated_number_is_read_as_a_timeout() -> None:
    assert parse_stdio(stdio(tool_call_timeout_ms="${T:-5000}"), {}).tool_call_timeout_ms == 5000


def test_environ_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SYNC_TEST_ROOT", "/from-os")

    [config] = parse_server_entries([stdio(args=["${MCP_SYNC_TEST_ROOT}"])], strict=True).configs

    assert isinstance(config, StdioServerConfig)
    assert config.args == ("/from-os",)


def test_unset_variable_error_names_variable_entry_and_field() -> None:
    message = config_error(
        [stdio(), http(server_name="github", headers={"Authorization": "Bearer ${GITHUB_TOKEN}"})]
    )

    assert message == (
        "servers[1] (\"github\"): field 'headers.Authorization' references ${GITHUB_TOKEN}, which is not set"
    )


def test_unset_variable_in_a_list_names_the_index() -> None:
    message = config_error([stdio(args=["--root", "${ROOT}"])])

    assert "servers[0] (\"fs\"): field 'args[1]' references ${ROOT}, which is not set" in message


def test_unset_env_prefixed_variable_is_named() -> None:
    message = config_error([stdio(env={"TOKEN": "${env:GH_TOKEN}"})])

    assert "field 'env.TOKEN' references ${GH_TOKEN}, which is not set" in message


def test_unset_variable_in_the_server_name_omits_the_name_from_the_label() -> None:
    message = config_error([stdio(server_name="${NAME}")])

    assert message == "servers[0]: field 'server_name' references ${NAME}, which is not set"


def test_every_unset_variable_is_reported() -> None:
    message = config_error([stdio(args=["${A}", "${B}"])])

    assert "${A}" in message
    assert "${B}" in message


@pytest.mark.parametrize(
    "text", ["${}", "${A-b}", "${1ABC}", "${A", "x ${A:-${B}}", "${input:token}", "${A B}"]
)
def test_malformed_reference_is_refused(text: str) -> None:
    message = config_error([stdio(args=[text])])

    assert "field 'args[0]' has a malformed ${...} reference" in message


def test_model_entries_are_not_interpolated() -> None:
    model = StdioServerConfig(server_name="fs", command="npx", args=("${UNSET}",))

    assert parse_server_entries([model], environ=NO_ENV, strict=True).configs == [model]
    assert model.args == ("${UNSET}",)


# --------------------------------------------------------------------------- duplicate names


def test_two_enabled_entries_with_one_name_are_refused() -> None:
    message = config_error([stdio(server_name="fs"), http(server_name="gh"), http(server_name="fs")])

    assert "duplicate server_name 'fs': servers[0] and servers[2] are both enabled" in message


def test_strict_parsing_names_a_duplicate_beside_the_other_bad_entries() -> None:
    message = config_error([stdio(colour="blue"), http(), http(command="x"), http()])

    assert message.splitlines() == [
        "servers[0] (\"fs\"): unknown key 'colour'",
        "servers[2] (\"web\"): has both 'command' (stdio) and 'url' (streamable-http); keep one",
        "duplicate server_name 'web': servers[1] and servers[3] are both enabled; "
        "rename one or disable one (enabled: false)",
    ]


def test_disabled_duplicate_name_is_allowed() -> None:
    configs = parse_server_entries(
        [stdio(server_name="fs"), stdio(server_name="fs", command="other", enabled=False)],
        environ=NO_ENV,
        strict=True,
    ).configs

    assert [c.enabled for c in configs] == [True, False]


def test_duplicate_names_among_models_are_refused() -> None:
    model = StdioServerConfig(server_name="fs", command="npx")

    assert "duplicate server_name 'fs'" in config_error([model, stdio(server_name="fs")])


def test_names_differing_in_case_are_distinct() -> None:
    assert (
        len(
            parse_server_entries(
                [stdio(server_name="fs"), stdio(server_name="FS")], environ=NO_ENV, strict=True
            ).configs
        )
        == 2
    )


# --------------------------------------------------------------------------- our file format

OUR_YAML = """\
# two servers
servers:
  - transport: stdio
    server_name: fs
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", /srv]
    env:
      ROOT: ${ROOT:-/srv}
  - transport: streamable-http
    serverName: web
    url: https://mcp.example.com/mcp
    headers:
      Authorization: Bearer ${WEB_TOKEN}
    toolCallTimeoutMs: 5000
    required: true
"""


def test_our_yaml_file_is_loaded(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.yaml", OUR_YAML)

    fs, web = load_config_entries(path, environ={"WEB_TOKEN": "t"}, strict=True).configs

    assert fs == StdioServerConfig(
        server_name="fs",
        command="npx",
        args=("-y", "@modelcontextprotocol/server-filesystem", "/srv"),
        env={"ROOT": "/srv"},
    )
    assert web == HttpServerConfig(
        server_name="web",
        url="https://mcp.example.com/mcp",
        headers={"Authorization": "Bearer t"},
        tool_call_timeout_ms=5000,
        required=True,
    ).with_input_secrets({"t"})  # read from a variable named like a credential


def test_our_json_file_is_loaded(tmp_path: Path) -> None:
    document = {
        "servers": [{"serverName": "fs", "command": "npx"}, {"server_name": "web", "url": "http://h/mcp"}]
    }
    path = write(tmp_path, "servers.json", json.dumps(document, indent=2))

    configs = load_config_entries(path, environ=NO_ENV, strict=True).configs

    assert [type(c) for c in configs] == [StdioServerConfig, HttpServerConfig]


def test_file_format_is_decided_by_content_not_extension(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.json", "servers:\n  - {server_name: fs, command: npx}\n")

    assert load_config_entries(path, environ=NO_ENV, strict=True).configs[0].server_name == "fs"


def test_path_may_be_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.yaml", "servers: [{server_name: fs, command: npx}]")

    assert len(load_config_entries(str(path), environ=NO_ENV, strict=True).configs) == 1


def test_load_reads_os_environ_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SYNC_TEST_CMD", "node")
    path = write(tmp_path, "servers.yaml", "servers: [{server_name: fs, command: '${MCP_SYNC_TEST_CMD}'}]")

    [config] = load_config_entries(path, strict=True).configs

    assert isinstance(config, StdioServerConfig)
    assert config.command == "node"


def test_json_file_with_a_byte_order_mark_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"servers": [stdio()]}).encode())

    assert len(load_config_entries(path, environ=NO_ENV, strict=True).configs) == 1


def test_empty_servers_list_gives_no_configs(tmp_path: Path) -> None:
    assert (
        load_config_entries(write(tmp_path, "s.yaml", "servers: []\n"), environ=NO_ENV, strict=True).configs
        == []
    )


def test_servers_key_with_nothing_under_it_gives_no_configs(tmp_path: Path) -> None:
    assert (
        load_config_entries(
            write(tmp_path, "s.yaml", "servers:\n#  - commented out\n"), environ=NO_ENV, strict=True
        ).configs
        == []
    )


def test_error_in_our_file_names_file_entry_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.yaml", OUR_YAML)

    message = load_error(path)

    assert message == (
        f'{path}: servers[1] ("web"): '
        "field 'headers.Authorization' references ${WEB_TOKEN}, which is not set"
    )


def test_unknown_key_in_our_file_is_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path, "servers.yaml", "servers:\n  - {server_name: fs, command: npx, alwaysAllow: [x]}\n"
    )

    assert load_error(path) == f"{path}: servers[0] (\"fs\"): unknown key 'alwaysAllow'"


def test_unknown_top_level_key_in_our_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.yaml", "servers: []\nversion: 2\n")

    assert "unknown top-level key 'version'" in load_error(path)


def test_servers_written_as_a_map_are_refused_with_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.yaml", "servers:\n  fs: {command: npx}\n")

    assert "a map of server name to settings goes under 'mcpServers'" in load_error(path)


def test_servers_that_is_not_a_list_is_refused(tmp_path: Path) -> None:
    assert "'servers' must be a list" in load_error(write(tmp_path, "s.yaml", "servers: 3\n"))


def test_duplicate_names_in_a_file_name_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path, "s.yaml", "servers:\n  - {server_name: a, command: x}\n  - {server_name: a, command: y}\n"
    )

    assert load_error(path).startswith(f"{path}: duplicate server_name 'a': servers[0] and servers[1]")


# --------------------------------------------------------------------------- files that cannot be read


def test_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"

    assert load_error(path).startswith(f"{path}: cannot read the config file")


def test_directory_is_refused_naming_it(tmp_path: Path) -> None:
    assert load_error(tmp_path).startswith(f"{tmp_path}: cannot read the config file")


def test_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "servers.yaml"
    path.write_bytes(b"servers: [\xff\xfe]")

    assert load_error(path) == f"{path}: not UTF-8 text"


def test_yaml_syntax_error_names_file_and_line_without_the_text(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.yaml", f'servers:\n  - server_name: fs\n    command: "{SECRET}\n')

    message = load_error(path)

    assert message.startswith(f"{path}: not valid YAML or JSON at line ")
    assert "(while scanning a quoted scalar started at line 3)" in message
    assert SECRET not in message


def test_json_syntax_error_names_file_and_line_without_the_text(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.json", '{\n  "mcpServers": {\n    "fs": {"command": "' + SECRET + '"\n')

    message = load_error(path)

    assert message.startswith(f"{path}: not valid JSON at line ")
    assert SECRET not in message


@pytest.mark.parametrize("text", ["", "# nothing\n", "just text\n", "- a\n- b\n", "42\n"])
def test_file_that_is_not_a_mapping_is_refused(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "servers.yaml", text)

    assert load_error(path) == f"{path}: expected a mapping with 'servers' (a list) or 'mcpServers' (a map)"


def test_mapping_with_neither_shape_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.yaml", "server:\n  - {server_name: fs, command: npx}\n")

    assert load_error(path) == (
        f"{path}: has neither 'servers' (a list) nor 'mcpServers' (a map): "
        "unknown top-level key 'server'; did you mean 'servers'?"
    )


def test_file_with_both_shapes_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.yaml", "servers: []\nmcpServers: {}\n")

    assert "has both 'servers' and 'mcpServers'" in load_error(path)


def test_repeated_yaml_key_is_refused_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.yaml", "mcpServers:\n  fs: {command: a}\n  fs: {command: b}\n")

    assert load_error(path).startswith(
        f"{path}: not valid YAML or JSON at line 3, column 3: found duplicate key 'fs'"
    )


def test_repeated_json_key_keeps_the_last_value_as_json_parse_does(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(
        tmp_path, "mcp.json", '{"mcpServers": {\n "fs": {"command": "a"},\n "fs": {"command": "b"}}}'
    )

    [config] = load_config_entries(path, environ=NO_ENV, strict=True).configs

    assert isinstance(config, StdioServerConfig) and config.command == "b"
    assert "the key 'mcpServers.fs' is given more than once; the last one is read" in caplog.text


def test_yaml_merge_keys_may_be_overridden(tmp_path: Path) -> None:
    text = "mcpServers:\n  a: &base {command: npx, args: [a]}\n  b:\n    <<: *base\n    args: [b]\n"

    a, b = load_config_entries(write(tmp_path, "servers.yaml", text), environ=NO_ENV, strict=True).configs

    assert isinstance(a, StdioServerConfig)
    assert isinstance(b, StdioServerConfig)
    assert (a.args, b.args) == (("a",), ("b",))


def test_yaml_tags_that_build_objects_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "servers.yaml", "servers: !!python/object/apply:os.getcwd []\n")

    assert load_error(path).startswith(f"{path}: not valid YAML or JSON at line 1")


# --------------------------------------------------------------------------- the mcpServers map

CLAUDE_JSON = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
            "env": {"GITHUB_TOKEN": "${GH_TOKEN}"},
        },
        "remote": {
            "type": "http",
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer x"},
        },
    },
    "globalShortcut": "Ctrl+Space",
}


def load_map(
    tmp_path: Path, servers: dict[str, Any], environ: dict[str, str] | None = None
) -> list[ServerConfig]:
    path = write(tmp_path, "mcp.json", json.dumps({"mcpServers": servers}))
    return load_config_entries(path, environ=NO_ENV if environ is None else environ, strict=True).configs


def map_error(tmp_path: Path, servers: dict[str, Any]) -> str:
    return load_error(write(tmp_path, "mcp.json", json.dumps({"mcpServers": servers})))


def test_claude_desktop_json_file_is_loaded(tmp_path: Path) -> None:
    path = write(tmp_path, "claude_desktop_config.json", json.dumps(CLAUDE_JSON))

    fs, remote = load_config_entries(path, environ={"GH_TOKEN": "ghp"}, strict=True).configs

    assert fs == StdioServerConfig(
        server_name="filesystem",
        command="npx",
        args=("-y", "@modelcontextprotocol/server-filesystem", "/srv"),
        env={"GITHUB_TOKEN": "ghp"},
    ).with_input_secrets({"ghp"})  # read from a variable named like a credential
    assert remote == HttpServerConfig(
        server_name="remote", url="https://mcp.example.com/mcp", headers={"Authorization": "Bearer x"}
    )


def test_mcp_servers_yaml_file_is_loaded(tmp_path: Path) -> None:
    text = "mcpServers:\n  fs:\n    command: npx\n    cwd: /srv\n  web:\n    url: http://localhost:8000/mcp\n"

    fs, web = load_config_entries(write(tmp_path, "mcp.yaml", text), environ=NO_ENV, strict=True).configs

    assert isinstance(fs, StdioServerConfig)
    assert (fs.server_name, fs.cwd) == ("fs", "/srv")
    assert isinstance(web, HttpServerConfig)


def test_map_key_is_the_server_name(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"my-server_1": {"command": "npx"}})

    assert config.server_name == "my-server_1"


def test_command_in_the_map_means_stdio(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"fs": {"command": "npx", "args": ["a"], "env": {"A": "1"}, "cwd": "/srv"}})

    assert config == StdioServerConfig(
        server_name="fs", command="npx", args=("a",), env={"A": "1"}, cwd="/srv"
    )


def test_url_without_type_in_the_map_means_streamable_http_then_sse(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"web": {"url": "http://localhost/mcp"}})

    assert config == HttpServerConfig(server_name="web", url="http://localhost/mcp").with_sse_fallback()
    assert isinstance(config, HttpServerConfig) and config.sse_fallback


@pytest.mark.parametrize("type_", ["http", "streamable-http", "streamableHttp"])
def test_http_types_in_the_map_mean_streamable_http(tmp_path: Path, type_: str) -> None:
    [config] = load_map(tmp_path, {"web": {"type": type_, "url": "http://localhost/mcp"}})

    assert isinstance(config, HttpServerConfig)


def test_stdio_type_in_the_map_means_stdio(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"fs": {"type": "stdio", "command": "npx"}})

    assert isinstance(config, StdioServerConfig)


def test_gemini_http_url_means_streamable_http(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"web": {"httpUrl": "https://mcp.example.com/mcp"}})

    assert config == HttpServerConfig(server_name="web", url="https://mcp.example.com/mcp")


def test_sse_type_in_the_map_means_the_legacy_sse_transport(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"old": {"type": "sse", "url": "https://mcp.example.com/sse"}})

    assert config == SseServerConfig(server_name="old", url="https://mcp.example.com/sse")


def test_unknown_type_in_the_map_is_refused(tmp_path: Path) -> None:
    assert "field 'type': must be" in map_error(tmp_path, {"x": {"type": "websocket", "url": "http://h"}})


def test_type_that_contradicts_the_keys_is_refused(tmp_path: Path) -> None:
    message = map_error(tmp_path, {"x": {"type": "stdio", "url": "http://h"}})

    assert "unknown key 'url' for transport 'stdio'" in message


def test_disabled_true_means_enabled_false(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"fs": {"command": "npx", "disabled": True}})

    assert config.enabled is False


def test_disabled_false_means_enabled(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"fs": {"command": "npx", "disabled": False}})

    assert config.enabled is True


def test_disabled_must_be_a_boolean(tmp_path: Path) -> None:
    assert "field 'disabled': must be true or false" in map_error(
        tmp_path, {"fs": {"command": "x", "disabled": "yes"}}
    )


def test_gemini_timeout_is_the_tool_call_timeout_in_ms(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"fs": {"command": "npx", "timeout": 30000}})

    assert config.tool_call_timeout_ms == 30000


def test_invalid_timeout_error_names_the_host_key(tmp_path: Path) -> None:
    assert "mcpServers.fs: field 'timeout': must be greater than 0" in map_error(
        tmp_path, {"fs": {"command": "npx", "timeout": 0}}
    )


def test_timeout_under_a_second_in_a_file_of_no_known_host_is_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync")

    [config] = load_map(tmp_path, {"fs": {"command": "npx", "timeout": 60}})

    assert config.tool_call_timeout_ms == StdioServerConfig(server_name="x", command="x").tool_call_timeout_ms
    assert "60 ms looks like seconds" in caplog.text


def test_gemini_include_and_exclude_tools_map_directly(tmp_path: Path) -> None:
    [config] = load_map(
        tmp_path, {"fs": {"command": "npx", "includeTools": ["a", "b"], "excludeTools": ["b"]}}
    )

    assert (config.include_tools, config.exclude_tools) == (("a", "b"), ("b",))


def test_our_own_keys_are_accepted_in_map_entries(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"fs": {"command": "npx", "required": True, "connectTimeoutMs": 100}})

    assert (config.required, config.connect_timeout_ms) == (True, 100)


@pytest.mark.parametrize("key", ["alwaysAllow", "autoApprove", "trust", "description"])
def test_host_policy_key_is_ignored_with_a_debug_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, key: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")

    [config] = load_map(tmp_path, {"fs": {"command": "npx", key: ["x"]}})

    assert config == StdioServerConfig(server_name="fs", command="npx")
    assert any(r.levelno == logging.DEBUG and f"ignoring '{key}'" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("key", ["authProviderType", "targetAudience", "targetServiceAccount"])
def test_host_auth_key_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, key: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")

    load_map(tmp_path, {"web": {"url": "https://h/mcp", key: {}}})

    assert any(r.levelno == logging.WARNING and f"ignoring '{key}'" in r.getMessage() for r in caplog.records)


def test_unset_variable_in_an_ignored_host_key_is_no_error(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"web": {"url": "https://h/mcp", "targetAudience": "${UNSET}"}})

    assert config.server_name == "web"


@pytest.mark.parametrize("key", ["transportType", "bogus", "_comment", "defer_loading"])
def test_a_key_the_hosts_do_not_read_is_ignored_as_they_ignore_it(
    tmp_path: Path, key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")

    [config] = load_map(tmp_path, {"fs": {"command": "npx", key: "x"}})

    assert isinstance(config, StdioServerConfig)
    assert any(f"ignoring '{key}'" in record.getMessage() for record in caplog.records)


def test_headers_helper_is_skipped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")

    [config] = load_map(tmp_path, {"api": {"url": "https://h/mcp", "headersHelper": "get-token.sh"}})

    assert isinstance(config, HttpServerConfig)
    assert any(
        r.levelno == logging.WARNING and "ignoring 'headersHelper'" in r.getMessage() for r in caplog.records
    )


def test_host_settings_outside_the_map_are_ignored(tmp_path: Path) -> None:
    path = write(
        tmp_path, "settings.json", json.dumps({"theme": "dark", "mcpServers": {"fs": {"command": "x"}}})
    )

    assert len(load_config_entries(path, environ=NO_ENV, strict=True).configs) == 1


def test_a_map_key_that_is_not_a_server_name_is_normalised_and_kept(tmp_path: Path) -> None:
    [config] = load_map(tmp_path, {"my server": {"command": "npx"}})

    assert config.server_name == server_name_from_host("my server")
    assert config.server_name.startswith("my_server_")
    assert config.original_name == "my server"


@pytest.mark.parametrize("key", ["server_name", "serverName"])
def test_server_name_inside_a_map_entry_overrides_the_key(tmp_path: Path, key: str) -> None:
    [config] = load_map(tmp_path, {"brave search": {"command": "x", key: "brave"}})

    assert config.server_name == "brave"


def test_invalid_server_name_inside_a_map_entry_names_the_field(tmp_path: Path) -> None:
    message = map_error(tmp_path, {"fs": {"command": "x", "serverName": "a.b"}})

    assert "mcpServers.fs: field 'serverName': 'a.b' cannot be used: it contains '.'" in message


@pytest.mark.parametrize(
    ("entry", "keys"),
    [
        ({"command": "x", "timeout": 5000, "toolCallTimeoutMs": 6}, "'timeout' and 'toolCallTimeoutMs'"),
        ({"url": "http://a", "httpUrl": "http://b"}, "'httpUrl' and 'url'"),
        ({"command": "x", "disabled": False, "enabled": True}, "'disabled' and 'enabled'"),
        ({"command": "x", "type": "stdio", "transport": "stdio"}, "'type' and 'transport'"),
    ],
)
def test_host_key_and_our_key_for_one_setting_are_refused(
    tmp_path: Path, entry: dict[str, Any], keys: str
) -> None:
    assert f"both {keys} are given" in map_error(tmp_path, {"s": entry})


def test_map_entry_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    assert "mcpServers.fs: expected a mapping of settings, got str" in map_error(tmp_path, {"fs": "npx"})


def test_map_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "mcp.json", json.dumps({"mcpServers": ["fs"]}))

    assert "'mcpServers' must be a map" in load_error(path)


def test_empty_map_gives_no_configs(tmp_path: Path) -> None:
    assert load_map(tmp_path, {}) == []


def test_unset_variable_in_a_map_entry_names_the_entry_and_field(tmp_path: Path) -> None:
    message = map_error(
        tmp_path, {"github": {"url": "https://h", "headers": {"Authorization": "Bearer ${env:GH}"}}}
    )

    assert message.endswith(
        "mcpServers.github: field 'headers.Authorization' references ${GH}, which is not set"
    )


# --------------------------------------------------------------------------- properties

KEYS = [
    "transport",
    "server_name",
    "serverName",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "tool_call_timeout_ms",
    "toolCallTimeoutMs",
    "connect_timeout_ms",
    "enabled",
    "required",
    "include_tools",
    "exclude_tools",
    "excludeTools",
    "type",
    "other",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ["stdio", "streamable-http", "sse", "fs", "http://h/mcp", "${X}", "${X:-d}", "${", "$${Y}"]
    ),
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)
# Mostly valid entries with a few keys replaced, so that validation gets past the transport check.
overrides = st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), json_values, max_size=3)
near_valid = st.builds(
    lambda base, changes: {**base, **changes},
    st.sampled_from([stdio(), http(), stdio(server_name="gh"), http(server_name="fs")]),
    overrides,
)
entries_strategy = st.lists(
    near_valid
    | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), json_values, max_size=8)
    | json_values,
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(entries=entries_strategy)
def test_arbitrary_entries_parse_or_raise_config_error(entries: list[Any]) -> None:
    try:
        configs = parse_server_entries(entries, environ={"X": "x"}, strict=True).configs
    except ConfigError:
        return
    assert all(isinstance(c, StdioServerConfig | HttpServerConfig) for c in configs)


@settings(max_examples=200, deadline=None)
@given(entry=st.dictionaries(st.sampled_from(KEYS), json_values, max_size=8), secret_key=st.text(max_size=6))
def test_secrets_in_env_and_headers_never_reach_an_error(entry: dict[str, Any], secret_key: str) -> None:
    entry = {**entry, "env": {secret_key: SECRET}, "headers": {secret_key: [SECRET]}}

    if entry.get("disabled") is True or entry.get("enabled") is False:
        # A disabled entry is never an error: it is left out, with a log line that must not leak either.
        records: list[logging.LogRecord] = []
        handler = logging.Handler(logging.DEBUG)
        handler.emit = records.append  # type: ignore[method-assign]
        logger = logging.getLogger("mcp_sync")
        logger.addHandler(handler)
        old_level = logger.level
        logger.setLevel(logging.DEBUG)
        try:
            assert parse_server_entries([entry], environ=NO_ENV, strict=True).configs == []
        finally:
            logger.removeHandler(handler)
            logger.setLevel(old_level)
        assert records, "a disabled invalid entry is left out with a log line"
        assert not [record for record in records if SECRET in record.getMessage()]
        return

    with pytest.raises(ConfigError) as info:  # env and headers together are never valid
        parse_server_entries([entry], environ=NO_ENV, strict=True)

    assert SECRET not in str(info.value)


@settings(max_examples=100, deadline=None)
@given(document=json_values)
def test_arbitrary_file_contents_load_or_raise_config_error(
    tmp_path_factory: pytest.TempPathFactory, document: Any
) -> None:
    path = tmp_path_factory.mktemp("prop") / "servers.json"
    for wrapped in (document, {"servers": document}, {"mcpServers": document}):
        path.write_text(json.dumps(wrapped), encoding="utf-8")
        with contextlib.suppress(ConfigError):
            load_config_entries(path, environ=NO_ENV, strict=True)


# -- resources, prompts, roots and log level -----------------------------------------------------------


def test_feature_settings_default_to_bridging_everything_without_roots_or_log_level() -> None:
    (config,) = parse_server_entries([{"server_name": "a", "command": "x"}], strict=True).configs
    assert (config.resources, config.prompts, config.roots, config.log_level) == (True, True, None, None)


def test_roots_expand_home_and_variables_into_file_uris(tmp_path: Path) -> None:
    (config,) = parse_server_entries(
        [{"server_name": "a", "command": "x", "roots": ["~/notes", "${PROJECT}", "file:///srv/x"]}],
        environ={"PROJECT": str(tmp_path)},
        strict=True,
    ).configs
    assert config.roots == (Path.home().joinpath("notes").as_uri(), tmp_path.as_uri(), "file:///srv/x")


def test_roots_that_are_not_file_uris_are_refused() -> None:
    with pytest.raises(ConfigError, match="roots"):
        parse_server_entries(
            [{"server_name": "a", "command": "x", "roots": ["https://example.com"]}], strict=True
        )


def test_an_unknown_log_level_is_refused() -> None:
    with pytest.raises(ConfigError, match="log_level"):
        parse_server_entries([{"server_name": "a", "command": "x", "log_level": "verbose"}], strict=True)


def test_feature_settings_work_in_an_mcp_servers_file(tmp_path: Path) -> None:
    path = tmp_path / "host.json"
    path.write_text(
        '{"mcpServers": {"a": {"command": "x", "roots": ["/srv"], "logLevel": "warning",'
        ' "resources": false, "prompts": false}}}'
    )
    (config,) = load_config_entries(path, strict=True).configs
    assert (config.resources, config.prompts, config.roots, config.log_level) == (
        False,
        False,
        ("file:///srv",),
        "warning",
    )


def test_feature_settings_work_in_our_yaml(tmp_path: Path) -> None:
    path = tmp_path / "servers.yaml"
    path.write_text(
        "servers:\n  - server_name: a\n    url: http://127.0.0.1:1/mcp\n    roots: [/srv]\n"
        "    log_level: debug\n    prompts: false\n"
    )
    (config,) = load_config_entries(path, strict=True).configs
    assert (config.resources, config.prompts, config.roots, config.log_level) == (
        True,
        False,
        ("file:///srv",),
        "debug",
    )


# --------------------------------------------------------------------------- mistakes in plain words


def test_misspelt_command_in_a_host_file_is_named_instead_of_a_missing_transport(tmp_path: Path) -> None:
    message = map_error(tmp_path, {"fs": {"comand": "npx", "args": ["-y", "server"]}})

    assert message.endswith(
        "mcpServers.fs: 'comand' is not a key Claude, Cursor, Gemini CLI or Windsurf reads; "
        "did you mean 'command'?"
    )
    assert "transport" not in message


def test_close_misspelling_of_our_key_gets_a_suggestion() -> None:
    message = config_error([stdio(tool_call_timeout=5000)])

    assert (
        message
        == "servers[0] (\"fs\"): unknown key 'tool_call_timeout'; did you mean 'tool_call_timeout_ms'?"
    )


def test_misspelling_of_a_camel_case_key_suggests_the_camel_case_key() -> None:
    assert "did you mean 'toolCallTimeoutMs'?" in config_error([stdio(toolCallTimeout=5000)])


def test_misspelling_of_a_host_key_in_a_host_file_is_a_warning_with_a_suggestion(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")

    load_map(tmp_path, {"fs": {"command": "npx", "disable": True}})

    assert any(
        r.levelno == logging.WARNING
        and "ignoring 'disable'" in r.getMessage()
        and "did you mean 'disabled'?" in r.getMessage()
        for r in caplog.records
    )


def test_host_key_in_our_own_format_points_at_our_key() -> None:
    message = config_error([stdio(type="stdio")])

    assert message.endswith("unknown key 'type' (an mcpServers key); here, use 'transport'")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            stdio(include_tools="read_file"),
            'field \'include_tools\': must be a list of strings, like ["a", "b"]',
        ),
        (stdio(args="--verbose"), "field 'args': must be a list of strings"),
        (stdio(env=["A=1"]), "field 'env': must be a map of names to strings"),
        (stdio(required="maybe"), "field 'required': must be true or false"),
        (
            stdio(tool_call_timeout_ms=1.5),
            "field 'tool_call_timeout_ms': must be a whole number of milliseconds",
        ),
        (stdio(connect_timeout_ms=2**31), "field 'connect_timeout_ms': must be at most 2147483647"),
    ],
)
def test_pydantic_wording_is_put_in_plain_words(entry: dict[str, Any], expected: str) -> None:
    message = config_error([entry])

    assert expected in message
    assert "Input should" not in message
    assert "valid tuple" not in message


# --------------------------------------------------------------------------- tool filters that match nothing


def test_unmatched_tool_filters_are_listed_in_order_once_each() -> None:
    config = parse_stdio(
        stdio(include_tools=["read_file", "mcp__fs__write_file", "nope"], exclude_tools=["nope"])
    )

    assert unmatched_tool_filters(config, ["read_file", "write_file"]) == ["mcp__fs__write_file", "nope"]


def test_tool_filters_that_all_match_are_not_listed() -> None:
    config = parse_stdio(stdio(include_tools=["a"], exclude_tools=["b"]))

    assert unmatched_tool_filters(config, ["a", "b", "c"]) == []


def test_unmatched_tool_filters_warning_names_them_and_says_raw_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync.config")
    config = parse_stdio(stdio(include_tools=["mcp__fs__read_file", "reed_file", "other"]))

    warn_unmatched_tool_filters(config, ["read_file", "write_file"])

    [record] = caplog.records
    message = record.getMessage()
    assert record.name == "mcp_sync.config"
    assert "server 'fs': include_tools/exclude_tools/tool_approval name no tool the server offers" in message
    assert "'mcp__fs__read_file' (did you mean 'read_file'?)" in message
    assert "'reed_file' (did you mean 'read_file'?)" in message
    assert "'other'" in message
    assert (
        "the server's raw tool names (like 'read_file'), not public names (like 'mcp__fs__read_file')"
        in message
    )


def test_no_warning_when_every_tool_filter_matches(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")

    warn_unmatched_tool_filters(parse_stdio(stdio(exclude_tools=["a"])), ["a"])

    assert not caplog.records


# --------------------------------------------------------------------------- each entry stands alone

CLAUDE_DESKTOP_WITH_PROBLEMS = {
    "mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
        "brave search": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-brave-search"]},
        "legacy": {"type": "websocket", "url": "wss://mcp.example.com/ws", "required": True},
        "paused": {"type": "websocket", "url": "wss://old.example.com/ws", "disabled": True},
        "remote": {"type": "http", "url": "https://mcp.example.com/mcp"},
    },
    "globalShortcut": "Ctrl+Space",
}


def write_problem_file(tmp_path: Path) -> Path:
    return write(tmp_path, "claude_desktop_config.json", json.dumps(CLAUDE_DESKTOP_WITH_PROBLEMS, indent=2))


def test_unusable_entries_fail_alone_and_the_good_ones_load(tmp_path: Path) -> None:
    entries = load_config_entries(write_problem_file(tmp_path), environ=NO_ENV)

    assert [config.server_name for config in entries.configs] == [
        "filesystem",
        server_name_from_host("brave search"),
        "remote",
    ]
    assert [(entry.server_name, entry.label) for entry in entries.invalid] == [
        ("legacy", "mcpServers.legacy")
    ]


def test_invalid_entry_error_explains(tmp_path: Path) -> None:
    path = write_problem_file(tmp_path)

    [legacy] = load_config_entries(path, environ=NO_ENV).invalid

    assert isinstance(legacy.error, ConfigError)
    assert str(legacy.error).startswith(f"{path}: mcpServers.legacy: field 'type': must be")


def test_invalid_entry_keeps_required(tmp_path: Path) -> None:
    [legacy] = load_config_entries(write_problem_file(tmp_path), environ=NO_ENV).invalid

    assert legacy.required


def test_entries_keep_the_file_order(tmp_path: Path) -> None:
    entries = load_config_entries(write_problem_file(tmp_path), environ=NO_ENV)

    assert [entry.server_name for entry in entries.entries] == [
        "filesystem",
        server_name_from_host("brave search"),
        "legacy",
        "remote",
    ]


def test_strict_loading_raises_naming_every_invalid_entry(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config_entries(write_problem_file(tmp_path), environ=NO_ENV, strict=True)

    message = str(info.value)
    assert "brave search" not in message
    assert "mcpServers.legacy: field 'type': must be" in message
    assert "paused" not in message


def test_load_config_file_stays_strict(tmp_path: Path) -> None:
    assert "mcpServers.legacy" in load_error(write_problem_file(tmp_path))


def test_invalid_disabled_entry_is_left_out_with_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_sync.config")

    entries = load_config_entries(write_problem_file(tmp_path), environ=NO_ENV)

    assert "paused" not in [entry.server_name for entry in entries.entries]
    assert any("mcpServers.paused" in r.getMessage() and "disabled" in r.getMessage() for r in caplog.records)


def test_invalid_entry_with_enabled_false_is_never_an_error() -> None:
    assert parse_server_entries(
        [stdio(enabled=False, colour="blue"), stdio(server_name="ok")], environ=NO_ENV, strict=True
    ).configs


def test_valid_disabled_entry_is_still_returned() -> None:
    [config] = parse_server_entries([stdio(enabled=False)], environ=NO_ENV).configs

    assert config.enabled is False


def test_later_duplicate_name_is_an_invalid_entry_named_by_its_place() -> None:
    entries = parse_server_entries([stdio(), stdio(command="other")], environ=NO_ENV)

    [config] = entries.configs
    [invalid] = entries.invalid
    assert config.command == "npx"
    assert invalid.server_name == "servers[1]"
    assert "duplicate server_name 'fs'" in str(invalid.error)


def test_entry_that_is_not_a_mapping_is_an_invalid_entry_named_by_its_place() -> None:
    [invalid] = parse_server_entries([["fs"]], environ=NO_ENV).invalid

    assert (invalid.server_name, str(invalid.error)) == (
        "servers[0]",
        "servers[0]: expected a mapping of settings, got list",
    )


def test_invalid_entries_compare_by_value() -> None:
    one = parse_server_entries([stdio(colour="x")], environ=NO_ENV)
    two = parse_server_entries([stdio(colour="x")], environ=NO_ENV)

    assert one == two
    assert one != parse_server_entries([stdio(flavour="x")], environ=NO_ENV)


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("brave search", "brave_search"),
        ("github.com", "github_com"),
        ("@scope/server name", "scope_server_name"),
        ("x" * 40, "x" * 32),
        ("Café Münster", "Cafe_Munster"),
        ("...", "server"),
    ],
)
def test_suggested_server_name_is_valid(name: str, suggestion: str) -> None:
    assert suggest_server_name(name) == suggestion
    assert parse_stdio(stdio(server_name=suggestion)).server_name == suggestion


# --------------------------------------------------------------------------- the files people have

JSONC = """\
// Cursor's ~/.cursor/mcp.json, with comments
{
  /* the servers */
  "mcpServers": {
    "docs": {
      "url": "https://mcp.example.com/mcp?x=1//2", // a URL holds "//"
      "headers": {"X-Note": "/* not a comment */"},
    },
    "fs": {"command": "npx", "args": ["-y", "server", "// kept"],},
  },
}
"""


def test_json_with_comments_and_trailing_commas_is_loaded(tmp_path: Path) -> None:
    docs, fs = load_config_entries(write(tmp_path, "mcp.json", JSONC), environ=NO_ENV, strict=True).configs

    assert isinstance(docs, HttpServerConfig)
    assert isinstance(fs, StdioServerConfig)
    assert docs.url == "https://mcp.example.com/mcp?x=1//2"
    assert docs.headers["X-Note"] == "/* not a comment */"
    assert fs.args == ("-y", "server", "// kept")


def test_json_with_comments_error_names_the_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "mcp.json",
        '// comment\n{\n  "mcpServers": {\n    "fs": {"command": "npx"}\n    "x": 1\n}}\n',
    )

    assert load_error(path) == f"{path}: not valid JSON at line 5, column 5: unexpected character"


def test_repeated_key_in_json_with_comments_keeps_the_last_value(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(
        tmp_path, "mcp.json", '{"mcpServers": { // two\n "fs": {"command": "a"},\n "fs": {"command": "b"}}}'
    )

    [config] = load_config_entries(path, environ=NO_ENV, strict=True).configs

    assert isinstance(config, StdioServerConfig) and config.command == "b"
    assert "the key 'mcpServers.fs' is given more than once" in caplog.text


def test_yaml_url_with_double_slash_is_not_taken_for_a_comment(tmp_path: Path) -> None:
    [config] = load_config_entries(
        write(tmp_path, "s.yaml", "{servers: [{server_name: w, url: http://h/mcp}]}"),
        environ=NO_ENV,
        strict=True,
    ).configs

    assert isinstance(config, HttpServerConfig)
    assert config.url == "http://h/mcp"


def test_tilde_in_the_file_path_is_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    write(tmp_path, "mcp.json", json.dumps({"mcpServers": {"fs": {"command": "npx"}}}))

    assert len(load_config_entries("~/mcp.json", environ=NO_ENV, strict=True).configs) == 1


def test_tilde_in_command_and_cwd_is_the_home_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")

    config = parse_stdio(stdio(command="~/bin/server", cwd="~", args=["~/data"]))

    assert (config.command, config.cwd) == ("/home/someone/bin/server", "/home/someone")
    assert config.args == ("~/data",)


def test_a_host_files_json_is_accepted_as_entries(tmp_path: Path) -> None:
    path = write(tmp_path, "claude_desktop_config.json", json.dumps(CLAUDE_JSON))

    configs = parse_server_entries(
        json.loads(path.read_text()), environ={"GH_TOKEN": "ghp"}, strict=True
    ).configs

    assert [c.server_name for c in configs] == ["filesystem", "remote"]


def test_our_documents_shape_is_accepted_as_entries() -> None:
    [config] = parse_server_entries({"servers": [stdio()]}, environ=NO_ENV, strict=True).configs

    assert config.server_name == "fs"


# --------------------------------------------------------------------------- header values and inherit_env


def test_header_value_http_cannot_carry_is_refused_without_echoing_it() -> None:
    message = config_error([http(headers={"Authorization": f"Bearer {SECRET}é"})])

    assert "the value of Authorization has a character HTTP headers cannot carry" in message
    assert SECRET not in message


@pytest.mark.parametrize("key", ["inherit_env", "inheritEnv"])
def test_inherit_env_is_read_in_both_spellings(key: str) -> None:
    assert parse_stdio(stdio(**{key: "minimal"})).inherit_env == "minimal"


def test_inherit_env_defaults_to_filtered() -> None:
    assert parse_stdio(stdio()).inherit_env == "filtered"


def test_unknown_inherit_env_is_refused_naming_the_choices() -> None:
    assert "field 'inherit_env': must be 'filtered' or 'minimal'" in config_error([stdio(inherit_env="all")])


def test_inherit_env_on_an_http_entry_is_an_unknown_key() -> None:
    assert "unknown key 'inherit_env' for transport 'streamable-http'" in config_error(
        [http(inherit_env="minimal")]
    )


def test_a_document_whose_servers_are_under_a_misspelt_key_says_which_was_meant() -> None:
    from mcp_sync import MCPHub

    with pytest.raises(ConfigError, match=r"key 'mcpservers'; did you mean 'mcpServers'\?"):
        MCPHub({"mcpservers": {"fs": {"command": "npx"}}})
