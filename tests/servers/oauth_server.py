"""An MCP server behind OAuth, with its own authorization server, for the mcp_sync tests (`mcp` 2.x SDK).

Run as ``python oauth_server.py [flags]``; it serves Streamable HTTP on 127.0.0.1 and prints
``LISTENING <port>`` once listening. The authorization server is the SDK's endpoints over an
in-memory provider that approves every sign-in at once (the test "browser" just follows the
redirects): ``/authorize``, ``/token``, ``/register`` (dynamic registration), the metadata
documents, and ``/mcp`` (the MCP endpoint, which needs a bearer token). Refresh tokens rotate:
each refresh issues a new one and refuses the one it was given from then on.

Flags
-----
--port N                     0 (default) picks a free port.
--access-token-lifetime S    seconds an access token is valid (default 3600).
--client-id ID               a pre-registered confidential client that may use the
--client-secret SECRET       client_credentials grant (no user).
--events PATH                one JSON object per line: registered, authorized, token (with its
                             grant), refused (a request with an unknown or expired token).
--code-client-method METHOD  the pre-registered client may also sign users in (authorization code,
                             any loopback redirect), authenticating at the token endpoint with METHOD.
--advertise-auth-methods M,M the token endpoint auth methods the metadata advertises.
--open-initialize            `initialize` and notifications need no token (later requests do).
--call-scope SCOPE           tools/call needs SCOPE: a token without it is answered 403
                             insufficient_scope naming it.
--client-public-key PATH     the pre-registered client may instead prove itself with a JWT signed by
                             the private key of this PEM public key (private_key_jwt), and a workload
                             holding that key may present such a JWT as a jwt-bearer grant.
--dpop                       tokens are DPoP-bound (RFC 9449): /token and /mcp want a proof carrying
                             the server's nonce (the first proof without it is answered use_dpop_nonce),
                             and /mcp takes a token only with the DPoP scheme and the key it is bound to.
--refuse-api-key             a signed-in request to /mcp that carries an X-Api-Key header is refused
                             (403) with a JSON-RPC error that repeats the key, as a careless gateway does.
--idp-id-token TOKEN         an identity provider at /idp/token exchanges this ID token for an identity
                             assertion grant, which /token takes (jwt-bearer) from the pre-registered
                             client authenticated with client_secret_basic.

Test routes (no token needed)
-----------------------------
POST /test/expire-access-tokens    every access token issued so far stops working
POST /test/revoke-refresh-tokens   every refresh token issued so far is refused
POST /test/refuse-sign-ins         from now on the authorization endpoint answers every sign-in with
                                   the error access_denied (redirected back, as a user who says no)

Tools: ``whoami()`` -> the client id the token was issued to; ``echo(text)``.
"""

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import os
import re
import secrets
import socket
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class Events:
    def __init__(self, path: str | None) -> None:
        self._path = path

    def write(self, event: str, **fields: Any) -> None:
        if self._path is None:
            return
        with open(self._path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": event, "time": time.time(), **fields}) + "\n")


class Provider:
    """Approves every sign-in; keeps clients, codes and tokens in memory."""

    def __init__(self, lifetime: int, events: Events) -> None:
        self.lifetime = lifetime
        self.events = events
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.refuse_sign_ins = False

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.events.write("registered", client_id=client_info.client_id)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if self.refuse_sign_ins:
            self.events.write("refused", kind="sign_in", client_id=client.client_id)
            raise AuthorizeError(error="access_denied", error_description="the user did not approve")
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.events.write("authorized", client_id=client.client_id)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self.issue(client.client_id or "", authorization_code.scopes, "authorization_code")

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        if token is None or token.client_id != client.client_id:
            self.events.write("refused", kind="refresh_token")
            return None
        return token

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self.issue(client.client_id or "", scopes or refresh_token.scopes, "refresh_token")

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access.get(token)
        if access is None or (access.expires_at is not None and access.expires_at < time.time()):
            self.events.write("refused", kind="access_token")
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def issue(self, client_id: str, scopes: list[str], grant: str, *, refresh: bool = True) -> OAuthToken:
        access = "at-" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + self.lifetime
        )
        refresh_token = None
        if refresh:
            refresh_token = "rt-" + secrets.token_urlsafe(24)
            self.refresh[refresh_token] = RefreshToken(
                token=refresh_token, client_id=client_id, scopes=scopes
            )
        self.events.write("token", grant=grant, client_id=client_id)
        return OAuthToken(
            access_token=access,
            expires_in=self.lifetime,
            scope=" ".join(scopes) or None,
            refresh_token=refresh_token,
        )


class ClientCredentials:
    """ASGI wrapper answering the client_credentials grant at /token (the SDK's handler has no such
    grant); every other request goes through untouched. A wrong secret is refused with a description
    that repeats it."""

    def __init__(
        self,
        app: Any,
        provider: Provider,
        client_id: str | None,
        client_secret: str | None,
        public_key: str | None = None,
        issuer: str = "",
        id_token: str | None = None,
    ) -> None:
        self.id_token = id_token
        self.idp_key = ec.generate_private_key(ec.SECP256R1())
        self.app = app
        self.provider = provider
        self.client_id = client_id
        self.client_secret = client_secret
        self.public_key = public_key
        self.issuer = issuer

    async def exchange_id_token(self, form: dict[str, str], scope: Any, receive: Any, send: Any) -> None:
        """The identity provider's token exchange (RFC 8693): the user's ID token for an identity assertion
        grant naming the client, the authorization server (audience) and the MCP server (resource)."""
        if self.id_token is None or form.get("subject_token") != self.id_token or not form.get("audience"):
            await JSONResponse({"error": "invalid_grant"}, status_code=400)(scope, receive, send)
            return
        now = int(time.time())
        claims = {"sub": "user-1", "client_id": self.client_id, "aud": form["audience"], "iat": now}
        claims |= {"exp": now + 300, "resource": form.get("resource", "")}
        grant = jwt.encode(claims, self.idp_key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"})
        self.provider.events.write("token_exchange", client_id=form.get("client_id"))
        answer = {"access_token": grant, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"}
        await JSONResponse({**answer, "token_type": "N_A"})(scope, receive, send)

    async def answer_jwt_bearer(self, form: dict[str, str], scope: Any, receive: Any, send: Any) -> None:
        """A jwt-bearer grant: a workload's JWT (signed by the client's key), or an identity assertion grant
        from the identity provider presented by the pre-registered client with its secret (Basic)."""
        assertion = form.get("assertion", "")
        subject = None
        with contextlib.suppress(jwt.InvalidTokenError, ValueError):
            if self.public_key is not None:
                claims = jwt.decode(
                    assertion, self.public_key, algorithms=["ES256"], options={"verify_aud": False}
                )
                subject = claims["sub"] if claims.get("sub") == self.client_id else None
        if subject is None and self.id_token is not None:
            header = dict(scope["headers"]).get(b"authorization", b"").decode()
            basic = base64.b64decode(header[6:]).decode() if header.startswith("Basic ") else ""
            with contextlib.suppress(jwt.InvalidTokenError, ValueError):
                claims = jwt.decode(
                    assertion, self.idp_key.public_key(), algorithms=["ES256"], options={"verify_aud": False}
                )
                if (
                    basic == f"{self.client_id}:{self.client_secret}"
                    and claims.get("client_id") == self.client_id
                ):
                    subject = claims["client_id"]
        if subject is None:
            self.provider.events.write("refused", kind="jwt_bearer")
            await JSONResponse({"error": "invalid_grant"}, status_code=400)(scope, receive, send)
            return
        token = self.provider.issue(subject, (form.get("scope") or "").split(), JWT_BEARER, refresh=False)
        await JSONResponse(token.model_dump(exclude_none=True))(scope, receive, send)

    async def answer_assertion(self, form: dict[str, str], scope: Any, receive: Any, send: Any) -> None:
        """private_key_jwt: the assertion must be signed by the client's key, name it, and name us."""
        try:
            if self.public_key is None:
                raise jwt.InvalidTokenError("no client key is known")
            claims = jwt.decode(
                form["client_assertion"],
                self.public_key,
                algorithms=["ES256", "ES384", "RS256", "EdDSA"],
                options={"verify_aud": False},
            )
            if claims.get("sub") != self.client_id or str(claims.get("aud", "")).rstrip("/") != self.issuer:
                raise jwt.InvalidTokenError("wrong subject or audience")
        except jwt.InvalidTokenError as exc:
            self.provider.events.write("refused", kind="client_assertion")
            refused = JSONResponse(
                {"error": "invalid_client", "error_description": str(exc)}, status_code=401
            )
            await refused(scope, receive, send)
            return
        token = self.provider.issue(
            claims["sub"], (form.get("scope") or "").split(), "client_credentials", refresh=False
        )
        await JSONResponse(token.model_dump(exclude_none=True))(scope, receive, send)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/idp/token" and scope["method"] == "POST":
            form = {key: values[0] for key, values in parse_qs((await read_body(receive)).decode()).items()}
            await self.exchange_id_token(form, scope, receive, send)
            return
        if scope["type"] != "http" or scope["path"] != "/token" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        form = {key: values[0] for key, values in parse_qs(body.decode()).items()}
        if form.get("grant_type") == JWT_BEARER:
            await self.answer_jwt_bearer(form, scope, receive, send)
            return
        if form.get("grant_type") != "client_credentials":
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        if form.get("client_assertion") is not None:
            await self.answer_assertion(form, scope, receive, send)
            return
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        header = dict(scope["headers"]).get(b"authorization", b"").decode()
        if header.startswith("Basic "):
            decoded = base64.b64decode(header[6:]).decode()
            client_id, _, client_secret = (unquote(part) for part in decoded.partition(":"))
        if self.client_id is None or (client_id, client_secret) != (self.client_id, self.client_secret):
            # A careless authorization server: it repeats the refused secret back.
            refused = {"error": "invalid_client", "error_description": f"wrong secret {client_secret!r}"}
            response: Response = JSONResponse(refused, status_code=401)
        else:
            token = self.provider.issue(
                client_id, (form.get("scope") or "").split(), "client_credentials", refresh=False
            )
            response = JSONResponse(
                token.model_dump(exclude_none=True), headers={"Cache-Control": "no-store"}
            )
        await response(scope, receive, send)


class LoopbackClient(OAuthClientInformationFull):
    """A pre-registered client whose redirect may be any loopback listener's (its port changes)."""

    def validate_redirect_uri(self, redirect_uri: Any) -> Any:
        if redirect_uri is not None and re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", str(redirect_uri)):
            return redirect_uri
        return super().validate_redirect_uri(redirect_uri)


async def read_body(receive: Any) -> bytes:
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


def replaying(body: bytes, receive: Any) -> Any:
    replayed = False

    async def replay() -> Any:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class Gate:
    """ASGI wrapper for the flags that change what the MCP endpoint asks for (--open-initialize,
    --call-scope) and what the metadata advertises (--advertise-auth-methods)."""

    def __init__(self, app: Any, provider: Provider, options: argparse.Namespace, base: str) -> None:
        self.app = app
        self.provider = provider
        self.options = options
        self.base = base
        self.anonymous = "anon-" + secrets.token_urlsafe(24)
        provider.access[self.anonymous] = AccessToken(token=self.anonymous, client_id="anonymous", scopes=[])

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/.well-known/oauth-authorization-server" and self.options.advertise_auth_methods:
            await self.advertise(scope, receive, send)
            return
        if scope["path"] != "/mcp" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        try:
            method = json.loads(body).get("method") or ""
        except (ValueError, AttributeError):
            method = ""
        headers = dict(scope["headers"])
        bearer = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
        if self.options.refuse_api_key and bearer in self.provider.access and b"x-api-key" in headers:
            key = headers[b"x-api-key"].decode()
            try:
                request_id = json.loads(body).get("id")
            except (ValueError, AttributeError):
                request_id = None
            error = {"code": -32001, "message": f"the API key {key!r} is not allowed here"}
            refused = JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=403)
            self.provider.events.write("refused", kind="api_key")
            await refused(scope, receive, send)
            return
        if (
            self.options.open_initialize
            and not bearer
            and (method == "initialize" or method.startswith("notifications/"))
        ):
            scope = {
                **scope,
                "headers": [*scope["headers"], (b"authorization", f"Bearer {self.anonymous}".encode())],
            }
        elif self.options.call_scope and method == "tools/call":
            token = self.provider.access.get(bearer)
            if token is not None and self.options.call_scope not in token.scopes:
                metadata = f"{self.base}/.well-known/oauth-protected-resource/mcp"
                challenge = (
                    f'Bearer error="insufficient_scope", scope="{self.options.call_scope}", '
                    f'resource_metadata="{metadata}"'
                )
                refused = JSONResponse(
                    {"error": "insufficient_scope"}, status_code=403, headers={"WWW-Authenticate": challenge}
                )
                self.provider.events.write("refused", kind="scope")
                await refused(scope, receive, send)
                return
        await self.app(scope, replaying(body, receive), send)

    async def advertise(self, scope: Any, receive: Any, send: Any) -> None:
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def keep(message: Any) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, keep)
        metadata = json.loads(b"".join(chunks))
        metadata["token_endpoint_auth_methods_supported"] = self.options.advertise_auth_methods.split(",")
        await JSONResponse(metadata)(scope, receive, send)


class DPoPGate:
    """ASGI wrapper for --dpop: checks the proofs at /token and /mcp, binds each token to the proof's key."""

    def __init__(self, app: Any, events: Events, base: str) -> None:
        self.app = app
        self.events = events
        self.base = base
        self.nonce = "n-" + secrets.token_urlsafe(8)
        self.bound: dict[str, str] = {}  # access token -> the key's JWK, as JSON

    def proof(self, scope: Any, path: str, token: str | None) -> tuple[str | None, str]:
        """The proof's key (its JWK as JSON) and "" if it is good, else None and what is wrong."""
        headers = dict(scope["headers"])
        proof = headers.get(b"dpop", b"").decode()
        try:
            jwk = jwt.get_unverified_header(proof)["jwk"]
            claims = jwt.decode(proof, jwt.PyJWK(jwk).key, algorithms=["ES256"])
        except (jwt.PyJWTError, KeyError, ValueError):
            return None, "invalid_dpop_proof"
        if claims.get("htm") != scope["method"] or claims.get("htu") != self.base + path:
            return None, "invalid_dpop_proof"
        if token is not None:
            digest = hashlib.sha256(token.encode()).digest()
            if claims.get("ath") != base64.urlsafe_b64encode(digest).rstrip(b"=").decode():
                return None, "invalid_dpop_proof"
        if claims.get("nonce") != self.nonce:
            self.events.write("dpop_nonce", path=path)
            return None, "use_dpop_nonce"
        return json.dumps(jwk, sort_keys=True), ""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] not in ("/token", "/mcp"):
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/token":
            key, problem = self.proof(scope, "/token", None)
            if key is None:
                refused = JSONResponse(
                    {"error": problem}, status_code=400, headers={"DPoP-Nonce": self.nonce}
                )
                await refused(scope, receive, send)
                return
            start: dict[str, Any] = {}
            chunks: list[bytes] = []

            async def keep(message: Any) -> None:
                if message["type"] == "http.response.start":
                    start.update(message)
                else:
                    chunks.append(message.get("body", b""))

            await self.app(scope, receive, keep)
            answer = json.loads(b"".join(chunks))
            if start.get("status") == 200 and "access_token" in answer:
                self.bound[answer["access_token"]] = key
                answer["token_type"] = "DPoP"
            await JSONResponse(answer, status_code=start.get("status", 500))(scope, receive, send)
            return
        authorization = dict(scope["headers"]).get(b"authorization", b"").decode()
        kind, _, token = authorization.partition(" ")
        if kind == "Bearer" and token in self.bound:
            self.events.write("refused", kind="dpop_token_as_bearer")
            await JSONResponse({"error": "invalid_token"}, status_code=401)(scope, receive, send)
            return
        if kind == "DPoP":
            key, problem = self.proof(scope, "/mcp", token)
            if key is None or self.bound.get(token) != key:
                challenge = f'DPoP error="{problem or "invalid_token"}"'
                headers = {"WWW-Authenticate": challenge, "DPoP-Nonce": self.nonce}
                await JSONResponse({"error": problem}, status_code=401, headers=headers)(scope, receive, send)
                return
            rest = [(name, value) for name, value in scope["headers"] if name != b"authorization"]
            scope = {**scope, "headers": [*rest, (b"authorization", f"Bearer {token}".encode())]}
        await self.app(scope, receive, send)


def build(port: int, options: argparse.Namespace, events: Events) -> Any:
    base = f"http://127.0.0.1:{port}"
    provider = Provider(options.access_token_lifetime, events)
    server = MCPServer(
        "oauth-fixture",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(enabled=True),
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def whoami() -> str:
        token = get_access_token()
        return token.client_id if token is not None else "<nobody>"

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.custom_route("/test/expire-access-tokens", methods=["POST"])
    async def expire(_request: Request) -> Response:
        for token in provider.access.values():
            token.expires_at = 0
        return JSONResponse({"expired": len(provider.access)})

    @server.custom_route("/test/revoke-refresh-tokens", methods=["POST"])
    async def revoke(_request: Request) -> Response:
        count = len(provider.refresh)
        provider.refresh.clear()
        return JSONResponse({"revoked": count})

    @server.custom_route("/test/refuse-sign-ins", methods=["POST"])
    async def refuse(_request: Request) -> Response:
        provider.refuse_sign_ins = True
        return JSONResponse({"refusing": True})

    if options.code_client_method and options.client_id:
        provider.clients[options.client_id] = LoopbackClient(
            client_id=options.client_id,
            client_secret=options.client_secret,
            redirect_uris=["http://127.0.0.1/callback"],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method=options.code_client_method,
            scope=options.call_scope,
        )

    app = server.streamable_http_app(host="127.0.0.1")
    gated = Gate(app, provider, options, base)
    public_key = Path(options.client_public_key).read_text() if options.client_public_key else None
    outer = ClientCredentials(
        gated, provider, options.client_id, options.client_secret, public_key, base, options.idp_id_token
    )
    return DPoPGate(outer, events, base) if options.dpop else outer


async def serve(options: argparse.Namespace) -> None:
    events = Events(options.events)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", options.port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        build(port, options, events),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=2,
        lifespan="on",
    )
    web = uvicorn.Server(config)
    task = asyncio.create_task(web.serve(sockets=[sock]))
    while not web.started:
        if task.done():
            await task
            raise SystemExit("uvicorn stopped before it started listening")
        await asyncio.sleep(0.01)
    events.write("ready", pid=os.getpid(), port=port)
    sys.stdout.write(f"LISTENING {port}\n")
    sys.stdout.flush()
    await task


def main() -> None:
    parser = argparse.ArgumentParser(description="mcp_sync test MCP server behind OAuth")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--access-token-lifetime", type=int, default=3600)
    parser.add_argument("--client-id")
    parser.add_argument("--client-secret")
    parser.add_argument("--events")
    parser.add_argument("--code-client-method")
    parser.add_argument("--advertise-auth-methods")
    parser.add_argument("--open-initialize", action="store_true")
    parser.add_argument("--call-scope")
    parser.add_argument("--client-public-key")
    parser.add_argument("--idp-id-token")
    parser.add_argument("--refuse-api-key", action="store_true")
    parser.add_argument("--dpop", action="store_true")
    # HttpServer passes these for every server it runs.
    parser.add_argument("--transport", default="http")
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
