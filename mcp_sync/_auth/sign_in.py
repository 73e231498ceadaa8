"""Signing in to Streamable HTTP servers: the `httpx2.Auth` each connection uses, and the sign-in step.

Each grant is one of the `mcp` SDK's public providers, driven request by request by a `ServerAuth`:
`auth: oauth` is `OAuthClientProvider` (authorization code with PKCE: discovery, dynamic registration
or a client ID metadata document, the token endpoint auth method the authorization server advertises,
scope step-up, re-registration at a new authorization server); `client_credentials` and
`private_key_jwt` are `ClientCredentialsOAuthProvider` and `PrivateKeyJWTOAuthProvider`;
`identity_assertion` (SEP-990) is `IdentityAssertionOAuthProvider`, after a token exchange at the
identity provider; `jwt_bearer` (a workload's JWT as the grant, SEP-1933) is `_JwtBearerProvider`,
built from the SDK's discovery helpers. `dpop: true` signs every request of any of them with a DPoP
proof (`DPoP`).

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
and so are the server entry's own secrets (`secrets_of`) for the whole of a sign-in, so none appears in a
log record or an error. The authorization URL's `state` is not a secret: the user must see it whole.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable, Mapping

import anyio
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from .._config import HttpServerConfig, ServerConfig
from .._config.secrets import secrets_of
from .._os.waits import join_thread, wait_future
from .._values.errors import AuthError, ConfigError, describe
from .._values.scrubbed_errors import scrub_exception
from .._values.secrets import register, scrub
from .machine_oauth import GrantOAuth, KeyOAuth, MachineOAuth
from .redirect import PasteReader, RedirectListener, show_url
from .server_auth import DPoP, ServerAuth
from .token_store import TokenStorage, token_key
from .tokens import Draft, Secrets, StoredTokens
from .user_oauth import UserOAuth

__all__ = ["AuthFactory", "SignInStop", "auth_factory", "forget_tokens", "sign_in", "stored_tokens_of"]


logger = logging.getLogger("mcp_sync")

AuthFactory = Callable[[ServerConfig], httpx2.Auth | None]

"""Makes the `httpx2.Auth` of one connection (None: no authentication)."""

# The sign-in connection's HTTP requests (the authorization itself is bounded by the sign-in's timeout).
_SIGN_IN_HTTP_TIMEOUT = 30.0
# The sign-in's thread closing its loop, once the sign-in has ended or been cancelled.
_SIGN_IN_STOP_TIMEOUT = 5.0


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
        secrets = Secrets()
        stored = StoredTokens(storage, _key_of(config), secrets)
        auth: ServerAuth
        if config.auth.type == "client_credentials":
            auth = MachineOAuth(config.server_name, config, stored, secrets)
        elif config.auth.type == "private_key_jwt":
            auth = KeyOAuth(config.server_name, config, stored, secrets)
        elif config.auth.type in ("jwt_bearer", "identity_assertion"):
            auth = GrantOAuth(config.server_name, config, stored, secrets)
        else:  # a connection never signs in: its redirect address is never used
            auth = UserOAuth(
                config.server_name, config, stored, secrets, redirect_uri="http://127.0.0.1/callback"
            )
        if config.auth.dpop:
            auth.dpop = DPoP(stored, secrets)
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


async def _sign_in(
    config: HttpServerConfig,
    storage: TokenStorage,
    open_url: Callable[[str], object],
    read_redirect: Callable[[], str] | None,
) -> None:
    assert config.auth is not None
    secrets = Secrets()
    listener = RedirectListener(secrets)
    await listener.start(config.auth.redirect_port)
    reader = PasteReader(read_redirect, listener) if read_redirect is not None else None
    try:
        if reader is not None:
            reader.start()
        key = _key_of(config)
        draft = Draft(storage, key)
        stored = StoredTokens(draft, key, secrets, redirect_uri=listener.redirect_uri)

        def hand_over(url: str) -> None:
            try:
                open_url(url)
            except BaseException as exc:  # nobody will open it: fail now, not at the timeout
                listener.fail(exc)

        async def redirect(url: str) -> None:
            listener.expect(url)
            # On its own thread: a host's callable may block (a browser starting, a test browser following
            # the redirects to this very listener).
            threading.Thread(target=hand_over, args=(url,), name="mcp-sync:open-url", daemon=True).start()

        auth = UserOAuth(
            config.server_name,
            config,
            stored,
            secrets,
            redirect_uri=listener.redirect_uri,
            redirect_handler=redirect,
            callback_handler=listener.wait,
        )
        if config.auth.dpop:
            auth.dpop = DPoP(stored, secrets)
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


async def _connect_signing_in(config: HttpServerConfig, auth: UserOAuth) -> None:
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


class SignInStop:
    """Ends a sign-in in progress from any thread (its hub closing, the interpreter exiting): `sign_in`
    raises `AuthError` with the reason, and the stored tokens stay as they were."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancel: Callable[[], None] | None = None
        self.reason: str | None = None

    def stop(self, reason: str) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
            cancel = self._cancel
        if cancel is not None:
            cancel()

    def _attach(self, cancel: Callable[[], None]) -> None:
        with self._lock:
            self._cancel = cancel
            stopped = self.reason is not None
        if stopped:
            cancel()


def sign_in(
    config: HttpServerConfig,
    storage: TokenStorage,
    *,
    open_url: Callable[[str], object] | None = None,
    read_redirect: Callable[[], str] | None = None,
    timeout: float = 300.0,
    stop: SignInStop | None = None,
) -> None:
    """Sign in to the server interactively and store its tokens; blocks until done, `timeout` or Ctrl-C.

    Runs on a loop thread of its own (the caller may be a notebook cell, whose thread has a loop). The
    stored tokens are replaced only when the sign-in succeeds. `read_redirect`, when given, may return
    the address the browser ended on (pasted by the user when the browser runs on another machine); see
    `PasteReader` for how it is called, and why the built-in `input` is read in a way of its own. `stop`
    ends it from another thread.
    """
    if config.auth is None or config.auth.type != "oauth":
        raise ConfigError(f"server {config.server_name!r} is not configured with auth: oauth")
    done: concurrent.futures.Future[None] = concurrent.futures.Future()
    loop = asyncio.new_event_loop()
    task_box: list[asyncio.Task[None]] = []

    def cancel() -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing left to stop
            loop.call_soon_threadsafe(task_box[0].cancel)

    async def main() -> None:
        task_box.append(asyncio.current_task())  # type: ignore[arg-type]
        if stop is not None:
            stop._attach(cancel)
        async with asyncio.timeout(timeout):
            await _sign_in(config, storage, open_url or show_url(config.server_name), read_redirect)

    def run() -> None:
        try:
            loop.run_until_complete(main())
        except TimeoutError:
            done.set_exception(
                AuthError(f"signing in to server {config.server_name!r} did not finish within {timeout:g} s")
            )
        except asyncio.CancelledError as exc:
            if stop is None or stop.reason is None:
                done.set_exception(exc)
            else:
                stopped = f"signing in to server {config.server_name!r} stopped: {stop.reason}"
                done.set_exception(AuthError(stopped))
        except BaseException as exc:
            done.set_exception(scrub_exception(exc))
        else:
            done.set_result(None)
        finally:
            loop.close()

    # The entry's own secrets (its headers' values, URL credentials), kept out of what the sign-in logs and
    # raises for its whole duration: a server may repeat them in its errors.
    with register(secrets_of(config), credential_name=True):
        thread = threading.Thread(target=run, name=f"mcp-sync:login:{config.server_name}", daemon=True)
        thread.start()
        try:
            wait_future(done, None)  # bounded by the sign-in's own timeout
            done.result()
        except BaseException:
            if not done.done() and task_box:  # interrupted: stop the sign-in before the exception goes on
                cancel()
                join_thread(thread, _SIGN_IN_STOP_TIMEOUT)
            raise
        join_thread(thread, _SIGN_IN_STOP_TIMEOUT)
