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
from collections.abc import Callable, Mapping
from typing import TextIO

from .. import HostInput
from .._config.interpolation import input_variable_name

__all__ = ["terminal_inputs"]


def terminal_inputs(
    stdin: TextIO | None = None,
    stderr: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    ask_hidden: Callable[[str, TextIO], str] = getpass.getpass,
) -> Callable[[HostInput], str | None] | None:
    """An inputs handler that asks on the terminal, or None when stdin is not a terminal."""
    stdin = sys.stdin if stdin is None else stdin
    stderr = sys.stderr if stderr is None else stderr
    environ = os.environ if environ is None else environ
    if stdin is None or not stdin.isatty():
        return None
    answers: dict[str, str | None] = {}

    def ask(item: HostInput) -> str | None:
        if item.type != "promptString" or environ.get(input_variable_name(item.id)) is not None:
            return None
        if item.id not in answers:
            answers[item.id] = _ask(item, stdin, stderr, ask_hidden)
        return answers[item.id]

    return ask


def _ask(
    item: HostInput, stdin: TextIO, stderr: TextIO, ask_hidden: Callable[[str, TextIO], str]
) -> str | None:
    """One answer; None (the default, or the environment) for an empty answer or the end of input."""
    label = item.description or item.id
    offered = f" [{item.default}]" if item.default and not item.password else ""
    prompt = f"mcp-sync: {label} (${{input:{item.id}}}){offered}: "
    if item.password:
        try:
            answer = ask_hidden(prompt, stderr)
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
