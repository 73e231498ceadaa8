"""Tool filters that match nothing: found after a server's first listing, and warned about."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable

from .._values.naming import public_tool_name
from .messages import SUGGESTION_CUTOFF
from .models import ServerConfig

_log = logging.getLogger("mcp_sync.config")


def unmatched_tool_filters(config: ServerConfig, raw_names: Iterable[str]) -> list[str]:
    """The `include_tools`, `exclude_tools` and `tool_approval` entries that name none of `raw_names`, in
    order, once each (`tool_approval` may name a tool by its public name too)."""
    offered = set(raw_names)
    public = {public_tool_name(config.server_name, name) for name in offered if config.tool_approval}
    unmatched: list[str] = []
    for name in (*(config.include_tools or ()), *config.exclude_tools):
        if name not in offered and name not in unmatched:
            unmatched.append(name)
    for name in config.tool_approval:  # a typo here would let the tool run unasked: worth a warning
        if name not in offered and name not in public and name not in unmatched:
            unmatched.append(name)
    return unmatched


def warn_unmatched_tool_filters(config: ServerConfig, raw_names: Iterable[str]) -> list[str]:
    """Log a warning naming the filter entries that match no tool; returns them.

    Call after the server's first tool listing: a filter that matches nothing is usually a
    public name (`mcp__fs__read_file`) or a typo where the raw name (`read_file`) belongs.
    """
    offered = sorted(set(raw_names))
    unmatched = unmatched_tool_filters(config, offered)
    if not unmatched:
        return unmatched
    public_prefix = f"mcp__{config.server_name}__"
    described: list[str] = []
    for name in unmatched:
        if name.startswith(public_prefix) and name[len(public_prefix) :] in offered:
            described.append(f"{name!r} (did you mean {name[len(public_prefix) :]!r}?)")
        else:
            close = difflib.get_close_matches(name, offered, n=1, cutoff=SUGGESTION_CUTOFF)
            described.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    example = offered[0] if offered else "read_file"
    _log.warning(
        "server %r: include_tools/exclude_tools/tool_approval name no tool the server offers: %s; these take "
        "the server's raw tool names (like %r), not public names (like %r)",
        config.server_name,
        ", ".join(described),
        example,
        public_prefix + example,
    )
    return unmatched
