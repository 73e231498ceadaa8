"""The stdio child's environment: the parent's minus credential-like names (or only the SDK's minimal set),
then the explicit env."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, MutableMapping

import pytest
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

from mcp_sync._config.child_env import (
    CREDENTIAL_NAME_PATTERNS,
    MINIMAL_ENV_NAMES,
    child_environment,
    is_credential_name,
)
from mcp_sync._config.credentials import credential_arguments

PARENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/user",
    "LANG": "en_US.UTF-8",
    "OPENAI_API_KEY": "sk-parent",
    "GITHUB_TOKEN": "ghp-parent",
}


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "CLIENT_SECRET",
        "PGPASSWORD",
        "DB_PASSWD",
        "GPG_PASSPHRASE",
        "MYSQL_PWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AZURE_CREDS",
        "SIGNING_PRIVATE_PEM",
        "YOUTUBE_COOKIE",
        "SUPABASE_JWT",
        "GITHUB_PAT",
        "airtable-pat",
        "SENTRY_DSN",
        "AZURE_STORAGE_CONNECTION_STRING",
        "npm_config__authToken",
        "my_api_key",
        "Secret",
        "MYSQL_PASS",
        "DB_PASS",
        "SMTP_PASS",
        "smtp.pass",
        "dbPass",
        "PGPASSWORD",
        "REDIS_PWD",
    ],
)
def test_credential_like_name_is_stripped(name: str) -> None:
    env = child_environment(parent={"PATH": "/bin", name: "value"})

    assert name not in env
    assert is_credential_name(name)


@pytest.mark.parametrize("name", ["api_key", "Api_Key", "API_KEY", "x-token", "X-TOKEN"])
def test_credential_match_ignores_case(name: str) -> None:
    assert is_credential_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "HOME",
        "USER",
        "LANG",
        "LC_ALL",
        "TERM",
        "SHELL",
        "TMPDIR",
        "PWD",
        "OLDPWD",
        "SSH_AUTH_SOCK",
        "GIT_AUTHOR_NAME",
        "DBUS_SESSION_BUS_ADDRESS",
        "XDG_SESSION_TYPE",
        "HTTPS_PROXY",
        "SSL_CERT_FILE",
        "DISPLAY",
        "NODE_PATH",
        "PATTERN",
        "XDG_DATA_DIRS",
        "PGPASSFILE",
        "PROXY_BYPASS",
        "PASSENGER_ENV",
        "COMPASS_HOME",
    ],
)
def test_ordinary_variable_is_kept(name: str) -> None:
    env = child_environment(parent={name: "value"})

    assert env == {name: "value"}
    assert not is_credential_name(name)


def test_explicit_env_is_laid_over_the_parent() -> None:
    env = child_environment({"LANG": "C", "EXTRA": "1"}, parent=PARENT)

    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/home/user", "LANG": "C", "EXTRA": "1"}


def test_explicit_credential_like_names_are_never_filtered() -> None:
    env = child_environment({"GITHUB_TOKEN": "ghp-explicit", "SERVICE_API_KEY": "k"}, parent=PARENT)

    assert env["GITHUB_TOKEN"] == "ghp-explicit"
    assert env["SERVICE_API_KEY"] == "k"
    assert "OPENAI_API_KEY" not in env


def test_parent_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SYNC_TEST_PLAIN", "kept")
    monkeypatch.setenv("MCP_SYNC_TEST_TOKEN", "dropped")

    env = child_environment()

    assert env["MCP_SYNC_TEST_PLAIN"] == "kept"
    assert "MCP_SYNC_TEST_TOKEN" not in env


class _RemovedWhileListed(MutableMapping[str, str]):
    """`os.environ` as another thread changes it: `name` is removed right after the names are listed
    (pytest does this to PYTEST_CURRENT_TEST on the main thread while a server starts on its own)."""

    def __init__(self, name: str) -> None:
        self._data = dict(os.environ, **{name: "set"})
        self._name = name

    def __iter__(self) -> Iterator[str]:
        names = list(self._data)
        self._data.pop(self._name, None)
        return iter(names)

    def __getitem__(self, name: str) -> str:
        return self._data[name]

    def __setitem__(self, name: str, value: str) -> None:
        self._data[name] = value

    def __delitem__(self, name: str) -> None:
        del self._data[name]

    def __len__(self) -> int:
        return len(self._data)


def test_a_variable_removed_while_the_environment_is_read_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "environ", _RemovedWhileListed("MCP_SYNC_TEST_GOING"))

    env = child_environment()

    assert "MCP_SYNC_TEST_GOING" not in env
    assert env["PATH"] == os.environ["PATH"]


def test_parent_mapping_is_not_modified() -> None:
    parent = dict(PARENT)

    env = child_environment({"EXTRA": "1"}, parent=parent)
    env["MORE"] = "2"

    assert parent == PARENT


def test_patterns_are_upper_case_substrings() -> None:
    assert {"KEY", "SECRET", "TOKEN"} <= set(CREDENTIAL_NAME_PATTERNS)
    assert all(pattern == pattern.upper() for pattern in CREDENTIAL_NAME_PATTERNS)


def test_minimal_passes_only_the_sdks_default_variables_and_the_explicit_env() -> None:
    parent = {**PARENT, "DATABASE_URL": "postgres://u:p@h/db", "LOGNAME": "user", "LANG": "C.UTF-8"}

    env = child_environment({"EXTRA": "1"}, parent=parent, inherit_env="minimal")

    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/home/user", "LOGNAME": "user", "EXTRA": "1"}


def test_minimal_names_are_the_sdks_default_environment() -> None:
    assert set(MINIMAL_ENV_NAMES) == set(DEFAULT_INHERITED_ENV_VARS)


def test_minimal_skips_exported_shell_functions() -> None:
    env = child_environment(parent={"PATH": "/bin", "SHELL": "() { evil; }"}, inherit_env="minimal")

    assert env == {"PATH": "/bin"}


def test_minimal_keeps_explicit_credentials() -> None:
    env = child_environment({"GITHUB_TOKEN": "ghp"}, parent=PARENT, inherit_env="minimal")

    assert env["GITHUB_TOKEN"] == "ghp"


def test_minimal_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SYNC_TEST_PLAIN", "not passed")

    env = child_environment(inherit_env="minimal")

    assert "MCP_SYNC_TEST_PLAIN" not in env
    assert env.get("PATH") == os.environ.get("PATH")


def test_filtered_is_the_default() -> None:
    assert child_environment(parent=PARENT) == child_environment(parent=PARENT, inherit_env="filtered")


def test_filtered_passes_secrets_in_innocent_names() -> None:
    env = child_environment(parent={"DATABASE_URL": "postgres://u:p@h/db", "GH_PERSONAL": "ghp"})

    assert env == {"DATABASE_URL": "postgres://u:p@h/db", "GH_PERSONAL": "ghp"}


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="inherit_env must be"):
        child_environment(parent=PARENT, inherit_env="all")  # type: ignore[arg-type]


def test_a_real_child_started_with_minimal_sees_only_those_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://user:pw@db/app")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    script = "import json, os; print(json.dumps(sorted(os.environ)))"

    env = child_environment({"EXTRA": "1"}, inherit_env="minimal")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=30)

    seen = set(json.loads(done.stdout)) - {"LC_CTYPE"}  # the interpreter may set LC_CTYPE itself
    assert seen <= {*MINIMAL_ENV_NAMES, "EXTRA"}
    assert "EXTRA" in seen
    assert "DATABASE_URL" not in seen


@pytest.mark.parametrize(
    ("args", "secrets"),
    [
        (["-y", "@upstash/context7-mcp", "--api-key", "ctx7sk-1"], ["ctx7sk-1"]),
        (["-y", "figma-developer-mcp", "--figma-api-key=figd-1", "--stdio"], ["figd-1"]),
        (["-y", "@supabase/mcp-server-supabase", "--access-token", "sbp-1", "--read-only"], ["sbp-1"]),
        (["--token", "t-1", "--password=p-1", "--db-pass", "d-1", "-k", "plain"], ["t-1", "p-1", "d-1"]),
        (["run", "-e", "GITHUB_TOKEN=ghp-1", "-e", "LOG_LEVEL=debug", "image"], ["ghp-1"]),
        (["mcp-remote", "https://x/mcp", "--header", "Authorization: Bearer b-1"], ["Bearer b-1", "b-1"]),
        (["--header=Authorization: Bearer b-2"], ["Bearer b-2", "b-2"]),
        (
            ["--env=GITHUB_TOKEN=ghp-2", "--db-pwd", "p-2", "--db.password", "p-3", "--apiKey", "k-2"],
            ["ghp-2", "p-2", "p-3", "k-2"],
        ),
        (["--header", "X-Api-Key:k-1", "--header", "Accept: text/plain"], ["k-1"]),
        (["--api-key", "--verbose", "--output", "out.txt"], []),  # a flag, not the key's value
        (["--max-tokens", "1000", "--sort-key", "title", "--keyword", "python"], []),  # whole words only
        (["--note", "Bearer of bad news", "--tokens", "5"], []),
        (["serve", "--port", "8080", "token"], []),
    ],
)
def test_the_values_a_credential_named_flag_marks_are_credentials(
    args: list[str], secrets: list[str]
) -> None:
    assert list(credential_arguments(args)) == secrets
