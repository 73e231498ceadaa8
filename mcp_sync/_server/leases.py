"""What a server's loop side writes to, seen from the loop side: its hold on the tool registry and on the
catalog. The hub's `ToolRegistry` / `Catalog` provide these (`_hub.registry`, `_hub.catalog`); the loop side
knows them only by these protocols, so it never imports the hub's side."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .._values.prompts import Prompt
from .._values.resources import Resource, ResourceTemplate
from .._values.tool import Tool, ToolChanges

__all__ = ["CatalogLease", "CatalogOpener", "ToolLease"]


class ToolLease(Protocol):
    """One server's name in the tool registry, held while its connection lives (`ServerLease`)."""

    def replace_tools(self, tools: Sequence[Tool]) -> ToolChanges | None:
        """Make `tools` the server's tools; the changes, or None once the lease has ended."""
        ...


class CatalogLease(Protocol):
    """One server's entries in the catalog of resources, templates and prompts."""

    def replace_resources(self, resources: Sequence[Resource]) -> None: ...

    def replace_templates(self, templates: Sequence[ResourceTemplate]) -> None: ...

    def replace_prompts(self, prompts: Sequence[Prompt]) -> None: ...

    def end(self, then: Callable[[], object] | None = None) -> None:
        """Remove the server's entries, run `then()`, then announce the removal; later replacements are
        ignored."""
        ...


class CatalogOpener(Protocol):
    """The catalog, as a server's loop side needs it: a lease for one server's entries."""

    def open(self, server_name: str) -> CatalogLease: ...
