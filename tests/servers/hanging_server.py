"""A stdio "MCP server" that never answers: it reads stdin and writes nothing to stdout.

For "the server never completes the handshake" tests. It imports nothing from `mcp`, so
it starts in milliseconds and runs under any Python 3.

Flags
-----
--ignore-signals   ignore SIGTERM and SIGINT, and keep running after stdin closes:
                   only SIGKILL ends it.
--events PATH      append JSON lines to PATH: ``ready`` (with ``pid``) at start-up,
                   ``stdin_closed`` at end of input, ``signal`` for each ignored signal.
--stdout-lines N   at start-up, write N lines to stdout that are not MCP messages
                   (``hanging: not MCP, line <i>``), as a program that is not an MCP server does.
--stdout-env NAME  the first of those lines is ``hanging: NAME=<its value>`` instead: a program
                   that prints its configuration.
--stdout-pad N     put N ``x`` characters before ``NAME=`` in that line (to place the value at a cut).
--exit-after-output  exit (status 2) once those lines are written, instead of reading stdin.
--stdout-forever   then keep writing such lines (``hanging: not MCP, line <i>``), one every 50 ms,
                   until stdout is closed, and never read stdin: a program that logs to stdout.
"""

import argparse
import json
import os
import signal
import sys
import time

# How often --stdout-forever writes a line.
_FOREVER_INTERVAL = 0.05


def main() -> None:
    parser = argparse.ArgumentParser(description="stdio process that never answers")
    parser.add_argument("--ignore-signals", action="store_true")
    parser.add_argument("--events", default=None)
    parser.add_argument("--stdout-lines", type=int, default=0)
    parser.add_argument("--stdout-env", default=None)
    parser.add_argument("--stdout-pad", type=int, default=0)
    parser.add_argument("--exit-after-output", action="store_true")
    parser.add_argument("--stdout-forever", action="store_true")
    args = parser.parse_args()

    def record(event: str, **fields: object) -> None:
        if args.events is None:
            return
        with open(args.events, "a", encoding="utf-8") as f:
            f.write(json.dumps({"event": event, "time": time.time(), **fields}) + "\n")

    if args.ignore_signals:

        def ignore(signum: int, _frame: object) -> None:
            record("signal", signum=signum, ignored=True)

        signal.signal(signal.SIGTERM, ignore)
        signal.signal(signal.SIGINT, ignore)

    record("ready", pid=os.getpid())
    for index in range(args.stdout_lines):
        if index == 0 and args.stdout_env is not None:
            pad = "x" * args.stdout_pad
            print(f"hanging: {pad}{args.stdout_env}={os.environ.get(args.stdout_env, '')}")
        else:
            print(f"hanging: not MCP, line {index + 1}")
    sys.stdout.flush()
    if args.exit_after_output:
        sys.exit(2)
    if args.stdout_forever:
        write_forever(args.stdout_lines)
    stdin = sys.stdin.buffer
    while stdin.read(65536):
        pass  # swallow every request unanswered
    record("stdin_closed")
    if args.ignore_signals:
        while True:
            time.sleep(3600)


def write_forever(written: int) -> None:
    """Write a line that is not MCP every `_FOREVER_INTERVAL` until the reader closes stdout."""
    index = written
    try:
        while True:
            index += 1
            print(f"hanging: not MCP, line {index}", flush=True)
            time.sleep(_FOREVER_INTERVAL)
    except BrokenPipeError:
        os._exit(0)  # the reader went away: nothing left to flush to


if __name__ == "__main__":
    main()
