"""Signing in to Streamable HTTP servers: the `httpx2.Auth` each connection uses, and the sign-in step.

Each grant is one of the `mcp` SDK's public providers, driven request by request by a `ServerAuth`:
`auth: oauth` is `OAuthClientProvider` (authorization code with PKCE: discovery, dynamic registration
or a client ID metadata document, the token endpoint auth method the authorization server advertises,
scope step-up, re-registration at a new authorization server); `client_credentials` and
`private_key_jwt` are `ClientCredentialsOAuthProvider` and `PrivateKeyJWTOAuthProvider`;
`identity_assertion` (SEP-990) is `IdentityAssertionOAuthProvider`, after a token exchange at the
identity provider; `jwt_bearer` (a workload's JWT as the grant, SEP-1933) is `_JwtBearerProvider`,
built from the SDK's discovery helpers. `dpop: true` signs every request of any of them with a DPoP
proof (`_DPoP`).

A server configured with `auth: oauth` is signed in to by a user, in a browser: `sign_in()` connects to
the server as a session does (an mcp `Client`, listing the tools) with the provider in interactive
mode, so it answers the 401 (or 403 insufficient_scope) wherever the server sends it. It opens a
listener on 127.0.0.1 for the redirect, hands the authorization URL to the host (by default: logged at
WARNING and opened in a browser when there is one), and also accepts the redirected address pasted
back, for a browser on another machine (these, the user's side of a sign-in, are in `_auth.redirect`).
Only a redirect carrying the `state` of the authorization in progress completes it. The new tokens
replace the stored ones only once the sign-in succeeded: one that times out, is interrupted or is
refused leaves the working tokens as they were. Threads: the
sign-in runs on a loop thread of its own (`mcp-sync:login:<server>`), the host's `open_url` on
`mcp-sync:open-url`, and the pasted-address reader on `mcp-sync:paste`, which reads standard input only
while the sign-in runs.

Connections then use the stored tokens without a browser (on their server's loop thread),
refreshing the access token before it expires and on a 401. Several processes may share
one token store, and an authorization server may rotate refresh tokens, so one process's
refresh makes the others' refresh token worthless: before refreshing, and again when a
refresh is refused, the store is read, and tokens another process stored meanwhile (with
its client registration) are used. A connection never starts a sign-in: a server with no
usable token fails with `SignInRequiredError`, which says how to sign in; one short of scope fails
with one naming the scopes, which the next sign-in asks for.

Every token, code, key, assertion and client secret seen is registered with `_values.secrets` while in use,
so none appears in a log record or an error.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from secrets import token_urlsafe
from typing import Any

import anyio
import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthTokenError
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
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    handle_token_response_scopes,
    issuers_match,
    union_scopes,
    validate_metadata_issuer,
)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    JWT_BEARER_GRANT_TYPE,
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)
from mcp.shared.auth_utils import resource_url_from_server_url

from .._config import AuthConfig, HttpServerConfig, ServerConfig
from .._values.errors import AuthError, ConfigError, SignInRequiredError, describe
from .._values.scrubbed_errors import scrub_exception
from .._values.secrets import SecretHandle, scrub
from .._values.secrets import register as register_secrets
from .redirect import PasteReader, RedirectListener, open_browser, show_url
from .token_store import TokenStorage, token_key

__all__ = [
    "AuthFactory",
    "ServerAuth",
    "auth_factory",
    "forget_tokens",
    "open_browser",
    "sign_in",
    "stored_tokens_of",
]

logger = logging.getLogger("mcp_sync")

AuthFactory = Callable[[ServerConfig], httpx2.Auth | None]
"""Makes the `httpx2.Auth` of one connection (None: no authentication)."""

# A stored access token this close to its expiry is refreshed before it is used.
_EXPIRY_MARGIN = 30.0
# A process that wins a race to refresh stores its tokens a moment after the authorization server rotated
# the refresh token: a refresh refused meanwhile looks in the store for this long before asking for a sign-in.
_ROTATION_GRACE = 1.0
# How often the store is read during that grace.
_ROTATION_POLL_INTERVAL = 0.1
# A token expiry long past: the SDK's flow refreshes such a token before sending the request.
_LONG_AGO = 1.0
# The sign-in connection's HTTP requests (the authorization itself is bounded by the sign-in's timeout).
_SIGN_IN_HTTP_TIMEOUT = 30.0


def how_to_sign_in(server_name: str) -> str:
    return f"sign in with hub.login({server_name!r}), or `mcp-sync login CONFIG {server_name}`"


def _scope(config: AuthConfig) -> str | None:
    return " ".join(config.scopes) or None


# -- what a connection keeps of its tokens --------------------------------------------------------------


class _Secrets:
    """Every secret value an auth object has seen, registered until `release()`."""

    def __init__(self) -> None:
        self._handles: list[SecretHandle] = []
        self._lock = threading.Lock()

    def keep(self, *values: str | None) -> None:
        handle = register_secrets(value for value in values if value)
        with self._lock:
            self._handles.append(handle)

    def release(self) -> None:
        with self._lock:
            handles, self._handles = self._handles, []
        for handle in handles:
            handle.release()


class _StoredTokens:
    """The SDK's (async) token storage over one record of a `TokenStorage`; registers what it sees as secrets.

    Client registrations are kept by the authorization server that issued them (`registrations`, by
    issuer), beside the one in use (`client_info`): a server that moves to another authorization server
    registers there, and one that moves back finds its registration. `fixed_client`: a configured client
    (id and secret), offered instead of any registration. `redirect_uri`: a registration made for another
    redirect address is not offered (the sign-in registers again), since the authorization server would
    refuse it.
    """

    def __init__(
        self,
        storage: TokenStorage,
        key: str,
        secrets: _Secrets,
        *,
        redirect_uri: str | None = None,
        fixed_client: OAuthClientInformationFull | None = None,
    ) -> None:
        self._storage = storage
        self._key = key
        self._secrets = secrets
        self._redirect_uri = redirect_uri
        self.fixed_client = fixed_client
        self.expires_at: float | None = None
        self.metadata: OAuthMetadata | None = None
        # The access token this object last read or wrote: a different one in the store is another process's.
        self._seen: str | None = None

    def _load(self) -> dict[str, Any]:
        return self._storage.load(self._key) or {}

    async def get_tokens(self) -> OAuthToken | None:
        return self.read_tokens()

    def read_tokens(self) -> OAuthToken | None:
        record = self._load()
        tokens = record.get("tokens")
        if not isinstance(tokens, dict):
            return None
        try:
            token = OAuthToken.model_validate(tokens)
        except ValueError:
            return None
        self._secrets.keep(token.access_token, token.refresh_token)
        self._seen = token.access_token
        expires_at = record.get("expires_at")
        self.expires_at = float(expires_at) if isinstance(expires_at, int | float) else None
        metadata = record.get("oauth_metadata")
        try:
            self.metadata = OAuthMetadata.model_validate(metadata) if isinstance(metadata, dict) else None
        except ValueError:
            self.metadata = None
        return token

    def newer_tokens(self) -> OAuthToken | None:
        """The stored tokens if they are not the ones this object last read or wrote (another process
        refreshed or signed in since), else None."""
        stored = self._load().get("tokens")
        if not isinstance(stored, dict) or stored.get("access_token") in (None, self._seen):
            return None
        return self.read_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._secrets.keep(tokens.access_token, tokens.refresh_token)
        record = self._load()
        if self._seen is not None and not record.get("tokens"):
            # Signed out elsewhere (`logout`) since these tokens were read: a refresh does not sign back in.
            logger.info("the stored tokens were deleted meanwhile; the refreshed ones are not stored")
            self._seen = tokens.access_token
            return
        self._seen = tokens.access_token
        record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        record["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self._storage.save(self._key, record)

    def _usable(self, info: Any) -> OAuthClientInformationFull | None:
        if not isinstance(info, dict):
            return None
        try:
            client = OAuthClientInformationFull.model_validate(info)
        except ValueError:
            return None
        if self._redirect_uri is not None and self._redirect_uri not in {
            str(u) for u in client.redirect_uris or ()
        }:
            return None
        self._secrets.keep(client.client_secret)
        return client

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.fixed_client is not None:
            return self.fixed_client
        return self._usable(self._load().get("client_info"))

    def registration_for(self, issuer: str) -> OAuthClientInformationFull | None:
        """The stored registration made at the authorization server `issuer`, if any."""
        registrations = self._load().get("registrations")
        if self.fixed_client is not None or not isinstance(registrations, dict):
            return None
        return next(
            (
                client
                for stored_issuer, info in registrations.items()
                if issuers_match(stored_issuer, issuer) and (client := self._usable(info)) is not None
            ),
            None,
        )

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._secrets.keep(client_info.client_secret)
        record = self._load()
        record["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        if client_info.issuer is not None:
            registrations = record.get("registrations")
            registrations = dict(registrations) if isinstance(registrations, dict) else {}
            registrations[client_info.issuer] = record["client_info"]
            record["registrations"] = registrations
        self._storage.save(self._key, record)

    def save_metadata(self, metadata: OAuthMetadata | None) -> None:
        """Keep the authorization server's endpoints with the tokens: a later run refreshes at the right one
        without discovering them first."""
        record = self._load()
        if metadata is None or not record:
            return
        record["oauth_metadata"] = metadata.model_dump(mode="json", exclude_none=True)
        self._storage.save(self._key, record)

    def dpop_key(self) -> str:
        """The client's DPoP private key (PEM), made and kept with the tokens the first time."""
        record = self._load()
        pem = record.get("dpop_key")
        if isinstance(pem, str):
            return pem
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        record["dpop_key"] = pem
        self._storage.save(self._key, record)
        return pem

    def required_scope(self) -> str | None:
        """The scopes a server asked for (a 403 insufficient_scope) that the next sign-in must request."""
        scope = self._load().get("required_scope")
        return scope if isinstance(scope, str) and scope else None

    def require_scope(self, scope: str) -> None:
        record = self._load()
        record["required_scope"] = scope
        self._storage.save(self._key, record)


class _Draft:
    """A `TokenStorage` of one record held in memory until `commit()`, so that a sign-in replaces the
    stored tokens only once it succeeded. It starts from the stored record without its tokens: the
    client registrations and the endpoints are reused, and the sign-in is a new one."""

    def __init__(self, storage: TokenStorage, key: str) -> None:
        self._storage = storage
        self._key = key
        stored = storage.load(key) or {}
        self._record = {name: value for name, value in stored.items() if name not in ("tokens", "expires_at")}

    def load(self, key: str) -> dict[str, Any] | None:
        return dict(self._record) if self._record else None

    def save(self, key: str, record: dict[str, Any]) -> None:
        self._record = dict(record)

    def delete(self, key: str) -> None:
        self._record = {}

    def commit(self) -> None:
        """Replace the stored record with this one (the scopes it was asked for are now requested)."""
        self._record.pop("required_scope", None)
        self._storage.save(self._key, self._record)


# -- the providers ----------------------------------------------------------------------------------------


def _is_challenge(response: httpx2.Response) -> bool:
    """A 401, or a 403 insufficient_scope: the request needs (other) authorization."""
    return response.status_code == 401 or _is_step_up(response)


def _is_step_up(response: httpx2.Response) -> bool:
    return (
        response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope"
    )


async def _json_of(response: httpx2.Response) -> dict[str, Any]:
    """The response's JSON object; empty if it is not one."""
    try:
        value = json.loads(await response.aread())
    except (ValueError, httpx2.StreamError):
        return {}
    return value if isinstance(value, dict) else {}


class ServerAuth(httpx2.Auth):
    """The `httpx2.Auth` of one connection: one of the SDK's providers, which it drives request by request.

    What a session needs of it: where to report that the server needs a sign-in (`on_failure`), and to
    let go of the secrets it registered once the connection ends. The SDK's errors (a refused token
    request, a failed discovery) become `AuthError`s without any secret in them.
    """

    requires_response_body = True
    on_failure: Callable[[BaseException], None] | None = None
    dpop: _DPoP | None = None

    def __init__(self, server_name: str, provider: httpx2.Auth, secrets: _Secrets) -> None:
        self._server_name = server_name
        self._provider = provider
        self._secrets = secrets

    def release_secrets(self) -> None:
        self._secrets.release()

    def _fail(self, error: BaseException) -> BaseException:
        if self.on_failure is not None:
            self.on_failure(error)
        return error

    def _failed(self, exc: Exception) -> BaseException:
        return self._fail(AuthError(scrub(f"server {self._server_name!r}: signing in failed: {exc}")))

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The flow of `_flow`, each request it makes signed with a DPoP proof when `dpop` is on."""
        flow = self._flow(request)
        dpop = self.dpop
        try:
            outgoing = await flow.__anext__()
            while True:
                if dpop is None:
                    response = yield outgoing
                else:
                    response = yield dpop.sign(outgoing, resource=outgoing is request)
                    if await dpop.took_nonce(response):  # the server wants its nonce in the proof: once more
                        response = yield dpop.sign(outgoing, resource=outgoing is request)
                    response = await dpop.as_bearer(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self._provider.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except OAuthFlowError as exc:  # its token and registration errors too
            raise self._failed(exc) from None
        except AuthError as exc:  # the sign-in refused in the browser
            raise self._fail(exc) from None
        finally:
            await flow.aclose()


class _DPoP:
    """DPoP (RFC 9449, SEP-1932): proof-of-possession tokens. Each token request and each request to the
    server carries a fresh proof signed with the client's key (ES256), the token is presented with the
    `DPoP` scheme, and a server's `use_dpop_nonce` challenge is answered once with its nonce. The key is
    kept with the tokens it is bound to."""

    def __init__(self, storage: _StoredTokens, secrets: _Secrets) -> None:
        pem = storage.dpop_key()
        secrets.keep(pem)
        key = serialization.load_pem_private_key(pem.encode(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        self._key = key
        self._jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
        self._nonces: dict[str, str] = {}  # by origin: the authorization server's and the resource's

    @staticmethod
    def _origin(url: httpx2.URL) -> str:
        return f"{url.scheme}://{url.netloc.decode()}"

    def sign(self, request: httpx2.Request, *, resource: bool) -> httpx2.Request:
        token_request = request.method == "POST" and b"grant_type=" in request.content
        authorization = request.headers.get("Authorization", "")
        scheme, _, token = authorization.partition(" ")
        if not token_request and not (resource and scheme in ("Bearer", "DPoP")):
            return request
        claims: dict[str, Any] = {
            "jti": token_urlsafe(16),
            "htm": request.method,
            "htu": str(request.url.copy_with(query=None, fragment=None)),
            "iat": int(time.time()),
        }
        nonce = self._nonces.get(self._origin(request.url))
        if nonce is not None:
            claims["nonce"] = nonce
        if resource and token:
            claims["ath"] = (
                base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()
            )
            request.headers["Authorization"] = f"DPoP {token}"
        header = {"typ": "dpop+jwt", "jwk": self._jwk}
        request.headers["DPoP"] = jwt.encode(claims, self._key, algorithm="ES256", headers=header)
        return request

    async def took_nonce(self, response: httpx2.Response) -> bool:
        """Keep a nonce the server sent; True if it refused the request for want of it."""
        nonce = response.headers.get("DPoP-Nonce")
        if nonce is None:
            return False
        self._nonces[self._origin(response.request.url)] = nonce
        if response.status_code == 401:
            return extract_field_from_www_auth(response, "error") == "use_dpop_nonce"
        return response.status_code == 400 and b"use_dpop_nonce" in await response.aread()

    async def as_bearer(self, response: httpx2.Response) -> httpx2.Response:
        """A token response as the SDK reads it: its `DPoP` token type is the SDK's `Bearer`, the proof
        being added here."""
        request = response.request
        if response.status_code != 200 or request.method != "POST" or b"grant_type=" not in request.content:
            return response
        body = await _json_of(response)
        if str(body.get("token_type", "")).lower() != "dpop":
            return response
        headers = {
            name: value
            for name, value in response.headers.items()
            if name.lower() not in ("content-encoding", "content-length", "content-type")
        }
        return httpx2.Response(200, headers=headers, json={**body, "token_type": "Bearer"}, request=request)


class _UserOAuth(ServerAuth):
    """Authorization code with PKCE (the SDK's `OAuthClientProvider`), for a server a user signs in to.

    Interactive (a sign-in: `redirect_handler` given), the SDK answers each 401 and 403
    insufficient_scope with discovery, registration (or the client metadata document) and a browser
    authorization. Otherwise no browser is ever opened: a 401 is first answered by tokens another
    process stored meanwhile (with rotating refresh tokens, its refresh made the one in hand worthless),
    then by a refresh, then, if that is refused, by the store once more; what none of these fixes, and
    a 403 insufficient_scope, raise `SignInRequiredError` (the scopes asked for are kept for the next
    sign-in, with the stored tokens).

    On top of the SDK's provider, in both modes: a stored token's expiry and its authorization server's
    endpoints are known after a restart; the store is read before a refresh; a registration made at the
    authorization server the resource now names is reused; a configured client's token endpoint auth
    method is the one the authorization server advertises unless the configuration forces one.
    """

    def __init__(
        self,
        server_name: str,
        config: HttpServerConfig,
        storage: _StoredTokens,
        secrets: _Secrets,
        *,
        redirect_uri: str,
        redirect_handler: Callable[[str], Awaitable[None]] | None = None,
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]] | None = None,
    ) -> None:
        auth = config.auth
        assert auth is not None
        self._auth_config = auth
        method = auth.token_endpoint_auth_method or ("client_secret_basic" if auth.client_secret else "none")
        if auth.client_id is not None:
            secrets.keep(auth.client_secret)
            storage.fixed_client = OAuthClientInformationFull(
                client_id=auth.client_id,
                client_secret=auth.client_secret,
                redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic parses the str
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method=method,
            )
        metadata = OAuthClientMetadata(
            redirect_uris=[redirect_uri],  # type: ignore[list-item]
            client_name="mcp_sync",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method=auth.token_endpoint_auth_method or "none",
            scope=_scope(auth),
        )
        self.provider = OAuthClientProvider(
            server_url=config.url,
            client_metadata=metadata,
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=auth.client_metadata_url,
        )
        super().__init__(server_name, self.provider, secrets)
        self._stored = storage
        self._interactive = redirect_handler is not None
        self._lock = anyio.Lock()
        self._primed = False
        self._had_token = False
        self._settled = False

    def settle(self) -> None:
        """The sign-in is over: requests still made (the session's end) are sent as they are, and a
        challenge to them starts no authorization."""
        self._settled = True

    def _prime(self) -> None:
        """Before the first request: what the SDK does not keep with the tokens (their expiry, the
        authorization server's endpoints) from the store."""
        self._primed = True
        context = self.provider.context
        tokens = self._stored.read_tokens()
        self._had_token = tokens is not None
        if tokens is not None:
            context.current_tokens = tokens
            self._use_stored_expiry()
        if context.oauth_metadata is None:
            context.oauth_metadata = self._stored.metadata

    def _use_stored_expiry(self) -> None:
        context = self.provider.context
        context.token_expiry_time = (
            self._stored.expires_at - _EXPIRY_MARGIN if self._stored.expires_at is not None else None
        )

    async def _flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        context = self.provider.context
        if self._settled:
            if context.current_tokens is not None:
                request.headers["Authorization"] = f"Bearer {context.current_tokens.access_token}"
            yield request
            return
        if not self._primed:
            self._prime()
        if context.current_tokens is not None and not context.is_token_valid():
            async with self._lock:  # before refreshing: another process may have done it already
                await self._take_newer_stored_tokens()
        challenge: httpx2.Response | None = None
        flow = self.provider.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request and _is_challenge(response):
                    if not self._interactive:
                        challenge = response
                        break
                    response = await self._asking_required_scope(response)
                await self._observe(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except OAuthFlowError as exc:  # its token and registration errors too
            raise self._failed(exc) from None
        except AuthError as exc:  # the sign-in refused in the browser
            raise self._fail(exc) from None
        finally:
            await flow.aclose()
        assert challenge is not None
        if _is_step_up(challenge):
            raise self._fail(self._more_scope_required(challenge))
        # A 401 without a browser: tokens another process stored, else a refresh; then, once the refresh
        # failed (its refresh token may have been rotated away by that process a moment ago), the store
        # once more.
        for after_refresh in (False, True):
            if await self._take_newer_stored_tokens(patience=after_refresh and self._had_token):
                assert context.current_tokens is not None
                request.headers["Authorization"] = f"Bearer {context.current_tokens.access_token}"
                response = yield request
                if response.status_code != 401:
                    return
            elif after_refresh:
                break
            if not after_refresh and context.can_refresh_token():
                context.token_expiry_time = _LONG_AGO  # the SDK's flow refreshes an expired token first
                flow = self.provider.async_auth_flow(request)
                try:
                    outgoing = await flow.__anext__()
                    while True:
                        response = yield outgoing
                        if outgoing is request and _is_challenge(response):
                            break
                        outgoing = await flow.asend(response)
                except StopAsyncIteration:
                    return
                except OAuthFlowError as exc:  # its token and registration errors too
                    raise self._failed(exc) from None
                except AuthError as exc:  # the sign-in refused in the browser
                    raise self._fail(exc) from None
                finally:
                    await flow.aclose()
                if response.status_code != 401:  # refreshed, and now short of scope
                    raise self._fail(self._more_scope_required(response))
        raise self._fail(self._sign_in_required())

    async def _asking_required_scope(self, response: httpx2.Response) -> httpx2.Response:
        """A 401 during a sign-in, its challenge widened by the scopes a server asked for since the last one
        (a 403 insufficient_scope seen by a connection), so that the SDK requests them too."""
        required = self._stored.required_scope()
        if required is None or response.status_code != 401:
            return response
        scope = union_scopes(extract_scope_from_www_auth(response), required)
        metadata_url = extract_resource_metadata_from_www_auth(response)
        challenge = f'Bearer scope="{scope}"' + (
            f', resource_metadata="{metadata_url}"' if metadata_url else ""
        )
        headers = {
            name: value
            for name, value in response.headers.items()
            if name.lower() not in ("www-authenticate", "content-encoding", "content-length")
        }
        headers["WWW-Authenticate"] = challenge
        return httpx2.Response(401, headers=headers, content=await response.aread(), request=response.request)

    async def _observe(self, response: httpx2.Response) -> None:
        """Look at the discovery answers on their way to the SDK: the protected resource's authorization
        server (take the registration made there), and that server's metadata (its token endpoint auth
        methods, for a configured client)."""
        if response.status_code != 200:
            return
        path = response.request.url.path
        context = self.provider.context
        if "/.well-known/oauth-protected-resource" in path:
            servers = (await _json_of(response)).get("authorization_servers")
            if isinstance(servers, list) and servers and isinstance(servers[0], str):
                current = context.client_info
                if current is None or (
                    current.issuer is not None and not issuers_match(current.issuer, servers[0])
                ):
                    registered = self._stored.registration_for(servers[0])
                    if registered is not None:
                        context.client_info = registered
        elif "/.well-known/oauth-authorization-server" in path or "/.well-known/openid-configuration" in path:
            methods = (await _json_of(response)).get("token_endpoint_auth_methods_supported")
            client = context.client_info
            if (
                isinstance(methods, list)
                and client is not None
                and client is self._stored.fixed_client
                and self._auth_config.token_endpoint_auth_method is None
                and client.token_endpoint_auth_method not in methods
            ):
                choices = ("client_secret_basic", "client_secret_post") if client.client_secret else ("none",)
                chosen = next((method for method in choices if method in methods), None)
                if chosen is not None:
                    client.token_endpoint_auth_method = chosen

    async def _take_newer_stored_tokens(self, *, patience: bool = False) -> bool:
        """Use the tokens another process stored since these were read; False if there are none (with
        `patience`, none within `_ROTATION_GRACE`)."""
        deadline = time.monotonic() + (_ROTATION_GRACE if patience else 0.0)
        while (tokens := self._stored.newer_tokens()) is None:
            if time.monotonic() >= deadline:
                return False
            await anyio.sleep(_ROTATION_POLL_INTERVAL)
        logger.debug("server %r: using the tokens another process stored", self._server_name)
        context = self.provider.context
        client = await self._stored.get_client_info()  # a sign-in elsewhere may have registered anew
        if client is not None:
            context.client_info = client
        context.current_tokens = tokens
        self._use_stored_expiry()
        if context.oauth_metadata is None:
            context.oauth_metadata = self._stored.metadata
        return True

    def _sign_in_required(self) -> SignInRequiredError:
        if self._had_token:
            problem = "its sign-in has expired or was revoked; sign in again"
        else:
            problem = "it needs you to sign in first"
        return SignInRequiredError(
            f"server {self._server_name!r} refused the connection (HTTP 401): {problem}: "
            f"{how_to_sign_in(self._server_name)}"
        )

    def _more_scope_required(self, response: httpx2.Response) -> SignInRequiredError:
        """A 403 insufficient_scope: the next sign-in asks for the scopes granted so far and the new ones."""
        tokens = self.provider.context.current_tokens
        granted = tokens.scope if tokens is not None else None
        scope = union_scopes(
            union_scopes(_scope(self._auth_config), granted), extract_scope_from_www_auth(response)
        )
        if scope:
            self._stored.require_scope(scope)
        return SignInRequiredError(
            f"server {self._server_name!r} refused the request (HTTP 403 insufficient_scope): it needs a "
            f"sign-in with the scopes {scope or '(unnamed)'}: {how_to_sign_in(self._server_name)}"
        )


class _MachineOAuth(ServerAuth):
    """The client-credentials grant: no user, a token fetched with the client's id and secret when needed."""

    def __init__(
        self, server_name: str, config: HttpServerConfig, storage: _StoredTokens, secrets: _Secrets
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
            scope=_scope(auth),
            issuer=auth.issuer,
        )
        super().__init__(server_name, provider, secrets)

    def _failed(self, exc: Exception) -> BaseException:
        return self._fail(
            AuthError(
                scrub(f"server {self._server_name!r}: getting a token with client_credentials failed: {exc}")
            )
        )


class _KeyOAuth(ServerAuth):
    """The client-credentials grant with `private_key_jwt`: the client proves itself with a short-lived JWT
    signed by its private key (the SDK's `PrivateKeyJWTOAuthProvider`), so no secret is ever sent."""

    def __init__(
        self, server_name: str, config: HttpServerConfig, storage: _StoredTokens, secrets: _Secrets
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
            scope=_scope(auth),
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
        storage: _StoredTokens,
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
                self._expiry is None or time.time() < self._expiry - _EXPIRY_MARGIN
            ):
                request.headers["Authorization"] = f"Bearer {self._tokens.access_token}"
            response = yield request
            if not _is_challenge(response):
                return
            scope = self._scope
            if _is_step_up(response):
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


class _GrantOAuth(ServerAuth):
    """A grant with no user and no client secret of its own making: a workload's JWT (`jwt_bearer`), or an
    identity assertion grant obtained from the enterprise identity provider (`identity_assertion`, the
    SDK's `IdentityAssertionOAuthProvider`)."""

    def __init__(
        self, server_name: str, config: HttpServerConfig, storage: _StoredTokens, secrets: _Secrets
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
                config.url, storage, auth.client_id, assertion, _scope(auth), auth.issuer
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
                scope=_scope(auth),
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
    server_name: str, auth: AuthConfig, id_token: str, audience: str, resource: str, secrets: _Secrets
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
    grant = (await _json_of(response)).get("access_token")
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


def _key_of(config: HttpServerConfig) -> str:
    assert config.auth is not None
    return token_key(config.url, config.auth.client_id)


def auth_factory(storage: TokenStorage, custom: Mapping[str, httpx2.Auth]) -> AuthFactory:
    """The hub's maker of each connection's auth: the host's own `httpx2.Auth` for the servers it named,
    the configured OAuth flow for the others (a fresh provider per connection)."""

    def make(config: ServerConfig) -> httpx2.Auth | None:
        if config.server_name in custom:
            return custom[config.server_name]
        if not isinstance(config, HttpServerConfig) or config.auth is None:
            return None
        secrets = _Secrets()
        stored = _StoredTokens(storage, _key_of(config), secrets)
        auth: ServerAuth
        if config.auth.type == "client_credentials":
            auth = _MachineOAuth(config.server_name, config, stored, secrets)
        elif config.auth.type == "private_key_jwt":
            auth = _KeyOAuth(config.server_name, config, stored, secrets)
        elif config.auth.type in ("jwt_bearer", "identity_assertion"):
            auth = _GrantOAuth(config.server_name, config, stored, secrets)
        else:  # a connection never signs in: its redirect address is never used
            auth = _UserOAuth(
                config.server_name, config, stored, secrets, redirect_uri="http://127.0.0.1/callback"
            )
        if config.auth.dpop:
            auth.dpop = _DPoP(stored, secrets)
        return auth

    return make


def forget_tokens(config: ServerConfig, storage: TokenStorage) -> bool:
    """Delete the stored tokens and registration of an OAuth server; True if there were any."""
    if not isinstance(config, HttpServerConfig) or config.auth is None:
        return False
    key = _key_of(config)
    existed = storage.load(key) is not None
    storage.delete(key)
    return existed


def stored_tokens_of(config: HttpServerConfig, storage: TokenStorage) -> bool:
    """Whether a token is stored for this server and client."""
    record = storage.load(_key_of(config)) if config.auth is not None else None
    return bool(record and record.get("tokens"))


# -- signing in -------------------------------------------------------------------------------------------


async def _sign_in(
    config: HttpServerConfig,
    storage: TokenStorage,
    open_url: Callable[[str], object],
    read_redirect: Callable[[], str] | None,
) -> None:
    assert config.auth is not None
    secrets = _Secrets()
    listener = RedirectListener(secrets)
    await listener.start(config.auth.redirect_port)
    reader = PasteReader(read_redirect, listener) if read_redirect is not None else None
    try:
        if reader is not None:
            reader.start()
        key = _key_of(config)
        draft = _Draft(storage, key)
        stored = _StoredTokens(draft, key, secrets, redirect_uri=listener.redirect_uri)

        async def redirect(url: str) -> None:
            listener.expect(url)
            # On its own thread: a host's callable may block (a browser starting, a test browser following
            # the redirects to this very listener).
            threading.Thread(target=open_url, args=(url,), name="mcp-sync:open-url", daemon=True).start()

        auth = _UserOAuth(
            config.server_name,
            config,
            stored,
            secrets,
            redirect_uri=listener.redirect_uri,
            redirect_handler=redirect,
            callback_handler=listener.wait,
        )
        if config.auth.dpop:
            auth.dpop = _DPoP(stored, secrets)
        try:
            await _connect_signing_in(config, auth)
        finally:
            secrets.release()
        if not stored_tokens_of(config, draft):
            raise AuthError(
                f"signing in to server {config.server_name!r} failed: the server never asked for a sign-in "
                "(it answered every request without one)"
            )
        stored.save_metadata(auth.provider.context.oauth_metadata)
        draft.commit()
    finally:
        if reader is not None:
            reader.stop()
        await listener.close()


async def _connect_signing_in(config: HttpServerConfig, auth: _UserOAuth) -> None:
    """Connect as a session does and list the tools, signing in wherever the server asks for it (the
    first request, or a later one), then disconnect; raises `AuthError` if the server refused."""
    failures: list[BaseException] = []
    with anyio.CancelScope() as scope:

        def failed(error: BaseException) -> None:
            failures.append(error)
            scope.cancel()  # the SDK would otherwise wait for an answer that never comes

        auth.on_failure = failed
        try:
            async with (
                httpx2.AsyncClient(
                    headers=dict(config.headers), auth=auth, timeout=_SIGN_IN_HTTP_TIMEOUT
                ) as http,
                Client(streamable_http_client(config.url, http_client=http)) as client,
            ):
                if client.server_capabilities.tools is not None:
                    await client.list_tools()
                auth.settle()
        except AuthError:
            raise
        except Exception as exc:
            while isinstance(exc, ExceptionGroup) and exc.exceptions:  # anyio wraps what escapes a Client
                exc = exc.exceptions[0]
            if isinstance(exc, AuthError):
                raise exc from None
            if not failures:
                logger.debug("signing in to server %r failed", config.server_name, exc_info=exc)
                raise AuthError(
                    scrub(f"signing in to server {config.server_name!r} failed: {describe(exc)}")
                ) from None
    if failures:
        raise failures[0]


def sign_in(
    config: HttpServerConfig,
    storage: TokenStorage,
    *,
    open_url: Callable[[str], object] | None = None,
    read_redirect: Callable[[], str] | None = None,
    timeout: float = 300.0,
) -> None:
    """Sign in to the server interactively and store its tokens; blocks until done, `timeout` or Ctrl-C.

    Runs on a loop thread of its own (the caller may be a notebook cell, whose thread has a loop). The
    stored tokens are replaced only when the sign-in succeeds. `read_redirect`, when given, may return
    the address the browser ended on (pasted by the user when the browser runs on another machine); see
    `PasteReader` for how it is called, and why the built-in `input` is read in a way of its own.
    """
    if config.auth is None or config.auth.type != "oauth":
        raise ConfigError(f"server {config.server_name!r} is not configured with auth: oauth")
    done: concurrent.futures.Future[None] = concurrent.futures.Future()
    loop = asyncio.new_event_loop()
    task_box: list[asyncio.Task[None]] = []

    async def main() -> None:
        task_box.append(asyncio.current_task())  # type: ignore[arg-type]
        async with asyncio.timeout(timeout):
            await _sign_in(config, storage, open_url or show_url(config.server_name), read_redirect)

    def run() -> None:
        try:
            loop.run_until_complete(main())
        except TimeoutError:
            done.set_exception(
                AuthError(f"signing in to server {config.server_name!r} did not finish within {timeout:g} s")
            )
        except BaseException as exc:
            done.set_exception(scrub_exception(exc))
        else:
            done.set_result(None)
        finally:
            loop.close()

    thread = threading.Thread(target=run, name=f"mcp-sync:login:{config.server_name}", daemon=True)
    thread.start()
    try:
        done.result()
    except BaseException:
        if not done.done() and task_box:  # interrupted: stop the sign-in before the exception goes on
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing left to stop
                loop.call_soon_threadsafe(task_box[0].cancel)
            thread.join(5.0)
        raise
    thread.join(5.0)
