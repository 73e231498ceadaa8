"""The environment a stdio server's child process starts with.

By default (`inherit_env: filtered`) a child gets the parent's environment minus
every variable whose name looks like a credential, with the server's explicit
`env` laid over it. The point is that an API key exported for one tool does not
leak into every MCP server the host starts; a server that needs a secret gets it
by name in its own `env`, and those explicit values are never filtered.
`inherit_env: minimal` passes only what the `mcp` SDK passes by default
(`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`), plus the explicit `env`.

This is a guard against accidental disclosure (a server that logs or forwards
its environment), not a sandbox: the child runs as the same user. Matching is
by name only, so a secret in a variable with an innocent name (a password
inside `DATABASE_URL`) still passes; name such variables in no server's
environment, or start the host with a trimmed environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal

from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

__all__ = [
    "CREDENTIAL_NAME_PATTERNS",
    "CREDENTIAL_NAME_WORDS",
    "MINIMAL_ENV_NAMES",
    "child_environment",
    "is_credential_name",
]

MINIMAL_ENV_NAMES: tuple[str, ...] = tuple(DEFAULT_INHERITED_ENV_VARS)
"""What `inherit_env: minimal` passes on: the variables the `mcp` SDK's stdio client passes by default."""

# Case-insensitive substrings; a variable whose name contains any of them is
# not inherited. Deliberately absent:
#   AUTH     would take GIT_AUTHOR_NAME/EMAIL (a git server's commit identity) and
#            SSH_AUTH_SOCK (a socket path git-over-ssh needs); *_AUTH_TOKEN is caught by TOKEN.
#   SESSION  would take DBUS_SESSION_BUS_ADDRESS, XDG_SESSION_* and DESKTOP_SESSION (desktop
#            plumbing); AWS_SESSION_TOKEN and *_SESSION_KEY/_SECRET are caught by TOKEN/KEY/SECRET.
#   PWD      is the working directory (PWD, OLDPWD); only the `_PWD` suffix form is a password.
#   PASS     would take BYPASS-style names and PGPASSFILE (a path); the password spellings are listed.
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
# Whole words of a name (split at `_`, `-` and `.`), too short to match anywhere in it: PAT is in PATH.
CREDENTIAL_NAME_WORDS: frozenset[str] = frozenset(
    {
        "PAT",  # personal access tokens: GITHUB_PAT, AIRTABLE_PAT, AZURE_DEVOPS_PAT
        "DSN",  # a data source name holds the login: SENTRY_DSN, DATABASE_DSN
    }
)


def is_credential_name(name: str) -> bool:
    """True when the variable name contains one of `CREDENTIAL_NAME_PATTERNS`, or has one of
    `CREDENTIAL_NAME_WORDS` as a word of its own, ignoring case."""
    upper = name.upper()
    if any(pattern in upper for pattern in CREDENTIAL_NAME_PATTERNS):
        return True
    return not CREDENTIAL_NAME_WORDS.isdisjoint(re.split(r"[_.-]", upper))


def child_environment(
    explicit: Mapping[str, str] | None = None,
    parent: Mapping[str, str] | None = None,
    *,
    inherit_env: Literal["filtered", "minimal"] = "filtered",
) -> dict[str, str]:
    """The inherited part of the parent environment (default `os.environ`), then `explicit` on top.

    `filtered` inherits every variable whose name does not look like a credential; `minimal`
    only `MINIMAL_ENV_NAMES` (skipping values that start with "()", exported shell functions,
    as the SDK does). Explicit values are the user's deliberate choice for this server and are
    never filtered.
    """
    source = os.environ if parent is None else parent
    if inherit_env == "minimal":
        env = {
            name: source[name]
            for name in MINIMAL_ENV_NAMES
            if name in source and not source[name].startswith("()")
        }
    elif inherit_env == "filtered":
        env = {name: value for name, value in source.items() if not is_credential_name(name)}
    else:
        raise ValueError(f"inherit_env must be 'filtered' or 'minimal', not {inherit_env!r}")
    if explicit:
        env.update(explicit)
    return env
