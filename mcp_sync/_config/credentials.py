"""Which names say "this is a credential": one rule for environment variables, header names and the flags
of a command line.

`is_credential_name(name)` decides for a variable (`GITHUB_TOKEN`, `MYSQL_PASS`), a header
(`X-Api-Key`) or a flag without its dashes (`api-key`, `figmaApiKey`). The child environment filter
(`child_env`), the secret registry (`secrets_of`) and `${VAR}` interpolation all ask it, so a name is a
credential everywhere or nowhere.

`credential_arguments(args)` applies it to a stdio server's `args`: the value after or inside a flag
with such a name (`--api-key X`, `--figma-api-key=X`, `--access-token X`, `--password X`), a
`NAME=value` argument (`env NAME=value cmd`, `docker run -e NAME=value`) and a header given as an
argument (`--header "Authorization: Bearer X"`, as `mcp-remote` takes it). Official setups put keys
there: Context7's `--api-key` (upstash/context7, README.md), Supabase's `--access-token`
(supabase-community/supabase-mcp, README.md), Figma's `--figma-api-key=` (GLips/Figma-Context-MCP,
README.md), mcp-remote's `--header` (geelen/mcp-remote, README.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

__all__ = [
    "CREDENTIAL_NAME_PATTERNS",
    "CREDENTIAL_NAME_WORDS",
    "credential_arguments",
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


def is_credential_name(name: str) -> bool:
    """True when the name (camelCase split into words, case ignored) contains one of
    `CREDENTIAL_NAME_PATTERNS`, or has one of `CREDENTIAL_NAME_WORDS` as a word of its own."""
    upper = _CAMEL_BOUNDARY.sub("_", name).upper()
    if any(pattern in upper for pattern in CREDENTIAL_NAME_PATTERNS):
        return True
    return not CREDENTIAL_NAME_WORDS.isdisjoint(_WORD_SEPARATORS.split(upper))


def credential_arguments(args: Sequence[str]) -> Iterator[str]:
    """The values in a command line's arguments that are credentials by the name beside them.

    A flag (one or two dashes) whose name is a credential's (`is_credential_name`) marks its value:
    after `=` (`--figma-api-key=X`), else the next argument unless that is another flag
    (`--api-key X`). So do `NAME=value` with such a name and a header argument
    (`Authorization: Bearer X`, `X-Api-Key: X`).
    """
    pending = False  # the previous argument was a credential flag without its value
    for arg in args:
        if pending:
            pending = False
            if not arg.startswith("-"):
                yield arg
                continue
        if arg.startswith("-"):
            flag, equals, value = arg.lstrip("-").partition("=")
            if flag and is_credential_name(flag):
                if equals:
                    yield value
                else:
                    pending = True
            continue
        assignment = _ASSIGNMENT.fullmatch(arg)
        if assignment is not None:
            if is_credential_name(assignment.group(1)):
                yield assignment.group(2)
            continue
        header = _HEADER.fullmatch(arg)
        if header is not None and (
            header.group(1).lower() in _CREDENTIAL_HEADERS or is_credential_name(header.group(1))
        ):
            yield header.group(2)
