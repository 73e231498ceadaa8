"""Resources as the host sees them: listed resources and templates, and what a read returned.

Plain frozen data, each entry naming the server it came from; the conversions from the
SDK's models live here too. No knowledge of hubs, loops or threads.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

__all__ = [
    "Resource",
    "ResourceContent",
    "ResourceResult",
    "ResourceTemplate",
    "resource_from",
    "resource_result_from",
    "template_from",
]

logger = logging.getLogger("mcp_sync")


@dataclass(frozen=True, slots=True)
class Resource:
    """One concrete resource a server lists (`resources/list`)."""

    uri: str
    name: str
    server_name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


@dataclass(frozen=True, slots=True)
class ResourceTemplate:
    """A family of resources a server can read, named by an RFC 6570 URI template."""

    uri_template: str
    name: str
    server_name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class ResourceContent:
    """One part of a read: text, or binary data (`blob`, already decoded from base64)."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: bytes | None = field(default=None, repr=False)

    @property
    def is_text(self) -> bool:
        """Whether this part is text (`text`), not bytes (`blob`)."""
        return self.text is not None


@dataclass(frozen=True, slots=True)
class ResourceResult:
    """What `read_resource` returned: every part, text or binary, with its MIME type."""

    uri: str
    server_name: str
    contents: tuple[ResourceContent, ...]
    raw: types.ReadResourceResult | None = field(default=None, repr=False, compare=False, hash=False)
    """The server's result as received."""

    @property
    def text(self) -> str:
        """The text parts joined with "\\n"; binary parts are left out (see `contents`)."""
        return "\n".join(part.text for part in self.contents if part.text is not None)

    @property
    def blobs(self) -> list[ResourceContent]:
        """The binary parts of the resource, in order."""
        return [part for part in self.contents if part.blob is not None]

    def as_chat_messages(self, role: str = "user") -> list[dict[str, Any]]:
        """The contents as OpenAI-style chat messages: one per text part, and a note per binary part
        (chat APIs take images as URLs or data URIs, which a host builds from `blobs` if it wants)."""
        messages: list[dict[str, Any]] = []
        for part in self.contents:
            if part.text is not None:
                body = part.text
            else:
                size = len(part.blob or b"")
                body = f"[binary resource {part.uri}: {part.mime_type or 'unknown type'}, {size} bytes]"
            messages.append({"role": role, "content": f"Resource {part.uri}:\n{body}"})
        return messages


def resource_from(server_name: str, resource: types.Resource) -> Resource:
    return Resource(
        uri=str(resource.uri),
        name=resource.name,
        server_name=server_name,
        title=resource.title,
        description=resource.description,
        mime_type=resource.mime_type,
        size=resource.size,
    )


def template_from(server_name: str, template: types.ResourceTemplate) -> ResourceTemplate:
    return ResourceTemplate(
        uri_template=template.uri_template,
        name=template.name,
        server_name=server_name,
        title=template.title,
        description=template.description,
        mime_type=template.mime_type,
    )


def content_from(part: types.TextResourceContents | types.BlobResourceContents) -> ResourceContent:
    """One part of a read (or of an embedded resource), its blob decoded."""
    if isinstance(part, types.TextResourceContents):
        return ResourceContent(uri=str(part.uri), mime_type=part.mime_type, text=part.text)
    try:
        data = base64.b64decode(part.blob, validate=False)
    except (binascii.Error, ValueError):
        logger.warning("resource %s sent a blob that is not valid base64; kept as its raw text", part.uri)
        data = part.blob.encode()
    return ResourceContent(uri=str(part.uri), mime_type=part.mime_type, blob=data)


def resource_result_from(server_name: str, uri: str, result: types.ReadResourceResult) -> ResourceResult:
    return ResourceResult(uri=uri, server_name=server_name, contents=_contents(result.contents), raw=result)


def _contents(
    parts: Iterable[types.TextResourceContents | types.BlobResourceContents],
) -> tuple[ResourceContent, ...]:
    return tuple(content_from(part) for part in parts)
