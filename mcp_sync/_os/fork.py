"""`os.fork()` hooks, where there is a fork (POSIX); on Windows there is none and nothing is registered."""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["register_at_fork"]


def register_at_fork(*, before: Callable[[], None], after_in_child: Callable[[], None]) -> None:
    """`os.register_at_fork`, where there is a fork (not on Windows: nothing to do there)."""
    hook = getattr(os, "register_at_fork", None)
    if hook is not None:
        hook(before=before, after_in_child=after_in_child)
