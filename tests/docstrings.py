"""The check that what `help()` shows a user has a docstring: every public name of `mcp_sync`, and each
public method and property of its public classes. tests/test_docs.py runs it on the package; each
framework adapter's test module runs it on its adapter, where the framework is imported anyway."""

from __future__ import annotations

from types import ModuleType

NOT_OURS = (
    *("pydantic", "typing", "builtins", "abc", "enum"),
    *("dspy", "haystack", "langchain_core", "llama_index", "smolagents"),  # the integrations' frameworks
)
"""Modules whose methods a public class inherits without documenting them here."""


def undocumented(name: str, value: object) -> list[str]:
    """`name` if `value` has no docstring of its own, and each public method or property without one
    (`name.attribute`) of the classes of its MRO that are ours."""
    missing = []
    own_doc = getattr(value, "__doc__", None)
    if not (own_doc or "").strip() or own_doc == type(value).__doc__:
        missing.append(name)  # none, or only its type's (a typing alias's "Runtime representation")
    if not isinstance(value, type):
        return missing
    for owner in value.__mro__:
        if owner.__module__.split(".")[0] in NOT_OURS or owner in (object, BaseException, Exception):
            continue
        for attribute, member in vars(owner).items():
            function = getattr(member, "fget" if isinstance(member, property) else "__func__", member)
            if attribute.startswith("_") or not (callable(function) or isinstance(member, property)):
                continue
            if not (getattr(function, "__doc__", None) or "").strip():
                missing.append(f"{name}.{attribute}")
    return missing


def undocumented_classes(module: ModuleType) -> list[str]:
    """`undocumented` for each public class of an integrations module (a type alias there, such as
    `ToolFilter`, can carry no docstring of its own)."""
    missing = []
    for name in module.__all__:
        if isinstance(value := getattr(module, name), type):
            missing += undocumented(f"{module.__name__}.{name}", value)
    return sorted(set(missing))
