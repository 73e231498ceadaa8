"""HTML tables for notebooks: `MCPHub._repr_html_` and `ToolRegistry._repr_html_` build on these.

A leaf: it renders the data it is given (tools, and anything shaped like a server
connection) and imports nothing of the hub or the registry.

Everything shown is escaped: tool descriptions, server info and error messages come from
servers, which are not trusted to write markup into the user's notebook.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any, Protocol

from .prompts import Prompt
from .resources import Resource
from .tool import Tool


class ServerRow(Protocol):
    """What the servers table reads from a server connection."""

    @property
    def name(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def error(self) -> BaseException | None: ...
    @property
    def tools(self) -> list[Tool]: ...
    @property
    def transport(self) -> str: ...
    @property
    def server_info(self) -> Any: ...
    @property
    def protocol_version(self) -> str | None: ...


__all__ = ["first_line", "hub_html", "prompts_html", "resources_html", "tools_html"]

# A description's first line is cut here in a table cell; the full text is in the cell's tooltip.
_DESCRIPTION_CHARS = 160
_STATE_COLOURS = {
    "ready": "#1a7f37",
    "connecting": "#9a6700",
    "reconnecting": "#9a6700",
    "failed": "#cf222e",
    "disconnected": "#cf222e",
    "closed": "#57606a",
}
_TABLE = '<table style="margin: 0.25em 0 0.75em">'
# Left-aligned on purpose: notebooks right-align table cells by default.
_CELL = 'style="text-align: left; vertical-align: top; padding: 0.15em 1em 0.15em 0"'


def first_line(text: str | None, limit: int = _DESCRIPTION_CHARS) -> str:
    """The first non-blank line of a description, cut to `limit` characters."""
    line = next((line.strip() for line in (text or "").splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table from cells that are already HTML (escape text before it gets here)."""
    head = "".join(f"<th {_CELL}>{escape(header)}</th>" for header in headers)
    body = "".join("<tr>" + "".join(f"<td {_CELL}>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"{_TABLE}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def tools_html(tools: Sequence[Tool]) -> str:
    """The tools as a table: public name, server ("native" for a host tool), first line of description."""
    if not tools:
        return "<p><em>no tools</em></p>"
    rows = [
        (
            f"<code>{escape(tool.name)}</code>",
            escape(tool.server_name) if tool.server_name is not None else "<em>native</em>",
            f'<span title="{escape(tool.description or "")}">{escape(first_line(tool.description))}</span>',
        )
        for tool in tools
    ]
    return (
        f"<div><strong>{len(tools)} tool{'s' if len(tools) != 1 else ''}</strong>"
        + _table(("tool", "server", "description"), rows)
        + "</div>"
    )


def resources_html(resources: Sequence[Resource]) -> str:
    """Resources as a table: URI, server, MIME type, first line of description."""
    rows = [
        (
            f"<code>{escape(resource.uri)}</code>",
            escape(resource.server_name),
            escape(resource.mime_type or ""),
            escape(first_line(resource.description or resource.title or resource.name)),
        )
        for resource in resources
    ]
    count = f"{len(rows)} resource{'s' if len(rows) != 1 else ''}"
    return (
        f"<div><strong>{count}</strong>"
        + _table(("resource", "server", "type", "description"), rows)
        + "</div>"
    )


def prompts_html(prompts: Sequence[Prompt]) -> str:
    """Prompts as a table: public name, server, arguments (required ones starred), description."""
    rows = [
        (
            f"<code>{escape(prompt.name)}</code>",
            escape(prompt.server_name),
            escape(", ".join(a.name + ("*" if a.required else "") for a in prompt.arguments)),
            escape(first_line(prompt.description)),
        )
        for prompt in prompts
    ]
    count = f"{len(rows)} prompt{'s' if len(rows) != 1 else ''}"
    return (
        f"<div><strong>{count}</strong>"
        + _table(("prompt", "server", "arguments", "description"), rows)
        + "</div>"
    )


def hub_html(
    servers: Sequence[ServerRow],
    tools: Sequence[Tool],
    resources: Sequence[Resource] = (),
    prompts: Sequence[Prompt] = (),
) -> str:
    """A hub's servers (transport, state, tool count, protocol, error), its tools, then its resources and
    prompts (when there are any)."""
    rows = []
    for connection in servers:
        colour = _STATE_COLOURS.get(connection.state, "inherit")
        info = connection.server_info
        rows.append(
            (
                f"<strong>{escape(connection.name)}</strong>",
                escape(connection.transport),
                f'<span style="color: {colour}">{escape(connection.state)}</span>',
                str(len(connection.tools)),
                escape(f"{info.name} {info.version}" if info is not None else ""),
                escape(connection.protocol_version or ""),
                escape(str(connection.error)) if connection.error is not None else "",
            )
        )
    servers_part = (
        _table(("server", "transport", "state", "tools", "server info", "protocol", "error"), rows)
        if rows
        else "<p><em>no servers started</em></p>"
    )
    return (
        f"<div><strong>MCPHub</strong>: {len(servers)} server{'s' if len(servers) != 1 else ''}"
        f"{servers_part}{tools_html(tools)}"
        f"{resources_html(resources) if resources else ''}{prompts_html(prompts) if prompts else ''}</div>"
    )
