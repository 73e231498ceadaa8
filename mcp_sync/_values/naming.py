"""Public tool names: `mcp__<server_name>__<raw_name>`, made safe for function-calling APIs.

The rule is a contract shared with the RFC's TypeScript reference, byte for byte,
because session histories and permission rules name tools by it:

    joined     = f"mcp__{server_name}__{raw_name}"
    normalized = joined with every UTF-16 code unit outside [A-Za-z0-9_-] replaced by "_"
    if normalized == joined and len <= 64: that is the name
    else: normalized[:51] + "_" + sha256(server_name + "\\0" + raw_name)[:12]

The reference runs on JavaScript strings, so a character outside the Basic
Multilingual Plane (two UTF-16 code units) becomes two underscores.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = [
    "PUBLIC_NAME_MAX_LENGTH",
    "PUBLIC_NAME_PREFIX",
    "SERVER_NAME_MAX_LENGTH",
    "public_tool_name",
    "server_label",
    "server_name_from_host",
    "server_names_from_host",
    "server_namespace",
]

PUBLIC_NAME_PREFIX = "mcp__"
# Function names in OpenAI-style APIs: [A-Za-z0-9_-], at most 64 characters.
PUBLIC_NAME_MAX_LENGTH = 64
_HASH_HEX_DIGITS = 12
_KEEP_LENGTH = PUBLIC_NAME_MAX_LENGTH - _HASH_HEX_DIGITS - 1

# The RFC's serverName: [A-Za-z0-9_-], at most 32 characters.
SERVER_NAME_MAX_LENGTH = 32
_SERVER_KEEP_LENGTH = SERVER_NAME_MAX_LENGTH - _HASH_HEX_DIGITS - 1

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_BMP_LIMIT = 0xFFFF


def _as_js_string(text: str) -> str:
    """Read `text` as JavaScript would: surrogate pairs join into one character, lone ones become U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _replace_code_units(match: re.Match[str]) -> str:
    return "__" if ord(match.group()) > _BMP_LIMIT else "_"


def public_tool_name(server_name: str, raw_name: str) -> str:
    """The name a model sees for tool `raw_name` of server `server_name`; pure and collision-free."""
    server_name, raw_name = _as_js_string(server_name), _as_js_string(raw_name)
    joined = f"{PUBLIC_NAME_PREFIX}{server_name}__{raw_name}"
    normalized = _UNSAFE.sub(_replace_code_units, joined)
    if normalized == joined and len(normalized) <= PUBLIC_NAME_MAX_LENGTH:
        return normalized
    identity = f"{server_name}\0{raw_name}".encode()
    digest = hashlib.sha256(identity).hexdigest()[:_HASH_HEX_DIGITS]
    return f"{normalized[:_KEEP_LENGTH]}_{digest}"


def server_namespace(server_name: str) -> str:
    """The prefix every public name of `server_name` starts with (before any shortening)."""
    return f"{PUBLIC_NAME_PREFIX}{server_name}__"


def server_name_from_host(name: str, *, hashed: bool = False) -> str:
    """A valid server name for a name another host accepts (`io.github.upstash/context7`, `Dev Box`).

    A valid name is itself (unless `hashed`); any other is normalised as tool names are (each UTF-16
    code unit outside [A-Za-z0-9_-] becomes `_`), cut to fit 32 characters with `_` and the first
    12 hex digits of SHA-256 of the name (UTF-8) appended. Deterministic; but a valid name kept as
    it is may equal another name's normalised form (`Dev_Box_345271fc9fef` and `Dev Box`), so a
    loader names a configuration's servers with `server_names_from_host`, which rules that out.
    """
    as_js = _as_js_string(name)
    normalized = _UNSAFE.sub(_replace_code_units, as_js)
    if not hashed and normalized == as_js and 0 < len(normalized) <= SERVER_NAME_MAX_LENGTH:
        return normalized
    # The name's own code points: two names JavaScript would read alike still differ here.
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_HEX_DIGITS]
    return f"{normalized[:_SERVER_KEEP_LENGTH]}_{digest}"


def server_names_from_host(names: Iterable[str]) -> dict[str, str]:
    """Each of one configuration's host names as a valid server name (`server_name_from_host`), no two alike.

    A valid name is kept as it is unless it is the normalised form of another of `names`; then it
    is hashed too (and so on, should that clash again). Distinct names then give distinct server
    names, unless two SHA-256 digests agree in their first 12 hex digits.
    """
    unique = list(dict.fromkeys(names))
    hashed = {name for name in unique if server_name_from_host(name) != name}
    while True:
        made = {server_name_from_host(name, hashed=True) for name in hashed}
        clashing = {name for name in unique if name not in hashed and name in made}
        if not clashing:
            return {name: server_name_from_host(name, hashed=name in hashed) for name in unique}
        hashed |= clashing


def server_label(server_name: str, original_name: str | None) -> str:
    """How a message names a server: `'ctx7'`, or with the name its host's file gave it when `server_name`
    was made from that one (`'io_github_upstash_c_3f1e1de449a6' (named 'io.github.upstash/context7' in
    its file)`), so that the user recognises the server they wrote."""
    if original_name is None or original_name == server_name:
        return repr(server_name)
    return f"{server_name!r} (named {original_name!r} in its file)"
