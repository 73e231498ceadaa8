"""Configuration of remote servers: `auth` (ours and the hosts' OAuth keys) and `reconnect`."""

from __future__ import annotations

import logging

import pytest

from mcp_sync import AuthConfig, ConfigError, HttpServerConfig, ReconnectConfig, parse_server_entries
from mcp_sync._config.secrets import secrets_of

URL = "https://mcp.example.com/mcp"


def one(entries: object) -> HttpServerConfig:
    [config] = parse_server_entries(entries, environ={"SECRET": "s3cret-value-1234"}, strict=True).configs  # type: ignore[arg-type]
    assert isinstance(config, HttpServerConfig)
    return config


def test_auth_oauth_shorthand_means_a_sign_in_with_a_registered_client() -> None:
    config = one([{"server_name": "web", "url": URL, "auth": "oauth"}])

    assert config.auth == AuthConfig(type="oauth")


def test_client_credentials_take_id_secret_and_scopes_in_camel_case() -> None:
    auth = {
        "type": "client_credentials",
        "clientId": "svc",
        "clientSecret": "${SECRET}",
        "scopes": "read write",
    }
    config = one([{"serverName": "web", "url": URL, "auth": auth}])

    assert config.auth is not None
    assert (config.auth.client_id, config.auth.client_secret) == ("svc", "s3cret-value-1234")
    assert config.auth.scopes == ("read", "write")


def test_client_credentials_without_a_secret_are_refused() -> None:
    with pytest.raises(ConfigError, match="client_credentials needs client_id and client_secret"):
        one([{"server_name": "web", "url": URL, "auth": {"type": "client_credentials", "client_id": "svc"}}])


def test_client_metadata_url_must_be_an_https_document() -> None:
    def entry(url: str) -> list[dict[str, object]]:
        return [{"server_name": "web", "url": URL, "auth": {"type": "oauth", "client_metadata_url": url}}]

    with pytest.raises(ConfigError, match="client_metadata_url must be an https:// URL with a path"):
        one(entry("http://app.example/client.json"))
    with pytest.raises(ConfigError, match="client_metadata_url"):
        one(entry("https://app.example/"))
    config = one(entry("https://app.example/client.json"))
    assert config.auth is not None and config.auth.client_metadata_url == "https://app.example/client.json"


def test_token_endpoint_auth_method_is_one_of_the_client_secret_methods_or_none() -> None:
    auth = {"type": "oauth", "client_id": "app", "token_endpoint_auth_method": "client_secret_post"}
    config = one([{"server_name": "web", "url": URL, "auth": auth}])
    assert config.auth is not None and config.auth.token_endpoint_auth_method == "client_secret_post"
    with pytest.raises(ConfigError, match="token_endpoint_auth_method"):
        one(
            [
                {
                    "server_name": "web",
                    "url": URL,
                    "auth": {**auth, "token_endpoint_auth_method": "tls_client_auth"},
                }
            ]
        )


def test_private_key_jwt_takes_its_key_from_a_reference_or_a_file_never_inline() -> None:
    pem = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49\n-----END PRIVATE KEY-----\n"
    auth = {"type": "private_key_jwt", "client_id": "svc"}
    with pytest.raises(ConfigError, match=r"auth\.private_key' must be a \$\{VAR\} reference") as refused:
        one([{"server_name": "web", "url": URL, "auth": {**auth, "private_key": pem}}])
    assert "MIGHAgEA" not in str(refused.value)
    [config] = parse_server_entries(
        [{"server_name": "web", "url": URL, "auth": {**auth, "private_key": "${KEY}"}}],
        environ={"KEY": pem},
        strict=True,
    ).configs
    assert isinstance(config, HttpServerConfig) and config.auth is not None
    assert config.auth.private_key == pem and "MIGHAgEA" not in repr(config)
    assert one([{"server_name": "web", "url": URL, "auth": {**auth, "private_key_file": "~/key.pem"}}]).auth
    with pytest.raises(ConfigError, match="private_key_jwt needs client_id and one of private_key_file"):
        one([{"server_name": "web", "url": URL, "auth": {"type": "private_key_jwt", "client_id": "svc"}}])


def test_client_secret_is_masked_in_the_repr_and_registered_as_a_secret() -> None:
    config = one(
        [
            {
                "server_name": "web",
                "url": URL,
                "auth": {"type": "oauth", "client_id": "app", "client_secret": "${SECRET}"},
            }
        ]
    )

    assert "s3cret-value-1234" not in repr(config)
    assert "s3cret-value-1234" in secrets_of(config)


def test_claude_code_oauth_keys_are_mapped() -> None:
    config = one(
        {
            "mcpServers": {
                "web": {"type": "http", "url": URL, "oauth": {"clientId": "app", "callbackPort": 8765}}
            }
        }
    )

    assert config.auth == AuthConfig(type="oauth", client_id="app", redirect_port=8765)


def test_cursor_auth_keys_are_mapped() -> None:
    entry = {"url": URL, "auth": {"CLIENT_ID": "app", "CLIENT_SECRET": "${SECRET}", "scopes": ["read"]}}
    config = one({"mcpServers": {"web": entry}})

    assert config.auth is not None
    assert (config.auth.type, config.auth.client_id, config.auth.scopes) == ("oauth", "app", ("read",))


def test_gemini_oauth_redirect_uri_gives_the_port_and_endpoints_are_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    oauth = {
        "enabled": True,
        "redirectUri": "http://localhost:7777/oauth/callback",
        "tokenUrl": "https://a/t",
    }
    config = one({"mcpServers": {"web": {"httpUrl": URL, "oauth": oauth}}})

    assert config.auth == AuthConfig(type="oauth", redirect_port=7777)
    assert any(
        "ignoring 'oauth.tokenUrl'" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
    )


def test_gemini_oauth_disabled_means_no_sign_in() -> None:
    config = one({"mcpServers": {"web": {"httpUrl": URL, "oauth": {"enabled": False}}}})

    assert config.auth is None


def test_auth_on_a_stdio_server_is_an_unknown_key() -> None:
    with pytest.raises(ConfigError, match="unknown key 'auth' for transport 'stdio'"):
        parse_server_entries([{"server_name": "local", "command": "x", "auth": "oauth"}], strict=True)


def test_reconnect_true_means_the_default_policy() -> None:
    config = one([{"server_name": "web", "url": URL, "reconnect": True}])

    assert config.reconnect == ReconnectConfig()


def test_reconnect_is_off_unless_asked_for() -> None:
    assert one([{"server_name": "web", "url": URL}]).reconnect is None


def test_reconnect_policy_must_be_positive() -> None:
    with pytest.raises(ConfigError, match=r"reconnect\.max_attempts"):
        one([{"server_name": "web", "url": URL, "reconnect": {"max_attempts": 0}}])
