"""One TLS client context per process, shared by every HTTP client mcp_sync opens.

httpx builds a context for each client it makes, reading the system's certificate store (~25 ms of
CPU each, measured on Linux), and a hub makes a client for each remote server it connects, reconnects
or signs in to. `shared_ssl_context` builds the same context (`httpx2.create_ssl_context()`, which
honours SSL_CERT_FILE and SSL_CERT_DIR) once.

The cache belongs to this module, for the whole process. It is rebuilt when SSL_CERT_FILE or
SSL_CERT_DIR change. A failure to build raises into the client that asked, as httpx would, and nothing
is kept. Servers connect on threads of their own at once, so one lock makes them wait for the one
build. A fork keeps the context (it holds settings and certificates, no thread or connection) and
gives the child a new lock: another thread may have held it at the fork.
"""

from __future__ import annotations

import os
import ssl
import threading

import httpx2

from .fork import register_at_fork

__all__ = ["shared_ssl_context"]

_CERTIFICATE_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
"""What httpx reads from the environment when it builds a context."""

_built: tuple[tuple[str | None, ...], ssl.SSLContext] | None = None
_building = threading.Lock()


def shared_ssl_context() -> ssl.SSLContext:
    """httpx's default client context (certificates verified), built once per certificate setting."""
    global _built
    setting = tuple(os.environ.get(name) for name in _CERTIFICATE_VARIABLES)
    with _building:
        if _built is None or _built[0] != setting:
            _built = (setting, httpx2.create_ssl_context())
        return _built[1]


def _new_lock_in_child() -> None:
    global _building
    _building = threading.Lock()


register_at_fork(before=lambda: None, after_in_child=_new_lock_in_child)
