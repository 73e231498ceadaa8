"""VS Code's `${input:ID}` values, asked on the terminal as VS Code asks for them when it starts a server;
and a person's approval of a tool call that must be approved first (`terminal_approver`).

A `promptString` input is asked once per id, with its description as the prompt and its default
offered; what is typed for a `password: true` input is not shown (`getpass`). A `pickString` input
lists its options (each by its label, as VS Code shows it), to be chosen by number, label or value.
Only on a terminal: in a pipe or a script nothing is asked, and the value comes from the environment
(`input_variable_name(ID)`) or the input's default, as it does for `MCPHub.from_host`. A value already
in the environment is not asked for either. The prompts go to stderr, so that stdout holds only the
command's output.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Callable
from typing import TextIO

from .. import HostInput, terminal_approval
from .._config.interpolation import input_variable_name

__all__ = ["terminal_approver", "terminal_inputs"]

_ASKED = frozenset({"promptString", "pickString"})  # a `command` input runs a VS Code command: not here
# Answers that are not one of a `pickString` input's options before it is left to its default.
_PICK_ATTEMPTS = 3


def terminal_inputs() -> Callable[[HostInput], str | None] | None:
    """An inputs handler that asks on the terminal, or None when stdin is not a terminal."""
    stdin, stderr = sys.stdin, sys.stderr
    if stdin is None or not stdin.isatty():
        return None
    answers: dict[str, str | None] = {}

    def ask(item: HostInput) -> str | None:
        if item.type not in _ASKED or os.environ.get(input_variable_name(item.id)) is not None:
            return None
        if item.id not in answers:
            answers[item.id] = _ask(item, stdin, stderr)
        return answers[item.id]

    return ask


def terminal_approver() -> Callable[..., object] | None:
    """An `approve` callback asking on the terminal (the question on stderr), or None when stdin is not
    a terminal: then a call that must be approved first is refused, as nobody can be asked."""
    stdin, stderr = sys.stdin, sys.stderr
    if stdin is None or not stdin.isatty():
        return None

    def ask(question: str) -> str:
        stderr.write(f"mcp-sync: {question}")
        stderr.flush()
        answer = stdin.readline()
        if not answer:
            stderr.write("\n")
            raise EOFError
        return answer

    return terminal_approval(ask)


def _ask(item: HostInput, stdin: TextIO, stderr: TextIO) -> str | None:
    """One answer; None (the default, or the environment) for an empty answer or the end of input."""
    label = item.description or item.id
    offered = f" [{item.default}]" if item.default and not item.password else ""
    prompt = f"mcp-sync: {label} (${{input:{item.id}}}){offered}: "
    if item.type == "pickString":
        return _pick(item, prompt, stdin, stderr)
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


def _pick(item: HostInput, prompt: str, stdin: TextIO, stderr: TextIO) -> str | None:
    """One of the options, by its listed number, else its label, else its value (what is shown before
    what is not); None (the default) for an empty answer, the end of input, or `_PICK_ATTEMPTS`
    answers that are not an option."""
    if not item.options:
        return None
    labels = [item.label_at(index) for index in range(len(item.options))]
    choices = "".join(f"mcp-sync:   {number}) {label}\n" for number, label in enumerate(labels, 1))
    for _ in range(_PICK_ATTEMPTS):
        stderr.write(choices + prompt)
        stderr.flush()
        line = stdin.readline()
        if not line.endswith("\n"):
            stderr.write("\n")
        answer = line.strip()
        if not answer or not line:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(item.options):
            return item.options[int(answer) - 1]
        if answer in labels:
            return item.options[labels.index(answer)]
        if answer in item.options:
            return answer
        stderr.write(f"mcp-sync: {answer!r} is not one of the {len(item.options)} options\n")
    return None
