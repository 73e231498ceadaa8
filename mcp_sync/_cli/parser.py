"""The command line's parser, exit codes and version: the standard library only, so that `--help` and
`--version` answer without importing the `mcp` SDK (see `mcp_sync._cli`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any, NoReturn

__all__ = ["EXIT_CODES", "Failure", "build_parser", "version"]

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_SERVER = 3
EXIT_CALL_FAILED = 4
EXIT_INTERNAL = 5
EXIT_INTERRUPTED = 130

EXIT_CODES = MappingProxyType(
    {
        EXIT_OK: "success",
        EXIT_TOOL_ERROR: "the tool ran and returned an error result (call)",
        EXIT_USAGE: "usage or configuration error: bad arguments, invalid JSON, unreadable or invalid config "
        "(also when one entry is invalid and the others ran)",
        EXIT_SERVER: "a server failed to start or connect, or no tool, resource, prompt or task has that "
        "name",
        EXIT_CALL_FAILED: "the call ended without a result: timed out, server disconnected, refused, or "
        "not approved",
        EXIT_INTERNAL: "unexpected error (rerun with -v for details)",
        EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
    }
)


class Failure(Exception):
    """A failure the command line reports as one line (or, under `--json`, one JSON object) and an exit
    code. `kind` is the object's `type`: usage, config, start, not_found, auth, server, timeout,
    disconnected, cancelled, not_approved, call_failed, interrupted or internal."""

    def __init__(self, message: str, code: int, kind: str) -> None:
        super().__init__(message)
        self.code = code
        self.kind = kind


class _Parser(argparse.ArgumentParser):
    """A parser whose refusal of an unknown command (or `task` action) says which one was meant."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is None or value in action.choices or not isinstance(value, str):
            super()._check_value(action, value)
            return
        from .._values.suggestions import did_you_mean

        hint = did_you_mean(value, [str(choice) for choice in action.choices])
        choices = ", ".join(map(repr, action.choices))
        message = f"invalid choice: {value!r}" + (f"; {hint}" if hint else "") + f" (choose from {choices})"
        raise argparse.ArgumentError(action, message)


class _JsonParser(_Parser):
    """The parser under `--json`: a refusal is a `Failure`, reported as a JSON object."""

    def error(self, message: str) -> NoReturn:
        raise Failure(f"{self.prog}: {message}", EXIT_USAGE, "usage")


class _VersionAction(argparse.Action):
    """`--version`, with the versions read only when asked for (reading package metadata has a cost)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> NoReturn:
        print(version())
        parser.exit()


def version() -> str:
    """`mcp-sync X (mcp Y, Python Z)`, from the installed metadata: the SDK is not imported."""
    import importlib.metadata
    import platform

    from .. import __version__

    try:
        sdk = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        sdk = "not installed"
    return f"mcp-sync {__version__} (mcp {sdk}, Python {platform.python_version()})"


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def _timeout(command: argparse.ArgumentParser, help: str, default: float | None = None) -> None:
    command.add_argument(
        "--timeout", type=positive_seconds, default=default, metavar="SECONDS", help=help
    )


# The hosts `--from` reads (`mcp_sync._config.hosts.locations.HOSTS`, which this light module does not
# import; a test holds the two equal).
HOST_NAMES = ("claude-desktop", "claude-code", "cursor", "vscode", "codex", "gemini", "windsurf")


def build_parser(json_errors: bool = False) -> argparse.ArgumentParser:
    """The `mcp-sync` parser; with `json_errors` (the command line has `--json`) a refusal raises
    `Failure` instead of printing usage and exiting."""
    parser_class: type[argparse.ArgumentParser] = _JsonParser if json_errors else _Parser
    codes = "\n".join(f"  {code:<3} {meaning}" for code, meaning in EXIT_CODES.items())
    parser = parser_class(
        prog="mcp-sync",
        description="Check an MCP server configuration: list its servers and tools, or call one tool. "
        "CONFIG is mcp_sync's YAML (a 'servers:' list), an 'mcpServers' JSON/YAML file "
        "(Claude Desktop, Claude Code .mcp.json, Cursor, Gemini CLI), a VS Code mcp.json or a Codex "
        "config.toml; or --from HOST reads the files a host keeps.",
        epilog=f"exit codes:\n{codes}\n\nWith --json, a failure is a JSON object on stdout: "
        '{"error": {"type": ..., "message": ..., "exit_code": N}}.',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, help="show the versions and exit")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("config", metavar="CONFIG", nargs="?", help="the configuration file")
    common.add_argument(
        "--from",
        dest="from_host",
        metavar="HOST",
        default=None,
        help=f"instead of CONFIG, the servers a host is configured with: {', '.join(HOST_NAMES)}",
    )
    common.add_argument(
        "--project",
        metavar="DIR",
        default=None,
        help="with --from: also the host's files in this project (they win over the user's)",
    )
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    common.add_argument("-v", "--verbose", action="store_true", help="debug logging and tracebacks on stderr")
    common.add_argument(
        "--strict",
        action="store_true",
        help="refuse the whole file if any entry is invalid (exit 2), instead of running the others",
    )
    commands = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="COMMAND",
        parser_class=parser_class,
    )
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
        description="Call TOOL (its public name) with ARGUMENTS (a JSON object) and print the result's text. "
        "The server's progress is shown on stderr while the tool works (a bar on a terminal). Images, "
        "audio and binary resources in the result are named on stderr, saved with --save-images, and "
        "included as content blocks with --json.",
    )
    call.add_argument("tool", metavar="TOOL", help="the tool's public name, e.g. mcp__demo__word_count")
    call.add_argument(
        "arguments", metavar="ARGUMENTS", nargs="?", default=None, help="a JSON object; default {}"
    )
    _timeout(
        call,
        "give up (and cancel the call on the server) after this long; default: the server's "
        "tool_call_timeout_ms",
    )
    call.add_argument(
        "--task",
        action="store_true",
        help="run the call as a task on the server (a tool whose task support is optional; a tool that "
        "requires it always runs as one); its status messages are shown as progress",
    )
    call.add_argument(
        "--save-images",
        metavar="DIR",
        default=None,
        help="save the result's images, audio and binary resources in DIR (created if missing), "
        "as TOOL-N.EXT; existing files are never overwritten",
    )
    _task_commands(commands, common, parser_class)
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
        "arguments", metavar="ARGUMENTS", nargs="?", default=None, help="a JSON object; default {}"
    )
    for command in (read, prompt):
        _timeout(command, "give up (and cancel the request on the server) after this long")
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
    _timeout(login, "give up after this long", default=300.0)
    logout = commands.add_parser(
        "logout",
        parents=[common],
        help="forget the stored tokens of a server",
        description="Delete the stored tokens (and client registration) of SERVER.",
    )
    logout.add_argument("server", metavar="SERVER", help="the server's name")
    return parser


def _task_commands(
    commands: Any, common: argparse.ArgumentParser, parser_class: type[argparse.ArgumentParser]
) -> None:
    """`task start|show|result|cancel|list`: a long-running call as a task on the server, which outlives
    this command (over Streamable HTTP, where the server keeps it), found again by its server and id."""
    task = commands.add_parser(
        "task",
        help="start a task, show its status, fetch its result, cancel it, or list a server's tasks",
        description="Long-running calls as MCP tasks: 'task start' prints the id of a task the server runs "
        "on; 'task show', 'task result' and 'task cancel' find it again by SERVER and TASK_ID, from "
        "another run (over Streamable HTTP, where the server keeps it; a stdio server ends with the run).",
    )
    actions = task.add_subparsers(
        dest="task_command", required=True, metavar="ACTION", parser_class=parser_class
    )
    start = actions.add_parser(
        "start",
        parents=[common],
        help="start TOOL as a task and print its id (stdout: the id alone)",
        description="Call TOOL (its public name) with ARGUMENTS (a JSON object) as a task, print the task's "
        "id once the server created it, and leave it running.",
    )
    start.add_argument("tool", metavar="TOOL", help="the tool's public name")
    start.add_argument(
        "arguments", metavar="ARGUMENTS", nargs="?", default=None, help="a JSON object; default {}"
    )
    start.add_argument(
        "--ttl",
        type=positive_seconds,
        default=None,
        metavar="SECONDS",
        help="ask the server to keep the task this long after it was created",
    )
    _timeout(start, "give up if the server has not created the task after this long")
    by_id = {
        "show": ("show a task's status and status message", "Ask SERVER for the task's status now."),
        "result": (
            "wait for a task to end and print its result (exit 1 if it is an error result)",
            "Wait for the task to end (its status messages shown as progress) and print its result as "
            "'call' does. --timeout stops waiting (exit 4), the task keeps running; Ctrl-C too.",
        ),
        "cancel": ("cancel a task on the server", "Ask SERVER to cancel the task; show its status after."),
    }
    for name, (help, description) in by_id.items():
        action = actions.add_parser(name, parents=[common], help=help, description=description)
        action.add_argument("server", metavar="SERVER", help="the server the task runs on")
        action.add_argument(
            "task_id",
            metavar="TASK_ID",
            help="the task's id, as 'task start' printed it (after '--' if it begins with '-')",
        )
        _timeout(
            action,
            "stop waiting after this long (the task keeps running)"
            if name == "result"
            else "give up after this long",
        )
    listing = actions.add_parser(
        "list",
        parents=[common],
        help="the tasks SERVER knows: id, status, last update, status message",
        description="List the tasks SERVER keeps (a server or protocol without a task listing: exit 4).",
    )
    listing.add_argument("server", metavar="SERVER", help="the server's name")
    _timeout(listing, "give up after this long")
