"""The catalog: every server's resources, resource templates and prompts, in one thread-safe view.

Like the tool registry, each server's listing is a generation replaced as a whole through
the `CatalogLease` of one connection; an ended lease refuses writes, so a listing still in
flight when its server went away cannot bring entries back. Maps are copied on write
(readers take no lock), and change events are queued under the lock onto the registry's
callback thread, so listeners hear them in the order the changes were made.

It is data plus change events: it knows nothing of hubs, connections or loops.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .._runtime.callbacks import CallbackDispatcher, ListenerSet
from .._values.prompts import Prompt
from .._values.resources import Resource, ResourceTemplate

__all__ = ["Catalog", "CatalogLease"]

logger = logging.getLogger("mcp_sync")


@dataclass(frozen=True)
class _Entries:
    """One server's current generation of each listing."""

    resources: dict[str, Resource] = field(default_factory=dict)
    templates: dict[str, ResourceTemplate] = field(default_factory=dict)
    prompts: dict[str, Prompt] = field(default_factory=dict)


class CatalogLease:
    """The right to write one server's listings, held by one connection; see `Catalog`."""

    __slots__ = ("_active", "_catalog", "server_name")

    def __init__(self, catalog: Catalog, server_name: str) -> None:
        self._catalog = catalog
        self.server_name = server_name
        self._active = True

    @property
    def active(self) -> bool:
        return self._active

    def replace_resources(self, resources: Sequence[Resource]) -> None:
        self._catalog._replace(self, resources=resources)

    def replace_templates(self, templates: Sequence[ResourceTemplate]) -> None:
        self._catalog._replace(self, templates=templates)

    def replace_prompts(self, prompts: Sequence[Prompt]) -> None:
        self._catalog._replace(self, prompts=prompts)

    def end(self, then: Callable[[], object] | None = None) -> None:
        """Remove the server's entries (listeners are told) and refuse later writes. Idempotent.

        `then()` runs once the entries are gone and before their removal is posted to the listeners (as
        `ServerLease.end`'s): a change it makes (the connection's state) is seen by them. It always runs."""
        self._catalog._end(self, then)


class Catalog:
    """Resources, templates and prompts of every server of a hub, with change listeners."""

    def __init__(self, dispatcher: CallbackDispatcher) -> None:
        self._lock = threading.Lock()
        self._dispatcher = dispatcher
        self._servers: dict[str, _Entries] = {}
        self._leases: dict[str, CatalogLease] = {}
        self.resource_added: ListenerSet[Resource] = ListenerSet()
        self.resource_removed: ListenerSet[Resource] = ListenerSet()
        self.prompt_added: ListenerSet[Prompt] = ListenerSet()
        self.prompt_removed: ListenerSet[Prompt] = ListenerSet()

    # -- reading (any thread) ----------------------------------------------------------------------

    def resources(self) -> list[Resource]:
        """Every server's resources, sorted by server then URI."""
        servers = self._servers
        return [r for name in sorted(servers) for _, r in sorted(servers[name].resources.items())]

    def resource_templates(self) -> list[ResourceTemplate]:
        servers = self._servers
        return [t for name in sorted(servers) for _, t in sorted(servers[name].templates.items())]

    def prompts(self) -> list[Prompt]:
        """Every server's prompts, sorted by public name."""
        return sorted(
            (prompt for entries in self._servers.values() for prompt in entries.prompts.values()),
            key=lambda prompt: prompt.name,
        )

    def servers_offering(self, uri: str) -> list[str]:
        """The servers that list `uri` as a resource."""
        return sorted(name for name, entries in self._servers.items() if uri in entries.resources)

    def servers_with_template(self, uri_template: str) -> list[str]:
        return sorted(name for name, entries in self._servers.items() if uri_template in entries.templates)

    def prompt(self, public_name: str) -> Prompt | None:
        for entries in self._servers.values():
            prompt = entries.prompts.get(public_name)
            if prompt is not None:
                return prompt
        return None

    def server_counts(self, server_name: str) -> tuple[int, int, int]:
        """(resources, templates, prompts) of one server."""
        entries = self._servers.get(server_name, _Entries())
        return len(entries.resources), len(entries.templates), len(entries.prompts)

    # -- writing (through leases) ----------------------------------------------------------------

    def open(self, server_name: str) -> CatalogLease:
        """A lease on `server_name`'s listings for a new connection; ends the previous one's."""
        with self._lock:
            previous = self._leases.get(server_name)
        if previous is not None:
            previous.end()
        lease = CatalogLease(self, server_name)
        with self._lock:
            self._leases = {**self._leases, server_name: lease}
        return lease

    def _replace(
        self,
        lease: CatalogLease,
        *,
        resources: Sequence[Resource] | None = None,
        templates: Sequence[ResourceTemplate] | None = None,
        prompts: Sequence[Prompt] | None = None,
    ) -> None:
        name = lease.server_name
        with self._lock:
            if not lease.active or self._leases.get(name) is not lease:
                logger.debug("ignoring a listing from an ended connection to server %r", name)
                return
            old = self._servers.get(name, _Entries())
            new = _Entries(
                resources=old.resources if resources is None else {r.uri: r for r in resources},
                templates=old.templates if templates is None else {t.uri_template: t for t in templates},
                prompts=old.prompts if prompts is None else {p.name: p for p in prompts},
            )
            self._servers = {**self._servers, name: new}
            self._announce(old, new)

    def _end(self, lease: CatalogLease, then: Callable[[], object] | None) -> None:
        with self._lock:
            current = lease.active and self._leases.get(lease.server_name) is lease
            lease._active = False
            old = self._servers.get(lease.server_name, _Entries())
            if current:
                self._servers = {k: v for k, v in self._servers.items() if k != lease.server_name}
                self._leases = {k: v for k, v in self._leases.items() if k != lease.server_name}
            if then is not None:
                then()
            if current:
                self._announce(old, _Entries())

    def _announce(self, old: _Entries, new: _Entries) -> None:
        """Queue removed-then-added events of resources and prompts; called with the lock held."""
        pairs: list[tuple[ListenerSet[Resource] | ListenerSet[Prompt], Sequence[Resource | Prompt]]] = [
            (
                self.resource_removed,
                [r for uri, r in sorted(old.resources.items()) if uri not in new.resources],
            ),
            (self.prompt_removed, [p for key, p in sorted(old.prompts.items()) if key not in new.prompts]),
            (
                self.resource_added,
                [r for uri, r in sorted(new.resources.items()) if uri not in old.resources],
            ),
            (self.prompt_added, [p for key, p in sorted(new.prompts.items()) if key not in old.prompts]),
        ]
        for listeners, items in pairs:
            callbacks: tuple[Callable[..., object], ...] = listeners.snapshot()
            for item in items:
                self._dispatcher.post(callbacks, item)
