"""An MCP tool result as a source of the run: its text, structured content and embedded text
resources read, images and binary blobs noted, links kept (one of them the source's own), the
whole capped. Everything in it is the server's: untrusted, fenced by the caller like web text."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import mcp.types

from bot.agent.report.model import Source

MAX_BODY_CHARS = 100_000
"""Of one result, what the model (and the condenser) gets: a long result is condensed like a
long page; this keeps an oversized one from filling a turn."""
LINK_KEYS = ("url", "link", "href", "permalink", "web_url", "html_url")
"""Keys of a result's structured content that name the record's own page."""


def result_body(result: mcp.types.CallToolResult) -> str:
    """What the server answered, as text: each block in order, then its structured content
    unless a text block already says it."""
    parts = [_block(block) for block in result.content]
    if result.structured_content is not None:
        structured = json.dumps(result.structured_content, ensure_ascii=False, default=str)
        if not any(_same_json(part, result.structured_content) for part in parts):
            parts.append(structured)
    body = "\n\n".join(part for part in parts if part)
    if len(body) > MAX_BODY_CHARS:
        cut = len(body) - MAX_BODY_CHARS
        body = f"{body[:MAX_BODY_CHARS]}\n… ({cut:,} more characters not shown)"
    return body


def result_source(
    server: str, tool: str, arguments: dict[str, Any], result: mcp.types.CallToolResult, body: str
) -> Source:
    """The result as a numbered source: titled `<server> · <tool>`, at the link the server gave,
    else at an address of its own that names the call (the same call, the same source)."""
    link = result_link(result)
    if link is None:
        called = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
        digest = hashlib.sha256(called.encode()).hexdigest()[:12]
        link = f"mcp://{server}/{tool}/{digest}"
    snippet = " ".join(body.split())[:300]
    return Source(url=link, title=f"{server} · {tool}", snippet=snippet, read=True)


def result_link(result: mcp.types.CallToolResult) -> str | None:
    """The first http(s) link the server gave: a resource link's, an embedded resource's, or one
    its structured content names."""
    for block in result.content:
        uri = None
        if isinstance(block, mcp.types.ResourceLink):
            uri = str(block.uri)
        elif isinstance(block, mcp.types.EmbeddedResource):
            uri = str(block.resource.uri)
        if uri and _web(uri):
            return uri
    structured = result.structured_content or {}
    for key in LINK_KEYS:
        value = structured.get(key)
        if isinstance(value, str) and _web(value):
            return value
    return None


def _block(block: mcp.types.ContentBlock) -> str:
    if isinstance(block, mcp.types.TextContent):
        return block.text
    if isinstance(block, mcp.types.ResourceLink):
        return f"Link: {block.name} {block.uri}"
    if isinstance(block, mcp.types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp.types.TextResourceContents):
            return f"{resource.uri}\n{resource.text}"
        return f"(a binary resource, {resource.mime_type or 'of unknown type'}, not shown: {resource.uri})"
    if isinstance(block, mcp.types.ImageContent | mcp.types.AudioContent):
        return f"(an {block.type}, {block.mime_type}, not shown)"
    return f"(a {getattr(block, 'type', 'block')} block, not shown)"


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


def _web(uri: str) -> bool:
    return uri.startswith(("https://", "http://"))
