"""Problems in plain words: server names, misspellings, and pydantic's errors without their inputs."""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from .fields import MAX_TIMEOUT_MS


class EntryError(Exception):
    """Problems found in one entry; rendered into a `ConfigError` with the entry's name."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


def render_problems(where: str, problems: list[str]) -> str:
    if len(problems) == 1:
        return f"{where}: {problems[0]}"
    return f"{where}: {len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems)


def suggest_server_name(name: str) -> str:
    """A valid server name close to `name`: `brave search` -> `brave_search`, `github.com` -> `github_com`.

    Accents are dropped, each run of other characters becomes one `_`, and the result is cut
    to 32 characters.
    """
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", ascii_name).strip("_")
    return cleaned[:32].rstrip("_-") or "server"


_NAME_RULE = (
    "a server name is 1 to 32 letters, digits, '_' or '-', since it becomes part of every tool name "
    "(mcp__<server>__<tool>)"
)


def name_problem(name: Any) -> str:
    """Why `name` is not a valid server name, in plain words."""
    if not isinstance(name, str):
        return f"must be a string; {_NAME_RULE}"
    if not name:
        return f"is empty; {_NAME_RULE}"
    reasons: list[str] = []
    if len(name) > 32:
        reasons.append(f"is {len(name)} characters long")
    bad = sorted({char for char in name if not re.fullmatch(r"[A-Za-z0-9_-]", char)})
    if bad:
        shown = [("a space" if char == " " else repr(char)) for char in bad[:5]]
        reasons.append("contains " + (", ".join(shown[:-1]) + " and " if len(shown) > 1 else "") + shown[-1])
    return f"{name!r} cannot be used: it {' and '.join(reasons)}; {_NAME_RULE}"


SUGGESTION_CUTOFF = 0.85  # `comand` -> `command` (0.92), but not `transportType` -> `transport` (0.82)


def did_you_mean(key: Any, candidates: Iterable[str]) -> str:
    """`; did you mean 'command'?` for a close misspelling of a known key, else ""."""
    if not isinstance(key, str):
        return ""
    by_folded = {candidate.casefold(): candidate for candidate in candidates}
    match = difflib.get_close_matches(key.casefold(), by_folded, n=1, cutoff=SUGGESTION_CUTOFF)
    return f"; did you mean {by_folded[match[0]]!r}?" if match else ""


_TIMEOUT_FIELDS = frozenset({"tool_call_timeout_ms", "connect_timeout_ms"})
_PLAIN_MESSAGES = {
    "missing": "is required",
    "string_type": "must be a string (put numbers and true/false in quotes)",
    "tuple_type": 'must be a list of strings, like ["a", "b"]',
    "list_type": 'must be a list of strings, like ["a", "b"]',
    "dict_type": 'must be a map of names to strings, like {"NAME": "value"}',
    "mapping_type": 'must be a map of names to strings, like {"NAME": "value"}',
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_too_short": "must not be empty",
    "less_than_equal": f"must be at most {MAX_TIMEOUT_MS} (about 24.8 days in milliseconds)",
}


def plain_message(error: Mapping[str, Any], field_name: Any) -> str:
    """Pydantic's message for one error, in plain words, without the input."""
    kind = str(error["type"])
    message = _PLAIN_MESSAGES.get(kind) or str(error["msg"]).replace("Input should be", "must be")
    if kind.startswith("int_") and field_name in _TIMEOUT_FIELDS:
        message += " of milliseconds"
    return message
