"""`mcp-sync`: check a server configuration from the shell: its servers, tools, resources and prompts,
one call, one read, one prompt.

Every command takes a config file (our YAML `servers:` list or an `mcpServers` JSON/YAML
file), connects to its servers, does one thing and closes them. Output is a readable table,
or JSON with `--json`. Failures are one line on stderr and an exit code scripts can trust
(see `EXIT_CODES`); a traceback only with `-v`. An entry that cannot be used fails alone:
it is shown as a failed server with its configuration error (`--strict` refuses the file).
"""

from __future__ import annotations

import argparse
import base64
import importlib.metadata
import json
import logging
import os
import platform
import sys
import unicodedata
from collections.abc import Sequence
from typing import Any

from . import __version__
from ._auth.redirect import open_browser
from ._config import ConfigEntries, InvalidServerEntry, ServerConfig, load_config_entries
from ._hub.hub import MCPHub
from ._values.errors import (
    AmbiguousResourceError,
    AuthError,
    ConfigError,
    MCPSyncError,
    PromptNotFoundError,
    ResourceNotFoundError,
    ServerStartError,
    ToolCallError,
    ToolNotFoundError,
    UnsupportedFeatureError,
)
from ._values.html import first_line
from ._values.results import ToolResult

__all__ = ["EXIT_CODES", "main"]

logger = logging.getLogger("mcp_sync")
CONFIG_LOGGER = "mcp_sync.config"

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_SERVER = 3
EXIT_CALL_FAILED = 4
EXIT_INTERNAL = 5
EXIT_INTERRUPTED = 130

EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_TOOL_ERROR: "the tool ran and returned an error result (call)",
    EXIT_USAGE: "usage or configuration error: bad arguments, invalid JSON, unreadable or invalid config "
    "(also when one entry is invalid and the others ran)",
    EXIT_SERVER: "a server failed to start or connect, or no tool, resource or prompt has that name",
    EXIT_CALL_FAILED: "the call ended without a result: timed out, server disconnected, or refused",
    EXIT_INTERNAL: "unexpected error (rerun with -v for details)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}


class _Failure(Exception):
    """A failure the CLI reports as one line and an exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


# -- output ------------------------------------------------------------------------------------------


def _printable(text: str) -> str:
    """Text from a server, safe for a terminal: control characters (escape sequences) shown as \\xNN."""
    return "".join(f"\\x{ord(char):02x}" if unicodedata.category(char) == "Cc" else char for char in text)


def _print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    for row in (headers, *rows):
        line = "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
        print(line.rstrip())


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _warn(message: str) -> None:
    print(f"mcp-sync: {message}", file=sys.stderr)


def _one_line(message: str) -> str:
    """A message that spans lines (a config error listing several problems) as one line."""
    out = ""
    for line in message.splitlines():
        item = line.strip().removeprefix("- ")
        if item:
            out = item if not out else f"{out} {item}" if out.endswith(":") else f"{out}; {item}"
    return out


def _report_invalid_entries(entries: ConfigEntries) -> int:
    """One line on stderr per entry that cannot be used; EXIT_USAGE if there is any."""
    for entry in entries.invalid:
        _warn(_printable(_one_line(str(entry.error))))
    return EXIT_USAGE if entries.invalid else EXIT_OK


# -- commands ----------------------------------------------------------------------------------------


def _failed_servers(hub: MCPHub) -> dict[str, str]:
    return {
        name: str(connection.error or connection.state)
        for name, connection in hub.servers.items()
        if connection.state != "ready"
    }


def _report_failed_servers(hub: MCPHub) -> int:
    failed = _failed_servers(hub)
    for name, error in failed.items():
        _warn(f"server {name!r} is not ready: {_printable(first_line(_one_line(error), 300))}")
    return EXIT_SERVER if failed else EXIT_OK


def _not_started(config: ServerConfig) -> str:
    return "not started" if config.enabled else "disabled"


def _invalid_record(entry: InvalidServerEntry) -> dict[str, Any]:
    return {
        "name": entry.server_name,
        "transport": None,
        "enabled": True,
        "state": "failed",
        "tools": 0,
        "protocol_version": None,
        "error": _one_line(str(entry.error)),
    }


def _server_record(config: ServerConfig, hub: MCPHub) -> dict[str, Any]:
    connection = hub.servers.get(config.server_name) if config.enabled else None
    return {
        "name": config.server_name,
        "transport": config.transport,
        "enabled": config.enabled,
        "state": connection.state if connection is not None else _not_started(config),
        "tools": len(connection.tools) if connection is not None else 0,
        "protocol_version": connection.protocol_version if connection is not None else None,
        "error": _one_line(str(connection.error)) if connection is not None and connection.error else None,
    }


def _servers(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    records = [
        _invalid_record(entry) if isinstance(entry, InvalidServerEntry) else _server_record(entry, hub)
        for entry in entries.entries
    ]
    if args.json:
        _print_json(records)
    else:
        rows = [
            (
                _printable(record["name"]),
                record["transport"] or "-",
                record["state"],
                str(record["tools"]) if record["enabled"] else "-",
                _printable(first_line(record["error"], 200)),
            )
            for record in records
        ]
        _print_table(("SERVER", "TRANSPORT", "STATE", "TOOLS", "ERROR"), rows)
    invalid = _report_invalid_entries(entries)
    return invalid or (EXIT_SERVER if _failed_servers(hub) else EXIT_OK)


def _tools(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    tools = hub.tools()
    if args.json:
        _print_json(
            [
                {
                    "name": tool.name,
                    "server": tool.server_name,
                    "raw_name": tool.raw_name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                }
                for tool in tools
            ]
        )
    else:
        rows = [
            (
                tool.name,
                tool.server_name or "",
                _printable(tool.raw_name or ""),
                _printable(first_line(tool.description, 80)),
            )
            for tool in tools
        ]
        _print_table(("TOOL", "SERVER", "NAME", "DESCRIPTION"), rows)
    failed = _report_failed_servers(hub)
    return _report_invalid_entries(entries) or failed


def _parse_arguments(text: str) -> dict[str, Any]:
    try:
        arguments = json.loads(text)
    except ValueError as exc:
        raise _Failure(f"ARGUMENTS is not valid JSON: {exc}", EXIT_USAGE) from None
    if not isinstance(arguments, dict):
        raise _Failure(
            f'ARGUMENTS must be a JSON object, like \'{{"text": "hi"}}\'; got {type(arguments).__name__}',
            EXIT_USAGE,
        )
    return arguments


def _unknown_tool(hub: MCPHub, entries: ConfigEntries, name: str) -> _Failure:
    """One line: the name, a public name it may stand for, and any server that is not ready."""
    message = f"unknown tool {name!r}"
    matches = [tool.name for tool in hub.tools() if tool.raw_name == name]
    if matches:
        message += f"; did you mean {' or '.join(matches)}? (tools go by their public names)"
    failed = {
        **_failed_servers(hub),
        **{entry.server_name: str(entry.error) for entry in entries.invalid},
    }
    for server, error in failed.items():
        message += f"; server {server!r} is not ready: {_printable(first_line(_one_line(error), 300))}"
    return _Failure(message, EXIT_SERVER)


def _call(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    arguments = args.parsed_arguments
    if hub.registry.get(args.tool) is None:
        raise _unknown_tool(hub, entries, args.tool)
    try:
        result: ToolResult = hub.call_tool(args.tool, arguments, timeout=args.timeout)
    except ToolNotFoundError:  # its server went away since the check above
        raise _unknown_tool(hub, entries, args.tool) from None
    except ToolCallError as exc:
        raise _Failure(str(exc), EXIT_CALL_FAILED) from None
    if args.json:
        _print_json(
            {
                "tool": args.tool,
                "is_error": result.is_error,
                "text": result.text,
                "structured_content": result.structured_content,
            }
        )
    else:
        print(result.text)
    if result.is_error:
        _warn(f"{args.tool} returned an error result")
        return EXIT_TOOL_ERROR
    return EXIT_OK


def _login(args: argparse.Namespace, hub: MCPHub) -> int:
    def show(url: str) -> None:
        print(
            f"To sign in to {args.server!r}, open this address in a browser:\n\n  {url}\n",
            file=sys.stderr,
            flush=True,
        )
        if not args.no_browser:
            open_browser(url)
        if sys.stdin.isatty():
            print(
                "If the browser runs on another machine, paste here the address it ended on "
                "(http://127.0.0.1:.../callback?code=...):",
                file=sys.stderr,
                flush=True,
            )

    try:
        hub.login(
            args.server,
            open_url=show,
            read_redirect=input if sys.stdin.isatty() else None,
            timeout=args.timeout,
        )
    except AuthError as exc:
        raise _Failure(_one_line(str(exc)), EXIT_SERVER) from None
    print(f"signed in to {args.server!r}; the tokens are stored for the next runs")
    return EXIT_OK


def _logout(args: argparse.Namespace, hub: MCPHub) -> int:
    if hub.logout(args.server):
        print(f"signed out of {args.server!r}: its stored tokens are deleted")
    else:
        print(f"no tokens were stored for {args.server!r}")
    return EXIT_OK


def _resources(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    resources, templates = hub.resources(), hub.resource_templates()
    if args.json:
        _print_json(
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
                _printable(r.uri),
                r.server_name,
                _printable(r.mime_type or ""),
                _printable(first_line(r.description or r.name, 60)),
            )
            for r in resources
        ] + [
            (
                _printable(t.uri_template),
                t.server_name,
                _printable(t.mime_type or ""),
                _printable(first_line(t.description or t.name, 60)) + " (template)",
            )
            for t in templates
        ]
        _print_table(("URI", "SERVER", "TYPE", "DESCRIPTION"), rows)
    return _report_failed_servers(hub)


def _read(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    try:
        result = hub.read_resource(args.uri, server=args.server, timeout=args.timeout)
    except (ResourceNotFoundError, AmbiguousResourceError) as exc:
        raise _Failure(str(exc), EXIT_SERVER) from None
    except (ToolCallError, UnsupportedFeatureError) as exc:
        raise _Failure(str(exc), EXIT_CALL_FAILED) from None
    if args.json:
        _print_json(
            {
                "uri": result.uri,
                "server": result.server_name,
                "contents": [
                    {
                        "uri": part.uri,
                        "mime_type": part.mime_type,
                        "text": part.text,
                        "blob": base64.b64encode(part.blob).decode() if part.blob is not None else None,
                    }
                    for part in result.contents
                ],
            }
        )
        return EXIT_OK
    for part in result.contents:
        if part.text is not None:
            print(part.text)
        else:
            print(f"[binary: {part.mime_type or 'unknown type'}, {len(part.blob or b'')} bytes; use --json]")
    return EXIT_OK


def _prompts(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    prompts = hub.prompts()
    if args.json:
        _print_json(
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
                _printable(", ".join(a.name + ("*" if a.required else "") for a in p.arguments)),
                _printable(first_line(p.description, 60)),
            )
            for p in prompts
        ]
        _print_table(("PROMPT", "SERVER", "ARGUMENTS (*required)", "DESCRIPTION"), rows)
    return _report_failed_servers(hub)


def _prompt(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    arguments = {
        key: value if isinstance(value, str) else json.dumps(value)
        for key, value in args.parsed_arguments.items()
    }
    try:
        result = hub.get_prompt(args.prompt, arguments, timeout=args.timeout)
    except PromptNotFoundError as exc:
        raise _Failure(str(exc), EXIT_SERVER) from None
    except (ToolCallError, UnsupportedFeatureError) as exc:
        raise _Failure(str(exc), EXIT_CALL_FAILED) from None
    if args.json:
        _print_json(
            {
                "prompt": result.name,
                "description": result.description,
                "messages": [{"role": m.role, "text": m.text} for m in result.messages],
            }
        )
    else:
        for message in result.messages:
            print(f"[{message.role}]")
            print(message.text)
    return EXIT_OK


# -- the parser --------------------------------------------------------------------------------------


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    codes = "\n".join(f"  {code:<3} {meaning}" for code, meaning in EXIT_CODES.items())
    parser = argparse.ArgumentParser(
        prog="mcp-sync",
        description="Check an MCP server configuration: list its servers and tools, or call one tool. "
        "CONFIG is mcp_sync's YAML (a 'servers:' list) or an 'mcpServers' JSON/YAML file "
        "(Claude Desktop, Claude Code .mcp.json, Cursor, Gemini CLI).",
        epilog=f"exit codes:\n{codes}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("config", metavar="CONFIG", help="the configuration file")
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    common.add_argument("-v", "--verbose", action="store_true", help="debug logging and tracebacks on stderr")
    common.add_argument(
        "--strict",
        action="store_true",
        help="refuse the whole file if any entry is invalid (exit 2), instead of running the others",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "servers",
        parents=[common],
        help="each server: transport, state, tool count, error (exit 3 if any failed)",
        description="Connect to every enabled server and show its transport, state, tool count and error.",
    )
    commands.add_parser(
        "tools",
        parents=[common],
        help="every tool: public name, server, raw name, description",
        description="List every tool by public name (mcp__<server>__<tool>), with its server, raw name "
        "and the first line of its description.",
    )
    call = commands.add_parser(
        "call",
        parents=[common],
        help="call one tool and print its result (exit 1 if it is an error result)",
        description="Call TOOL (its public name) with ARGUMENTS (a JSON object) and print the result's text.",
    )
    call.add_argument("tool", metavar="TOOL", help="the tool's public name, e.g. mcp__demo__word_count")
    call.add_argument(
        "arguments", metavar="ARGUMENTS", nargs="?", default="{}", help="a JSON object; default {}"
    )
    call.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="give up (and cancel the call on the server) after this long; default: the server's "
        "tool_call_timeout_ms",
    )
    commands.add_parser(
        "resources",
        parents=[common],
        help="every resource and resource template: URI, server, MIME type, description",
        description="List every server's resources and resource templates.",
    )
    read = commands.add_parser(
        "read",
        parents=[common],
        help="read one resource and print its text (binary parts: with --json, base64)",
        description="Read the resource at URI and print its text parts.",
    )
    read.add_argument("uri", metavar="URI", help="the resource's URI")
    read.add_argument("--server", default=None, help="the server to ask (needed for a templated URI)")
    commands.add_parser(
        "prompts",
        parents=[common],
        help="every prompt: public name, server, arguments, description",
        description="List every prompt by public name (mcp__<server>__<prompt>) with its arguments.",
    )
    prompt = commands.add_parser(
        "prompt",
        parents=[common],
        help="get one prompt and print its messages",
        description="Get PROMPT (its public name) with ARGUMENTS (a JSON object) and print its messages.",
    )
    prompt.add_argument("prompt", metavar="PROMPT", help="the prompt's public name")
    prompt.add_argument(
        "arguments", metavar="ARGUMENTS", nargs="?", default="{}", help="a JSON object; default {}"
    )
    for command in (read, prompt):
        command.add_argument(
            "--timeout",
            type=_positive_seconds,
            default=None,
            metavar="SECONDS",
            help="give up (and cancel the request on the server) after this long",
        )
    login = commands.add_parser(
        "login",
        parents=[common],
        help="sign in to a server configured with auth: oauth, in a browser; the tokens are stored",
        description="Sign in to SERVER (auth: oauth): the authorization address is printed and opened in a "
        "browser when there is one; the browser's redirect comes back to 127.0.0.1, or paste the address it "
        "ended on. The tokens are stored for later runs (MCP_SYNC_TOKEN_DIR, or the user's data directory).",
    )
    login.add_argument("server", metavar="SERVER", help="the server's name")
    login.add_argument("--no-browser", action="store_true", help="only print the address")
    login.add_argument(
        "--timeout", type=_positive_seconds, default=300.0, metavar="SECONDS", help="give up after this long"
    )
    logout = commands.add_parser(
        "logout",
        parents=[common],
        help="forget the stored tokens of a server",
        description="Delete the stored tokens (and client registration) of SERVER.",
    )
    logout.add_argument("server", metavar="SERVER", help="the server's name")
    return parser


_COMMANDS = {
    "servers": _servers,
    "tools": _tools,
    "call": _call,
    "resources": _resources,
    "read": _read,
    "prompts": _prompts,
    "prompt": _prompt,
}
_SIGN_IN_COMMANDS = {"login": _login, "logout": _logout}


def _version() -> str:
    try:
        sdk = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        sdk = "not installed"
    return f"mcp-sync {__version__} (mcp {sdk}, Python {platform.python_version()})"


def _configure_logging(verbose: bool) -> None:
    if verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
        logging.getLogger().addHandler(handler)
        logging.getLogger().setLevel(logging.WARNING)
        logger.setLevel(logging.DEBUG)
    else:
        # The outcome is in the output and the exit code; log records would only repeat it. Warnings
        # about the configuration ("ignoring 'oauth'") are the exception: nothing else says them.
        logging.getLogger().addHandler(logging.NullHandler())
        warnings = logging.StreamHandler(sys.stderr)
        warnings.setLevel(logging.WARNING)
        warnings.setFormatter(logging.Formatter("mcp-sync: warning: %(message)s"))
        logging.getLogger(CONFIG_LOGGER).addHandler(warnings)


def _run(args: argparse.Namespace) -> int:
    if args.command in ("call", "prompt"):
        args.parsed_arguments = _parse_arguments(args.arguments)  # before starting any server
    try:
        entries = load_config_entries(args.config, strict=args.strict)
    except ConfigError as exc:
        raise _Failure(_one_line(str(exc)), EXIT_USAGE) from None
    required = [entry for entry in entries.invalid if entry.required]
    if required:  # as `start()` does for a required server that fails
        raise _Failure(_one_line(str(required[0].error)), EXIT_USAGE)
    hub = MCPHub(entries.configs)
    if args.command in _SIGN_IN_COMMANDS:  # no server is started
        invalid = next((entry for entry in entries.invalid if entry.server_name == args.server), None)
        if invalid is not None:  # its configuration error, not "no server named ..."
            raise _Failure(_one_line(str(invalid.error)), EXIT_USAGE)
        return _SIGN_IN_COMMANDS[args.command](args, hub)
    try:
        hub.start()
    except ServerStartError as exc:
        raise _Failure(_one_line(str(exc)), EXIT_SERVER) from None
    try:
        return _COMMANDS[args.command](args, entries, hub)
    finally:
        hub.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see `EXIT_CODES`)."""
    args = _parser().parse_args(argv)
    _configure_logging(args.verbose)
    try:
        code = _run(args)
        sys.stdout.flush()
        return code
    except _Failure as exc:
        _warn(_one_line(str(exc)))
        return exc.code
    except MCPSyncError as exc:
        _warn(_one_line(str(exc)))
        return EXIT_SERVER
    except KeyboardInterrupt:
        _warn("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`| head`): not an error worth a message
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        _warn(f"{exc.strerror or exc}" + ("" if args.verbose else " (rerun with -v for details)"))
        logger.debug("details", exc_info=True)
        return EXIT_INTERNAL
    except Exception as exc:
        logger.debug("unexpected error", exc_info=True)
        hint = "" if args.verbose else " (rerun with -v for details)"
        _warn(f"unexpected error: {type(exc).__name__}: {exc}{hint}")
        return EXIT_INTERNAL
