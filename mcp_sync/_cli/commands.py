"""The commands: load the configuration, start the hub, do one thing, close it; and every failure turned
into a `Failure` with its exit code and type. Imported only once the parser has accepted a command,
since it imports the hub and with it the `mcp` SDK."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .. import (
    AmbiguousResourceError,
    AuthError,
    ConfigEntries,
    ConfigError,
    MCPHub,
    MCPSyncError,
    PromptNotFoundError,
    ResourceNotFoundError,
    ServerConfig,
    ServerDisconnectedError,
    ServerStartError,
    TaskNotFoundError,
    ToolApprovalError,
    ToolApprovalRequiredError,
    ToolCallCancelledError,
    ToolCallError,
    ToolCallTimeoutError,
    ToolNotFoundError,
    UnsupportedFeatureError,
    load_config_entries,
    load_host_entries,
)
from .._hub.hub_features import PASS_SERVER
from .._values.secrets import scrub
from . import listings, output, sign_in, tasks
from .inputs import terminal_approver, terminal_inputs
from .output import one_line, print_json, printable, printable_lines
from .parser import (
    EXIT_CALL_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SERVER,
    EXIT_USAGE,
    Failure,
)

__all__ = ["run"]

logger = logging.getLogger("mcp_sync")
CONFIG_LOGGER = "mcp_sync.config"


def _parse_arguments(text: str) -> dict[str, Any]:
    try:
        arguments = json.loads(text)
    except ValueError as exc:
        raise Failure(f"ARGUMENTS is not valid JSON: {exc}", EXIT_USAGE, "usage") from None
    if not isinstance(arguments, dict):
        raise Failure(
            f'ARGUMENTS must be a JSON object, like \'{{"text": "hi"}}\'; got {type(arguments).__name__}',
            EXIT_USAGE,
            "usage",
        )
    return arguments


def _check_save_directory(directory: str | None) -> None:
    """`--save-images DIR` that can never hold a file fails before any server starts: DIR, or the
    nearest folder above it that exists (DIR is created when the result has something to save), must
    be a directory we may write in."""
    if directory is None:
        return
    path = Path(directory).absolute()
    existing = next(folder for folder in (path, *path.parents) if os.path.lexists(folder))
    if not existing.is_dir():
        what = (
            "is not a directory" if existing == path else f"cannot be created: {existing} is not a directory"
        )
        raise Failure(f"--save-images: {directory} {what}", EXIT_USAGE, "usage")
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == path else f" (in {existing})"
        raise Failure(f"--save-images: {directory}: no permission to write{where}", EXIT_USAGE, "usage")


def _call(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    if hub.registry.get(args.tool) is None:
        raise listings.unknown_tool(hub, entries, args.tool)
    reporter = output.progress_reporter(quiet=args.json)
    try:
        result = hub.call_tool(
            args.tool, args.parsed_arguments, timeout=args.timeout, progress=reporter, task=args.task or None
        )
    except ToolNotFoundError:  # its server went away since the check above
        raise listings.unknown_tool(hub, entries, args.tool) from None
    finally:
        if reporter is not None:
            reporter.finish()
    return output.print_result(result, args.tool, as_json=args.json, save_images=args.save_images)


def _read(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    try:
        result = hub.read_resource(args.uri, server=args.server, timeout=args.timeout)
    except (ResourceNotFoundError, AmbiguousResourceError) as exc:  # said with the command line's option
        message = scrub(one_line(str(exc))).replace(PASS_SERVER, "pass --server NAME")
        raise Failure(message, EXIT_SERVER, "not_found") from None
    if args.json:
        print_json(
            {
                "uri": result.uri,
                "server": result.server_name,
                "contents": [
                    {
                        "uri": part.uri,
                        "mime_type": part.mime_type,
                        "text": part.text,
                        "blob": output.base64_text(part.blob) if part.blob is not None else None,
                    }
                    for part in result.contents
                ],
            }
        )
        return EXIT_OK
    for part in result.contents:
        if part.text is not None:
            print(printable_lines(part.text))
        else:
            kind = printable(part.mime_type or "unknown type")
            print(f"[binary: {kind}, {len(part.blob or b'')} bytes; use --json]")
    return EXIT_OK


def _prompt(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    arguments = {
        key: value if isinstance(value, str) else json.dumps(value)
        for key, value in args.parsed_arguments.items()
    }
    result = hub.get_prompt(args.prompt, arguments, timeout=args.timeout)
    if args.json:
        print_json(
            {
                "prompt": result.name,
                "description": result.description,
                "messages": [{"role": m.role, "text": m.text} for m in result.messages],
            }
        )
    else:
        for message in result.messages:
            print(f"[{printable(message.role)}]")
            print(printable_lines(message.text))
    return EXIT_OK


_COMMANDS = MappingProxyType(
    {
        "servers": listings.servers,
        "tools": listings.tools,
        "call": _call,
        "resources": listings.resources,
        "read": _read,
        "prompts": listings.prompts,
        "prompt": _prompt,
        "task": tasks.run,
    }
)
_SIGN_IN_COMMANDS = MappingProxyType({"login": sign_in.login, "logout": sign_in.logout})


# -- failures -------------------------------------------------------------------------------------------


def _failure_of(error: BaseException, verbose: bool) -> Failure:
    """The exit code and type of an exception that ended a command; its message scrubbed of secrets."""
    hint = "" if verbose else " (rerun with -v for details)"
    if isinstance(error, Failure):
        return error
    if isinstance(error, KeyboardInterrupt):
        return Failure("interrupted", EXIT_INTERRUPTED, "interrupted")
    message = scrub(one_line(str(error)))
    if isinstance(error, TaskNotFoundError):
        return Failure(message, EXIT_SERVER, "not_found")
    if isinstance(error, ToolCallTimeoutError):
        return Failure(message, EXIT_CALL_FAILED, "timeout")
    if isinstance(error, ServerDisconnectedError):
        return Failure(message, EXIT_CALL_FAILED, "disconnected")
    if isinstance(error, ToolCallCancelledError):
        return Failure(message, EXIT_CALL_FAILED, "cancelled")
    if isinstance(error, ToolApprovalRequiredError):  # the hub's own advice is for the Python API
        why = f"{error.tool} waits for a person's approval before each call (as its server is configured)"
        why += ", and standard input is not a terminal to ask on"
        return Failure(why, EXIT_CALL_FAILED, "not_approved")
    if isinstance(error, ToolApprovalError):
        return Failure(message, EXIT_CALL_FAILED, "not_approved")
    if isinstance(error, ToolCallError | UnsupportedFeatureError):
        return Failure(message, EXIT_CALL_FAILED, "call_failed")
    if isinstance(
        error, ToolNotFoundError | ResourceNotFoundError | AmbiguousResourceError | PromptNotFoundError
    ):
        return Failure(message, EXIT_SERVER, "not_found")
    if isinstance(error, ServerStartError):
        return Failure(message, EXIT_SERVER, "start")
    if isinstance(error, ConfigError):
        return Failure(message, EXIT_USAGE, "config")
    if isinstance(error, AuthError):
        return Failure(message, EXIT_SERVER, "auth")
    if isinstance(error, MCPSyncError):
        return Failure(message, EXIT_SERVER, "server")
    logger.debug("unexpected error", exc_info=error)
    if isinstance(error, OSError):
        return Failure(scrub(f"{error.strerror or error}") + hint, EXIT_INTERNAL, "internal")
    message = scrub(f"unexpected error: {type(error).__name__}: {error}")
    return Failure(message + hint, EXIT_INTERNAL, "internal")


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


def _without_config(args: argparse.Namespace) -> None:
    """`call --from HOST TOOL ARGUMENTS`: the parser, which cannot tell an optional CONFIG from TOOL by
    position, took TOOL for CONFIG; move each to its place."""
    name = {"call": "tool", "prompt": "prompt"}.get(args.command)
    if _starts_task(args):
        name = "tool"
    if name is None or args.from_host is None or args.config is None or args.arguments is not None:
        return
    args.arguments = getattr(args, name)
    setattr(args, name, args.config)
    args.config = None


def _starts_task(args: argparse.Namespace) -> bool:
    return bool(args.command == "task" and args.task_command == "start")


def _servers_needed(args: argparse.Namespace, configs: Sequence[ServerConfig]) -> list[ServerConfig]:
    """The servers a command needs: for a tool or prompt named `mcp__<server>__<name>`, the servers whose
    name that public name begins with (the part a hash may shorten is the end, never this prefix); for
    `read --server NAME`, that server; every server when none matches, so that "unknown tool" can name
    them, and for other commands."""
    name = None
    if args.command == "call" or _starts_task(args):
        name = args.tool
    elif args.command == "prompt":
        name = args.prompt
    if args.command == "read" and args.server is not None:
        return [config for config in configs if config.server_name == args.server] or list(configs)
    if not isinstance(name, str):
        return list(configs)
    owners = [config for config in configs if name.startswith(f"mcp__{config.server_name}__")]
    return owners or list(configs)


def _run(args: argparse.Namespace) -> int:
    _without_config(args)
    if args.command in ("call", "prompt") or _starts_task(args):
        args.parsed_arguments = _parse_arguments(args.arguments or "{}")  # before starting any server
    if args.command == "call":
        _check_save_directory(args.save_images)
    if (args.config is None) == (args.from_host is None):
        raise Failure("give either CONFIG or --from HOST", EXIT_USAGE, "usage")
    if args.project is not None and args.from_host is None:
        raise Failure("--project goes with --from HOST", EXIT_USAGE, "usage")
    try:
        inputs = terminal_inputs()
        if args.from_host is not None:
            entries = load_host_entries(args.from_host, args.project, strict=args.strict, inputs=inputs)
        else:
            entries = load_config_entries(args.config, strict=args.strict, inputs=inputs)
    except ConfigError as exc:
        raise Failure(one_line(str(exc)), EXIT_USAGE, "config") from None
    required = [entry for entry in entries.invalid if entry.required]
    if required:  # as `start()` does for a required server that fails
        raise Failure(one_line(str(required[0].error)), EXIT_USAGE, "config")
    hub = MCPHub(_servers_needed(args, entries.configs), approve=terminal_approver())
    if args.command in _SIGN_IN_COMMANDS:  # no server is started
        invalid = next((entry for entry in entries.invalid if entry.server_name == args.server), None)
        if invalid is not None:  # its configuration error, not "no server named ..."
            raise Failure(one_line(str(invalid.error)), EXIT_USAGE, "config")
        return _SIGN_IN_COMMANDS[args.command](args, entries, hub)
    try:
        hub.start()
        return _COMMANDS[args.command](args, entries, hub)
    except BrokenPipeError:
        raise
    except Exception as exc:  # turned into a message while the servers' secrets are still known
        raise _failure_of(exc, args.verbose) from None
    finally:
        hub.close()


def run(args: argparse.Namespace) -> int:
    """Run the parsed command; returns the exit code. A failure is one line on stderr, or under `--json`
    one JSON object on stdout."""
    _configure_logging(args.verbose)
    try:
        code = _run(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # the reader went away (`| head`): not an error worth a message
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (Exception, KeyboardInterrupt) as exc:
        failure = _failure_of(exc, args.verbose)
    output.report_failure(failure, as_json=args.json)
    return failure.code
