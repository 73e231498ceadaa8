"""A host that shows how its interpreter starts and ends (tests/test_warm_launcher.py runs it warm and
as a real interpreter, and compares): it prints one ``REPORT`` line about its start, leaves a daemon
thread running, registers an atexit handler and keeps an object in a global that says when it is
finalized, then ends as its argument says: ``return``, ``exit`` (status 3) or ``interrupt`` (an uncaught
KeyboardInterrupt).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from tests.hosts._common import report


class SaysWhenFinalized:
    def __del__(self, write: Callable[[int, bytes], int] = os.write) -> None:
        write(1, b"finalized\n")  # `os` itself may be gone from the globals by now


def main() -> None:
    report(
        {
            "argv": [Path(sys.argv[0]).name, *sys.argv[1:]],
            "main": __spec__.name if __spec__ else None,
            "path0": sys.path[0],
            "shim_variable": "MCP_SYNC_TEST_SHIM_PID" in os.environ,
            "write_through": sys.stdout.write_through,
        }
    )
    atexit.register(lambda: print("atexit", flush=True))
    threading.Thread(target=threading.Event().wait, name="left-running", daemon=True).start()
    if sys.argv[1] == "exit":
        sys.exit(3)
    if sys.argv[1] == "interrupt":
        raise KeyboardInterrupt


kept = SaysWhenFinalized()
if __name__ == "__main__":
    main()
