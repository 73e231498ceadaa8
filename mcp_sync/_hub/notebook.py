"""Hubs in an IPython kernel: re-running the cell that made a hub leaves exactly one.

IPython keeps the value each cell displays: in its output history (`Out[n]`, `_n`, `_`, `__`,
`___`, and the display hook's own copies of the last three) and in the shell's
`last_execution_result`. A cell ending with `hub`, or with `hub.start()`
(which returns the hub), would keep every hub it ever made alive, with its servers, however often
the cell is re-run.

So, once per shell, a `post_run_cell` hook swaps each hub it finds there for a `ShownHub`: a
stand-in that shows as the hub while the hub lives, and holds it only weakly. A displayed tuple,
list or dict holding hubs (`hub, len(hub.tools())`) is swapped for a shallow copy holding
`ShownHub`s (only new outputs are looked at, and a container's first 1000 items); the user's own
variables, a `_` of theirs included, are never touched. After a cell that made a hub, the hook
also runs one `gc.collect()`: tab completion leaves the hub it completed in a reference cycle,
which would otherwise keep it until the next automatic collection. A hub the user rebinds
(`hub = MCPHub(...)` run again) is then dropped at once, by reference counting, and its finalizer
closes its servers. Closing it so is how a notebook is used, not a leak: a hub made in a
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
import gc
import itertools
import os
import sys
import weakref
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

__all__ = ["ShownHub", "adopt"]

_hooked_shells: weakref.WeakSet[Any] = weakref.WeakSet()
_made_a_hub: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
"""The shells in which a hub was made since their last `post_run_cell`."""
_HISTORY_NAMES = ("_", "__", "___")
"""The names IPython's display hook binds to the last three displayed values."""
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def adopt(hub: object, hub_type: type) -> bool:
    """Hook the running IPython shell (once) so that its history holds `hub` only weakly; True if
    `hub` lives in such a shell (its finalizer then closes it without a warning)."""
    shell = _running_shell()
    if shell is None:
        return False
    _made_a_hub[shell] = True
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
    return _HistorySwapper(hub_type)


class _HistorySwapper:
    """Swaps the hubs the cells since its last run displayed. Only `Out` entries newer than the last
    one it saw are looked at (an earlier entry was swapped when it was new), and in a container only
    its first `_SCAN_LIMIT` items: a big value shown once costs nothing in the cells after it."""

    def __init__(self, hub_type: type) -> None:
        self._hub_type = hub_type
        self._seen = 0  # the highest prompt number whose output was looked at

    def __call__(self, result: Any) -> None:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            self.swap(shell, result)

    def swap(self, shell: Any, result: Any) -> None:
        shown = _Shown(self._hub_type)
        if hasattr(result, "result"):
            result.result = shown(result.result)
        error = getattr(result, "error_in_exec", None)
        if isinstance(error, BaseException):
            _clear_own_frames(error)
        history: MutableMapping[int, Any] = getattr(shell.history_manager, "output_hist", None) or {}
        if self._seen and self._seen not in history:  # `%reset`: the prompt numbers start again
            self._seen = 0
        new = []
        for count in reversed(history):  # IPython adds entries in prompt order
            if count <= self._seen:
                break
            new.append(count)
        self._seen = max(new, default=self._seen)
        # IPython's own values, read before any is swapped: a user's variable named `_` is not one of them.
        displayhook = vars(shell.displayhook)
        own = {name: displayhook.get(name) for name in _HISTORY_NAMES}
        own |= {f"_{count}": history[count] for count in new}
        for count in new:
            history[count] = shown(history[count])
        for name in _HISTORY_NAMES:
            if name in displayhook:
                displayhook[name] = shown(displayhook[name])
        # The user's namespace and IPython's hidden copy of its own names hold them too.
        for namespace in (shell.user_ns, getattr(shell, "user_ns_hidden", {})):
            for name, value in own.items():
                if value is not None and namespace.get(name) is value:
                    namespace[name] = shown(value)
        if _made_a_hub.pop(shell, False):
            # A hub left in a reference cycle (tab completion's objects hold what they completed) is
            # freed now, not at the next automatic collection, which may be long in coming.
            gc.collect()


_SCAN_LIMIT = 1000
"""How many items of a displayed tuple, list or dict are looked at for a hub (`hub, len(hub.tools())`
puts it first); a hub further in is left in the history."""


class _Shown:
    """What the history keeps instead of a value: a `ShownHub` for a hub, a shallow copy holding
    `ShownHub`s for a tuple, list or dict holding hubs among its first `_SCAN_LIMIT` items (the user's
    own container is left as it is, and one holding none is not copied), else the value itself; the
    same replacement each time a value is met again."""

    def __init__(self, hub_type: type) -> None:
        self._hub_type = hub_type
        self._made: dict[int, Any] = {}

    def __call__(self, value: Any) -> Any:
        if id(value) not in self._made:
            self._made[id(value)] = (value, self._replacement(value))
        return self._made[id(value)][1]

    def _holds_hub(self, items: Iterable[Any]) -> bool:
        return any(isinstance(item, self._hub_type) for item in itertools.islice(items, _SCAN_LIMIT))

    def _shown_item(self, item: Any, index: int) -> Any:
        return ShownHub(item) if index < _SCAN_LIMIT and isinstance(item, self._hub_type) else item

    def _replacement(self, value: Any) -> Any:
        if isinstance(value, self._hub_type):
            return ShownHub(value)
        if type(value) in (tuple, list):
            if not self._holds_hub(value):
                return value
            return type(value)(self._shown_item(item, index) for index, item in enumerate(value))
        if type(value) is dict:
            if not self._holds_hub(value.values()):
                return value
            return {key: self._shown_item(item, index) for index, (key, item) in enumerate(value.items())}
        return value


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

    def __enter__(self) -> Any:
        # `with` looks these up on the type, never through `__getattr__`.
        return self._live().__enter__()

    def __exit__(self, *exc_info: Any) -> Any:
        return self._live().__exit__(*exc_info)

    def __repr__(self) -> str:
        hub = self._hub()
        return repr(hub) if hub is not None else "<MCPHub (dropped and closed)>"

    def _repr_html_(self) -> str | None:
        hub: Any = self._hub()
        return None if hub is None else str(hub._repr_html_())
