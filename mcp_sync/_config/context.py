"""What a host file's references may need besides the environment: project, home, and inputs.

VS Code's `${workspaceFolder}` and `${userHome}`, and its `${input:ID}` values, which a caller gives
as a mapping of input id to value or as a handler called with each `HostInput` a server uses.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias


@dataclass(frozen=True)
class HostInput:
    """One of VS Code's `inputs`: what the host would prompt the user for (`${input:ID}`)."""

    id: str
    description: str | None = None
    password: bool = False  # the host hides what is typed: a secret
    type: str = "promptString"
    default: str | None = None
    options: tuple[str, ...] = ()  # a `pickString` input's choices: the values passed to the server
    # What each option is shown as (its `label`, else its value), in the order of `options`.
    option_labels: tuple[str, ...] = ()

    def label_of(self, option: str) -> str:
        """The label an option is shown with: its `label` in the file, else the option itself.

        Two options may share a value under different labels: this is the first's; `label_at` gives each.
        """
        if option in self.options:
            return self.label_at(self.options.index(option))
        return option

    def label_at(self, index: int) -> str:
        """The label of the option listed at `index` (from 0): its `label` in the file, else its value."""
        label = self.option_labels[index] if index < len(self.option_labels) else ""
        return label or self.options[index]


InputHandler: TypeAlias = Callable[[HostInput], str | None]
"""Gives an input's value, or None when it has none (then the environment is asked)."""

Inputs: TypeAlias = Mapping[str, str] | InputHandler | None


@dataclass(frozen=True)
class LoadContext:
    """The folders and inputs a document's references are resolved against."""

    project: Path | None = None  # the workspace folder: `${workspaceFolder}`, relative `envFile` paths
    home: Path | None = None  # `${userHome}`; default: the user's home directory
    inputs: Inputs = None
    host: str | None = None  # the host whose file it is, when the caller knows (`load_host_entries`)
    # Why the host leaves a server off by its name (Gemini CLI's `mcp.excluded`, say), or None: the
    # rules of all of a host's files, when the caller read them all (`load_host_entries`).
    why_off: Callable[[str], str | None] | None = None

    def home_folder(self) -> str:
        return os.fspath(self.home) if self.home is not None else os.path.expanduser("~")

    def input_value(self, item: HostInput) -> str | None:
        """The caller's value for an input, if it gave one."""
        if self.inputs is None:
            return None
        if isinstance(self.inputs, Mapping):
            return self.inputs.get(item.id)
        value = self.inputs(item)
        if value is not None and not isinstance(value, str):
            raise TypeError(f"the inputs handler must return a string or None for {item.id!r}")
        return value


class _RememberedInputs:
    """An inputs handler asked once per input id: VS Code asks once, however many places use it."""

    def __init__(self, handler: InputHandler) -> None:
        self._handler = handler
        self._values: dict[str, str | None] = {}
        self._lock = threading.Lock()  # a hub may be reloaded from another thread

    def __call__(self, item: HostInput) -> str | None:
        with self._lock:
            if item.id not in self._values:
                self._values[item.id] = self._handler(item)
            return self._values[item.id]


def remembered(inputs: Inputs) -> Inputs:
    """`inputs` with a handler's answers kept by id (a mapping, or one already remembered, as it is)."""
    if inputs is None or isinstance(inputs, Mapping | _RememberedInputs):
        return inputs
    return _RememberedInputs(inputs)
