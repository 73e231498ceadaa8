"""Which values of one server's configuration are secrets: `secrets_of(config)`, for `secrets.register`.

Header values (and the token after "Bearer "), `env` values of credentials (by the variable's name, or read
from `${A_TOKEN}`), `args` values after a credential-named flag (`--api-key X`), URL credentials and the
`auth:` block's client secret, key and assertions; each also as it appears percent-encoded or in a Basic
header.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Iterator
from urllib.parse import quote, unquote, urlsplit

from .._values.secrets import BARE_USERINFO_TOKEN_LENGTH, CREDENTIAL_NAME_RE, plausible_secret
from .credentials import credential_arguments, is_credential_name
from .models import HttpServerConfig, SseServerConfig, StdioServerConfig

__all__ = ["secrets_of"]

_AUTH_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\s+(\S.*)")  # "Bearer <token>", "Basic <b64>"


def _with_encodings(value: str) -> Iterator[str]:
    """The value as written, and as it appears in a URL or a log line once percent-encoded."""
    yield value
    yield quote(value, safe="")
    yield quote(value, safe="/:")


# A path segment this long, of token characters only, with letters and digits mixed, is taken for a key
# (hosted servers put one in the path: https://mcp.zapier.com/api/mcp/s/<key>/mcp); names of resources are
# shorter or plain words.
_PATH_TOKEN_RE = re.compile(r"(?=(?:[^0-9]*[0-9]){3})(?=(?:[^A-Za-z]*[A-Za-z]){3})[A-Za-z0-9_~.=+-]{20,}")


def _path_tokens(path: str) -> Iterator[str]:
    """The segments of a URL's path that look like keys or tokens."""
    for segment in path.split("/"):
        if _PATH_TOKEN_RE.fullmatch(unquote(segment)):
            yield segment
            yield from _with_encodings(unquote(segment))


def _url_secrets(url: str) -> Iterator[str]:
    """The password (or a bare user-info token), the credential-like query values and the token-like path
    segments of a URL."""
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return
    if password:
        yield password
        yield from _with_encodings(unquote(password))
        user_pass = f"{unquote(username or '')}:{unquote(password)}"
        yield base64.b64encode(user_pass.encode()).decode()  # what Basic auth sends
    elif username and len(username) >= BARE_USERINFO_TOKEN_LENGTH:
        yield username
        yield from _with_encodings(unquote(username))
    yield from _path_tokens(parts.path)
    for pair in re.split("[&;]", parts.query):
        name, sep, value = pair.partition("=")
        if sep and value and CREDENTIAL_NAME_RE.fullmatch(unquote(name)):
            yield value
            yield from _with_encodings(unquote(value))


def _header_secrets(value: str) -> Iterator[str]:
    """A header value, and its credential alone when it starts with a scheme ("Bearer <token>")."""
    yield value
    scheme = _AUTH_SCHEME_RE.fullmatch(value.strip())
    if scheme is not None:
        yield scheme.group(1)


def secrets_of(config: StdioServerConfig | HttpServerConfig | SseServerConfig) -> set[str]:
    """Every secret value in one server's configuration, ready for `register`.

    Values the entry's references marked (a host file's inputs, `${VAR}` read from a variable named like
    a credential), header values (and the token after "Bearer "), the `env` values of variables named
    like credentials (`GITHUB_TOKEN`, `DB_PASSWORD`; see `is_credential_name`), the `args` values a
    credential-named flag marks (`--api-key X`, `--figma-api-key=X`; see `credential_arguments`), and
    URL credentials (in the URL, `args` and `env` values): the password or bare user-info, query values with
    credential-like names (`api_key`, `token`, `sig`, ...), and path segments that look like a key (20
    or more letters and digits mixed, `.../s/<key>/mcp`), also percent-encoded. Values too short or
    common to be secrets are left out, except those marked as credentials by a name: register the result
    with `register(..., credential_name=True)`, which keeps them.
    """
    found: set[str] = set()

    def add(values: Iterable[str], *, credential_name: bool = False) -> None:
        found.update(v for v in values if plausible_secret(v, credential_name=credential_name))

    add(config.input_secrets, credential_name=True)
    if isinstance(config, HttpServerConfig | SseServerConfig):
        for name, value in config.headers.items():
            credential = is_credential_name(name) or name.lower() in ("authorization", "proxy-authorization")
            add(_header_secrets(value), credential_name=credential)
        add(_url_secrets(config.url), credential_name=True)
    if isinstance(config, HttpServerConfig):
        if config.auth is not None and config.auth.client_secret is not None:
            add([config.auth.client_secret], credential_name=True)
        if config.auth is not None:
            auth = config.auth
            add(
                [v for v in (auth.private_key, auth.assertion, auth.idp_client_secret) if v],
                credential_name=True,
            )
    elif isinstance(config, StdioServerConfig):
        # Only credentials: a plain setting (`LOG_FORMAT=json`, `HOME=/home/me`) registered process-wide
        # would be masked in every log line and error of the program. A value is one by its variable's
        # name, by where it was read from (`input_secrets`), or by the credentials in a URL it holds.
        for name, value in config.env.items():
            if is_credential_name(name):
                add([value], credential_name=True)
            elif "://" in value:
                add(_url_secrets(value), credential_name=True)
        # `--api-key X`, `--token=X`, `API_KEY=X`, `Authorization: Bearer X`: credentials by the name
        # beside them, whatever they look like (`--db-password 48213579`).
        add(credential_arguments(config.args), credential_name=True)
        for arg in config.args:
            if "://" in arg:
                add(_url_secrets(arg), credential_name=True)
    return found
