"""The private parts of the `mcp` SDK (and of the standard library) that mcp_sync relies on, fenced.

An SDK release may change or remove anything private without notice. Each private name mcp_sync
uses is listed in `INTERNALS`, with where mcp_sync uses it and why; these tests fail, naming the
internal and its user, when it is gone or its signature changed, and when mcp_sync starts to use
a private name of the SDK that is not listed. Where the SDK offers a public way, mcp_sync uses that
instead (the output-schema validators are compiled ahead through the public
`ClientSession.validate_tool_result`, not through the session's private caches; sign-in drives the
SDK's OAuth providers through their public `async_auth_flow`, not their private flow methods).

The transport contract our own stdio transport implements (`SessionMessage` on both streams,
parse errors as values) is public but is the SDK's internal seam between transport and session;
it is checked here too.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import types
from dataclasses import dataclass
from typing import Any

import pytest

import mcp_sync


@dataclass(frozen=True)
class Internal:
    """A private name of another package that mcp_sync uses."""

    owner: str  # "package.module:Class" or "package.module"
    name: str
    used_in: str
    params: tuple[str, ...] | None = None  # the signature's parameter names, where mcp_sync calls it
    kind: str = "attribute"  # "method", "async", "asyncgen", "function"

    @property
    def label(self) -> str:
        return f"{self.owner.replace(':', '.')}.{self.name}"


INTERNALS = (
    Internal(
        "dspy.adapters.types.tool:Tool",
        "_validate_and_parse_args",
        "mcp_sync/integrations/dspy.py: _HubTool.acall checks and converts the arguments as dspy.Tool's own "
        "calls do, before handing them to the hub",
        ("self", "kwargs"),
        "method",
    ),
    Internal(
        "threading",
        "_register_atexit",
        "mcp_sync/_runtime/lifecycle.py: ExitHook.arm, to close hubs before thread-pool workers are joined",
        ("func", "arg", "kwargs"),
        "function",
    ),
)


def _owner(internal: Internal) -> Any:
    module_name, _, qualname = internal.owner.partition(":")
    try:
        owner: Any = importlib.import_module(module_name)
        for part in filter(None, qualname.split(".")):
            owner = getattr(owner, part)
    except (ImportError, AttributeError) as exc:
        pytest.fail(
            f"{internal.owner} is gone ({exc}); mcp_sync needs {internal.name} of it: {internal.used_in}"
        )
    return owner


def _provider_instance() -> Any:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    class NoStorage:
        async def get_tokens(self) -> None:
            return None

        async def set_tokens(self, tokens: Any) -> None: ...

        async def get_client_info(self) -> None:
            return None

        async def set_client_info(self, client_info: Any) -> None: ...

    metadata = OAuthClientMetadata(redirect_uris=["http://127.0.0.1:1/callback"])  # type: ignore[list-item]
    return OAuthClientProvider(
        server_url="http://127.0.0.1:1/mcp", client_metadata=metadata, storage=NoStorage()
    )


@pytest.mark.parametrize("internal", INTERNALS, ids=lambda internal: internal.label)
def test_private_sdk_name_that_mcp_sync_uses_still_exists_with_its_signature(internal: Internal) -> None:
    owner = _owner(internal)
    where = f"mcp_sync uses {internal.label}: {internal.used_in}"
    member = getattr(owner, internal.name, None)
    assert member is not None, f"{internal.label} is gone from the installed SDK; {where}"
    assert callable(member), f"{internal.label} is no longer callable; {where}"
    if internal.kind == "async":
        assert inspect.iscoroutinefunction(member), (
            f"{internal.label} is no longer a coroutine function; {where}"
        )
    if internal.kind == "asyncgen":
        assert inspect.isasyncgenfunction(member), (
            f"{internal.label} is no longer an async generator; {where}"
        )
    if internal.params is not None:
        params = tuple(inspect.signature(member).parameters)
        assert params == internal.params, (
            f"{internal.label} now takes {params}, not {internal.params}; {where}"
        )


def test_the_oauth_context_fields_mcp_sync_reads_and_writes_are_there() -> None:
    # Public names, but not exported: the state of the SDK's provider that mcp_sync/_auth/sign_in.py reads
    # (which tokens, since when, issued by whom) and sets (an expiry in the past makes the next flow
    # refresh first).
    context = _provider_instance().context
    for field in ("current_tokens", "token_expiry_time", "oauth_metadata", "client_info"):
        assert hasattr(context, field), (
            f"OAuthContext.{field} is gone; mcp_sync/_auth/sign_in.py reads and restores it"
        )
    for method in ("can_refresh_token", "is_token_valid"):
        assert callable(getattr(context, method, None)), (
            f"OAuthContext.{method} is gone; mcp_sync/_auth/sign_in.py decides between stored, refreshed and "
            "re-read tokens with it"
        )


def test_the_transport_message_contract_our_stdio_transport_implements_holds() -> None:
    # mcp_sync/_server/stdio.py is a transport of our own: it yields SessionMessage (or the parse error, as
    # a value) on the read stream and takes SessionMessage on the write stream, as the SDK's does.
    import mcp_types
    from mcp.client import stdio
    from mcp.shared.message import SessionMessage

    parsed = mcp_types.jsonrpc_message_adapter.validate_json('{"jsonrpc": "2.0", "id": 1, "result": {}}')
    message = SessionMessage(parsed)
    assert message.message is parsed, "SessionMessage(message) no longer keeps the message as .message"
    source = inspect.getsource(stdio)
    assert "SessionMessage | Exception" in source, (
        "the SDK's stdio transport no longer sends `SessionMessage | Exception` on its read stream; "
        "mcp_sync/_server/stdio.py sends the same and must follow"
    )


def test_the_seams_the_request_tasks_sit_in_hold() -> None:
    # mcp_sync/_server/request_tasks.py answers a 2025-11-25 server's `tasks/*` requests itself, between the
    # SDK's client and the transport (public stream interface): the SDK must not handle them itself (it would
    # no longer see them), and the read stream it wraps forwards `last_context`, which the SDK's dispatcher
    # reads duck-typed off the stream for each message.
    from mcp.shared import jsonrpc_dispatcher
    from mcp_types import methods

    handled = sorted(method for method, _version in methods.SERVER_REQUESTS if method.startswith("tasks/"))
    assert not handled, (
        f"the SDK's client now handles {handled}; mcp_sync/_server/request_tasks.py takes these requests off "
        "the read stream before the SDK sees them: use the SDK's handling instead"
    )
    assert "last_context" in inspect.getsource(jsonrpc_dispatcher), (
        "the SDK's dispatcher no longer reads the read stream's `last_context`; "
        "mcp_sync/_server/request_tasks.py's read stream forwards it and should follow"
    )


# -- nothing private is used without being listed --------------------------------------------------------

# The SDK, and the frameworks whose classes an adapter subclasses and reaches into (DSPy's `Tool`).
_FOREIGN_PACKAGES = ("mcp", "mcp_types", "dspy")


def _modules() -> list[types.ModuleType]:
    names = [info.name for info in pkgutil.walk_packages(mcp_sync.__path__, "mcp_sync.")]
    return [importlib.import_module(name) for name in names if not name.endswith("__main__")]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_sdk_class(cls: type) -> bool:
    return cls.__module__.split(".")[0] in _FOREIGN_PACKAGES


def _sdk_definer(cls: type, name: str) -> type | None:
    """The first SDK class in `cls`'s MRO that defines `name` (a method, or an attribute it sets)."""
    for base in cls.__mro__:
        if not _is_sdk_class(base):
            continue
        if name in vars(base):
            return base
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            continue
        if re.search(rf"\bself\.{re.escape(name)}\b", source):
            return base
    return None


def _names_used_in(node: ast.ClassDef) -> set[str]:
    """Private names a class body defines as methods or reads and writes on `self` / `super()`."""
    names = {item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Attribute):
            continue
        receiver = sub.value
        on_self = isinstance(receiver, ast.Name) and receiver.id == "self"
        on_super = (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "super"
        )
        if on_self or on_super:
            names.add(sub.attr)
    return {name for name in names if _is_private(name)}


def sdk_privates_in_use() -> dict[str, str]:
    """`module.Class.name` -> where: each private SDK name an mcp_sync class overrides or uses."""
    used: dict[str, str] = {}
    for module in _modules():
        tree = ast.parse(inspect.getsource(module))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            cls = getattr(module, node.name, None)
            if not isinstance(cls, type) or not any(_is_sdk_class(base) for base in cls.__mro__):
                continue
            for name in sorted(_names_used_in(node)):
                definer = _sdk_definer(cls, name)
                if definer is not None:
                    key = f"{definer.__module__}.{definer.__qualname__}.{name}"
                    used.setdefault(key, f"{module.__name__}.{node.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in _FOREIGN_PACKAGES:
                parts = (node.module or "").split(".") + [alias.name for alias in node.names]
                for part in parts:
                    if _is_private(part):
                        used[f"{node.module}.{part}"] = module.__name__
            reached = _module_private(module, node)
            if reached is not None:
                used[reached] = module.__name__
    return used


def _module_private(module: types.ModuleType, node: ast.AST) -> str | None:
    """`package.name` when `node` reaches a private name of another package's module: `mod._name`, or
    `getattr(mod, "_name")` with `mod` a module that `module` imported."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        target, name = node.value.id, node.attr
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[0], ast.Name)
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        target, name = node.args[0].id, node.args[1].value
    else:
        return None
    imported = getattr(module, target, None)
    if not isinstance(imported, types.ModuleType) or imported.__name__.startswith("mcp_sync"):
        return None
    return f"{imported.__name__}.{name}" if _is_private(name) else None


def _names_mcp_sync_defines(trees: list[ast.Module]) -> set[str]:
    """Every private name mcp_sync itself defines: functions, methods, classes, attributes it assigns
    (on any object), names it binds, parameters, import aliases, `__slots__` entries."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[0])
            elif isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__slots__" for target in node.targets
            ):
                names |= {item.value for item in ast.walk(node.value) if isinstance(item, ast.Constant)}
    return {name for name in names if _is_private(name)}


def foreign_privates_read(modules: list[types.ModuleType]) -> dict[str, str]:
    """Private names read on some object (`x._name`, `getattr(x, "_name")`) that mcp_sync never defines:
    they can only be another package's. Name -> the module that reads it."""
    trees = {module.__name__: ast.parse(inspect.getsource(module)) for module in modules}
    ours = _names_mcp_sync_defines(list(trees.values()))
    ours -= {internal.name for internal in INTERNALS}  # what mcp_sync overrides is still the SDK's
    found: dict[str, str] = {}
    for module_name, tree in trees.items():
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                name = node.attr
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                name = node.args[1].value
            if name is not None and _is_private(name) and name not in ours:
                found.setdefault(name, module_name)
    return found


def test_every_private_sdk_name_mcp_sync_uses_is_listed() -> None:
    listed = {internal.label for internal in INTERNALS}
    used = sdk_privates_in_use()
    unlisted = {name: where for name, where in used.items() if name not in listed}
    listed_names = {internal.name for internal in INTERNALS}
    unlisted |= {
        f"<some object>.{name}": where
        for name, where in foreign_privates_read(_modules()).items()
        if name not in listed_names
    }
    assert not unlisted, (
        "mcp_sync uses private names of the SDK that tests/test_sdk_internals.py does not fence "
        f"(use a public way, or add each to INTERNALS with where and why): {unlisted}"
    )


def test_every_listed_internal_is_still_used() -> None:
    used = sdk_privates_in_use()
    unused = [internal.label for internal in INTERNALS if internal.label not in used]
    assert not unused, f"INTERNALS lists private names mcp_sync no longer uses; remove them: {unused}"
