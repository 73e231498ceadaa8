"""VS Code's `envFile` grammar, which Cursor (a VS Code fork) shares: `parse_env_file`.

A transcription, line for line, of `parseEnvFile` in VS Code's `src/vs/base/common/envfile.ts`
(microsoft/vscode, MIT licence). It is VS Code's own small grammar, not dotenv: `#` outside quotes
starts a comment even inside a word (`A=abc#def` is `abc`), `KEY: value` defines KEY, a value is
unquoted only when its first and last characters are the same quote (`"`, `'` or a backtick), and in
double quotes only `\\n` and `\\r` are escapes (`"x\\\\y"` keeps both backslashes). No `${...}` is
expanded. No library parses this grammar, so it is kept here, as short as the original.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# JavaScript's String.prototype.trim(): ECMAScript's WhiteSpace and LineTerminator characters.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_QUOTES = ('"', "'", "`")


def parse_env_file(src: str) -> dict[str, str]:
    """The variables an env file defines, as VS Code reads it (a later definition of a name wins)."""
    result: dict[str, str] = {}
    for line in re.sub(r"\r\n?", "\n", src).split("\n"):
        line = line.strip(_JS_WHITESPACE)
        if not line or line.startswith("#"):
            continue
        key, value = _parse_line(line)
        if key:
            result[key] = value
    return result


def _parse_line(line: str) -> tuple[str, str]:
    """One line's key and value; an empty key when the line has no `=` or `:` outside quotes."""
    if line.startswith("export "):
        line = line[7:].strip(_JS_WHITESPACE)
    separator = _find_outside_quotes(line, lambda c: c in "=:")
    if separator == -1:
        return "", ""
    key = line[:separator].strip(_JS_WHITESPACE)
    value = line[separator + 1 :].strip(_JS_WHITESPACE)
    comment = _find_outside_quotes(value, lambda c: c == "#")
    if comment != -1:
        value = value[:comment].strip(_JS_WHITESPACE)
    if len(value) >= 2 and value[0] in _QUOTES and value[-1] == value[0]:
        quote, value = value[0], value[1:-1]
        if quote == '"':
            value = value.replace("\\n", "\n").replace("\\r", "\r")
    return key, value


def _find_outside_quotes(text: str, predicate: Callable[[str], bool]) -> int:
    """The index of the first character outside quotes that `predicate` accepts, else -1.

    A quote closes at the same quote character not preceded by a backslash; it need not close.
    """
    quote = ""
    for i, char in enumerate(text):
        if quote:
            if char == quote and text[i - 1 : i] != "\\":
                quote = ""
        elif char in _QUOTES:
            quote = char
        elif predicate(char):
            return i
    return -1
