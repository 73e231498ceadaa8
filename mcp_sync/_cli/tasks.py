"""`mcp-sync task ...`: a long-running call as an MCP task that outlives the command that started it.

`start` prints the new task's id and leaves it running (or, when the server answers at once
without a task, the result, as `call` does); `show`, `result` and `cancel` find it again by
server and id, in a later run (the server keeps it: Streamable HTTP); `list` asks a server for its tasks.
Each run is a hub of its own, as for every command, so nothing here is kept between runs but the id.
"""

from __future__ import annotations

import argparse
import datetime
from types import MappingProxyType
from typing import Any

from .. import ConfigEntries, MCPHub, TaskHandle, TaskInfo, ToolCallTimeoutError, ToolNotFoundError
from . import listings, output
from .output import print_json, print_table, printable, warn
from .parser import EXIT_CALL_FAILED, EXIT_OK, EXIT_SERVER, Failure

__all__ = ["run"]


def run(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    """Run the `task` action the command line names."""
    return _ACTIONS[args.task_command](args, entries, hub)


def _start(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    if hub.registry.get(args.tool) is None:
        raise listings.unknown_tool(hub, entries, args.tool)
    try:
        handle = hub.start_task(args.tool, args.parsed_arguments, ttl=args.ttl, timeout=args.timeout)
    except ToolNotFoundError:  # its server went away since the check above
        raise listings.unknown_tool(hub, entries, args.tool) from None
    if not handle.task_id:  # the server answered at once, with no task: its result, as `call` prints it
        warn(f"server {handle.server!r} answered {args.tool} at once: no task was started")
        return output.print_result(
            handle.result(), args.tool, as_json=args.json, save_images=None, server=handle.server
        )
    info = handle.info
    if args.json:
        print_json({**(_record(info) if info is not None else _bare(handle)), "tool": args.tool})
        return EXIT_OK
    print(handle.task_id)
    warn(
        f"started task {printable(handle.task_id)} of {args.tool} on server {handle.server!r}"
        + (f" ({info.status})" if info is not None else "")
        + f"; its result: mcp-sync task result ... {handle.server} -- {printable(handle.task_id)}"
    )
    if any(c.server_name == handle.server and c.transport == "stdio" for c in entries.configs):
        warn(
            f"server {handle.server!r} runs over stdio: it stops at the end of this run, and the task with it"
        )
    return EXIT_OK


def _show(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    info = _handle(args, entries, hub).refresh(timeout=args.timeout)
    _print_infos([info], as_json=args.json, one=True)
    return EXIT_OK


def _cancel(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    info = _handle(args, entries, hub).cancel(timeout=args.timeout)
    _print_infos([info], as_json=args.json, one=True)
    return EXIT_OK


def _result(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    handle = _handle(args, entries, hub)
    reporter = output.progress_reporter(quiet=args.json)
    try:
        result = handle.wait(args.timeout, progress=reporter)
    except ToolCallTimeoutError as exc:
        message = f"{output.one_line(str(exc))}; the task keeps running on server {handle.server!r}"
        raise Failure(message, EXIT_CALL_FAILED, "timeout") from None
    finally:
        if reporter is not None:
            reporter.finish()
    return output.print_result(
        result,
        handle.tool or handle.task_id,
        as_json=args.json,
        save_images=None,
        server=handle.server,
        task_id=handle.task_id,
    )


def _list(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    _check_server(args.server, entries, hub)
    _print_infos(hub.list_tasks(args.server), as_json=args.json, one=False)
    return EXIT_OK


_ACTIONS = MappingProxyType(
    {"start": _start, "show": _show, "result": _result, "cancel": _cancel, "list": _list}
)


def _handle(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> TaskHandle:
    _check_server(args.server, entries, hub)
    return hub.task(args.server, args.task_id)


def _check_server(name: str, entries: ConfigEntries, hub: MCPHub) -> None:
    """A server the file does not have, or one that is not ready, fails here with why (exit 3)."""
    invalid = next((entry for entry in entries.invalid if entry.server_name == name), None)
    if invalid is not None:
        raise Failure(output.one_line(str(invalid.error)), EXIT_SERVER, "not_found")
    if name not in hub.servers:
        known = ", ".join(sorted(hub.servers)) or "none"
        raise Failure(f"no server named {name!r} (servers: {known})", EXIT_SERVER, "not_found")
    failed = listings.failed_servers(hub)
    if name in failed:
        summary = printable(listings.error_summary(failed[name], 300))
        raise Failure(f"server {name!r} is not ready: {summary}", EXIT_SERVER, "start")


def _print_infos(infos: list[TaskInfo], *, as_json: bool, one: bool) -> None:
    if as_json:
        records = [_record(info) for info in infos]
        print_json(records[0] if one else records)
        return
    rows = [
        (
            printable(info.task_id),
            info.status,
            _time(info.last_updated_at or info.created_at),
            printable(output.one_line(info.status_message or "")),
        )
        for info in infos
    ]
    print_table(("TASK", "STATUS", "UPDATED", "MESSAGE"), rows)


def _record(info: TaskInfo) -> dict[str, Any]:
    return {
        "server": info.server,
        "task_id": info.task_id,
        "status": info.status,
        "status_message": info.status_message,
        "created_at": _iso(info.created_at),
        "last_updated_at": _iso(info.last_updated_at),
        "ttl": info.ttl,
        "poll_interval": info.poll_interval,
    }


def _bare(handle: TaskHandle) -> dict[str, Any]:
    return {"server": handle.server, "task_id": handle.task_id, "status": None}


def _iso(moment: datetime.datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _time(moment: datetime.datetime | None) -> str:
    if moment is None:
        return "-"
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
