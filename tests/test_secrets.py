"""Known secret values never leave: the registry, `scrub`, what a config holds, and the logging hook,
checked against records that `httpx2` and the `mcp` SDK write while talking to a real HTTP server."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest

from mcp_sync import MCPHub, ToolCallError
from mcp_sync._config import HttpServerConfig, StdioServerConfig, parse_server_entries
from mcp_sync._config.secrets import secrets_of
from mcp_sync._values.secrets import register, registered_count, scrub
from tests.support import HttpServer, Records, cli_command, exception_texts, run_in_repo, stdio_config

TOKEN = "tok-7Hq2-never-print-this"
PASSWORD = "pw-Zx81-never-print-this"
API_KEY = "key-Lm55-never-print-this"
SECRETS = (TOKEN, PASSWORD, API_KEY)


def with_credentials(url: str) -> str:
    """`url` with a password in its user-info and an `api_key` query parameter."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://user:{PASSWORD}@{rest}?api_key={API_KEY}&v=1"


def http_config(url: str = "https://mcp.example.com/mcp", **headers: str) -> HttpServerConfig:
    [config] = parse_server_entries(
        [{"server_name": "web", "url": url, "headers": headers}], environ={}, strict=True
    ).configs
    assert isinstance(config, HttpServerConfig)
    return config


@pytest.fixture
def registered() -> Iterator[Callable[..., None]]:
    """`registered(*values)` registers values for the test; all released at teardown."""
    handles = []

    def add(*values: str) -> None:
        handles.append(register(values))

    yield add
    for handle in handles:
        handle.release()


# --------------------------------------------------------------------------- the registry and scrub


def test_registered_value_is_scrubbed(registered: Callable[..., None]) -> None:
    registered(TOKEN)

    assert scrub(f"401: bad token {TOKEN}!") == "401: bad token ***!"


def test_longer_secret_wins_over_one_it_contains(registered: Callable[..., None]) -> None:
    registered(TOKEN, TOKEN + "-and-more")

    assert scrub(f"[{TOKEN}-and-more]") == "[***]"


def test_released_value_is_no_longer_scrubbed() -> None:
    with register([TOKEN]):
        assert TOKEN not in scrub(TOKEN)

    assert scrub(TOKEN) == TOKEN


def test_value_registered_twice_stays_until_both_handles_are_released() -> None:
    first, second = register([TOKEN]), register([TOKEN])

    first.release()
    first.release()  # idempotent
    assert scrub(TOKEN) == "***"
    second.release()
    assert scrub(TOKEN) == TOKEN


@pytest.mark.parametrize("value", ["1", "abc", "true", "False", "debug", "production", "8080", "0.5"])
def test_short_and_common_values_are_not_registered(value: str) -> None:
    before = registered_count()

    with register([value]):
        assert registered_count() == before
        assert scrub(f"level {value} here") == f"level {value} here"


def test_url_password_and_credential_query_values_are_scrubbed_without_registration() -> None:
    text = f"GET https://user:{PASSWORD}@h/mcp?api_key={API_KEY}&page=2&X-Amz-Signature=abc123 failed"

    assert scrub(text) == "GET https://user:***@h/mcp?api_key=***&page=2&X-Amz-Signature=*** failed"


def test_a_long_bare_user_info_is_taken_for_a_token() -> None:
    assert scrub(f"https://{TOKEN}@github.com/x.git") == "https://***@github.com/x.git"


def test_a_short_user_name_in_a_url_is_kept() -> None:
    assert scrub("ssh://git@github.com/x.git") == "ssh://git@github.com/x.git"


# --------------------------------------------------------------------------- what a config holds


def test_secrets_of_an_http_config_are_its_headers_token_and_url_credentials() -> None:
    config = http_config(
        with_credentials("https://h/mcp"), Authorization=f"Bearer {TOKEN}", Accept="text/plain"
    )

    found = secrets_of(config)

    assert {f"Bearer {TOKEN}", TOKEN, PASSWORD, API_KEY, "text/plain"} <= found
    assert "1" not in found and "user" not in found


def test_percent_encoded_url_credentials_are_found_in_both_forms() -> None:
    found = secrets_of(http_config("https://user:p%40ss-word-1@h/mcp?token=a%2Fb-c-d-e"))

    assert {"p@ss-word-1", "p%40ss-word-1", "a/b-c-d-e", "a%2Fb-c-d-e"} <= found


def test_secrets_of_a_stdio_config_are_its_credentials_in_env_and_url_credentials_in_args() -> None:
    config = StdioServerConfig(
        server_name="fs",
        command="npx",
        args=("mcp-remote", with_credentials("https://h/mcp")),
        env={"GITHUB_TOKEN": TOKEN, "PIN_TOKEN": "4821", "LOG_LEVEL": "debug", "PORT": "8080"},
    )

    found = secrets_of(config)

    assert {TOKEN, PASSWORD, API_KEY, "4821"} <= found
    assert not {"debug", "8080"} & found


PATH_KEY = "Zx81kQ2mN5pL7vR3tY9wB4cD"  # a hosted server's key in its URL's path, as Zapier's are


def test_a_key_in_a_url_path_is_a_secret_and_the_plain_segments_are_not() -> None:
    found = secrets_of(http_config(f"https://mcp.example.com/api/mcp/s/{PATH_KEY}/mcp"))

    assert PATH_KEY in found
    assert not {"api", "mcp", "mcp.example.com"} & found


def test_a_key_in_a_url_path_stays_out_of_the_error_and_log_records_of_a_failed_server(
    http_server: Callable[..., HttpServer], records: Records
) -> None:
    server = http_server()
    url = server.url.removesuffix("/mcp") + f"/api/mcp/s/{PATH_KEY}/mcp"  # a path it does not serve: 404
    with MCPHub([{"server_name": "web", "transport": "streamable-http", "url": url}]) as hub:
        error = hub.servers["web"].error
        assert hub.servers["web"].state == "failed"
        assert error is not None and "404" in str(error)
        assert PATH_KEY not in str(error)
    assert not [text for _, text in records.lines if PATH_KEY in text]


def test_plain_settings_in_a_stdio_env_are_not_secrets_but_the_credentials_in_their_urls_are() -> None:
    config = StdioServerConfig(
        server_name="fs",
        command="npx",
        env={"LOG_FORMAT": "json", "HOME": "/home/someone", "DATABASE_URL": "postgres://app:db-pass-61@h/db"},
    )

    found = secrets_of(config)

    assert "db-pass-61" in found
    assert not {"json", "/home/someone", "postgres://app:db-pass-61@h/db"} & found


def test_a_personal_access_token_in_a_stdio_env_stays_out_of_a_tool_error_that_echoes_it() -> None:
    config = stdio_config("fx", env={"GITHUB_PAT": TOKEN, "SENTRY_DSN": "https://k3y9@o1.ingest.example/1"})
    texts = []
    with MCPHub([config]) as hub:
        for name in ("GITHUB_PAT", "SENTRY_DSN"):
            with pytest.raises(ToolCallError) as refused:
                hub.call_tool("mcp__fx__fail_with_env", {"name": name})
            texts += exception_texts(refused.value)

    assert "GITHUB_PAT=***" in "\n".join(texts)
    assert not [text for text in texts if TOKEN in text or "k3y9" in text]


def test_an_env_value_read_from_a_variable_named_like_a_credential_is_a_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("OUTPUT_STYLE", "compact")
    env = {"GH": "${MY_GITHUB_TOKEN}", "STYLE": "${OUTPUT_STYLE}"}
    entries = parse_server_entries([{"server_name": "gh", "command": "gh-mcp", "env": env}])

    found = secrets_of(entries.configs[0])

    assert TOKEN in found
    assert "compact" not in found


def test_a_plain_env_setting_of_a_running_server_stays_readable_in_other_log_records(
    records: Records,
) -> None:
    config = stdio_config("fx", env={"LOG_FORMAT": "json", "SERVICE_TOKEN": TOKEN})
    with MCPHub([config]) as hub:
        assert hub.servers["fx"].state == "ready"
        logging.getLogger("some.library").warning("wrote json with %s", TOKEN)

    [line] = [text for name, text in records.lines if name == "some.library"]
    assert line == "some.library WARNING wrote json with ***"


# --------------------------------------------------------------------------- the logging hook


def test_log_message_and_arguments_are_scrubbed_at_creation(
    registered: Callable[..., None], records: Records
) -> None:
    registered(TOKEN)

    logging.getLogger("some.library").warning("sending %s to %s", f"Bearer {TOKEN}", "h")

    assert records.lines[-1] == ("some.library", "some.library WARNING sending Bearer *** to h")


def test_record_without_a_secret_keeps_its_arguments(
    registered: Callable[..., None], caplog: pytest.LogCaptureFixture
) -> None:
    registered(TOKEN)

    with caplog.at_level(logging.INFO, logger="some.library"):
        logging.getLogger("some.library").info("plain %s", "text")

    assert (caplog.records[-1].msg, caplog.records[-1].args) == ("plain %s", ("text",))


def test_traceback_with_a_secret_is_scrubbed(registered: Callable[..., None], records: Records) -> None:
    registered(TOKEN)

    try:
        raise RuntimeError(f"server said: invalid token {TOKEN}")
    except RuntimeError:
        logging.getLogger("some.library").exception("call failed")

    assert "RuntimeError: server said: invalid token ***" in records.text()
    assert TOKEN not in records.text()


def test_traceback_without_a_secret_keeps_its_exception(
    registered: Callable[..., None], caplog: pytest.LogCaptureFixture
) -> None:
    registered(TOKEN)

    with caplog.at_level(logging.ERROR, logger="some.library"):
        try:
            raise RuntimeError("nothing secret")
        except RuntimeError:
            logging.getLogger("some.library").exception("call failed")

    assert caplog.records[-1].exc_info is not None


def test_stack_info_is_scrubbed(registered: Callable[..., None], records: Records) -> None:
    registered(TOKEN)

    # The stack shows this source line, which holds the secret written out.
    logging.getLogger("some.library").info("here", stack_info=True, extra={"t": "tok-7Hq2-never-print-this"})

    assert "Stack (most recent call last)" in records.text()
    assert TOKEN not in records.text()


def test_hook_chains_the_factory_installed_before_it() -> None:
    script = textwrap.dedent(
        f"""
        import logging
        previous = logging.getLogRecordFactory()
        def tagging(*args, **kwargs):
            record = previous(*args, **kwargs)
            record.tag = "kept"
            return record
        logging.setLogRecordFactory(tagging)
        from mcp_sync._values.secrets import register
        register([{TOKEN!r}])
        record = logging.getLogger("x").makeRecord("x", logging.INFO, "f", 1, "t=%s", ({TOKEN!r},), None)
        print(record.tag, record.getMessage())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)

    assert done.stdout.strip() == "kept t=***", done.stderr


# --------------------------------------------------------------------------- real HTTP clients


def test_httpx_request_log_records_hold_no_credential(
    records: Records, http_server: Callable[..., HttpServer]
) -> None:
    server = http_server()
    url = with_credentials(server.url)
    config = http_config(url, Authorization=f"Bearer {TOKEN}")

    with register(secrets_of(config)), httpx2.Client(timeout=10) as client:
        client.post(url, headers=dict(config.headers), json={"jsonrpc": "2.0", "id": 1, "method": "ping"})

    http_lines = [line for name, line in records.lines if name.startswith(("httpx2", "httpcore2"))]
    assert any("HTTP Request: POST" in line for line in http_lines)
    assert any("user:***@127.0.0.1" in line and "api_key=***" in line for line in http_lines)
    for secret in SECRETS:
        assert secret not in records.text()


def test_a_hub_talking_to_a_real_server_logs_no_credential(
    records: Records, http_server: Callable[..., HttpServer]
) -> None:
    server = http_server()
    config = http_config(with_credentials(server.url), **{"X-Api-Key": TOKEN})

    with MCPHub([config]) as hub:  # the hub registers the config's secrets itself
        assert hub.servers["web"].state == "ready"
        echoed = hub.call_tool("mcp__web__get_header", {"name": "x-api-key"}, timeout=20)
        logging.getLogger("mcp.client.streamable_http").debug("server answered: %s", echoed.text)

    assert echoed.text == TOKEN  # the server really received the token
    assert {name.split(".")[0] for name, _ in records.lines} >= {"httpx2", "mcp"}
    for secret in SECRETS:
        assert secret not in records.text()


# --------------------------------------------------------------------------- keys in a command line

ARG_KEY = "ctx7sk-Qp40-never-print-this"
ARG_TOKEN = "sbp-Wd73-never-print-this"
ARG_FIGMA = "figd-Jn26-never-print-this"
ARG_SECRETS = (ARG_KEY, ARG_TOKEN, ARG_FIGMA)
# The fixture server refuses these flags (argparse: "unrecognized arguments: ..."), echoing them on its
# stderr, as a server refusing a bad key does: Context7's, Supabase's and Figma's official setups.
KEY_ARGS = ["--api-key", ARG_KEY, "--access-token", ARG_TOKEN, f"--figma-api-key={ARG_FIGMA}"]


def test_the_values_of_credential_flags_in_args_are_secrets_and_hidden_in_the_repr() -> None:
    [config] = parse_server_entries([stdio_config("ctx", *KEY_ARGS, "--tools", "2")], strict=True).configs

    assert set(ARG_SECRETS) <= secrets_of(config)
    assert "2" not in secrets_of(config)
    assert not [key for key in ARG_SECRETS if key in repr(config)]
    assert "--figma-api-key=***" in repr(config)
    ports_entry = stdio_config(
        "p", "--port", "11000", "--max-tokens", "1000", "--token", "1000", "--out", "/x/1000"
    )
    [ports] = parse_server_entries([ports_entry], strict=True).configs
    # only the credential's own position is masked, not the same text elsewhere
    assert "'--port', '11000', '--max-tokens', '1000', '--token', '***', '--out', '/x/1000'" in repr(ports)


def test_a_server_refusing_a_key_in_its_args_shows_none_of_it_in_its_error_or_log_records(
    records: Records,
) -> None:
    with MCPHub([stdio_config("ctx", *KEY_ARGS)]) as hub:
        error = hub.servers["ctx"].error
        assert hub.servers["ctx"].state == "failed"
        texts = exception_texts(error) if error is not None else []

    assert "unrecognized arguments: --api-key ***" in "\n".join(texts)
    assert not [text for text in texts if any(key in text for key in ARG_SECRETS)]
    assert not [text for _, text in records.lines if any(key in text for key in ARG_SECRETS)]


def test_mcp_sync_servers_shows_no_key_from_the_args_of_a_server_that_echoes_them(tmp_path: Path) -> None:
    [entry] = [stdio_config("ctx", *KEY_ARGS)]
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"ctx": {"command": entry["command"], "args": entry["args"]}}}))

    runs = {
        extra: run_in_repo(cli_command("servers", str(path), *extra), timeout=120)
        for extra in ((), ("--json",), ("-v",))
    }

    assert [run.returncode for run in runs.values()] == [3, 3, 3]
    assert "unrecognized arguments: --api-key ***" in runs[()].stdout
    assert "--access-token ***" in json.loads(runs[("--json",)].stdout)[0]["error"]
    assert "fixture_server.py: error: unrecognized arguments" in runs[("-v",)].stderr  # its stderr, logged
    outputs = [run.stdout + run.stderr for run in runs.values()]
    assert not [text for text in outputs if any(key in text for key in ARG_SECRETS)]


NUMERIC_ARGS = ["--db-password", "48213579", "--db-pwd", "59371246", "--env=MYSQL_PASS=62048193"]


def test_numeric_credentials_in_args_and_env_stay_out_of_errors_and_log_records(records: Records) -> None:
    """A credential is one by the name beside it, whatever its value looks like."""
    numbers = ("48213579", "59371246", "62048193", "90417362")
    texts = []
    with MCPHub(
        [stdio_config("db", *NUMERIC_ARGS), stdio_config("fx", env={"DB_PASSWORD": "90417362"})]
    ) as hub:
        error = hub.servers["db"].error
        texts += exception_texts(error) if error is not None else []
        with pytest.raises(ToolCallError) as refused:
            hub.call_tool("mcp__fx__fail_with_env", {"name": "DB_PASSWORD"})
        texts += exception_texts(refused.value)

    assert "unrecognized arguments: --db-password ***" in "\n".join(texts)
    assert "DB_PASSWORD=***" in "\n".join(texts)
    assert not [text for text in texts if any(number in text for number in numbers)]
    assert not [text for _, text in records.lines if any(number in text for number in numbers)]
