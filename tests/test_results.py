"""Tool results: text joined from text blocks, images decoded beside it, every block kept."""

from __future__ import annotations

import base64
import logging

import mcp_types as types
import pydantic
import pytest
from mcp_types import methods

from mcp_sync._values.results import ToolImage, complete_result_of, content_left_out, from_call_tool_result

PNG = b"\x89PNG\r\n\x1a\n-not-a-real-png"


def image_block(data: bytes = PNG, mime_type: str = "image/png") -> types.ImageContent:
    return types.ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime_type)


def text_block(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def test_an_image_only_result_has_empty_text_and_its_image() -> None:
    result = from_call_tool_result(types.CallToolResult(content=[image_block()]), "mcp__x__shot")

    assert result.text == ""
    assert result.images == (ToolImage("image/png", PNG),)


def test_left_out_note_names_the_images_and_their_types() -> None:
    result = from_call_tool_result(
        types.CallToolResult(content=[image_block(), image_block(mime_type="image/jpeg")]), "t"
    )

    assert content_left_out(result) == (
        "[the tool also returned 2 images (image/jpeg, image/png), not included in this text]"
    )


def test_left_out_note_counts_audio_as_another_non_text_block() -> None:
    audio = types.AudioContent(type="audio", data=base64.b64encode(b"RIFF").decode(), mime_type="audio/wav")

    result = from_call_tool_result(types.CallToolResult(content=[text_block("a"), audio]), "t")

    assert (
        content_left_out(result)
        == "[the tool also returned 1 other non-text block, not included in this text]"
    )


def test_text_only_result_needs_no_note() -> None:
    assert (
        content_left_out(from_call_tool_result(types.CallToolResult(content=[text_block("a")]), "t")) is None
    )


def test_image_that_is_not_base64_is_left_out_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    block = types.ImageContent(type="image", data="not base64!", mime_type="image/png")

    with caplog.at_level(logging.WARNING, logger="mcp_sync"):
        result = from_call_tool_result(types.CallToolResult(content=[block]), "mcp__x__shot")

    assert result.images == ()
    assert result.content == (block,)
    assert "not valid base64" in caplog.text


def test_image_repr_shows_the_size_not_the_bytes() -> None:
    assert repr(ToolImage("image/png", PNG)) == f"ToolImage(mime_type='image/png', {len(PNG)} bytes)"


def _rejected(raw: dict[str, object]) -> pydantic.ValidationError:
    """The error the SDK raises for this tools/call result on a 2026-07-28 session."""
    with pytest.raises(pydantic.ValidationError) as caught:
        methods.validate_server_result("tools/call", "2026-07-28", raw)
    return caught.value


def test_a_result_missing_only_its_result_type_is_read_as_complete() -> None:
    result = complete_result_of(_rejected({"content": [{"type": "text", "text": "ok"}], "isError": True}))

    assert result is not None
    assert (result.result_type, result.content, result.is_error) == ("complete", [text_block("ok")], True)


@pytest.mark.parametrize(
    "raw",
    [
        {"content": [{"type": "text"}]},  # a block without its text, besides the missing tag
        {"content": "not a list"},
        {"content": [], "isError": "perhaps"},
    ],
)
def test_a_result_with_any_other_fault_stays_invalid(raw: dict[str, object]) -> None:
    assert complete_result_of(_rejected(raw)) is None
