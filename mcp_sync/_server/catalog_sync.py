"""Keeping one server's resources, templates and prompts in the catalog, on its loop thread.

The counterpart of `_server.tool_sync` for the other listings, with the same rules: every page is
walked (capped, and a repeating cursor is refused), a generation of each kind (resources, resource
templates, prompts) is written whole through the connection's catalog lease, on its own (one kind
that fails, or that the server does not offer, leaves the others as listed), announcements only
mark a listing dirty and one task per announced kind re-lists (a burst coalesces), and a failed
re-list is retried with a growing pause while the previous entries stay. On 2026-07-28 sessions
announcements come through a `subscriptions/listen` stream for resources and prompts, held open
and renewed here; on 2025-era sessions as notifications, which the session hands to `mark_dirty`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged

from .._config import ServerConfig
from .._values.errors import describe
from .._values.prompts import prompt_from
from .._values.resources import resource_from, template_from
from .leases import CatalogLease
from .tool_sync import MAX_LIST_PAGES, listen_not_offered

__all__ = ["CatalogSync", "Entries", "Listing", "walk_pages"]

logger = logging.getLogger("mcp_sync")

Listing = Literal["resources", "prompts"]
"""What an announcement says changed (`resources/list_changed` covers resources and their templates)."""
Entries = Literal["resources", "resource templates", "prompts"]
"""What one listing request returns; each kind is listed, kept and failed on its own."""
X = TypeVar("X")

_ENTRIES: Mapping[Listing, tuple[Entries, ...]] = MappingProxyType(
    {
        "resources": ("resources", "resource templates"),
        "prompts": ("prompts",),
    }
)

_RESYNC_SETTLE = 0.005
_RESYNC_RETRY_MIN = 0.5
_RESYNC_RETRY_MAX = 30.0
_RELISTEN_MIN_DELAY = 0.1
_RELISTEN_MAX_DELAY = 5.0


def _method_not_found(exc: BaseException) -> bool:
    return isinstance(exc, MCPError) and exc.code == types.METHOD_NOT_FOUND


class CatalogError(Exception):
    """A listing was invalid (repeating or endless cursor, repeated names); the previous one stays."""


async def walk_pages(
    fetch: Callable[[str | None], Awaitable[tuple[list[X], str | None]]], what: str
) -> list[X]:
    """Every item of a paged listing; refuses a repeating cursor and stops at `MAX_LIST_PAGES`."""
    items: list[X] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _page in range(MAX_LIST_PAGES):
        page, cursor = await fetch(cursor)
        items.extend(page)
        if cursor is None:
            return items
        if cursor in seen:
            raise CatalogError(f"its {what} cursor {cursor!r} repeats")
        seen.add(cursor)
    raise CatalogError(f"its {what} did not end within {MAX_LIST_PAGES} pages")


class CatalogSync:
    """One server's resource and prompt listings, written through `lease`; loop-thread only."""

    def __init__(self, config: ServerConfig, lease: CatalogLease, client: Client) -> None:
        self._config = config
        self._name = config.server_name
        self._lease = lease
        self._client = client
        capabilities = client.server_capabilities
        wanted: list[tuple[Listing, bool]] = [
            ("resources", capabilities.resources is not None and config.resources),
            ("prompts", capabilities.prompts is not None and config.prompts),
        ]
        self.kinds: tuple[Listing, ...] = tuple(kind for kind, on in wanted if on)
        self._dirty: dict[Listing, asyncio.Event] = {kind: asyncio.Event() for kind in self.kinds}

    def mark_dirty(self, kind: Listing) -> None:
        if kind in self._dirty:
            self._dirty[kind].set()

    async def sync_all(self) -> None:
        """The first listing of each kind; a failure is logged and leaves that kind of entry empty."""
        for kind in self.kinds:
            try:
                failures = await self.sync(kind)
            except Exception as exc:
                failures = {kind: exc}
            for entries, failure in failures.items():
                logger.error("listing the %s of server %r failed: %s", entries, self._name, describe(failure))

    async def sync(self, kind: Listing) -> dict[Entries, Exception]:
        """List each kind of entry an announcement of `kind` covers, each written on its own; returns the
        failures (the previous entries of a kind that failed stay). "Method not found" means the server has
        none of that kind: servers on the 1.x SDK without templates answer `resources/templates/list` so."""
        failures: dict[Entries, Exception] = {}
        for entries in _ENTRIES[kind]:
            try:
                await self._list(entries)
            except Exception as exc:
                if not _method_not_found(exc):
                    failures[entries] = exc
                    continue
                logger.debug(
                    "server %r does not list %s (%s): it has none", self._name, entries, describe(exc)
                )
                self._write(entries, [])
        return failures

    async def _list(self, entries: Entries) -> None:
        """Walk every page of one listing and write it whole."""
        client = self._client
        if entries == "prompts":

            async def prompt_page(cursor: str | None) -> tuple[list[types.Prompt], str | None]:
                page = await client.list_prompts(cursor=cursor)
                return page.prompts, page.next_cursor

            prompts = await walk_pages(prompt_page, "prompts/list")
            if len({prompt.name for prompt in prompts}) != len(prompts):
                raise CatalogError("it listed a prompt name more than once")
            self._write(entries, [prompt_from(self._name, prompt) for prompt in prompts])
        elif entries == "resources":

            async def resource_page(cursor: str | None) -> tuple[list[types.Resource], str | None]:
                page = await client.list_resources(cursor=cursor)
                return page.resources, page.next_cursor

            resources = await walk_pages(resource_page, "resources/list")
            self._write(entries, [resource_from(self._name, resource) for resource in resources])
        else:

            async def template_page(cursor: str | None) -> tuple[list[types.ResourceTemplate], str | None]:
                page = await client.list_resource_templates(cursor=cursor)
                return page.resource_templates, page.next_cursor

            templates = await walk_pages(template_page, "resources/templates/list")
            self._write(entries, [template_from(self._name, template) for template in templates])

    def _write(self, entries: Entries, listed: Sequence[Any]) -> None:
        if entries == "prompts":
            self._lease.replace_prompts(listed)
        elif entries == "resources":
            self._lease.replace_resources(listed)
        else:
            self._lease.replace_templates(listed)

    async def resync_when_dirty(self, kind: Listing) -> None:
        """Re-list `kind` after each announcement; after a failure, again after a growing pause."""
        dirty = self._dirty[kind]
        retry_in: float | None = None
        while True:
            if retry_in is None:
                await dirty.wait()
            else:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(retry_in):
                        await dirty.wait()
            await asyncio.sleep(_RESYNC_SETTLE)
            dirty.clear()
            try:
                async with asyncio.timeout(self._config.connect_timeout):
                    failures = await self.sync(kind)
            except Exception as exc:
                failures = {kind: exc}
            if not failures:
                retry_in = None
                continue
            retry_in = _RESYNC_RETRY_MIN if retry_in is None else min(2 * retry_in, _RESYNC_RETRY_MAX)
            for entries, failure in failures.items():
                logger.error(
                    "re-listing the %s of server %r failed: %s; keeping the previous ones, listing again in "
                    "%.1f s",
                    entries,
                    self._name,
                    describe(failure),
                    retry_in,
                )

    async def listen(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold the 2026-07-28 resources/prompts subscription open, renewing (and re-listing) when it ends;
        `task_status.started()` once the first one is acknowledged (or refused)."""
        subscribed_once = False
        delay = _RELISTEN_MIN_DELAY
        while True:
            opened_at: float | None = None
            try:
                async with self._client.listen(
                    resources_list_changed="resources" in self.kinds,
                    prompts_list_changed="prompts" in self.kinds,
                ) as subscription:
                    opened_at = time.monotonic()
                    if subscribed_once:
                        for kind in self.kinds:  # changes while unsubscribed are not replayed
                            self.mark_dirty(kind)
                    else:
                        subscribed_once = True
                        task_status.started()
                    async for event in subscription:
                        if isinstance(event, ResourcesListChanged):
                            self.mark_dirty("resources")
                        elif isinstance(event, PromptsListChanged):
                            self.mark_dirty("prompts")
            except ListenNotSupportedError:
                break
            except Exception as exc:
                if opened_at is None:
                    if listen_not_offered(exc):
                        logger.debug(
                            "server %r does not offer subscriptions/listen: its resource and prompt "
                            "changes are not followed",
                            self._name,
                        )
                    else:
                        logger.warning(
                            "server %r refused the resources/prompts subscription: %s",
                            self._name,
                            describe(exc),
                        )
                    break
            quick = opened_at is not None and time.monotonic() - opened_at < _RELISTEN_MAX_DELAY
            delay = min(delay * 2, _RELISTEN_MAX_DELAY) if quick else _RELISTEN_MIN_DELAY
            await asyncio.sleep(delay)
        if not subscribed_once:
            task_status.started()
