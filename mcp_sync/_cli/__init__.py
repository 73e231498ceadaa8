"""`mcp-sync`: check a server configuration from the shell: its servers, tools, resources and prompts,
one call, one read, one prompt.

Every command takes a config file (our YAML `servers:` list or an `mcpServers` JSON/YAML
file), connects to its servers, does one thing and closes them. Output is a readable table,
or JSON with `--json`. Failures are one line on stderr (under `--json`, one JSON object on stdout)
and an exit code scripts can trust (see `EXIT_CODES`); a traceback only with `-v`. An entry that
cannot be used fails alone: it is shown as a failed server with its configuration error (`--strict`
refuses the file).

Start-up is kept cheap: this module and `parser` use the standard library only, so `--help` and
`--version` answer without importing the `mcp` SDK; `commands` (the hub, the SDK) is imported once a
command runs, and `output` renders tables, JSON, progress and the binary blocks of a result.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .._os.console import holds_any_text
from .parser import EXIT_CODES, Failure, build_parser

__all__ = ["EXIT_CODES", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see `EXIT_CODES`)."""
    _replace_unencodable()
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser(json_errors="--json" in arguments).parse_args(arguments)
    except Failure as failure:  # a refused command line under --json
        from .output import report_failure

        report_failure(failure, as_json=True)
        return failure.code
    from .commands import run

    return run(args)


def _replace_unencodable() -> None:
    """Text stdout's encoding cannot hold (a Windows code page, redirected; a C locale) is shown with
    `?` for what it lacks, instead of failing the command half way through (`--json` output escapes
    it instead: see `print_json`). stderr keeps Python's `backslashreplace`, which loses nothing."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and not holds_any_text(sys.stdout):
        reconfigure(errors="replace")
