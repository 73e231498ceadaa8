"""A stdio "MCP server" that never answers: it reads stdin and writes nothing to stdout.

For "the server never completes the handshake" tests. It imports nothing from `mcp`, so
it starts in milliseconds and runs under any Python 3.

Flags
-----
--ignore-signals   ignore SIGTERM and SIGINT, and keep running after stdin closes:
                   only SIGKILL ends it.
--events PATH      append JSON lines to PATH: ``ready`` (with ``pid``) at start-up,
                   ``stdin_closed`` at end of input, ``signal`` for each ignored signal.
"""

import argparse
import json
import os
import signal
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description="stdio process that never answers")
    parser.add_argument("--ignore-signals", action="store_true")
    parser.add_argument("--events", default=None)
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
    stdin = sys.stdin.buffer
    while stdin.read(65536):
        pass  # swallow every request unanswered
    record("stdin_closed")
    if args.ignore_signals:
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
