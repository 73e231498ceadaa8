"""`auth: oauth`: the authorization code grant of a user, on the SDK's `OAuthClientProvider`, with
stored tokens shared between processes (refresh-token rotation) and scope step-up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.utils import (
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    issuers_match,
    union_scopes,
)
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
)

from .._config import HttpServerConfig
from .._values.errors import AuthError, SignInRequiredError
from .server_auth import (
    EXPIRY_MARGIN,
    ServerAuth,
    how_to_sign_in,
    is_challenge,
    is_step_up,
    json_of,
    requested_scope,
)
from .tokens import Secrets, StoredTokens

__all__ = ["UserOAuth"]


logger = logging.getLogger("mcp_sync")

# A process that wins a race to refresh stores its tokens a moment after the authorization server rotated
# the refresh token: a refresh refused meanwhile looks in the store for this long before asking for a sign-in.
_ROTATION_GRACE = 1.0

# How often the store is read during that grace.
_ROTATION_POLL_INTERVAL = 0.1

# A token expiry long past: the SDK's flow refreshes such a token before sending the request.
_LONG_AGO = 1.0


class UserOAuth(ServerAuth):
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
        storage: StoredTokens,
        secrets: Secrets,
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
            scope=requested_scope(auth),
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
            self._stored.expires_at - EXPIRY_MARGIN if self._stored.expires_at is not None else None
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
                if outgoing is request and is_challenge(response):
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
        if is_step_up(challenge):
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
                        if outgoing is request and is_challenge(response):
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
            servers = (await json_of(response)).get("authorization_servers")
            if isinstance(servers, list) and servers and isinstance(servers[0], str):
                current = context.client_info
                if current is None or (
                    current.issuer is not None and not issuers_match(current.issuer, servers[0])
                ):
                    registered = self._stored.registration_for(servers[0])
                    if registered is not None:
                        context.client_info = registered
        elif "/.well-known/oauth-authorization-server" in path or "/.well-known/openid-configuration" in path:
            methods = (await json_of(response)).get("token_endpoint_auth_methods_supported")
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
            union_scopes(requested_scope(self._auth_config), granted), extract_scope_from_www_auth(response)
        )
        if scope:
            self._stored.require_scope(scope)
        return SignInRequiredError(
            f"server {self._server_name!r} refused the request (HTTP 403 insufficient_scope): it needs a "
            f"sign-in with the scopes {scope or '(unnamed)'}: {how_to_sign_in(self._server_name)}"
        )
