"""Did-you-mean for a name someone typed: a tool, a prompt, a host. One place, so that the Python API and
the command line suggest the same names for the same slip."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean", "public_name_hint"]

# Close enough to be the same name mistyped: `mcp__fx__ech` -> `mcp__fx__echo`, not `mcp__fx__add`.
NAME_CUTOFF = 0.8


def did_you_mean(name: str, known: Iterable[str], cutoff: float = NAME_CUTOFF) -> str | None:
    """`did you mean a or b?` for the known names closest to `name` (at most three, case aside), else None."""
    by_folded = {known_name.casefold(): known_name for known_name in known}
    close = difflib.get_close_matches(name.casefold(), by_folded, n=3, cutoff=cutoff)
    return f"did you mean {' or '.join(by_folded[match] for match in close)}?" if close else None


def public_name_hint(name: str, kind: str, names: Iterable[tuple[str, str | None]]) -> str | None:
    """For a `kind` ("tool", "prompt") looked up by `name`: the public names whose raw name it is (the
    usual slip: the server's own name), else the public names close to it. `names` holds
    (public name, raw name) pairs."""
    pairs = list(names)
    public = [public_name for public_name, raw_name in pairs if raw_name == name]
    if public:
        return f"did you mean {' or '.join(public)}? ({kind}s are called by their public names)"
    return did_you_mean(name, (public_name for public_name, _ in pairs))
