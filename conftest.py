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

import contextlib
import importlib.util
import json
import os
import py_compile
import signal
import sys
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
    """Ctrl-C as from a terminal for the suite's subprocesses (`_restore_ctrl_c`)."""
    _restore_ctrl_c()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """For a run of the whole suite with workers, the project's bytecode written once, before the
    workers start (xdist starts them in its own, later, `pytest_sessionstart`): `_SuiteBytecode`."""
    config = session.config
    whole_suite = config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.collectonly
    if whole_suite and getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        bytecode = _SuiteBytecode(config)
        config.add_cleanup(bytecode.remove)  # first: a Ctrl-C during the writing removes what it wrote
        bytecode.write()


def _restore_ctrl_c() -> None:
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


class _SuiteBytecode:
    """The bytecode of the project's Python files, written once by the process that starts the workers.

    Every worker collects every test module, and pytest rewrites the asserts of each test module and
    conftest.py it imports (about 5 s of CPU a worker for this suite) unless it finds the rewritten code
    in the module's ``__pycache__``; each of the suite's fresh interpreters (hosts, servers, command-line
    runs: a few hundred) compiles the package and the test servers it imports unless it finds their
    bytecode there. Neither is written where the environment asks for no bytecode (PYTHONDONTWRITEBYTECODE,
    which container images often set), and the workers start together, so each did all of it again.
    Here both are written before the workers start: the rewritten test modules with pytest's own
    functions (private: if they change, the workers rewrite as before), the rest with `py_compile`; an
    import checks each against its source's hash. Where the environment asks for no bytecode, the files
    written here where there were none are removed when the run ends. A run of some files only (or
    `--collect-only`) leaves this to the workers.
    """

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._written: list[Path] = []

    def write(self) -> None:
        patterns = self._config.getini("python_files")
        test_modules, other_modules = [REPO_ROOT / "conftest.py"], []
        for source in self._sources():
            if source.name == "conftest.py" or any(source.match(pattern) for pattern in patterns):
                test_modules.append(source)
            else:
                other_modules.append(source)
        self._rewrite(test_modules)
        self._compile(other_modules)

    @staticmethod
    def _sources() -> Iterator[Path]:
        for top in ("mcp_sync", "tests", "examples"):
            for folder, subfolders, files in os.walk(REPO_ROOT / top):
                subfolders[:] = [name for name in subfolders if name not in ("node_modules", "__pycache__")]
                yield from (Path(folder, name) for name in files if name.endswith(".py"))

    def _rewrite(self, sources: list[Path]) -> None:
        try:
            from _pytest.assertion.rewrite import (
                PYC_TAIL,
                _read_pyc,
                _rewrite_test,
                _write_pyc,
                assertstate_key,
                get_cache_dir,
            )
        except ImportError:
            return
        state = self._config.stash.get(assertstate_key, None)
        if state is None:  # --assert=plain
            return
        for source in sources:
            cache_dir = get_cache_dir(source)
            pyc = cache_dir / (source.name[:-3] + PYC_TAIL)
            if _read_pyc(source, pyc) is not None:
                continue
            existed = pyc.exists()
            try:
                cache_dir.mkdir(parents=True, exist_ok=True)
                source_hash, code = _rewrite_test(source, self._config)
            except (OSError, SyntaxError):
                continue  # the worker that imports it reports it
            if _write_pyc(state, code, source_hash, pyc) and not existed:
                self._written.append(pyc)

    def _compile(self, sources: list[Path]) -> None:
        # Checked by the source's hash, not its time stamp: the source an import finds is the one
        # compiled, even if it was saved again while it was being compiled.
        for source in sources:
            pyc = Path(importlib.util.cache_from_source(os.fspath(source)))
            existed = pyc.exists()
            if existed and _pyc_is_current(pyc, source):
                continue
            try:
                py_compile.compile(
                    os.fspath(source),
                    cfile=os.fspath(pyc),
                    doraise=True,
                    invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
                )
            except (OSError, py_compile.PyCompileError):
                continue  # what imports it reports it
            if not existed:  # one that was there, now current, is left there
                self._written.append(pyc)

    def remove(self) -> None:
        if not sys.dont_write_bytecode:
            return
        for pyc in self._written:
            pyc.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                pyc.parent.rmdir()  # only if nothing else is in it


def _pyc_is_current(pyc: Path, source: Path) -> bool:
    """Whether the import system would use `pyc` for `source` (PEP 552: checked by the source's hash, or
    by its time stamp and size)."""
    try:
        with pyc.open("rb") as cached:
            header = cached.read(16)
        if header[:4] != importlib.util.MAGIC_NUMBER:
            return False
        flags = int.from_bytes(header[4:8], "little")
        if flags & 0b1:  # hash-based
            return header[8:16] == importlib.util.source_hash(source.read_bytes())
        stat = source.stat()
        return header[8:16] == (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (
            stat.st_size & 0xFFFFFFFF
        ).to_bytes(4, "little")
    except OSError:
        return False


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
