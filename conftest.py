"""Every Python code block of README.md and docs/*.md runs as a test (Sybil), so a sample cannot drift.

The blocks of one page share a namespace and run in order, from the repository root, in an empty home
folder, with this interpreter's scripts first on PATH (the samples' configurations start `python`, as a
reader with the virtualenv active does; the demo server they start is warm-launched, see
tests/support.py). Setup a
reader need not see is in ``<!-- invisible-code-block: python -->`` blocks; a block that cannot run
here is preceded by ``<!-- skip: next -->`` and says why in prose.
Any hub a page leaves open is closed when the page ends, and so is whatever a page's hidden setup
puts in its `cleanups` list (a server, a temporary folder). A YAML or JSON block that shows server entries
(a whole `servers:` or `mcpServers` document, or a list of entries) must be a valid configuration, every
`${VAR}` standing for a set variable.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

REPO_ROOT = Path(__file__).resolve().parent

DEFAULT_WORKERS = 4
"""Test processes when none are asked for. The CI machine has 2 cores; with the servers warm-launched
(tests/servers/warm_launcher.py) most of a test's time is waiting on its servers, subprocesses and
bounds, so four workers keep both cores busier (on a quiet 2-core machine the cores stood idle 20% of a
three-worker run, 15% of a four-worker one)."""


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the suite's subprocesses as it reaches a program started from a terminal.

    A non-interactive shell starts a command in the background (`pytest &`, as some CI runners do) with
    SIGINT ignored, and an ignored signal stays ignored in every process started from it: Python then
    installs no KeyboardInterrupt handler, and each test that interrupts a host or a command line would
    fail. A handler of our own is reset to the default at exec, so the test processes and what they start
    get the interpreter's usual handler.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """`DEFAULT_WORKERS` workers, one test file per worker at a time (a module's shared servers start
    once) taken in collection order, unless the command line says otherwise (`-n 0`, `-n 4`, `--dist
    load`) or xdist is off (`-p no:xdist`)."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return  # xdist is off, or this is one of its workers
    if config.option.numprocesses is None:
        config.option.numprocesses = DEFAULT_WORKERS
    if config.option.dist == "no" and config.option.numprocesses:
        config.option.dist = "loadfile"
        config.option.loadscopereorder = False  # files in `LONGEST_FILES` order, not by their test counts


_PAGE_ENVIRONMENT = ("PATH", "HOME", "XDG_CONFIG_HOME")
"""What a page's run changes: PATH (this interpreter's scripts first) and the home folder (an empty one,
so a sample that reads a host's user file never starts the servers of the person running the tests)."""


LONGEST_FILES = (
    "tests/test_tasks_extension.py",
    "tests/test_task_stops.py",
    "tests/test_tasks.py",
    "tests/test_network_blips.py",
    "tests/test_hub_disconnect.py",
    "tests/test_reliability_faults.py",
    "tests/test_task_handles.py",
    "tests/test_sign_in.py",
    "tests/test_hosts.py",
    "tests/test_docs.py",
    "tests/test_cli_tasks.py",
    "tests/test_hub_lifecycle.py",
    "tests/test_fixture_servers.py",
    "tests/test_notebook_kernel.py",
    "tests/test_reliability_lifecycle.py",
    "tests/test_tasks_runner.py",
    "tests/integrations/test_examples.py",
    "tests/test_server_requests.py",
    "tests/test_reliability_input.py",
    "tests/test_lifecycle_contract.py",
    "tests/test_start_faults.py",
    "tests/test_warm_launcher.py",
)
"""The test files that take longest (the suite's `--durations`), longest first. The workers take one file at
a time in collection order, so these run first: the last files to start are short ones, and no long file
runs alone at the end. A file missing here only costs time."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`LONGEST_FILES` first, in that order; every other file after them, in collection order."""
    rank = {path: index for index, path in enumerate(LONGEST_FILES)}
    order = {id(item): rank.get(item.nodeid.partition("::")[0], len(rank)) for item in items}
    items.sort(key=lambda item: order[id(item)])  # stable: a file's tests keep their order


def _start_page(namespace: dict[str, Any]) -> None:
    namespace["__saved_cwd__"] = os.getcwd()
    namespace["__saved_environment__"] = {name: os.environ.get(name) for name in _PAGE_ENVIRONMENT}
    namespace["cleanups"] = []
    os.chdir(REPO_ROOT)
    from tests.support import python_path

    os.environ["PATH"] = python_path()
    home = tempfile.TemporaryDirectory(prefix="mcp-sync-docs-home-")
    namespace["cleanups"].append(home.cleanup)
    os.environ["HOME"] = home.name
    os.environ.pop("XDG_CONFIG_HOME", None)


def _end_page(namespace: dict[str, Any]) -> None:
    from mcp_sync import MCPHub

    try:
        for value in list(namespace.values()):
            if isinstance(value, MCPHub):
                value.close()
        for cleanup in reversed(namespace["cleanups"]):
            cleanup()
    finally:
        os.chdir(namespace["__saved_cwd__"])
        for name, saved in namespace["__saved_environment__"].items():
            if saved is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = saved


class _EveryVariableSet(Mapping[str, str]):
    """An environment in which every `${VAR}` a sample writes is set, to a value long enough for a secret
    (a variable named like a URL holds a URL, as a sample that builds one from it expects)."""

    def __getitem__(self, name: str) -> str:
        if "URL" in name.upper():
            return f"https://{name.lower().replace('_', '-')}.example"
        return f"value-of-{name}"

    def __contains__(self, name: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _check_yaml_block(example: Example) -> None:
    _check_config(yaml.safe_load(str(example.parsed)))


def _check_json_block(example: Example) -> None:
    _check_config(json.loads(str(example.parsed)))


def _check_config(document: Any) -> None:
    """A config sample's server entries are valid (strict: one bad entry fails it)."""
    from mcp_sync import parse_server_entries

    if isinstance(document, list) and all(isinstance(entry, dict) for entry in document):
        document = {"servers": document}  # a fragment of a `servers:` list
    if isinstance(document, dict) and ("servers" in document or "mcpServers" in document):
        parse_server_entries(document, environ=_EveryVariableSet(), strict=True)


pytest_collect_file = Sybil(
    parsers=[
        PythonCodeBlockParser(),
        SkipParser(),
        CodeBlockParser("yaml", _check_yaml_block),
        CodeBlockParser("json", _check_json_block),
    ],
    patterns=["README.md", "docs/*.md"],
    excludes=["*/README.md", "*/*/*"],  # the top-level README and docs/ only, not a README further down
    setup=_start_page,
    teardown=_end_page,
).pytest()
