"""The environment a stdio server's child process starts with.

By default (`inherit_env: filtered`) a child gets the parent's environment minus
every variable whose name looks like a credential (`credentials.is_credential_name`), with the
server's explicit
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
from collections.abc import Mapping
from typing import Literal

from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

from .credentials import CREDENTIAL_NAME_PATTERNS, CREDENTIAL_NAME_WORDS, is_credential_name

__all__ = [
    "CREDENTIAL_NAME_PATTERNS",
    "CREDENTIAL_NAME_WORDS",
    "MINIMAL_ENV_NAMES",
    "child_environment",
    "environment_snapshot",
    "is_credential_name",
]

MINIMAL_ENV_NAMES: tuple[str, ...] = tuple(DEFAULT_INHERITED_ENV_VARS)
"""What `inherit_env: minimal` passes on: the variables the `mcp` SDK's stdio client passes by default."""


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
    source = environment_snapshot() if parent is None else parent
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


def environment_snapshot() -> dict[str, str]:
    """`os.environ` as it is now, safe to read on any thread (a server starts on its own).

    `dict(os.environ)` looks each name up after listing them all, so a variable another thread removes
    in between fails the copy with KeyError (pytest sets and removes PYTEST_CURRENT_TEST on the main
    thread at each test phase: https://docs.pytest.org/en/stable/example/simple.html). Here a variable
    removed meanwhile is left out, as if it had gone a moment earlier."""
    snapshot: dict[str, str] = {}
    for name in os.environ:  # the names, listed at once
        value = os.environ.get(name)
        if value is not None:
            snapshot[name] = value
    return snapshot
