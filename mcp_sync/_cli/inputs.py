"""VS Code's `${input:ID}` values, asked on the terminal as VS Code asks for them when it starts a server.

A `promptString` input is asked once per id, with its description as the prompt and its default
offered; what is typed for a `password: true` input is not shown (`getpass`). Only on a terminal: in a
pipe or a script nothing is asked, and the value comes from the environment (`input_variable_name(ID)`)
or the input's default, as it does for `MCPHub.from_host`. A value already in the environment is not
asked for either. The prompts go to stderr, so that stdout holds only the command's output.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Callable
from typing import TextIO

from .. import HostInput
from .._config.interpolation import input_variable_name

__all__ = ["terminal_inputs"]


def terminal_inputs() -> Callable[[HostInput], str | None] | None:
    """An inputs handler that asks on the terminal, or None when stdin is not a terminal."""
    stdin, stderr = sys.stdin, sys.stderr
    if stdin is None or not stdin.isatty():
        return None
    answers: dict[str, str | None] = {}

    def ask(item: HostInput) -> str | None:
        if item.type != "promptString" or os.environ.get(input_variable_name(item.id)) is not None:
            return None
        if item.id not in answers:
            answers[item.id] = _ask(item, stdin, stderr)
        return answers[item.id]

    return ask


def _ask(item: HostInput, stdin: TextIO, stderr: TextIO) -> str | None:
    """One answer; None (the default, or the environment) for an empty answer or the end of input."""
    label = item.description or item.id
    offered = f" [{item.default}]" if item.default and not item.password else ""
    prompt = f"mcp-sync: {label} (${{input:{item.id}}}){offered}: "
    if item.password:
        try:
            answer = getpass.getpass(prompt, stream=stderr)
        except EOFError:
            return None
    else:
        stderr.write(prompt)
        stderr.flush()
        answer = stdin.readline()
        if not answer.endswith("\n"):
            stderr.write("\n")  # the end of input: the next message starts on a line of its own
        answer = answer.rstrip("\r\n")
    return answer or None
