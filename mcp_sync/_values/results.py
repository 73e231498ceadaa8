"""Tool results as a model sees them: one text, an error flag, structured content, and the images.

Text blocks are joined with "\\n" (never "": block boundaries matter to the
model). Text resources keep their text, and resource links become a line naming
the link. Images are not text: they are decoded into `ToolResult.images` for a
model that can see them, and every block the server sent stays in
`ToolResult.content`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import pydantic

from .secrets import scrub

__all__ = [
    "ToolImage",
    "ToolResult",
    "complete_result_of",
    "content_left_out",
    "error_result",
    "from_call_tool_result",
    "from_native_value",
]

logger = logging.getLogger("mcp_sync")


@dataclass(frozen=True, slots=True)
class ToolImage:
    """One image a tool returned: its MIME type and its bytes (decoded from the protocol's base64)."""

    mime_type: str
    data: bytes = field(repr=False)

    @property
    def base64(self) -> str:
        """The bytes as base64 text, as most model APIs take images."""
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        """A `data:` URL (`data:image/png;base64,...`), the form OpenAI-style `image_url` parts take."""
        return f"data:{self.mime_type};base64,{self.base64}"

    def __repr__(self) -> str:
        return f"ToolImage(mime_type={self.mime_type!r}, {len(self.data)} bytes)"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call. `is_error` results are answers for the model, not exceptions."""

    text: str
    is_error: bool = False
    structured_content: dict[str, Any] | None = field(default=None, hash=False)
    raw: types.CallToolResult | None = field(default=None, repr=False, compare=False, hash=False)
    """The server's result as received, for hosts that want more than text."""
    images: tuple[ToolImage, ...] = ()
    """The images the tool returned, in order; `text` leaves them out."""
    content: tuple[types.ContentBlock, ...] = field(default=(), repr=False, compare=False, hash=False)
    """Every content block the server sent, in order (the SDK's types): text, images, audio, resources."""

    def __repr__(self) -> str:
        # The text is the server's and stays as sent; what a log line or a traceback shows of it does not
        # repeat a secret the server echoed back.
        return scrub(
            f"ToolResult(text={self.text!r}, is_error={self.is_error!r}, "
            f"structured_content={self.structured_content!r}, images={self.images!r})"
        )


def _decode_image(block: types.ImageContent, tool_name: str) -> ToolImage | None:
    try:
        return ToolImage(mime_type=block.mime_type, data=base64.b64decode(block.data, validate=True))
    except (binascii.Error, ValueError):
        logger.warning("an image in the result of %s is not valid base64; it is left out", tool_name)
        return None


def from_call_tool_result(result: types.CallToolResult, tool_name: str) -> ToolResult:
    parts: list[str] = []
    images: list[ToolImage] = []
    other: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource) and isinstance(
            block.resource, types.TextResourceContents
        ):
            parts.append(block.resource.text)
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link: {block.name} {block.uri}]")
        elif isinstance(block, types.ImageContent):
            image = _decode_image(block, tool_name)
            if image is not None:
                images.append(image)
        else:
            other.append(block.type)
    if other:
        logger.debug(
            "the result of %s has %d block(s) that are neither text nor image (%s): see ToolResult.content",
            tool_name,
            len(other),
            ", ".join(sorted(set(other))),
        )
    return ToolResult(
        text="\n".join(parts),
        is_error=bool(result.is_error),
        structured_content=result.structured_content,
        raw=result,
        images=tuple(images),
        content=tuple(result.content),
    )


def from_native_value(value: Any) -> ToolResult:
    """Map what a host function returned: a ToolResult as is, a str as text, anything else as JSON."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(text=value)
    if value is None:
        return ToolResult(text="")
    text = json.dumps(value, ensure_ascii=False, default=str)
    structured = value if isinstance(value, dict) else {"result": value}
    return ToolResult(text=text, structured_content=structured)


def error_result(message: str) -> ToolResult:
    return ToolResult(text=message, is_error=True)


def content_left_out(result: ToolResult) -> str | None:
    """A note for a text-only model on what `result.text` leaves out (images, audio, ...), or None."""
    left_out: list[str] = []
    if result.images:
        kinds = ", ".join(sorted({image.mime_type for image in result.images}))
        left_out.append(f"{len(result.images)} image{'s' if len(result.images) > 1 else ''} ({kinds})")
    others = [
        block
        for block in result.content
        if not isinstance(block, types.TextContent | types.ImageContent | types.ResourceLink)
        and not (
            isinstance(block, types.EmbeddedResource)
            and isinstance(block.resource, types.TextResourceContents)
        )
    ]
    if others:
        left_out.append(f"{len(others)} other non-text block{'s' if len(others) > 1 else ''}")
    if not left_out:
        return None
    return f"[the tool also returned {' and '.join(left_out)}, not included in this text]"


def complete_result_of(invalid: pydantic.ValidationError) -> types.CallToolResult | None:
    """The `tools/call` result that failed validation only for leaving out `resultType`, read as a
    complete result (SEP-2322: no `resultType` means "complete"); None when anything else is wrong.

    The SDK checks a 2026-07-28 result against a schema that requires the tag; every other field
    already passed that check when the tag is the only error in every branch of the result union."""
    problems = invalid.errors(include_url=False)
    raw = problems[0].get("input") if problems else None
    if not isinstance(raw, dict) or "resultType" in raw:
        return None
    for problem in problems:
        loc = problem["loc"]
        top_level_tag = loc[-1:] == ("resultType",) and len(loc) <= 2  # (branch of the union, field)
        if problem["type"] != "missing" or not top_level_tag or problem["input"] != raw:
            return None
    return types.CallToolResult.model_validate({**raw, "resultType": "complete"}, by_name=False)
