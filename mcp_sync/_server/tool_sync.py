"""Keeping one server's tools in the registry, on the server's loop thread.

A sync walks every page of `tools/list` (capped, so an endless cursor cannot hang it) and
replaces the server's generation through its registry lease; a lease that has ended (the
connection closed meanwhile) refuses the write. Announcements only mark the tools dirty:
one re-sync task does the work, so a burst coalesces into one listing. A re-sync that fails
is retried with a growing pause while the server stays connected; the previous tools stay
until one succeeds. On 2026-07-28 sessions the announcements come through a
`subscriptions/listen` stream, which this also holds open (and renews when it ends).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError

from .._config import ServerConfig, warn_unmatched_tool_filters
from .._values.errors import ToolListError, describe
from .._values.naming import public_tool_name
from .._values.tool import TaskSupport, Tool, ToolAnnotations
from .leases import ToolLease
from .tasks.extension import server_offers_tasks

__all__ = ["MAX_LIST_PAGES", "ToolSync", "listen_not_offered"]

logger = logging.getLogger("mcp_sync")

# A server whose tools/list cursor never ends must not hang a sync.
MAX_LIST_PAGES = 1000
# After a list-changed notification, a moment for the rest of its burst before re-listing.
_RESYNC_SETTLE = 0.005
# A failed re-sync is tried again after this pause, doubling up to the maximum.
_RESYNC_RETRY_MIN = 0.5
_RESYNC_RETRY_MAX = 30.0
# Pause before renewing a tools subscription the server ended; doubles while renewals end at once.
_RELISTEN_MIN_DELAY = 0.1
_RELISTEN_MAX_DELAY = 5.0


def listen_not_offered(exc: BaseException) -> bool:
    """Whether a refused `subscriptions/listen` says only that the server does not offer it (a 2.x server
    built without a subscription bus answers "method not found"): ordinary, so not worth a warning."""
    return isinstance(exc, MCPError) and exc.code == types.METHOD_NOT_FOUND


class ToolSync:
    """One server's tool listings, written through `lease`; loop-thread only."""

    def __init__(
        self,
        config: ServerConfig,
        lease: ToolLease,
        on_synced: Callable[[], None] | None = None,
        ended: Callable[[], bool] = lambda: False,
    ) -> None:
        self._config = config
        self._on_synced = on_synced
        self._ended = ended
        """Whether the session's transport has ended: a listing that fails then is not retried."""
        self._name = config.server_name
        self._lease = lease
        self._dirty = asyncio.Event()

    def mark_dirty(self) -> None:
        """Ask for a re-sync (an announcement, or a sign that the server may be gone)."""
        self._dirty.set()

    async def sync(self, client: Client, *, initial: bool) -> None:
        """List every page and make it the server's generation; raises `ToolListError` if invalid."""
        listed: list[types.Tool] = []
        cursor: str | None = None
        seen_cursors: set[str] = set()
        for _page in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
            if cursor in seen_cursors:
                raise self._listing_error(f"its tools/list cursor {cursor!r} repeats", initial)
            seen_cursors.add(cursor)
        else:
            raise self._listing_error(f"its tools/list did not end within {MAX_LIST_PAGES} pages", initial)
        if initial:
            warn_unmatched_tool_filters(self._config, (tool.name for tool in listed))
        tasks = server_offers_tasks(client)
        tools = [self._tool_from(tool, tasks) for tool in listed if self._config.allows_tool(tool.name)]
        try:
            changes = self._lease.replace_tools(tools)
        except ToolListError as exc:
            logger.error("%s", exc)
            raise
        if changes:
            logger.info(
                "server %r tools: +%d -%d ~%d",
                self._name,
                len(changes.added),
                len(changes.removed),
                len(changes.changed),
            )
        if self._on_synced is not None:
            self._on_synced()

    async def resync_when_dirty(self, client: Client) -> None:
        """Re-sync after each announcement; after a failure, again after a growing pause."""
        retry_in: float | None = None
        while True:
            if retry_in is None:
                await self._dirty.wait()
            else:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(retry_in):
                        await self._dirty.wait()
            await asyncio.sleep(_RESYNC_SETTLE)  # let the rest of a burst arrive: one listing serves it all
            self._dirty.clear()  # changes announced during the sync mark it dirty again
            try:
                async with asyncio.timeout(self._config.connect_timeout):
                    await self.sync(client, initial=False)
            except Exception as exc:
                if self._ended():  # the server is gone: the session is ending, and says why
                    logger.debug("re-listing the tools of server %r failed as it went away", self._name)
                    return
                retry_in = _RESYNC_RETRY_MIN if retry_in is None else min(2 * retry_in, _RESYNC_RETRY_MAX)
                if not isinstance(exc, ToolListError):  # a ToolListError is logged where it is raised
                    logger.error("re-listing the tools of server %r failed: %s", self._name, describe(exc))
                logger.warning(
                    "server %r keeps its previous tools; listing again in %.1f s", self._name, retry_in
                )
            else:
                if retry_in is not None:
                    logger.info("server %r listed its tools again after failed attempts", self._name)
                retry_in = None

    async def listen(
        self,
        client: Client,
        *,
        on_lost: Callable[[str], None],
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Hold the 2026-07-28 tools subscription open, subscribing again whenever it ends.

        The SDK does not replay, so every renewal re-lists. A renewal that fails means the server
        is gone (over HTTP this stream is the only sign of that): `on_lost(problem)` is called.
        """
        subscribed_once = False
        delay = _RELISTEN_MIN_DELAY
        while True:
            opened_at: float | None = None
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    opened_at = time.monotonic()
                    if subscribed_once:
                        self.mark_dirty()  # re-list: changes while unsubscribed are not replayed
                    else:
                        subscribed_once = True
                        task_status.started()
                    async for _event in subscription:
                        self.mark_dirty()
            except ListenNotSupportedError:
                break
            except Exception as exc:
                if opened_at is None:  # could not subscribe
                    if subscribed_once:
                        on_lost(f"could not renew its tools subscription: {describe(exc)}")
                    elif listen_not_offered(exc):
                        logger.debug(
                            "server %r does not offer subscriptions/listen: its tool changes are not "
                            "followed",
                            self._name,
                        )
                    else:
                        logger.warning(
                            "server %r refused the tools subscription: %s", self._name, describe(exc)
                        )
                    break
            if self._ended():
                break  # the server is gone, not just its subscription
            logger.info("server %r ended its tools subscription; subscribing again", self._name)
            # A server that ends every subscription at once is not hammered: the pause grows.
            quick = opened_at is not None and time.monotonic() - opened_at < _RELISTEN_MAX_DELAY
            delay = min(delay * 2, _RELISTEN_MAX_DELAY) if quick else _RELISTEN_MIN_DELAY
            await asyncio.sleep(delay)
        if not subscribed_once:
            task_status.started()

    def _listing_error(self, problem: str, initial: bool) -> ToolListError:
        error = ToolListError(
            f"server {self._name!r}: {problem}; "
            + ("no tools registered" if initial else "keeping its previous tools")
        )
        logger.error("%s", error)
        return error

    def _tool_from(self, tool: types.Tool, offers_tasks: bool = False) -> Tool:
        hints = _annotations(tool.annotations)
        read_only = hints is not None and hints.read_only
        return Tool(
            name=public_tool_name(self._name, tool.name),
            description=tool.description,
            input_schema=tool.input_schema,
            server_name=self._name,
            raw_name=tool.name,
            output_schema=tool.output_schema,
            task_support=_task_support(tool, offers_tasks),
            title=tool.title or (tool.annotations.title if tool.annotations is not None else None),
            annotations=hints,
            requires_approval=self._config.approval_required(tool.name, read_only=read_only),
        )


def _annotations(hints: types.ToolAnnotations | None) -> ToolAnnotations | None:
    if hints is None:
        return None
    return ToolAnnotations(
        title=hints.title,
        read_only_hint=hints.read_only_hint,
        destructive_hint=hints.destructive_hint,
        idempotent_hint=hints.idempotent_hint,
        open_world_hint=hints.open_world_hint,
    )


def _task_support(tool: types.Tool, offers_tasks: bool) -> TaskSupport:
    """The listing's `execution.taskSupport` (2025-11-25); absent means "forbidden". A server with the
    2026-07-28 tasks extension may answer any call with a task, and says nothing per tool: "optional"."""
    if offers_tasks:
        return "optional"
    execution = tool.execution
    return execution.task_support if execution is not None and execution.task_support else "forbidden"
