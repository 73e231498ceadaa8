"""Every piece of process-wide state of mcp_sync is listed, once, in the docs' "Process-wide state".

State that outlives one hub (a cache, one-time work, a registry of hubs or secrets, a hook in the
interpreter) decides what one hub's failure, close, or a fork does to every other hub: each must
have an owner and a known fate. These tests find it in the code and hold the table to it:

- every module-level object of a mutable type (dict, list, set, weak collections, futures, locks,
  events, instances of classes with state...); constants (numbers, strings, tuples and frozensets
  of constants, read-only mappings of constants, compiled patterns, loggers, typing aliases,
  classes, functions, bare ``object()`` sentinels) are not state;
- every module-level name a function rebinds (``global``);
- every hook installed in the interpreter (fork and exit hooks, the log-record factory,
  finalizers).
"""

from __future__ import annotations

import ast
import asyncio
import enum
import importlib
import inspect
import json
import logging
import pkgutil
import re
import subprocess
import sys
import types
import typing
from typing import Any

import mcp_sync
from tests.support import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "architecture.md"
"""The documentation page whose "Process-wide state" section holds the table."""
SECTION = "## Process-wide state"
NOT_IMPORTED = {"mcp_sync.__main__"}  # it runs the command line when imported

HOOK_CALLS = {
    "register_at_fork": "os.register_at_fork",
    "_register_atexit": "threading._register_atexit",
    "setLogRecordFactory": "logging.setLogRecordFactory",
    "finalize": "weakref.finalize",
}
"""A call of this name in mcp_sync installs something in the interpreter; the table must name it."""
ATEXIT_CALL = "atexit.register"
IPYTHON_EVENT_CALL = "shell.events.register"
"""An IPython shell's event hook (`shell.events.register("post_run_cell", ...)`)."""

_CONSTANT_TYPES = (
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    re.Pattern,
    logging.Logger,
    typing.TypeVar,
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    enum.Enum,
)


def package_modules() -> list[types.ModuleType]:
    names = [
        info.name
        for info in pkgutil.walk_packages(mcp_sync.__path__, "mcp_sync.")
        if info.name not in NOT_IMPORTED
    ]
    return [mcp_sync, *(importlib.import_module(name) for name in names)]


def short_name(module: types.ModuleType) -> str:
    return module.__name__.removeprefix("mcp_sync.") if module is not mcp_sync else "mcp_sync"


def _assigned_names(body: list[ast.stmt]) -> list[str]:
    """Names bound at module level (also inside module-level if / try / with blocks)."""
    names: list[str] = []
    for node in body:
        if isinstance(node, ast.Assign):
            names += [n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.If | ast.With | ast.Try):
            names += _assigned_names(node.body)
            names += _assigned_names(getattr(node, "orelse", []))
            names += _assigned_names(getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                names += _assigned_names(handler.body)
    return names


def is_constant(value: Any) -> bool:
    """True for a value that cannot change (or has no state to change)."""
    if value is None or isinstance(value, _CONSTANT_TYPES) or type(value) is object:
        return True
    if typing.get_origin(value) is not None:  # Literal[...], Callable[...], X | Y, Annotated[...]
        return True
    if isinstance(value, tuple | frozenset):
        return all(is_constant(item) for item in value)
    if isinstance(value, types.MappingProxyType):
        return all(is_constant(key) and is_constant(item) for key, item in value.items())
    return False


def found_state() -> dict[str, str]:
    """``module.name`` -> why it counts, for every piece of module-level state in mcp_sync."""
    found: dict[str, str] = {}
    for module in package_modules():
        tree = ast.parse(inspect.getsource(module))
        prefix = short_name(module)
        for name in dict.fromkeys(_assigned_names(tree.body)):
            if name.startswith("__") or not hasattr(module, name):
                continue
            value = getattr(module, name)
            if not is_constant(value):
                found[f"{prefix}.{name}"] = f"a {type(value).__qualname__} at module level"
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                for name in node.names:
                    found[f"{prefix}.{name}"] = "a module-level name that a function rebinds (global)"
    return found


def found_hooks() -> dict[str, str]:
    """The hooks mcp_sync installs in the interpreter -> the module that installs each."""
    hooks: dict[str, str] = {}
    for module in package_modules():
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Constant) and node.value in HOOK_CALLS:  # getattr(threading, "...")
                hooks[HOOK_CALLS[node.value]] = short_name(module)
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            attribute, owner = node.func.attr, node.func.value
            if attribute in HOOK_CALLS and not (attribute == "finalize" and _name_of(owner) != "weakref"):
                hooks[HOOK_CALLS[attribute]] = short_name(module)
            elif attribute == "register" and _name_of(owner) == "atexit":
                hooks[ATEXIT_CALL] = short_name(module)
            elif attribute == "register" and isinstance(owner, ast.Attribute) and owner.attr == "events":
                hooks[IPYTHON_EVENT_CALL] = short_name(module)
    return hooks


def _name_of(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def documented_table() -> tuple[set[str], str]:
    """The names in the first column of the page's table, and the whole section's text."""
    text = PAGE.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/architecture.md has no {SECTION!r} section"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        first = line.split("|")[1]
        names |= {name for name in re.findall(r"`([^`]+)`", first) if "." in name}
    return names, section


def test_every_piece_of_module_level_state_is_in_the_documented_table() -> None:
    listed, _section = documented_table()
    missing = {name: why for name, why in found_state().items() if name not in listed}
    assert not missing, (
        f"module-level state missing from {PAGE.name} {SECTION!r} (add a row: object, owner, and what "
        f"failure, close, exit and fork do to it): {missing}"
    )


def test_the_documented_table_names_no_state_that_no_longer_exists() -> None:
    listed, _section = documented_table()
    found = set(found_state())
    hooks = set(found_hooks())
    modules = {short_name(module): module for module in package_modules()}
    named_objects = {
        name
        for name in listed
        if name.rpartition(".")[0] in modules  # not a hook of the standard library
        and not inspect.isclass(getattr(modules[name.rpartition(".")[0]], name.rpartition(".")[2], None))
    }
    known_hooks = {*HOOK_CALLS.values(), ATEXIT_CALL, IPYTHON_EVENT_CALL}
    stale = {name for name in named_objects if name not in found} | {
        name for name in listed if name in known_hooks and name not in hooks
    }
    assert not stale, f"docs/architecture.md {SECTION!r} lists what mcp_sync no longer has: {sorted(stale)}"


def test_every_hook_installed_in_the_interpreter_is_in_the_documented_table() -> None:
    listed, _section = documented_table()
    missing = {hook: module for hook, module in found_hooks().items() if hook not in listed}
    assert not missing, (
        f"hooks installed by these modules are missing from {PAGE.name} {SECTION!r}: {missing}"
    )


def test_the_state_finder_sees_what_it_must() -> None:
    # The finder itself: known state is found, known constants are not.
    found = found_state()
    for name in (
        "_hub.servers._open_sets",
        "_runtime.lifecycle._fork_callbacks",
        "_runtime.lifecycle._fork_generation",
    ):
        assert name in found, name
    constants = (
        "_runtime.lifecycle.HUB_TRANSITIONS",
        "_config.fields.SERVER_NAME_RE",
        "_hub.servers.logger",
    )
    for name in constants:
        assert name not in found, name
    assert "os.register_at_fork" in found_hooks()


_LOOP_BOUND = (
    asyncio.Future,
    asyncio.Event,
    asyncio.Lock,
    asyncio.Condition,
    asyncio.Queue,
    asyncio.AbstractEventLoop,
)


def _loop_bound(value: Any) -> bool:
    """An asyncio object (bound to the loop it was made on), or an instance holding one."""
    if isinstance(value, _LOOP_BOUND):
        return True
    attributes = getattr(value, "__dict__", None)
    return isinstance(attributes, dict) and any(isinstance(item, _LOOP_BOUND) for item in attributes.values())


def test_no_process_wide_object_is_bound_to_an_event_loop() -> None:
    # State of the process must not belong to one connection's loop: that loop may end first.
    bound = [
        f"{short_name(module)}.{name}"
        for module in package_modules()
        for name, value in vars(module).items()
        if not (inspect.isclass(value) or inspect.ismodule(value) or inspect.isroutine(value))
        and _loop_bound(value)
    ]
    assert not bound, f"module-level objects bound to an event loop: {bound}"


def test_process_wide_state_section_gives_each_object_its_fate() -> None:
    _listed, section = documented_table()
    header = next(line for line in section.splitlines() if line.startswith("|"))
    columns = [column.strip().lower() for column in header.strip("|").split("|")]
    assert columns == ["object", "owner", "failure", "close", "exit", "fork"], header
    rows = [line for line in section.splitlines() if line.startswith("|") and not line.startswith("|---")]
    for row in rows[1:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 6 and all(cells), f"a row without every fate: {row}"


CALLBACK_LOCKS_AND_NOTEBOOK_MARKS = """
import gc, json, os, signal, sys, time
from mcp_sync import MCPHub
from mcp_sync._hub import notebook
from mcp_sync._runtime import callbacks

out = {"baseline": len(callbacks._locked), "notebook_marks": len(notebook._made_a_hub)}
heard = []

def boom(tool):
    raise RuntimeError("a callback that fails")

def double(x: int) -> int:
    '''Twice x.'''
    return 2 * x

hub = MCPHub([]).start()
hub.on_tool_added(boom)                       # failure: a raising callback changes nothing here
hub.on_tool_added(lambda tool: heard.append(tool.name))
hub.registry.register_function(double)
out["subscribed"] = len(callbacks._locked) > out["baseline"]
deadline = time.monotonic() + 10
while not heard and time.monotonic() < deadline:
    time.sleep(0.01)
out["heard"] = heard

held = [holder._lock for holder in list(callbacks._locked)]
for lock in held:                              # fork while every such lock is held
    lock.acquire()
pid = os.fork()
if pid == 0:
    child = MCPHub([]).start()
    child.on_tool_added(lambda tool: None)
    child.close()
    os._exit(0)
for lock in held:
    lock.release()
deadline = time.monotonic() + 30
status = None
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.02)
else:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
out["child_subscribed_after_fork"] = status == 0

hub.close()
del hub
gc.collect()
out["after_close"] = len(callbacks._locked)
out["notebook_marks_after"] = len(notebook._made_a_hub)
print(json.dumps(out))
"""


def test_the_callback_lock_holders_and_notebook_marks_through_failure_fork_close_and_exit() -> None:
    # In a fresh interpreter: nothing held at import; a callback that raises changes nothing; a child
    # forked while every subscribing lock is held subscribes; close and collection empty the weak set;
    # outside IPython no notebook mark is ever made; the process exits cleanly.
    done = subprocess.run(
        [sys.executable, "-c", CALLBACK_LOCKS_AND_NOTEBOOK_MARKS],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "baseline": 0,
        "notebook_marks": 0,
        "subscribed": True,
        "heard": ["double"],
        "child_subscribed_after_fork": True,
        "after_close": 0,
        "notebook_marks_after": 0,
    }
