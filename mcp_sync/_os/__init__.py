"""The operating system's boundary: what differs between POSIX (Linux, macOS) and Windows, in one
place; every other module asks here. One module for each thing it wraps:

- `processes`: a stdio server's process tree. POSIX starts it in a session of its own and sends the
  group SIGTERM, then SIGKILL after a grace; Windows puts it in a Job Object that kills its members
  when closed, and ends it with `TerminateJobObject` (Windows has no soft stop for a tree: closing the
  server's stdin, which comes first on both, is that). Ctrl-C in the terminal reaches no server: a
  new session on POSIX; on Windows no console of ours and a process group of its own, so no console
  control event does. A command such as `npx` is found on PATH; on Windows also as `npx.cmd`,
  `.bat`, `.exe` (the SDK's lookup), and a `.cmd`/`.bat` launcher gets a command line quoted for
  cmd.exe, which reads it again (as Rust's standard library does it: every argument reaches the
  server as it was given);
- `fork`: hooks before and after `os.fork()` on POSIX; Windows has no fork, and nothing is registered;
- `waits`: a caller's blocking wait (a call, a sign-in, a thread's end) is one wait, which Ctrl-C
  interrupts; on Windows before Python 3.14 a lock wait holds Ctrl-C back until it returns, so a
  caller there waits in short slices;
- `files`: the token store's place: a directory 0700 with files 0600; on Windows a directory whose
  protected ACL grants the current user alone, which the files in it inherit;
- `console`: ANSI on the command line (on a terminal; on Windows on a console that accepts VT
  sequences), the text a stream's encoding can hold, and what sign-in may use: a browser opens on
  macOS and Windows, elsewhere where a display is set; a pasted address is read from stdin with
  `select` on POSIX, on a thread on Windows (its `select` takes sockets only).

The Windows side mirrors the `mcp` SDK's own (`mcp.os.win32.utilities`, through `pywin32`): its
command lookup is reused as is; its Job Object helpers are not public and bind a process to a job
kept in a private table, so the few `win32job` calls are made here, on a handle this package owns, to
kill from any thread and to ask whether a server left processes behind. As in the SDK, a process the
server starts before it has joined the job (within microseconds of its start) is outside the job.

A ground floor beside `_values`, so that every layer above may import it. May import: `_values`
(its errors) only. Each module reads `IS_WINDOWS` as its own global,
so that a test can take the other platform's path of one module.
"""

from __future__ import annotations

import sys

__all__ = ["IS_WINDOWS"]

IS_WINDOWS = sys.platform == "win32"
