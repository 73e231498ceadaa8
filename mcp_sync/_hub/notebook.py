"""Hubs in an IPython kernel: re-running the cell that made a hub leaves exactly one.

IPython keeps the value each cell displays: in its output history (`Out[n]`, `_n`, `_`, `__`,
`___`, and the display hook's own copies of the last three) and in the shell's
`last_execution_result`. A cell ending with `hub`, or with `hub.start()`
(which returns the hub), would keep every hub it ever made alive, with its servers, however often
the cell is re-run.

So, once per shell, a `post_run_cell` hook swaps each hub it finds there for a `ShownHub`: a
stand-in that shows as the hub while the hub lives, and holds it only weakly. A hub the user
rebinds (`hub = MCPHub(...)` run again) is then dropped at once, by reference counting, and its
finalizer closes its servers. Closing it so is how a notebook is used, not a leak: a hub made in a
kernel closes quietly when dropped, without the `ResourceWarning` a script gets. A cell that raised
(a call interrupted with the kernel's stop button) leaves its traceback in IPython for `%debug`;
this package's own frames in it are cleared, so that they do not hold the hub either.

Process-wide state: `_hooked_shells`, the shells whose hook is registered (weak: a shell that is
gone is forgotten). Failure, close and exit leave it as it is (the hook holds no hub); a forked
child inherits it, and the hook there still only swaps references.
IPython is never imported here: only a shell already running in this process is looked at.
"""

from __future__ import annotations

import contextlib
import os
import sys
import weakref
from collections.abc import Callable, MutableMapping
from typing import Any

__all__ = ["ShownHub", "adopt"]

_hooked_shells: weakref.WeakSet[Any] = weakref.WeakSet()
_HISTORY_NAMES = ("_", "__", "___")
"""The names IPython's display hook binds to the last three displayed values."""
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def adopt(hub: object, hub_type: type) -> bool:
    """Hook the running IPython shell (once) so that its history holds `hub` only weakly; True if
    `hub` lives in such a shell (its finalizer then closes it without a warning)."""
    shell = _running_shell()
    if shell is None:
        return False
    if shell not in _hooked_shells:
        shell.events.register("post_run_cell", _history_swapper(hub_type))
        _hooked_shells.add(shell)
    return True


def _running_shell() -> Any:
    """The IPython shell running in this process (a kernel's or a terminal's), or None."""
    ipython = sys.modules.get("IPython")
    get_ipython: Callable[[], Any] | None = getattr(ipython, "get_ipython", None)
    if get_ipython is None:
        return None
    shell = get_ipython()
    return shell if shell is not None and hasattr(shell, "events") else None


def _history_swapper(hub_type: type) -> Callable[[Any], None]:
    """The `post_run_cell` hook: every hub in the output history becomes a `ShownHub`."""

    def swap(result: Any) -> None:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None:
            return
        if isinstance(getattr(result, "result", None), hub_type):
            result.result = ShownHub(result.result)
        error = getattr(result, "error_in_exec", None)
        if isinstance(error, BaseException):
            _clear_own_frames(error)
        history: MutableMapping[int, Any] = getattr(shell.history_manager, "output_hist", None) or {}
        for count, value in list(history.items()):
            if isinstance(value, hub_type):
                history[count] = ShownHub(value)
        names = [*_HISTORY_NAMES, *(f"_{count}" for count in history)]
        # The user's namespace, IPython's hidden copy of its own names, and the display hook's own
        # attributes each hold the last three values.
        for namespace in (shell.user_ns, getattr(shell, "user_ns_hidden", {}), vars(shell.displayhook)):
            for name in names:
                value = namespace.get(name)
                if isinstance(value, hub_type):
                    namespace[name] = ShownHub(value)

    return swap


def _clear_own_frames(error: BaseException) -> None:
    """Clear this package's frames in a cell's traceback, which IPython keeps for `%debug`: a call
    interrupted in the cell would otherwise hold its hub (the method's `self`) for good. The
    user's own frames keep their variables."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        pending += [current.__cause__, current.__context__]
        traceback = current.__traceback__
        while traceback is not None:
            frame = traceback.tb_frame
            if frame.f_code.co_filename.startswith(_PACKAGE_DIR):
                with contextlib.suppress(RuntimeError):  # a frame still running cannot be cleared
                    frame.clear()
                    # Before Python 3.13 the traceback's display may have made the frame's locals a
                    # dict, which `clear()` leaves as it was (3.13's `f_locals` is a view of the frame).
                    snapshot = frame.f_locals
                    if isinstance(snapshot, dict):
                        snapshot.clear()
            traceback = traceback.tb_next


class ShownHub:
    """A hub as IPython's output history keeps it: shown as the hub while it lives, held weakly.

    Attributes are the hub's (`_.call_tool(...)` works while the hub lives); once the hub is gone it
    shows as such, and using it raises `ReferenceError`."""

    __slots__ = ("__weakref__", "_hub")

    def __init__(self, hub: object) -> None:
        self._hub = weakref.ref(hub)

    def _live(self) -> Any:
        hub = self._hub()
        if hub is None:
            raise ReferenceError("this hub was dropped and closed; use the hub your variable holds")
        return hub

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") and self._hub() is None:
            raise AttributeError(name)  # what display machinery probes for (`_repr_png_`, ...)
        return getattr(self._live(), name)

    def __repr__(self) -> str:
        hub = self._hub()
        return repr(hub) if hub is not None else "<MCPHub (dropped and closed)>"

    def _repr_html_(self) -> str | None:
        hub: Any = self._hub()
        return None if hub is None else str(hub._repr_html_())
