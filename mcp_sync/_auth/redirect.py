"""The user's side of a sign-in: the browser the authorization address is opened in, the loopback listener
that receives the redirect, and the reader of a redirected address pasted back.

Threads: the pasted-address reader runs on `mcp-sync:paste` and reads standard input only while the
sign-in runs; the listener runs on the sign-in's loop thread.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import hmac
import logging
import os
import select
import sys
import threading
import webbrowser
from collections.abc import Callable, Mapping
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from mcp.shared.auth import AuthorizationCodeResult

from .._os.console import STDIN_SELECTABLE, has_desktop
from .._values.errors import AuthError, describe

__all__ = ["PasteReader", "RedirectListener", "SecretKeeper", "open_browser", "show_url"]

logger = logging.getLogger("mcp_sync")

# The redirect path of the one-shot listener.
_CALLBACK_PATH = "/callback"
# How long the listener gives a browser to send its request once connected.
_REQUEST_READ_TIMEOUT = 10.0
# How long the end of a sign-in waits for its stdin reader to stop (it is woken at once; this only bounds it).
_PASTE_READER_STOP_TIMEOUT = 2.0


class SecretKeeper(Protocol):
    """Registers the values it is given as secrets for as long as the sign-in runs."""

    def keep(self, *values: str | None) -> None: ...


def open_browser(url: str) -> None:
    """Open `url` in a browser when this machine has a display, or in the browser `$BROWSER` names (set
    by VS Code Remote and Codespaces, which forward it to the user's browser); never a text-mode browser
    in the terminal."""
    try:
        if has_desktop():
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


class RedirectListener:
    """A one-shot HTTP listener on 127.0.0.1 for the authorization server's redirect; a redirected
    address pasted back by the user (`accept`) completes it too.

    Only a redirect carrying the `state` of this sign-in's authorization URL (`expect`) counts: any
    other request to the redirect path (another local program, a page guessing the port) is answered
    400 and ignored, and the listener goes on waiting.
    """

    def __init__(self, secrets: SecretKeeper) -> None:
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
        """Take the `state` of the authorization URL about to be opened: the redirect must carry it. A
        sign-in may authorize more than once (more scopes, another authorization server): each waits for
        its own redirect."""
        if self._result.done():
            self._result = self._loop.create_future()
        # Not a secret: a one-time value the user must see whole in the address shown, or the redirect it
        # comes back on does not match. The code that comes back with it is one.
        self._state = _query_of(authorization_url).get("state")

    def fail(self, error: BaseException) -> None:
        """End the wait with `error` (any thread): the address could not be handed to the user."""
        with contextlib.suppress(RuntimeError):  # the sign-in ended meanwhile
            self._loop.call_soon_threadsafe(self._fail, error)

    def _fail(self, error: BaseException) -> None:
        if not self._result.done():
            failure = AuthError(f"could not open the sign-in address: {describe(error)}")
            failure.__cause__ = error
            self._result.set_exception(failure)

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
    if not STDIN_SELECTABLE or sys.stdin is None:
        return None
    try:
        return sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return None


class PasteReader:
    """Reads the redirected addresses a user pastes, on a thread of its own, until one is accepted or
    the sign-in ends (`stop()`).

    The built-in `input` is read here from standard input's descriptor, a byte at a time and only while
    the sign-in runs: `stop()` ends the wait at once and no byte after the pasted line is taken, so the
    program's next `input()` gets its own line. Any other callable is called as it is; one still blocked
    when the sign-in ends is left to return on its own, and what it returns is ignored.
    """

    def __init__(self, read_redirect: Callable[[], str], listener: RedirectListener) -> None:
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
                logger.warning("that is not the address the browser was sent to (it has ?code=...&state=...)")
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
