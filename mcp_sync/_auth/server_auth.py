"""`ServerAuth`: the `httpx2.Auth` a connection signs its requests with, driving one of the SDK's
providers request by request, and the DPoP proofs (`DPoP`) any grant may add.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Callable
from secrets import token_urlsafe
from typing import Any

import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.client.auth import OAuthFlowError
from mcp.client.auth.utils import (
    extract_field_from_www_auth,
)

from .._config import AuthConfig
from .._values.errors import AuthError
from .._values.secrets import scrub
from .tokens import Secrets, StoredTokens

__all__ = [
    "EXPIRY_MARGIN",
    "DPoP",
    "ServerAuth",
    "how_to_sign_in",
    "is_challenge",
    "is_step_up",
    "json_of",
    "requested_scope",
]


logger = logging.getLogger("mcp_sync")

# A stored access token this close to its expiry is refreshed before it is used.
EXPIRY_MARGIN = 30.0


def how_to_sign_in(server_name: str) -> str:
    return f"sign in with hub.login({server_name!r}), or `mcp-sync login CONFIG {server_name}`"


def requested_scope(config: AuthConfig) -> str | None:
    return " ".join(config.scopes) or None


def is_challenge(response: httpx2.Response) -> bool:
    """A 401, or a 403 insufficient_scope: the request needs (other) authorization."""
    return response.status_code == 401 or is_step_up(response)


def is_step_up(response: httpx2.Response) -> bool:
    return (
        response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope"
    )


async def json_of(response: httpx2.Response) -> dict[str, Any]:
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
    dpop: DPoP | None = None

    def __init__(self, server_name: str, provider: httpx2.Auth, secrets: Secrets) -> None:
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


class DPoP:
    """DPoP (RFC 9449, SEP-1932): proof-of-possession tokens. Each token request and each request to the
    server carries a fresh proof signed with the client's key (ES256), the token is presented with the
    `DPoP` scheme, and a server's `use_dpop_nonce` challenge is answered once with its nonce. The key is
    kept with the tokens it is bound to."""

    def __init__(self, storage: StoredTokens, secrets: Secrets) -> None:
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
        body = await json_of(response)
        if str(body.get("token_type", "")).lower() != "dpop":
            return response
        headers = {
            name: value
            for name, value in response.headers.items()
            if name.lower() not in ("content-encoding", "content-length", "content-type")
        }
        return httpx2.Response(200, headers=headers, json={**body, "token_type": "Bearer"}, request=request)
