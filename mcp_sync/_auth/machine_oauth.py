"""Grants without a user: `client_credentials`, `private_key_jwt`, `jwt_bearer` (a workload's JWT,
SEP-1933) and `identity_assertion` (SEP-990: a token exchange at the identity provider first).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncGenerator, Callable

import anyio
import httpx2
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from mcp.client.auth import OAuthFlowError, OAuthTokenError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    handle_token_response_scopes,
    union_scopes,
    validate_metadata_issuer,
)
from mcp.shared.auth import (
    JWT_BEARER_GRANT_TYPE,
    OAuthToken,
)
from mcp.shared.auth_utils import resource_url_from_server_url

from .._config import AuthConfig, HttpServerConfig
from .._values.errors import AuthError
from .._values.secrets import scrub
from .server_auth import EXPIRY_MARGIN, ServerAuth, is_challenge, is_step_up, json_of, requested_scope
from .tokens import Secrets, StoredTokens

__all__ = ["GrantOAuth", "KeyOAuth", "MachineOAuth"]


logger = logging.getLogger("mcp_sync")


class MachineOAuth(ServerAuth):
    """The client-credentials grant: no user, a token fetched with the client's id and secret when needed."""

    def __init__(
        self, server_name: str, config: HttpServerConfig, storage: StoredTokens, secrets: Secrets
    ) -> None:
        auth = config.auth
        assert auth is not None and auth.client_id is not None and auth.client_secret is not None
        secrets.keep(auth.client_secret)
        method = auth.token_endpoint_auth_method
        provider = ClientCredentialsOAuthProvider(
            server_url=config.url,
            storage=storage,
            client_id=auth.client_id,
            client_secret=auth.client_secret,
            token_endpoint_auth_method=method
            if method in ("client_secret_basic", "client_secret_post")
            else "client_secret_basic",
            scope=requested_scope(auth),
            issuer=auth.issuer,
        )
        super().__init__(server_name, provider, secrets)

    def _failed(self, exc: Exception) -> BaseException:
        return self._fail(
            AuthError(
                scrub(f"server {self._server_name!r}: getting a token with client_credentials failed: {exc}")
            )
        )


class KeyOAuth(ServerAuth):
    """The client-credentials grant with `private_key_jwt`: the client proves itself with a short-lived JWT
    signed by its private key (the SDK's `PrivateKeyJWTOAuthProvider`), so no secret is ever sent."""

    def __init__(
        self, server_name: str, config: HttpServerConfig, storage: StoredTokens, secrets: Secrets
    ) -> None:
        auth = config.auth
        assert auth is not None and auth.client_id is not None
        pem = _secret_of(server_name, "private_key", auth.private_key, auth.private_key_file)
        secrets.keep(pem)
        signer = SignedJWTParameters(
            issuer=auth.client_id,
            subject=auth.client_id,
            signing_key=pem,
            signing_algorithm=auth.signing_algorithm or _algorithm_of(server_name, pem),
        ).create_assertion_provider()

        async def assertion(audience: str) -> str:
            signed = await signer(audience)
            secrets.keep(signed)
            return signed

        provider = PrivateKeyJWTOAuthProvider(
            server_url=config.url,
            storage=storage,
            client_id=auth.client_id,
            assertion_provider=assertion,
            scope=requested_scope(auth),
            issuer=auth.issuer,
        )
        super().__init__(server_name, provider, secrets)

    def _failed(self, exc: Exception) -> BaseException:
        return self._fail(
            AuthError(
                scrub(f"server {self._server_name!r}: getting a token with private_key_jwt failed: {exc}")
            )
        )


def _algorithm_of(server_name: str, pem: str) -> str:
    """The JWT signing algorithm a private key calls for: ES256/384/512 by its curve, RS256, or EdDSA."""
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        raise AuthError(
            f"server {server_name!r}: the private key is not an unencrypted PEM private key"
        ) from None
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return {256: "ES256", 384: "ES384", 521: "ES512"}.get(key.curve.key_size, "ES256")
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    return "RS256"


class _JwtBearerProvider(httpx2.Auth):
    """The RFC 7523 jwt-bearer grant for a workload (SEP-1933): the JWT its platform issued is presented as
    the grant at the authorization server the protected resource names (or `issuer`), as a public client.
    The JWT is read again for each token request (platforms rotate it). A refused grant is not retried."""

    requires_response_body = True

    def __init__(
        self,
        server_url: str,
        storage: StoredTokens,
        client_id: str,
        assertion: Callable[[], str],
        scope: str | None,
        issuer: str | None,
    ) -> None:
        self._server_url = server_url
        self._storage = storage
        self._client_id = client_id
        self._assertion = assertion
        self._scope = scope
        self._issuer = issuer
        self._token_endpoint: str | None = None
        self._tokens: OAuthToken | None = None
        self._expiry: float | None = None
        self._lock = anyio.Lock()
        self._loaded = False

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        async with self._lock:
            if not self._loaded:
                self._loaded = True
                self._tokens = self._storage.read_tokens()
                self._expiry = self._storage.expires_at
            if self._tokens is not None and (
                self._expiry is None or time.time() < self._expiry - EXPIRY_MARGIN
            ):
                request.headers["Authorization"] = f"Bearer {self._tokens.access_token}"
            response = yield request
            if not is_challenge(response):
                return
            scope = self._scope
            if is_step_up(response):
                scope = union_scopes(scope, extract_scope_from_www_auth(response))
            if self._token_endpoint is None:
                issuer = self._issuer
                if issuer is None:
                    for url in build_protected_resource_metadata_discovery_urls(
                        extract_resource_metadata_from_www_auth(response), self._server_url
                    ):
                        prm = await handle_protected_resource_response(
                            (yield create_oauth_metadata_request(url))
                        )
                        if prm is not None and prm.authorization_servers:
                            issuer = str(prm.authorization_servers[0])
                            break
                for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, self._server_url):
                    ok, metadata = await handle_auth_metadata_response(
                        (yield create_oauth_metadata_request(url))
                    )
                    if not ok:
                        break
                    if metadata is not None:
                        if issuer is not None:
                            validate_metadata_issuer(metadata, issuer)
                        self._token_endpoint = str(metadata.token_endpoint)
                        break
                if self._token_endpoint is None:
                    raise OAuthFlowError("no authorization server metadata was found")
            data = {
                "grant_type": JWT_BEARER_GRANT_TYPE,
                "assertion": self._assertion(),
                "client_id": self._client_id,
                "resource": resource_url_from_server_url(self._server_url),
            }
            if scope:
                data["scope"] = scope
            token_response = yield httpx2.Request("POST", self._token_endpoint, data=data)
            if token_response.status_code != 200:
                body = (await token_response.aread()).decode(errors="replace")
                raise OAuthTokenError(
                    f"the jwt-bearer grant was refused ({token_response.status_code}): {body}"
                )
            tokens = await handle_token_response_scopes(token_response)
            self._tokens = tokens
            self._expiry = time.time() + tokens.expires_in if tokens.expires_in is not None else None
            await self._storage.set_tokens(tokens)
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"
            yield request


class GrantOAuth(ServerAuth):
    """A grant with no user and no client secret of its own making: a workload's JWT (`jwt_bearer`), or an
    identity assertion grant obtained from the enterprise identity provider (`identity_assertion`, the
    SDK's `IdentityAssertionOAuthProvider`)."""

    def __init__(
        self, server_name: str, config: HttpServerConfig, storage: StoredTokens, secrets: Secrets
    ) -> None:
        auth = config.auth
        assert auth is not None and auth.client_id is not None
        self._auth_config = auth

        def assertion() -> str:
            value = _secret_of(server_name, "assertion", auth.assertion, auth.assertion_file).strip()
            secrets.keep(value)
            return value

        provider: httpx2.Auth
        if auth.type == "jwt_bearer":
            provider = _JwtBearerProvider(
                config.url, storage, auth.client_id, assertion, requested_scope(auth), auth.issuer
            )
        else:
            assert auth.client_secret is not None and auth.issuer is not None
            secrets.keep(auth.client_secret, auth.idp_client_secret)

            async def identity_assertion_grant(audience: str, resource: str) -> str:
                return await _exchange_at_identity_provider(
                    server_name, auth, assertion(), audience, resource, secrets
                )

            method = auth.token_endpoint_auth_method
            provider = IdentityAssertionOAuthProvider(
                server_url=config.url,
                storage=storage,
                client_id=auth.client_id,
                client_secret=auth.client_secret,
                issuer=auth.issuer,
                assertion_provider=identity_assertion_grant,
                scope=requested_scope(auth),
                token_endpoint_auth_method=method
                if method == "client_secret_basic"
                else "client_secret_post",
            )
        super().__init__(server_name, provider, secrets)

    def _failed(self, exc: Exception) -> BaseException:
        return self._fail(
            AuthError(
                scrub(
                    f"server {self._server_name!r}: getting a token ({self._auth_config.type}) failed: {exc}"
                ),
            )
        )


# The token exchange at the identity provider (SEP-990's first leg).
_IDP_TIMEOUT = 30.0


async def _exchange_at_identity_provider(
    server_name: str, auth: AuthConfig, id_token: str, audience: str, resource: str, secrets: Secrets
) -> str:
    """Exchange the user's ID token at the identity provider (RFC 8693) for an identity assertion grant
    (ID-JAG) for the authorization server `audience` and the MCP server `resource`."""
    assert auth.idp_token_endpoint is not None and auth.idp_client_id is not None
    data = {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "audience": audience,
        "resource": resource,
        "subject_token": id_token,
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "client_id": auth.idp_client_id,
    }
    if auth.idp_client_secret is not None:
        data["client_secret"] = auth.idp_client_secret
    async with httpx2.AsyncClient(timeout=_IDP_TIMEOUT) as http:
        response = await http.post(auth.idp_token_endpoint, data=data)
    if response.status_code != 200:
        raise AuthError(
            scrub(
                f"server {server_name!r}: the identity provider refused the token exchange "
                f"(HTTP {response.status_code}): {response.text[:300]}"
            )
        )
    grant = (await json_of(response)).get("access_token")
    if not isinstance(grant, str):
        raise AuthError(f"server {server_name!r}: the identity provider's answer has no access_token")
    secrets.keep(grant)
    return grant


def _secret_of(server_name: str, name: str, value: str | None, path: str | None) -> str:
    """A configured secret (a key, an assertion): the value itself, or the file's contents, read now."""
    if value is not None:
        return value
    assert path is not None
    path = os.path.expanduser(path)
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise AuthError(
            f"server {server_name!r}: cannot read {name}_file {path!r}: "
            f"{getattr(exc, 'strerror', None) or exc}"
        ) from None
