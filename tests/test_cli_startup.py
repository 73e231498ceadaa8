"""The command line answers `--help` and `--version` without importing the SDK, and the package's
public names, imported on first use, are the same objects they always were."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys

import pytest

import mcp_sync
from tests.support import run_in_repo

HEAVY = ("mcp", "mcp_types", "pydantic", "httpx2", "anyio", "mcp_sync._hub", "mcp_sync._config")


def heavy_modules_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter has imported after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = run_in_repo([sys.executable, "-c", probe], timeout=60)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_command_line_imports_neither_the_sdk_nor_pydantic() -> None:
    assert heavy_modules_after("import mcp_sync._cli") == []


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["call", "--help"], ["servers", "--help"]])
def test_help_and_version_answer_without_importing_the_sdk(argv: list[str]) -> None:
    code = (
        "import contextlib, io\nfrom mcp_sync._cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({argv!r})"
    )
    assert heavy_modules_after(code) == []


def test_version_still_names_the_sdk_and_python() -> None:
    done = run_in_repo([sys.executable, "-m", "mcp_sync", "--version"], timeout=60)
    assert done.returncode == 0, done.stderr
    sdk = importlib.metadata.version("mcp")
    python = ".".join(str(part) for part in sys.version_info[:3])
    assert done.stdout == f"mcp-sync {mcp_sync.__version__} (mcp {sdk}, Python {python})\n"


def _type_checking_imports() -> dict[str, str]:
    """Public name -> defining module, as the `if TYPE_CHECKING:` block of `mcp_sync/__init__.py`
    imports them for type checkers."""
    tree = ast.parse(inspect.getsource(mcp_sync))
    block = next(
        node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        alias.asname or alias.name: f"mcp_sync.{node.module}"
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names
    }


def test_every_public_name_resolves_to_the_object_its_module_defines() -> None:
    static = _type_checking_imports()
    assert set(mcp_sync.__all__) == set(static), "__all__ and the names type checkers see differ"
    for name in mcp_sync.__all__:
        module = importlib.import_module(static[name])
        assert getattr(mcp_sync, name) is getattr(module, name), name


def test_star_import_and_dir_list_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from mcp_sync import *", namespace)
    assert set(mcp_sync.__all__) <= set(namespace)
    assert set(mcp_sync.__all__) <= set(dir(mcp_sync))
    assert "__version__" in dir(mcp_sync)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        mcp_sync.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    done = subprocess.run(
        [sys.executable, "-c", "from mcp_sync import NoSuchThing"], capture_output=True, text=True, timeout=60
    )
    assert "cannot import name 'NoSuchThing' from 'mcp_sync'" in done.stderr


def test_dir_shows_the_public_api_and_dunders_only_after_the_hub_is_used() -> None:
    code = (
        "import json, mcp_sync\nfrom mcp_sync import MCPHub, load_config_entries\n"
        "print(json.dumps([sorted(mcp_sync.__all__), dir(mcp_sync)]))"
    )
    done = run_in_repo([sys.executable, "-c", code], timeout=60)
    assert done.returncode == 0, done.stderr
    public, shown = json.loads(done.stdout.splitlines()[-1])
    assert [name for name in shown if not (name.startswith("__") and name.endswith("__"))] == public
    assert "__version__" in shown
