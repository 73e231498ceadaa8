"""Every Python code block of README.md and docs/*.md runs as a test (Sybil), so a sample cannot drift.

The blocks of one page share a namespace and run in order, from the repository root, with this
interpreter's scripts first on PATH (the samples' configurations start `python`, as a reader with the
virtualenv active does). Setup a reader need not see is in ``<!-- invisible-code-block: python -->``
blocks; a block that cannot run here is preceded by ``<!-- skip: next -->`` and says why in prose.
Any hub a page leaves open is closed when the page ends.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

REPO_ROOT = Path(__file__).resolve().parent


def _start_page(namespace: dict[str, Any]) -> None:
    namespace["__saved_cwd__"] = os.getcwd()
    namespace["__saved_path__"] = os.environ.get("PATH")
    os.chdir(REPO_ROOT)
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def _end_page(namespace: dict[str, Any]) -> None:
    from mcp_sync import MCPHub

    try:
        for value in list(namespace.values()):
            if isinstance(value, MCPHub):
                value.close()
    finally:
        os.chdir(namespace["__saved_cwd__"])
        saved_path = namespace["__saved_path__"]
        if saved_path is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = saved_path


pytest_collect_file = Sybil(
    parsers=[PythonCodeBlockParser(), SkipParser()],
    patterns=["README.md", "docs/*.md"],
    excludes=["*/README.md", "*/*/*"],  # the top-level README and docs/ only, not a README further down
    setup=_start_page,
    teardown=_end_page,
).pytest()
