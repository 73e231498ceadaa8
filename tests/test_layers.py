"""The package's layers, checked: a folder imports only the folders below it, and the loop side
(`_server`) never imports the callers' side (`_hub`).

Every import is read from the source (also those inside functions and under `TYPE_CHECKING`), so a
lazy import cannot hide an upward arrow. The rules are the ones each folder's `__init__` states.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_sync"

# Each layer and the layers it may import (its own modules always). The top level (`mcp_sync/__init__`,
# the CLI, the ready-made handlers, the framework adapters) may import anything.
ALLOWED: dict[str, frozenset[str]] = {
    "_values": frozenset(),
    "_os": frozenset({"_values"}),
    "_runtime": frozenset({"_values", "_os"}),
    "_config": frozenset({"_values", "_os"}),
    "_auth": frozenset({"_values", "_os", "_config"}),
    "_server": frozenset({"_values", "_os", "_runtime", "_config", "_auth"}),
    "_hub": frozenset({"_values", "_os", "_runtime", "_config", "_auth", "_server"}),
}
TOP = "<top>"


def layer_of(dotted: str) -> str:
    """The layer of a module given by its dotted path inside the package ('' is the package itself)."""
    first = dotted.split(".")[0]
    return first if first in ALLOWED else TOP


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, dotted path inside mcp_sync) of every import of mcp_sync in `source`."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    if module == "":
        package = []
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            elif node.module is not None and node.module.split(".")[0] == "mcp_sync":
                target = node.module.removeprefix("mcp_sync").lstrip(".")
            else:
                continue
            if target:
                found.append((node.lineno, target))
            else:  # `from .. import name`: the names may be modules of the package
                found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "mcp_sync" or alias.name.startswith("mcp_sync."):
                    found.append((node.lineno, alias.name.removeprefix("mcp_sync").lstrip(".")))
    return found


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """Every import in `source` (the module `module`) that its layer may not make."""
    here = layer_of(module)
    if here == TOP:
        return []
    problems = []
    for line, target in imported_modules(source, module, is_package):
        there = layer_of(target)
        if there == here:
            continue
        if there == TOP:
            what = "the package's top level" if target in ("", "__init__") else f"the top-level {target!r}"
            problems.append(f"{module}:{line} imports {what}, which sits above every layer")
        elif there not in ALLOWED[here]:
            problems.append(f"{module}:{line} imports {target} ({there}), which {here} may not import")
    return problems


def package_modules() -> list[tuple[str, Path, bool]]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        dotted = ".".join(parts[:-1] if is_package else parts)
        modules.append((dotted, path, is_package))
    return modules


def test_no_module_imports_a_layer_above_its_own() -> None:
    problems = [
        problem
        for module, path, is_package in package_modules()
        for problem in violations(path.read_text(encoding="utf-8"), module, is_package)
    ]
    assert not problems, "imports against the layers:\n" + "\n".join(problems)


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the modules of the package it imports (anywhere in it). `from .
    import name` counts as an import of the submodule `name` where there is one."""
    modules = {module for module, _path, _is_package in package_modules()}
    graph: dict[str, set[str]] = {}
    for module, path, is_package in package_modules():
        package = module.split(".") if is_package else module.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = ".".join([*package[: len(package) - (node.level - 1)], *filter(None, [node.module])])
                for alias in node.names:
                    submodule = f"{base}.{alias.name}".lstrip(".")
                    targets.add(submodule if submodule in modules else base)
                continue
            if isinstance(node, ast.ImportFrom):
                named = [node.module or ""]
            elif isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            else:
                continue
            ours = (name for name in named if name.startswith("mcp_sync"))
            targets |= {name.removeprefix("mcp_sync").lstrip(".") for name in ours}
        graph[module] = {target for target in targets if target in modules and target != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import one another in a circle (strongly connected, more than one)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            group = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def test_no_modules_import_one_another_in_a_circle() -> None:
    # A circle is the smell STYLE names: two modules that are one, or a helper in the wrong place.
    assert circles(import_graph()) == []


def test_the_circle_check_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_every_folder_of_the_package_is_a_known_layer() -> None:
    # A new folder must be placed among the layers (and its __init__ must say what it may import).
    folders = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    unknown = folders - set(ALLOWED) - {"integrations", "_cli"}
    assert not unknown, f"folders that are not in the layer table: {sorted(unknown)}"
    for folder in ALLOWED:
        init = PACKAGE / folder / "__init__.py"
        if not init.exists():  # a layer that is still one module
            assert (PACKAGE / f"{folder}.py").exists(), f"layer {folder} is gone"
            continue
        docstring = ast.get_docstring(ast.parse(init.read_text()))
        assert docstring and "May import" in docstring, f"{folder}/__init__.py must say what it may import"


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("_server.session", "from .._hub.registry import Lease\n", "_server.session:1 imports _hub.registry"),
        ("_values.tool", "def f():\n    from .._runtime import calls\n", "_values.tool:2 imports _runtime"),
        ("_auth.tokens", "from mcp_sync._server import session\n", "_auth.tokens:1 imports _server"),
        ("_runtime.calls", "from .. import MCPHub\n", "_runtime.calls:1 imports the top-level 'MCPHub'"),
        ("_hub.hub", "import mcp_sync\n", "_hub.hub:1 imports the package's top level"),
        ("_config.secrets", "from .._hub import hub\n", "_config.secrets:1 imports _hub"),
    ],
)
def test_the_check_finds_an_upward_import(module: str, source: str, expected: str) -> None:
    found = violations(source, module)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_the_check_allows_imports_downward_and_within_a_layer() -> None:
    source = (
        "from .._values.errors import describe\nfrom .session import Session\n"
        "from .._runtime.calls import CallSlot\nfrom ..import _auth\n"
    )
    assert violations(source, "_server.features") == []
