"""The stdio child's environment: the parent's minus credential-like names, then the explicit env."""

from __future__ import annotations

import pytest

from mcp_sync._child_env import CREDENTIAL_NAME_PATTERNS, child_environment, is_credential_name

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
        "npm_config__authToken",
        "my_api_key",
        "Secret",
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


def test_parent_mapping_is_not_modified() -> None:
    parent = dict(PARENT)

    env = child_environment({"EXTRA": "1"}, parent=parent)
    env["MORE"] = "2"

    assert parent == PARENT


def test_patterns_are_upper_case_substrings() -> None:
    assert {"KEY", "SECRET", "TOKEN"} <= set(CREDENTIAL_NAME_PATTERNS)
    assert all(pattern == pattern.upper() for pattern in CREDENTIAL_NAME_PATTERNS)
