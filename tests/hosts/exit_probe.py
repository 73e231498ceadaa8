"""A host that shows how its interpreter starts and ends (tests/test_warm_launcher.py runs it warm and
as a real interpreter, and compares): it prints one ``REPORT`` line about its start, leaves a daemon
thread running, registers an atexit handler and keeps an object in a global that says when it is
finalized, then ends as its argument says: ``return``, ``exit`` (status 3) or ``interrupt`` (an uncaught
KeyboardInterrupt). ``group``: it forks a child (in its process group) that records the signals it
gets, prints ``READY`` and waits for a SIGINT, then stops the child and prints ``CHILD <what it got>``.
``wait``: it prints ``READY`` and waits for its stdin to end.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
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
    if sys.argv[1] == "group":
        interrupt_with_a_child()
    if sys.argv[1] == "wait":
        print("READY", flush=True)
        sys.stdin.read()
    if sys.argv[1] == "exit":
        sys.exit(3)
    if sys.argv[1] == "interrupt":
        raise KeyboardInterrupt


def interrupt_with_a_child() -> None:
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        got: list[str] = []
        signal.signal(signal.SIGINT, lambda *_: got.append("SIGINT"))
        signal.signal(signal.SIGTERM, lambda *_: (os.write(write, ",".join(got).encode()), os._exit(0)))
        os.write(write, b"+")
        while True:
            signal.pause()
    os.close(write)
    os.read(read, 1)
    try:  # before READY: the SIGINT may come as soon as it is printed
        print("READY", flush=True)
        time.sleep(60)
    except KeyboardInterrupt:
        os.kill(child, signal.SIGTERM)  # after any SIGINT it got: handlers run in signal-number order
        print(f"CHILD {os.read(read, 100).decode() or 'nothing'}", flush=True)
        os.waitpid(child, 0)


kept = SaysWhenFinalized()
if __name__ == "__main__":
    main()
