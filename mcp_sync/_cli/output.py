"""What the command line writes: tables and JSON on stdout, one-line messages and progress on stderr,
and the binary blocks of a tool result (images, audio, embedded resources) named, saved or in JSON.

Progress runs on the hub's callback thread while the caller's thread waits in `call_tool`; the hub runs
every progress callback before `call_tool` returns, so the two never write at once.
"""

from __future__ import annotations

import base64
import binascii
import json
import shutil
import sys
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TextIO

from .._os.console import holds_any_text, stream_supports_ansi
from .parser import EXIT_OK, EXIT_TOOL_ERROR, Failure

__all__ = [
    "BinaryBlock",
    "base64_text",
    "binary_blocks",
    "content_json",
    "left_out_note",
    "one_line",
    "print_json",
    "print_result",
    "print_table",
    "printable",
    "printable_lines",
    "progress_reporter",
    "report_failure",
    "save_blocks",
    "warn",
]

# A terminal redraws the bar at most this often: a server may send thousands of updates a second.
BAR_REDRAW_INTERVAL = 0.05
BAR_WIDTH = 30
ERASE_LINE = "\r\x1b[K"

# Extensions for the MIME types tools return most; others come from `mimetypes`, then ".bin".
_EXTENSIONS = MappingProxyType(
    {
        "image/png": ".png",
        "image/jpeg": ".jpg",
        "image/gif": ".gif",
        "image/webp": ".webp",
        "image/svg+xml": ".svg",
        "audio/wav": ".wav",
        "audio/x-wav": ".wav",
        "audio/mpeg": ".mp3",
        "audio/ogg": ".ogg",
        "audio/webm": ".webm",
        "application/pdf": ".pdf",
        "application/json": ".json",
        "text/plain": ".txt",
    }
)


def printable(text: str) -> str:
    """Text from a server, safe for a terminal: control characters (escape sequences) shown as \\xNN."""
    return "".join(f"\\x{ord(char):02x}" if unicodedata.category(char) == "Cc" else char for char in text)


def printable_lines(text: str) -> str:
    """`printable`, keeping line breaks (`\\n`, and `\\r\\n` as one) and tabs: a server's multi-line text (a
    result, a resource, a prompt's message) as lines, with every other control character (ESC, a lone CR,
    BEL, ...) shown as \\xNN."""
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join("\t".join(map(printable, line.split("\t"))) for line in lines)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    for row in (headers, *rows):
        line = "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
        print(line.rstrip())


def print_json(value: Any) -> None:
    """JSON on stdout, lossless: where stdout's encoding cannot hold every character (a Windows code
    page), what it lacks is written as `\\uXXXX` escapes, never replaced; so is a lone surrogate, which
    no encoding holds."""
    text = json.dumps(value, indent=2, ensure_ascii=not holds_any_text(sys.stdout), default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        text = json.dumps(value, indent=2, ensure_ascii=True, default=str)
    print(text)


def warn(message: str) -> None:
    print(f"mcp-sync: {message}", file=sys.stderr, flush=True)


# -- progress -----------------------------------------------------------------------------------------


class _ProgressLines:
    """One line per progress notification, for logs and pipes."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        line = f"mcp-sync: progress {_number(progress)}"
        if total:
            line += f"/{_number(total)} ({progress / total:.0%})"
        if message:
            line += f": {printable(message)}"
        print(line, file=self._stream, flush=True)

    def finish(self) -> None:
        """Nothing to clean up: the lines stay."""


class _ProgressBar:
    """A bar redrawn in place on a terminal, erased when the call ends so the result starts clean."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._drawn = False
        self._last_draw = 0.0

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        now = time.monotonic()
        complete = total is not None and progress >= total
        if self._drawn and not complete and now - self._last_draw < BAR_REDRAW_INTERVAL:
            return
        self._last_draw = now
        if total:
            filled = min(BAR_WIDTH, int(BAR_WIDTH * progress / total))
            line = f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {_number(progress)}/{_number(total)} "
            line += f"{min(progress / total, 1.0):.0%}"
        else:
            line = f"[working] {_number(progress)}"
        if message:
            line += f" {printable(message)}"
        columns = shutil.get_terminal_size().columns
        self._stream.write(ERASE_LINE + line[: max(columns - 1, 10)])
        self._stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self._drawn:
            self._stream.write(ERASE_LINE)
            self._stream.flush()
            self._drawn = False


def progress_reporter(quiet: bool) -> _ProgressLines | _ProgressBar | None:
    """How progress is shown on stderr: a bar on a terminal that shows ANSI, lines otherwise, nothing
    when `quiet` (under `--json` stdout carries the one result object and stderr stays empty)."""
    if quiet:
        return None
    stream = sys.stderr
    return _ProgressBar(stream) if stream_supports_ansi(stream) else _ProgressLines(stream)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# -- results --------------------------------------------------------------------------------------------


def print_result(result: Any, name: str, *, as_json: bool, save_images: str | None, **record: Any) -> int:
    """A tool's result (a `ToolResult`) as `call` prints it: its text on stdout and notes about its binary
    blocks on stderr, or one JSON object (`record`'s keys first); EXIT_TOOL_ERROR for an error result."""
    blocks = binary_blocks(result.content)
    saved = save_blocks(Path(save_images), name, blocks) if save_images else []
    if as_json:
        record.update(
            {
                "tool": name,
                "is_error": result.is_error,
                "text": result.text,
                "structured_content": result.structured_content,
                "content": content_json(result.content),
            }
        )
        if save_images:
            record["saved"] = [str(path) for path in saved]
        print_json(record)
    else:
        print(printable_lines(result.text))
        sys.stdout.flush()  # the result before the notes about it on stderr
        for block, path in zip(blocks, saved, strict=False):
            warn(f"saved {printable(block.mime_type)} ({len(block.data)} bytes) to {path}")
        if blocks and not save_images:
            warn(left_out_note(blocks))
    if result.is_error:
        warn(f"{name} returned an error result")
        return EXIT_TOOL_ERROR
    return EXIT_OK


# -- binary blocks --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BinaryBlock:
    """A content block the result's text leaves out: an image, an audio clip or a binary resource."""

    kind: str  # "image", "audio" or "embedded resource"
    mime_type: str
    data: bytes
    uri: str | None = None

    def describe(self) -> str:
        text = f"{printable(self.mime_type)} {len(self.data)} bytes"
        return f"{text}, {printable(self.uri)}" if self.uri else text


def binary_blocks(content: Sequence[Any]) -> list[BinaryBlock]:
    """The blocks of a tool result (the SDK's content types) that carry bytes, in order. A block whose
    base64 does not decode is kept with no bytes: it is still named, not silently dropped."""
    found: list[BinaryBlock] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind in ("image", "audio"):
            found.append(BinaryBlock(kind, block.mime_type or "", _decode(block.data)))
        elif kind == "resource" and getattr(block.resource, "blob", None) is not None:
            resource = block.resource
            data = _decode(resource.blob)
            found.append(BinaryBlock("embedded resource", resource.mime_type or "", data, resource.uri))
    return found


def _decode(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return b""


def left_out_note(blocks: Sequence[BinaryBlock]) -> str:
    """`left out 2 images (image/png 67 bytes, ...), 1 audio clip (...)`: what the text did not show."""
    groups: dict[str, list[BinaryBlock]] = {}
    for block in blocks:
        groups.setdefault(block.kind, []).append(block)
    nouns = {"image": ("image", "images"), "audio": ("audio clip", "audio clips")}
    parts = []
    for kind, members in groups.items():
        singular, plural = nouns.get(kind, (kind, kind + "s"))
        described = ", ".join(block.describe() for block in members)
        parts.append(f"{len(members)} {singular if len(members) == 1 else plural} ({described})")
    return f"left out {', '.join(parts)}; see them with --save-images DIR or --json"


def extension(mime_type: str) -> str:
    """The file extension for a MIME type (parameters ignored), ".bin" when none is known."""
    base = mime_type.split(";", 1)[0].strip().lower()
    if base in _EXTENSIONS:
        return _EXTENSIONS[base]
    import mimetypes

    return mimetypes.guess_extension(base) or ".bin"


def save_blocks(directory: Path, stem: str, blocks: Sequence[BinaryBlock]) -> list[Path]:
    """Write each block to its own file in `directory`, `<stem>-<n><ext>` with n counting up from 1 and
    skipping names that are taken: a file already there is never overwritten."""
    directory.mkdir(parents=True, exist_ok=True)
    saved: list[Path] = []
    number = 1
    for block in blocks:
        while True:
            path = directory / f"{stem}-{number}{extension(block.mime_type)}"
            number += 1
            try:
                with path.open("xb") as file:
                    file.write(block.data)
            except FileExistsError:
                continue
            saved.append(path)
            break
    return saved


def content_json(content: Sequence[Any]) -> list[dict[str, Any]]:
    """The result's content blocks in their MCP shape (camelCase keys, binary data as base64)."""
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in content]


def base64_text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# -- failures -------------------------------------------------------------------------------------------


def one_line(message: str) -> str:
    """A message that spans lines (a config error listing several problems) as one line."""
    out = ""
    for line in message.splitlines():
        item = line.strip().removeprefix("- ")
        if item:
            out = item if not out else f"{out} {item}" if out.endswith(":") else f"{out}; {item}"
    return out


def report_failure(failure: Failure, as_json: bool) -> None:
    """One line on stderr; under `--json`, `{"error": {"type", "message", "exit_code"}}` on stdout."""
    message = one_line(str(failure))
    if as_json:
        print_json({"error": {"type": failure.kind, "message": message, "exit_code": failure.code}})
        sys.stdout.flush()
    else:
        warn(message)
