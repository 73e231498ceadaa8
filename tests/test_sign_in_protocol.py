"""What a sign-in asks of the authorization server, against the OAuth fixture server
(tests/servers/oauth_server.py): a server that challenges only later requests, a request that needs more
scopes, a pre-registered client's token endpoint auth method, a client metadata document URL, and
registrations kept by the authorization server that issued them. Real servers; the helpers are
test_remote_oauth's."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcp_sync import AuthError, FileTokenStorage, MCPHub, SignInRequiredError
from tests.support import EventLog, HttpServer
from tests.test_remote_oauth import OAUTH_SERVER, browser, remote, stored_record

CLIENT_ID = "desktop-app"
CLIENT_SECRET = "desktop-secret-8c1e5a"
WRITE_SCOPE = "notes:write"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def oauth_server(events: EventLog, *flags: str) -> HttpServer:
    return HttpServer(*flags, script=OAUTH_SERVER, events=events)


@pytest.fixture
def open_initialize_server(oauth_events: EventLog) -> Iterator[HttpServer]:
    with oauth_server(oauth_events, "--open-initialize") as server:
        yield server


@pytest.fixture
def scoped_server(oauth_events: EventLog) -> Iterator[HttpServer]:
    with oauth_server(oauth_events, "--call-scope", WRITE_SCOPE) as server:
        yield server


def test_login_answers_a_challenge_that_comes_after_initialize(
    open_initialize_server: HttpServer, token_dir: Path, oauth_events: EventLog
) -> None:
    with MCPHub([remote(open_initialize_server)]) as hub:
        assert isinstance(hub.servers["remote"].error, SignInRequiredError)
        hub.login("remote", open_url=browser, timeout=30)

        assert hub.servers["remote"].state == "ready"
        assert hub.call_tool("mcp__remote__echo", {"text": "hi"}).text == "hi"
    assert oauth_events.count("authorized") == 1


def test_call_short_of_scope_asks_to_sign_in_with_it_and_keeps_the_tokens(
    scoped_server: HttpServer, token_dir: Path, oauth_events: EventLog
) -> None:
    with MCPHub([remote(scoped_server)]) as hub:
        hub.login("remote", open_url=browser, timeout=30)
        tokens = stored_record(token_dir)["tokens"]

        with pytest.raises(SignInRequiredError, match=WRITE_SCOPE):
            hub.call_tool("mcp__remote__echo", {"text": "hi"}, timeout=20)
        error = hub.servers["remote"].error
        assert isinstance(error, SignInRequiredError)
        assert WRITE_SCOPE in str(error) and "hub.login('remote')" in str(error)
        assert stored_record(token_dir)["tokens"] == tokens

        hub.login("remote", open_url=browser, timeout=30)
        assert hub.call_tool("mcp__remote__echo", {"text": "written"}, timeout=20).text == "written"
    assert WRITE_SCOPE in stored_record(token_dir)["tokens"]["scope"].split()
    assert oauth_events.count("authorized") == 2


def test_scope_asked_for_during_a_sign_in_is_still_asked_for_by_the_next_one(
    scoped_server: HttpServer, token_dir: Path, oauth_events: EventLog
) -> None:
    with MCPHub([remote(scoped_server)]) as first:
        first.login("remote", open_url=browser, timeout=30)
    with MCPHub([remote(scoped_server)]) as running:
        signing_in = MCPHub([remote(scoped_server)])  # another program's sign-in, begun before the refusal

        def refused_meanwhile_then_approved(url: str) -> None:
            with pytest.raises(SignInRequiredError, match=WRITE_SCOPE):
                running.call_tool("mcp__remote__echo", {"text": "hi"}, timeout=20)
            browser(url)

        try:
            signing_in.login("remote", open_url=refused_meanwhile_then_approved, timeout=30)
        finally:
            signing_in.close()

    assert stored_record(token_dir).get("required_scope") == WRITE_SCOPE
    with MCPHub([remote(scoped_server)]) as hub:
        hub.login("remote", open_url=browser, timeout=30)
        assert hub.call_tool("mcp__remote__echo", {"text": "written"}, timeout=20).text == "written"


def pre_registered(server: HttpServer, **auth: str) -> dict[str, object]:
    return remote(
        server, auth={"type": "oauth", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, **auth}
    )


def test_pre_registered_client_authenticates_the_way_the_authorization_server_advertises(
    oauth_events: EventLog, token_dir: Path
) -> None:
    flags = ("--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET)
    basic_only = (
        "--code-client-method",
        "client_secret_basic",
        "--advertise-auth-methods",
        "client_secret_basic",
    )
    with oauth_server(oauth_events, *flags, *basic_only) as server, MCPHub([pre_registered(server)]) as hub:
        hub.login("remote", open_url=browser, timeout=30)

        assert hub.call_tool("mcp__remote__whoami").text == CLIENT_ID
    assert oauth_events.count("registered") == 0


def test_configured_token_endpoint_auth_method_is_used(oauth_events: EventLog, token_dir: Path) -> None:
    flags = (
        "--client-id",
        CLIENT_ID,
        "--client-secret",
        CLIENT_SECRET,
        "--code-client-method",
        "client_secret_post",
    )
    with oauth_server(oauth_events, *flags) as server:
        with MCPHub([pre_registered(server)]) as hub, pytest.raises(AuthError):
            hub.login("remote", open_url=browser, timeout=30)  # the default, client_secret_basic, is refused

        with MCPHub([pre_registered(server, token_endpoint_auth_method="client_secret_post")]) as hub:
            hub.login("remote", open_url=browser, timeout=30)
            assert hub.call_tool("mcp__remote__whoami").text == CLIENT_ID


def test_registration_is_kept_by_the_authorization_server_that_issued_it(
    oauth_events: EventLog, token_dir: Path
) -> None:
    with oauth_server(oauth_events) as server, MCPHub([remote(server)]) as hub:
        hub.login("remote", open_url=browser, timeout=30)
        record = stored_record(token_dir)
        issuer = server.url.removesuffix("/mcp")
        [(registered_at, registration)] = record["registrations"].items()
        assert registered_at.rstrip("/") == issuer
        assert registration["client_id"] == record["client_info"]["client_id"]
        assert FileTokenStorage().load(record["key"]) is not None


def key_pair(tmp_path: Path) -> tuple[Path, Path]:
    """An EC P-256 key pair in PEM files: the client's private key, and its public key for the server."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = tmp_path / "client-key.pem"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    public = tmp_path / "client-key.pub.pem"
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


def test_private_key_jwt_client_connects_with_a_signed_assertion_and_no_secret(
    tmp_path: Path, oauth_events: EventLog, token_dir: Path
) -> None:
    private, public = key_pair(tmp_path)
    flags = ("--client-id", CLIENT_ID, "--client-public-key", os.fspath(public))
    auth = {"type": "private_key_jwt", "client_id": CLIENT_ID, "private_key_file": os.fspath(private)}
    with oauth_server(oauth_events, *flags) as server:
        auth["issuer"] = server.url.removesuffix("/mcp")
        with MCPHub([remote(server, auth=auth)]) as hub:
            assert hub.servers["remote"].state == "ready"
            assert hub.call_tool("mcp__remote__whoami").text == CLIENT_ID
    assert oauth_events.find(lambda event: event.get("grant") == "client_credentials")


def test_private_key_jwt_with_another_key_fails_the_server_without_showing_the_key(
    tmp_path: Path, oauth_events: EventLog, token_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, public = key_pair(tmp_path)
    (tmp_path / "other").mkdir()
    other, _ = key_pair(tmp_path / "other")
    pem = other.read_text()
    monkeypatch.setenv("CLIENT_KEY", pem)
    flags = ("--client-id", CLIENT_ID, "--client-public-key", os.fspath(public))
    auth = {"type": "private_key_jwt", "client_id": CLIENT_ID, "private_key": "${CLIENT_KEY}"}
    with oauth_server(oauth_events, *flags) as server:
        auth["issuer"] = server.url.removesuffix("/mcp")
        with MCPHub([remote(server, auth=auth)]) as hub:
            error = hub.servers["remote"].error
            assert hub.servers["remote"].state == "failed"
            assert isinstance(error, AuthError) and "private_key_jwt" in str(error)
            body = pem.split("-----")[2].strip().splitlines()[1]
            assert body not in str(error) and body not in repr(error.__cause__)


def workload_jwt(private: Path, audience: str) -> str:
    """A JWT as a workload's platform issues it, signed by the workload's key."""
    now = int(time.time())
    claims = {
        "iss": "https://platform.example",
        "sub": CLIENT_ID,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
    }
    return jwt.encode(claims, private.read_text(), algorithm="ES256")


def test_workload_presents_its_platform_jwt_as_the_grant_read_from_its_file(
    tmp_path: Path, oauth_events: EventLog, token_dir: Path
) -> None:
    private, public = key_pair(tmp_path)
    flags = ("--client-id", CLIENT_ID, "--client-public-key", os.fspath(public))
    with oauth_server(oauth_events, *flags) as server:
        token_file = tmp_path / "workload-token"
        token_file.write_text(workload_jwt(private, server.url.removesuffix("/mcp")) + "\n")
        auth = {"type": "jwt_bearer", "client_id": CLIENT_ID, "assertion_file": os.fspath(token_file)}
        with MCPHub([remote(server, auth=auth)]) as hub:
            assert hub.servers["remote"].state == "ready"
            assert hub.call_tool("mcp__remote__whoami").text == CLIENT_ID
    assert oauth_events.find(lambda event: event.get("grant") == JWT_BEARER)


def test_identity_assertion_exchanges_the_id_token_at_the_identity_provider_then_signs_in(
    oauth_events: EventLog, token_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    id_token = "user-id-token-5e0c2a"
    monkeypatch.setenv("ID_TOKEN", id_token)
    monkeypatch.setenv("CLIENT_SECRET", CLIENT_SECRET)
    flags = ("--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET, "--idp-id-token", id_token)
    with oauth_server(oauth_events, *flags) as server:
        base = server.url.removesuffix("/mcp")
        auth = {
            "type": "identity_assertion",
            "client_id": CLIENT_ID,
            "client_secret": "${CLIENT_SECRET}",
            "issuer": base,
            "token_endpoint_auth_method": "client_secret_basic",
            "idp_token_endpoint": f"{base}/idp/token",
            "idp_client_id": "app-at-the-idp",
            "assertion": "${ID_TOKEN}",
        }
        with MCPHub([remote(server, auth=auth)]) as hub:
            assert hub.servers["remote"].state == "ready"
            assert hub.call_tool("mcp__remote__whoami").text == CLIENT_ID
    assert oauth_events.find(
        lambda event: event.get("kind") == "token_exchange" or "token_exchange" in str(event)
    )
    assert oauth_events.find(lambda event: event.get("grant") == JWT_BEARER)


def test_dpop_tokens_are_bound_to_a_kept_key_and_the_servers_nonces_are_answered(
    oauth_events: EventLog, token_dir: Path
) -> None:
    with oauth_server(oauth_events, "--dpop") as server:
        with MCPHub([remote(server, auth={"type": "oauth", "dpop": True})]) as hub:
            hub.login("remote", open_url=browser, timeout=30)
            assert hub.call_tool("mcp__remote__echo", {"text": "bound"}).text == "bound"
        with MCPHub([remote(server, auth={"type": "oauth", "dpop": True})]) as hub:  # the stored key, later
            assert hub.call_tool("mcp__remote__echo", {"text": "still bound"}).text == "still bound"
    assert oauth_events.find(
        lambda event: event.get("event") == "dpop_nonce" and event.get("path") == "/token"
    )
    assert oauth_events.find(lambda event: event.get("event") == "dpop_nonce" and event.get("path") == "/mcp")
    assert not oauth_events.find(lambda event: event.get("kind") == "dpop_token_as_bearer")
    assert "dpop_key" in stored_record(token_dir)
