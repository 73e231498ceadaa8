"""The listing commands: `servers`, `tools`, `resources`, `prompts`, as a table or as JSON. A server that is
not ready is one line on stderr and exit code 3; an entry that cannot be used, exit code 2."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any

from .. import ConfigEntries, InvalidServerEntry, MCPHub, ServerConfig
from .._server.stdio import STDERR_TAIL_MARKER
from .._values.html import first_line
from .._values.suggestions import public_name_hint
from .output import one_line, print_json, print_table, printable, warn
from .parser import EXIT_OK, EXIT_SERVER, EXIT_USAGE, Failure

__all__ = ["error_summary", "failed_servers", "prompts", "resources", "servers", "tools", "unknown_tool"]

# Lines at the end of a server's stderr that never say why it stopped: stack frames (Python's, and
# JavaScript's `at ...`), source lines under a frame, carets, Node's version banner.
_NOT_A_REASON = re.compile(
    r"(at .*(\(.*\)|:\d+:\d+)$|File \"|Traceback \(most recent call last\)|During handling of"
    r"|The above exception|Node\.js v\d|[\^~]+$)"
)
# Words in the line that says why.
_SAYS_WHY = re.compile(
    r"error|exception|fatal|panic|fail|denied|refused|invalid|missing|not set|not found|no such|cannot|"
    r"can't|unable|required|unknown",
    re.IGNORECASE,
)


def _telling_line(lines: Sequence[str]) -> str:
    """The last line of a stderr tail that says why: the last that reads like an error, else the last
    that is not a stack frame, else the last."""
    kept = [line.strip() for line in lines if line.strip()]
    frames_aside = [line for line in kept if not _NOT_A_REASON.match(line)]
    errors = [line for line in frames_aside if _SAYS_WHY.search(line)]
    return (errors or frames_aside or kept or [""])[-1]


def error_summary(error: str, limit: int) -> str:
    """An error as one line of at most `limit` characters. A stdio server's stderr tail is shortened to
    the line that says why (`RuntimeError: DATABASE_URL is not set`), kept whole before the rest is
    cut: the first lines of a traceback say nothing."""
    head, marker, tail = error.partition(STDERR_TAIL_MARKER)
    why = first_line(_telling_line(tail.splitlines()), limit // 2) if marker else ""
    if not why:
        return first_line(one_line(error if not marker else head), limit)
    separator = "; its stderr says: "
    return first_line(one_line(head), max(limit - len(separator) - len(why), 20)) + separator + why


def failed_servers(hub: MCPHub) -> dict[str, str]:
    return {
        name: str(connection.error or connection.state)
        for name, connection in hub.servers.items()
        if connection.state != "ready"
    }


def _report_failed_servers(hub: MCPHub) -> int:
    failed = failed_servers(hub)
    for name, error in failed.items():
        warn(f"server {name!r} is not ready: {printable(error_summary(error, 300))}")
    return EXIT_SERVER if failed else EXIT_OK


def _report_invalid_entries(entries: ConfigEntries) -> int:
    """One line on stderr per entry that cannot be used; EXIT_USAGE if there is any."""
    for entry in entries.invalid:
        warn(printable(one_line(str(entry.error))))
    return EXIT_USAGE if entries.invalid else EXIT_OK


def _error_of(entry: ServerConfig | InvalidServerEntry, hub: MCPHub) -> str | None:
    """Why the entry's server is not ready, as its error says it (lines and all); None if it is."""
    if isinstance(entry, InvalidServerEntry):
        return str(entry.error)
    connection = hub.servers.get(entry.server_name) if entry.enabled else None
    return str(connection.error) if connection is not None and connection.error else None


def _server_record(entry: ServerConfig | InvalidServerEntry, hub: MCPHub) -> dict[str, Any]:
    error = _error_of(entry, hub)
    if isinstance(entry, InvalidServerEntry):
        return {
            "name": entry.server_name,
            "original_name": None,  # an invalid entry is named as written
            "transport": None,
            "enabled": True,
            "state": "failed",
            "tools": 0,
            "protocol_version": None,
            "error": one_line(error or ""),
        }
    connection = hub.servers.get(entry.server_name) if entry.enabled else None
    not_started = "not started" if entry.enabled else "disabled"
    return {
        "name": entry.server_name,
        "original_name": entry.original_name,
        "transport": entry.transport,
        "enabled": entry.enabled,
        "state": connection.state if connection is not None else not_started,
        "tools": len(connection.tools) if connection is not None else 0,
        "protocol_version": connection.protocol_version if connection is not None else None,
        "error": one_line(error) if error is not None else None,
    }


def servers(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    records = [_server_record(entry, hub) for entry in entries.entries]
    if args.json:
        print_json(records)
    else:
        # A column for the names as the host's file wrote them, only when one was made into a server name.
        renamed = any(record["original_name"] is not None for record in records)
        rows = [
            (
                printable(record["name"]),
                *([printable(record["original_name"] or "-")] if renamed else []),
                record["transport"] or "-",
                record["state"],
                str(record["tools"]) if record["enabled"] else "-",
                printable(error_summary(_error_of(entry, hub) or "", 200)),
            )
            for entry, record in zip(entries.entries, records, strict=True)
        ]
        headers = ("SERVER", *(["NAME IN FILE"] if renamed else []), "TRANSPORT", "STATE", "TOOLS", "ERROR")
        print_table(headers, rows)
    invalid = _report_invalid_entries(entries)
    return invalid or (EXIT_SERVER if failed_servers(hub) else EXIT_OK)


def tools(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    tools = hub.tools()
    if args.json:
        print_json(
            [
                {
                    "name": tool.name,
                    "server": tool.server_name,
                    "raw_name": tool.raw_name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                    "requires_approval": tool.requires_approval,
                }
                for tool in tools
            ]
        )
    else:
        rows = [
            (
                tool.name,
                tool.server_name or "",
                printable(tool.raw_name or ""),
                printable(first_line(tool.description, 80)),
            )
            for tool in tools
        ]
        print_table(("TOOL", "SERVER", "NAME", "DESCRIPTION"), rows)
    failed = _report_failed_servers(hub)
    return _report_invalid_entries(entries) or failed


def resources(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    resources, templates = hub.resources(), hub.resource_templates()
    if args.json:
        print_json(
            {
                "resources": [
                    {
                        "uri": r.uri,
                        "server": r.server_name,
                        "name": r.name,
                        "mime_type": r.mime_type,
                        "description": r.description,
                    }
                    for r in resources
                ],
                "templates": [
                    {
                        "uri_template": t.uri_template,
                        "server": t.server_name,
                        "name": t.name,
                        "mime_type": t.mime_type,
                        "description": t.description,
                    }
                    for t in templates
                ],
            }
        )
    else:
        rows = [
            (
                printable(r.uri),
                r.server_name,
                printable(r.mime_type or ""),
                printable(first_line(r.description or r.name, 60)),
            )
            for r in resources
        ] + [
            (
                printable(t.uri_template),
                t.server_name,
                printable(t.mime_type or ""),
                printable(first_line(t.description or t.name, 60)) + " (template)",
            )
            for t in templates
        ]
        print_table(("URI", "SERVER", "TYPE", "DESCRIPTION"), rows)
    failed = _report_failed_servers(hub)
    return _report_invalid_entries(entries) or failed


def prompts(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    prompts = hub.prompts()
    if args.json:
        print_json(
            [
                {
                    "name": p.name,
                    "server": p.server_name,
                    "raw_name": p.raw_name,
                    "description": p.description,
                    "arguments": [
                        {"name": a.name, "required": a.required, "description": a.description}
                        for a in p.arguments
                    ],
                }
                for p in prompts
            ]
        )
    else:
        rows = [
            (
                p.name,
                p.server_name,
                printable(", ".join(a.name + ("*" if a.required else "") for a in p.arguments)),
                printable(first_line(p.description, 60)),
            )
            for p in prompts
        ]
        print_table(("PROMPT", "SERVER", "ARGUMENTS (*required)", "DESCRIPTION"), rows)
    failed = _report_failed_servers(hub)
    return _report_invalid_entries(entries) or failed


def unknown_tool(hub: MCPHub, entries: ConfigEntries, name: str) -> Failure:
    """One line: the name, the tools it may stand for (as the Python API suggests them), and any server
    that is not ready."""
    message = f"unknown tool {name!r}"
    hint = public_name_hint(name, "tool", ((tool.name, tool.raw_name) for tool in hub.tools()))
    if hint:
        message += f"; {hint}"
    failed = {
        **failed_servers(hub),
        **{entry.server_name: str(entry.error) for entry in entries.invalid},
    }
    for server, error in failed.items():
        message += f"; server {server!r} is not ready: {printable(error_summary(error, 300))}"
    return Failure(message, EXIT_SERVER, "not_found")
