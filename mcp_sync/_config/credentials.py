"""Which names say "this is a credential": one rule for environment variables, header names and the flags
of a command line.

`is_credential_name(name)` decides for a variable (`GITHUB_TOKEN`, `MYSQL_PASS`) or a header
(`X-Api-Key`). The child environment filter (`child_env`), the secret registry (`secrets_of`) and `${VAR}`
interpolation all ask it, so a name is a credential everywhere or nowhere. A flag without its dashes
(`api-key`, `db-pwd`, `figmaApiKey`) needs a credential word as a word of its own (`is_credential_flag`):
a flag's value registered as a secret is masked in every log line of the process, and `--sort-key title`
must not make "title" one.

`credential_arguments(args)` applies it to a stdio server's `args`: the value after or inside a flag
with such a name (`--api-key X`, `--figma-api-key=X`, `--access-token X`, `--password X`), a
`NAME=value` argument (`env NAME=value cmd`, `docker run -e NAME=value`) and a header given as an
argument (`--header "Authorization: Bearer X"`, as `mcp-remote` takes it). Official setups put keys
there: Context7's `--api-key` (upstash/context7, README.md), Supabase's `--access-token`
(supabase-community/supabase-mcp, README.md), Figma's `--figma-api-key=` (GLips/Figma-Context-MCP,
README.md), mcp-remote's `--header` (geelen/mcp-remote, README.md).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence

__all__ = [
    "CREDENTIAL_NAME_PATTERNS",
    "CREDENTIAL_NAME_WORDS",
    "credential_argument_values",
    "credential_arguments",
    "is_credential_flag",
    "is_credential_name",
]

# Case-insensitive substrings; a name that contains any of them is a credential's. Deliberately absent:
#   AUTH     would take GIT_AUTHOR_NAME/EMAIL (a git server's commit identity) and
#            SSH_AUTH_SOCK (a socket path git-over-ssh needs); *_AUTH_TOKEN is caught by TOKEN.
#   SESSION  would take DBUS_SESSION_BUS_ADDRESS, XDG_SESSION_* and DESKTOP_SESSION (desktop
#            plumbing); AWS_SESSION_TOKEN and *_SESSION_KEY/_SECRET are caught by TOKEN/KEY/SECRET.
#   PWD      is the working directory (PWD, OLDPWD); only the `_PWD` suffix form is a password.
#   PASS     would take BYPASS-style names and PGPASSFILE (a path): PASS counts as a word of its own
#            (CREDENTIAL_NAME_WORDS), and the longer password spellings are listed here.
# Kept on purpose because no pattern names them: PATH, HOME, USER, LANG/LC_*, TERM,
# TMPDIR, proxies and CA bundles (corporate networks need them), DISPLAY.
CREDENTIAL_NAME_PATTERNS: tuple[str, ...] = (
    "KEY",  # API keys and key material: OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, SSH_PRIVATE_KEY
    "SECRET",  # client secrets and signing secrets: CLIENT_SECRET, JWT_SECRET
    "TOKEN",  # bearer and session tokens: GITHUB_TOKEN, GH_TOKEN, AWS_SESSION_TOKEN, NPM_TOKEN
    "PASSWORD",  # PGPASSWORD, MYSQL_PASSWORD, REDIS_PASSWORD
    "PASSWD",  # the Unix spelling: DB_PASSWD
    "PASSPHRASE",  # unlocks a key: GPG_PASSPHRASE, SSH_KEY_PASSPHRASE
    "_PWD",  # MYSQL_PWD and kin; the underscore spares PWD/OLDPWD (the working directory)
    "CRED",  # credential files and blobs: GOOGLE_APPLICATION_CREDENTIALS, AZURE_CREDS
    "PRIVATE",  # private material not named *KEY: SIGNING_PRIVATE_PEM
    "COOKIE",  # a session cookie is a login: YOUTUBE_COOKIE, *_COOKIES
    "JWT",  # signed bearer tokens not named *TOKEN: SUPABASE_JWT
    "CONNECTION_STRING",  # a database or bus address with its login: AZURE_STORAGE_CONNECTION_STRING
)
# Whole words of a name (split at `_`, `-`, `.` and camelCase), too short to match anywhere in it.
CREDENTIAL_NAME_WORDS: frozenset[str] = frozenset(
    {
        "PAT",  # personal access tokens: GITHUB_PAT, AIRTABLE_PAT, AZURE_DEVOPS_PAT (PAT is in PATH)
        "DSN",  # a data source name holds the login: SENTRY_DSN, DATABASE_DSN
        "PASS",  # the short password spelling: MYSQL_PASS, DB_PASS, SMTP_PASS, --db-pass (not BYPASS)
    }
)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SEPARATORS = re.compile(r"[_.\-\s]+")
# `NAME=value` as `env` and `docker run -e` take it; `Name: value` as a header is written.
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)=(.*)", re.DOTALL)
_HEADER = re.compile(r"([A-Za-z0-9][A-Za-z0-9_-]*):\s*(\S.*)", re.DOTALL)
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization"})
_AUTH_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\s+(\S.*)", re.DOTALL)  # "Bearer <token>"


def is_credential_name(name: str) -> bool:
    """True when the name (camelCase split into words, case ignored) contains one of
    `CREDENTIAL_NAME_PATTERNS`, or has one of `CREDENTIAL_NAME_WORDS` as a word of its own."""
    upper = _CAMEL_BOUNDARY.sub("_", name).upper()
    if any(pattern in upper for pattern in CREDENTIAL_NAME_PATTERNS):
        return True
    return not CREDENTIAL_NAME_WORDS.isdisjoint(_WORD_SEPARATORS.split(upper))


# The words of a flag's name (split at `-`, `_`, `.` and camelCase) that make its value a credential.
# Whole words only: a flag is named for what it sets, and a word inside another (`--sort-key`,
# `--keyword`, `--max-tokens`) names an ordinary setting whose value must not become a process-wide
# secret.
_FLAG_WORDS = frozenset(
    {
        "SECRET",
        "SECRETS",
        "TOKEN",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "PWD",
        "PASS",
        "AUTH",
        "AUTHORIZATION",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "BEARER",
        "APIKEY",
        "JWT",
        "PAT",
        "DSN",
        "COOKIE",
        "COOKIES",
    }
)
# Two words in a row that do (`--api-key`, `--figma-api-key`, `--access-key`).
_FLAG_PAIRS = frozenset({("API", "KEY"), ("ACCESS", "KEY"), ("PRIVATE", "KEY"), ("CONNECTION", "STRING")})


def is_credential_flag(flag: str) -> bool:
    """True when a flag's name (without its dashes) has a credential word as a word of its own
    (`api-key`, `db-pwd`, `access.token`, `figmaApiKey`), not inside another (`sort-key`, `max-tokens`)."""
    words = [word for word in _WORD_SEPARATORS.split(_CAMEL_BOUNDARY.sub("_", flag).upper()) if word]
    return not _FLAG_WORDS.isdisjoint(words) or not _FLAG_PAIRS.isdisjoint(itertools.pairwise(words))


def credential_argument_values(args: Sequence[str]) -> Iterator[tuple[int, str, bool]]:
    """Each credential in a command line: the argument's index, the value (always the end of that
    argument) and whether it is a header's value.

    A flag (one or two dashes) with a credential word in its name (`is_credential_flag`) marks its value:
    after `=` (`--figma-api-key=X`), else the next argument unless that is another flag (`--api-key X`).
    So do `NAME=value` with a credential's name (`is_credential_name`) and a header argument
    (`Authorization: Bearer X`, `X-Api-Key: X`), standing alone or as the `=` value of any flag
    (`--env=GITHUB_TOKEN=X`, `--header=Authorization: Bearer X`).
    """
    pending = False  # the previous argument was a credential flag without its value
    for index, arg in enumerate(args):
        if pending:
            pending = False
            if not arg.startswith("-"):
                yield index, arg, False
                continue
        if arg.startswith("-"):
            flag, equals, value = arg.lstrip("-").partition("=")
            if flag and is_credential_flag(flag):
                if equals:
                    yield index, value, False
                else:
                    pending = True
            elif equals:
                found = _named_value(value)
                if found is not None:
                    yield index, *found
            continue
        found = _named_value(arg)
        if found is not None:
            yield index, *found


def _named_value(text: str) -> tuple[str, bool] | None:
    """The credential in `NAME=value` or `Header: value` when the name is a credential's, and whether it
    is a header's value."""
    assignment = _ASSIGNMENT.fullmatch(text)
    if assignment is not None:
        return (assignment.group(2), False) if is_credential_name(assignment.group(1)) else None
    header = _HEADER.fullmatch(text)
    if header is not None and (
        header.group(1).lower() in _CREDENTIAL_HEADERS or is_credential_name(header.group(1))
    ):
        return header.group(2), True
    return None


def credential_arguments(args: Sequence[str]) -> Iterator[str]:
    """The credential values in a command line's arguments (see `credential_argument_values`); for a
    header's value (`Bearer X`) also its token alone."""
    for _index, value, header in credential_argument_values(args):
        yield value
        if header:
            scheme = _AUTH_SCHEME_RE.fullmatch(value.strip())
            if scheme is not None:
                yield scheme.group(1)
