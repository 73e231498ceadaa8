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
import json
import os
import secrets
import socket
import sys
import time
from typing import Any
from urllib.parse import parse_qs, unquote

import uvicorn
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
        self, app: Any, provider: Provider, client_id: str | None, client_secret: str | None
    ) -> None:
        self.app = app
        self.provider = provider
        self.client_id = client_id
        self.client_secret = client_secret

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
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

    app = server.streamable_http_app(host="127.0.0.1")
    return ClientCredentials(app, provider, options.client_id, options.client_secret)


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
    # HttpServer passes these for every server it runs.
    parser.add_argument("--transport", default="http")
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
