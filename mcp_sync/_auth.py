"""Signing in to Streamable HTTP servers: the `httpx2.Auth` each connection uses, and the sign-in step.

A server configured with `auth: oauth` is signed in to once, by a user, in a browser
(authorization code with PKCE, via the `mcp` SDK's `OAuthClientProvider`): `sign_in()`
opens a one-shot listener on 127.0.0.1 for the redirect, hands the authorization URL to
the host (by default: logged at WARNING and opened in a browser when there is one), and
also accepts the redirected address pasted back, for a browser on another machine. Only
a redirect carrying this sign-in's `state` completes it. The new tokens replace the stored
ones only once the sign-in succeeded: one that times out, is interrupted or is refused
leaves the working tokens as they were. Threads: the sign-in runs on a loop thread of its
own (`mcp-sync:login:<server>`), the host's `open_url` on `mcp-sync:open-url`, and the
pasted-address reader on `mcp-sync:paste`, which reads standard input only while the
sign-in runs.

Connections then use the stored tokens without a browser (on their server's loop thread),
refreshing the access token before it expires and on a 401. Several processes may share
one token store, and an authorization server may rotate refresh tokens, so one process's
refresh makes the others' refresh token worthless: before refreshing, and again when a
refresh is refused, the store is read, and tokens another process stored meanwhile (with
its client registration) are used. A connection never starts a sign-in: a server with no
usable token fails with `SignInRequiredError`, which says how to sign in.

`auth: client_credentials` needs no user: the SDK's client-credentials provider gets a
token with the configured client id and secret whenever it needs one.

Every token, code and client secret seen is registered with `_secrets` while in use, so
none appears in a log record or an error.
"""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import contextlib
import hmac
import logging
import os
import select
import sys
import threading
import time
import webbrowser
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)

from ._config import AuthConfig, HttpServerConfig, ServerConfig
from ._errors import AuthError, ConfigError, SignInRequiredError
from ._secrets import SecretHandle, scrub, scrub_exception
from ._secrets import register as register_secrets
from ._token_store import TokenStorage, token_key

__all__ = ["AuthFactory", "ServerAuth", "auth_factory", "forget_tokens", "sign_in", "stored_tokens_of"]

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
# The redirect path of the one-shot listener.
_CALLBACK_PATH = "/callback"
# How long the listener gives a browser to send its request once connected.
_REQUEST_READ_TIMEOUT = 10.0
# How long the end of a sign-in waits for its stdin reader to stop (it is woken at once; this only bounds it).
_PASTE_READER_STOP_TIMEOUT = 2.0
# The protocol version named in the sign-in's first request (it only decides the OAuth `resource` parameter).
_SIGN_IN_PROTOCOL_VERSION = "2025-11-25"


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

    `redirect_uri`: a registration made for another redirect address is not offered (the sign-in registers
    again), since the authorization server would refuse it.
    """

    def __init__(
        self, storage: TokenStorage, key: str, secrets: _Secrets, *, redirect_uri: str | None = None
    ) -> None:
        self._storage = storage
        self._key = key
        self._secrets = secrets
        self._redirect_uri = redirect_uri
        self.expires_at: float | None = None
        self.metadata: OAuthMetadata | None = None
        # The access token this object last read or wrote: a different one in the store is another process's.
        self._seen: str | None = None

    def _load(self) -> dict[str, Any]:
        return self._storage.load(self._key) or {}

    async def get_tokens(self) -> OAuthToken | None:
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

    async def newer_tokens(self) -> OAuthToken | None:
        """The stored tokens if they are not the ones this object last read or wrote (another process
        refreshed or signed in since), else None."""
        stored = self._load().get("tokens")
        if not isinstance(stored, dict) or stored.get("access_token") in (None, self._seen):
            return None
        return await self.get_tokens()

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

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        info = self._load().get("client_info")
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

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._secrets.keep(client_info.client_secret)
        record = self._load()
        record["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        self._storage.save(self._key, record)

    def save_metadata(self, metadata: OAuthMetadata | None) -> None:
        """Keep the authorization server's endpoints with the tokens: a later run refreshes at the right one
        without discovering them first."""
        record = self._load()
        if metadata is None or not record:
            return
        record["oauth_metadata"] = metadata.model_dump(mode="json", exclude_none=True)
        self._storage.save(self._key, record)



class _Draft:
    """A `TokenStorage` of one record held in memory until `commit()`, so that a sign-in replaces the
    stored tokens only once it succeeded. It starts from the stored record without its tokens: the
    client registration and the endpoints are reused, and the sign-in is a new one."""

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
        """Replace the stored record with this one."""
        self._storage.save(self._key, self._record)


# -- the providers ----------------------------------------------------------------------------------------


class ServerAuth:
    """What a session needs of the auth objects made here: where to report that the server needs a
    sign-in, and to let go of the secrets they registered once the connection ends."""

    on_failure: Callable[[BaseException], None] | None = None
    _secrets: _Secrets

    def release_secrets(self) -> None:
        self._secrets.release()

    def _fail(self, error: BaseException) -> BaseException:
        if self.on_failure is not None:
            self.on_failure(error)
        return error


class _UserOAuth(ServerAuth, OAuthClientProvider):
    """Authorization code with PKCE, for a server a user signs in to.

    On top of the SDK's provider: a stored token's expiry is known after a restart (so it is refreshed
    before use). A token that ran out, or a 401, is first answered by tokens another process stored
    meanwhile (with rotating refresh tokens, its refresh made the one in hand worthless), then by a
    refresh, then, if that is refused, by the store once more. Without `interactive`, a 401 that none of
    these fixes raises `SignInRequiredError` instead of starting a browser sign-in.
    """

    def __init__(
        self,
        server_name: str,
        config: HttpServerConfig,
        storage: _StoredTokens,
        secrets: _Secrets,
        *,
        redirect_uri: str,
        redirect_handler: Callable[[str], Any] | None = None,
        callback_handler: Callable[[], Any] | None = None,
    ) -> None:
        assert config.auth is not None
        metadata = OAuthClientMetadata(
            redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic parses the str
            client_name="mcp_sync",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_post" if config.auth.client_secret else "none",
            scope=_scope(config.auth),
        )
        super().__init__(
            server_url=config.url,
            client_metadata=metadata,
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
        )
        self._server_name = server_name
        self._auth_config = config.auth
        self._stored = storage
        self._secrets = secrets
        self._interactive = redirect_handler is not None
        self._redirect_uri = redirect_uri
        self._had_token = False

    async def _initialize(self) -> None:
        await super()._initialize()
        self._had_token = self.context.current_tokens is not None
        self._use_stored_expiry()
        if self.context.oauth_metadata is None:
            self.context.oauth_metadata = self._stored.metadata
        if self.context.client_info is None and self._auth_config.client_id is not None:
            self.context.client_info = OAuthClientInformationFull(
                client_id=self._auth_config.client_id,
                client_secret=self._auth_config.client_secret,
                redirect_uris=[self._redirect_uri],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method="client_secret_post"
                if self._auth_config.client_secret
                else "none",
            )

    def _use_stored_expiry(self) -> None:
        if self._stored.expires_at is not None:
            self.context.token_expiry_time = self._stored.expires_at - _EXPIRY_MARGIN

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self._initialized and not self.context.is_token_valid():
            async with self.context.lock:  # before refreshing: another process may have done it already
                await self._take_newer_stored_tokens()
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request and response.status_code == 401:
                    # Newer tokens another process stored (it refreshed, or signed in again), else a refresh;
                    # then, once the refresh failed (its refresh token may have been rotated away by that
                    # process a moment ago), the store once more.
                    for after_refresh in (False, True):
                        if await self._take_newer_stored_tokens(patience=after_refresh and self._had_token):
                            self._add_auth_header(request)
                            response = yield request
                            if response.status_code != 401:
                                break
                        elif after_refresh:
                            break
                        if self.context.can_refresh_token():
                            refresh_response = yield await self._refresh_token()
                            if await self._handle_refresh_response(refresh_response):
                                self._add_auth_header(request)
                                response = yield request
                                if response.status_code != 401:
                                    break
                            else:
                                self._initialized = False
                    if response.status_code == 401 and not self._interactive:
                        raise self._fail(self._sign_in_required())
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _take_newer_stored_tokens(self, *, patience: bool = False) -> bool:
        """Use the tokens another process stored since these were read; False if there are none (with
        `patience`, none within `_ROTATION_GRACE`)."""
        deadline = time.monotonic() + (_ROTATION_GRACE if patience else 0.0)
        while (tokens := await self._stored.newer_tokens()) is None:
            if time.monotonic() >= deadline:
                return False
            await anyio.sleep(_ROTATION_POLL_INTERVAL)
        logger.debug("server %r: using the tokens another process stored", self._server_name)
        client = await self._stored.get_client_info()  # a sign-in elsewhere may have registered anew
        if client is not None:
            self.context.client_info = client
        self.context.current_tokens = tokens
        self.context.token_expiry_time = None
        self._use_stored_expiry()
        return True

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        self._stored.save_metadata(self.context.oauth_metadata)

    def _sign_in_required(self) -> SignInRequiredError:
        if self._had_token:
            problem = "its sign-in has expired or was revoked; sign in again"
        else:
            problem = "it needs you to sign in first"
        return SignInRequiredError(
            f"server {self._server_name!r} refused the connection (HTTP 401): {problem}: "
            f"{how_to_sign_in(self._server_name)}"
        )


class _MachineOAuth(ServerAuth, ClientCredentialsOAuthProvider):
    """The client-credentials grant: no user, a token fetched with the client's id and secret when needed."""

    def __init__(
        self, server_name: str, config: HttpServerConfig, storage: _StoredTokens, secrets: _Secrets
    ) -> None:
        auth = config.auth
        assert auth is not None and auth.client_id is not None and auth.client_secret is not None
        secrets.keep(auth.client_secret)
        self._secrets = secrets
        self._server_name = server_name
        super().__init__(
            server_url=config.url,
            storage=storage,
            client_id=auth.client_id,
            client_secret=auth.client_secret,
            scope=_scope(auth),
            issuer=auth.issuer,
        )

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except OAuthFlowError as exc:
            raise self._fail(
                AuthError(
                    scrub(
                        f"server {self._server_name!r}: getting a token with client_credentials failed: {exc}"
                    )
                )
            ) from None
        finally:
            await flow.aclose()


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
        if config.auth.type == "client_credentials":
            return _MachineOAuth(config.server_name, config, stored, secrets)
        # Never used: a connection does not sign in. The registration for the real address is made at sign-in.
        return _UserOAuth(
            config.server_name, config, stored, secrets, redirect_uri="http://127.0.0.1/callback"
        )

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


def open_browser(url: str) -> None:
    """Open `url` in a browser when this machine has a display, or in the browser `$BROWSER` names (set
    by VS Code Remote and Codespaces, which forward it to the user's browser); never a text-mode browser
    in the terminal."""
    display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    try:
        if sys.platform in ("darwin", "win32") or display:
            webbrowser.open(url)  # honours $BROWSER first
        elif os.environ.get("BROWSER"):
            _open_with_browser_variable(url, os.environ["BROWSER"])
    except Exception as exc:  # no browser: the address shown still works
        logger.debug("could not open a browser: %s", exc)


def _open_with_browser_variable(url: str, value: str) -> None:
    """Try each command of `$BROWSER` (separated by `os.pathsep`) as `webbrowser` does, and only those."""
    for choice in filter(None, value.split(os.pathsep)):
        try:
            controller = webbrowser.get(choice)
        except webbrowser.Error:  # set after `webbrowser` first read it: run the command as it would
            controller = webbrowser.GenericBrowser(choice)
        if controller.open(url):
            return


def show_url(server_name: str) -> Callable[[str], None]:
    """The default way to hand the authorization URL to the user: logged at WARNING, and opened in a
    browser when there is one."""

    def show(url: str) -> None:
        logger.warning("to sign in to server %r, open this address in a browser: %s", server_name, url)
        open_browser(url)

    return show


def _query_of(address: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(address.strip()).query).items()}


class _RedirectListener:
    """A one-shot HTTP listener on 127.0.0.1 for the authorization server's redirect; a redirected
    address pasted back by the user (`accept`) completes it too.

    Only a redirect carrying the `state` of this sign-in's authorization URL (`expect`) counts: any
    other request to the redirect path (another local program, a page guessing the port) is answered
    400 and ignored, and the listener goes on waiting.
    """

    def __init__(self, secrets: _Secrets) -> None:
        self._secrets = secrets
        self._server: asyncio.Server | None = None
        self._loop = asyncio.get_running_loop()
        self._result: asyncio.Future[AuthorizationCodeResult] = self._loop.create_future()
        self._state: str | None = None
        self.port = 0

    async def start(self, port: int | None) -> None:
        try:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", port or 0)
        except OSError as exc:
            raise AuthError(
                f"cannot listen for the sign-in redirect on 127.0.0.1:{port}: {exc.strerror or exc}"
                + ("; choose another redirect_port" if port else "")
            ) from None
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{_CALLBACK_PATH}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def wait(self) -> AuthorizationCodeResult:
        return await self._result

    def expect(self, authorization_url: str) -> None:
        """Take the `state` of the authorization URL about to be opened: the redirect must carry it."""
        self._state = _query_of(authorization_url).get("state")
        self._secrets.keep(self._state)

    def accept(self, address: str) -> bool:
        """Complete with a redirected address the user pasted (any thread); False if it is not this
        sign-in's redirect."""
        params = _query_of(address)
        if not self._is_redirect(params):
            return False
        with contextlib.suppress(RuntimeError):  # the sign-in ended meanwhile
            self._loop.call_soon_threadsafe(self._complete, params)
        return True

    def _is_redirect(self, params: Mapping[str, str]) -> bool:
        state = params.get("state")
        return (
            ("code" in params or "error" in params)
            and self._state is not None
            and state is not None
            and hmac.compare_digest(state.encode(), self._state.encode())
        )

    def _complete(self, params: Mapping[str, str]) -> bool:
        if self._result.done():
            return False
        self._secrets.keep(params.get("code"))
        if "error" in params:
            reason = params["error"] + (
                f" ({params['error_description']})" if "error_description" in params else ""
            )
            self._result.set_exception(AuthError(f"the authorization server refused the sign-in: {reason}"))
        else:
            self._result.set_result(
                AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))
            )
        return True

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_REQUEST_READ_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
            method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            parts = urlsplit(target)
            if method != "GET" or parts.path != _CALLBACK_PATH:
                status, body = "404 Not Found", "<p>Not the sign-in redirect.</p>"
            elif not self._is_redirect(params := _query_of(target)):
                logger.warning(
                    "ignored a request to the sign-in redirect address that is not this sign-in's "
                    "(its state does not match): another program or a web page sent it"
                )
                status, body = "400 Bad Request", "<p>Not the redirect of this sign-in: ignored.</p>"
            elif self._complete(params):
                status, body = (
                    "200 OK",
                    "<h1>Signed in</h1><p>You can close this tab and return to your program.</p>",
                )
            else:
                status, body = "400 Bad Request", "<p>This sign-in has already ended.</p>"
            payload = f"<!doctype html><meta charset=utf-8><title>mcp_sync</title>{body}".encode()
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
        except (TimeoutError, ValueError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()


def _is_builtin_input(read: Callable[[], str]) -> bool:
    """The built-in `input` itself (not a replacement such as a notebook kernel's, read another way)."""
    return getattr(read, "__self__", None) is builtins and getattr(read, "__name__", None) == "input"


def _stdin_descriptor() -> int | None:
    """Standard input's file descriptor when `select` can wait on it (not on Windows, nor in a notebook)."""
    if sys.platform == "win32" or sys.stdin is None:
        return None
    try:
        return sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return None


class _PasteReader:
    """Reads the redirected addresses a user pastes, on a thread of its own, until one is accepted or
    the sign-in ends (`stop()`).

    The built-in `input` is read here from standard input's descriptor, a byte at a time and only while
    the sign-in runs: `stop()` ends the wait at once and no byte after the pasted line is taken, so the
    program's next `input()` gets its own line. Any other callable is called as it is; one still blocked
    when the sign-in ends is left to return on its own, and what it returns is ignored.
    """

    def __init__(self, read_redirect: Callable[[], str], listener: _RedirectListener) -> None:
        self._listener = listener
        self._stopped = threading.Event()
        self._descriptor = _stdin_descriptor() if _is_builtin_input(read_redirect) else None
        self._read = read_redirect
        self._wake: tuple[int, int] | None = None
        self._wake_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="mcp-sync:paste", daemon=True)

    def start(self) -> None:
        if self._descriptor is not None:
            self._wake = os.pipe()
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        with self._wake_lock:
            if self._wake is not None:
                os.write(self._wake[1], b"x")
        if self._descriptor is not None and self._thread.is_alive():
            self._thread.join(_PASTE_READER_STOP_TIMEOUT)

    def _run(self) -> None:
        try:
            while not self._stopped.is_set():
                try:
                    address = self._read_line() if self._descriptor is not None else self._read()
                except (EOFError, OSError, RuntimeError):
                    return
                if address is None or self._stopped.is_set():
                    return
                if self._listener.accept(address):
                    return
                logger.warning(
                    "that is not the address the browser was sent to (it has ?code=...&state=...)"
                )
        finally:
            with self._wake_lock:
                if self._wake is not None:
                    for descriptor in self._wake:
                        os.close(descriptor)
                    self._wake = None

    def _read_line(self) -> str | None:
        """One line of standard input, or None once stopped; raises EOFError at the end of the input."""
        assert self._descriptor is not None and self._wake is not None
        line = bytearray()
        while True:
            ready, _, _ = select.select([self._descriptor, self._wake[0]], [], [])
            if self._wake[0] in ready:
                return None
            try:
                byte = os.read(self._descriptor, 1)
            except BlockingIOError:  # a non-blocking descriptor another reader drained first
                continue
            if not byte:
                raise EOFError
            if byte == b"\n":
                return line.decode(getattr(sys.stdin, "encoding", None) or "utf-8", "replace")
            line += byte


async def _sign_in(
    config: HttpServerConfig,
    storage: TokenStorage,
    open_url: Callable[[str], object],
    read_redirect: Callable[[], str] | None,
) -> None:
    assert config.auth is not None
    secrets = _Secrets()
    listener = _RedirectListener(secrets)
    await listener.start(config.auth.redirect_port)
    reader = _PasteReader(read_redirect, listener) if read_redirect is not None else None
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

        provider = _UserOAuth(
            config.server_name,
            config,
            stored,
            secrets,
            redirect_uri=listener.redirect_uri,
            redirect_handler=redirect,
            callback_handler=listener.wait,
        )
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": _SIGN_IN_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mcp_sync", "version": "sign-in"},
            },
        }
        headers = {
            **dict(config.headers),
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": _SIGN_IN_PROTOCOL_VERSION,
        }
        try:
            async with httpx2.AsyncClient(auth=provider, timeout=30.0) as client:
                response = await client.post(config.url, json=initialize, headers=headers)
        except AuthError:
            raise
        except Exception as exc:
            raise AuthError(scrub(f"signing in to server {config.server_name!r} failed: {exc}")) from None
        finally:
            secrets.release()
        if response.status_code in (401, 403) or not stored_tokens_of(config, draft):
            raise AuthError(
                f"signing in to server {config.server_name!r} failed: the server still answers "
                f"HTTP {response.status_code} {response.reason_phrase}"
            )
        draft.commit()
    finally:
        if reader is not None:
            reader.stop()
        await listener.close()


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
    `_PasteReader` for how it is called, and why the built-in `input` is read in a way of its own.
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
