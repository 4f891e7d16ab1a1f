"""How an MCP tool is named to the model, `mcp__<server>__<tool>` (the naming Claude Code uses),
and read back: light, for the front ends that describe a call."""

from __future__ import annotations

import re

PREFIX = "mcp__"
MAX_NAME = 64
"""The longest tool name both model providers take."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """`mcp__crm__lookup_company`: characters the providers refuse become `_`."""
    return f"{PREFIX}{server}__{_UNSAFE.sub('_', tool)}"[:MAX_NAME]


def split_name(name: str) -> tuple[str, str] | None:
    """(server, tool) of an MCP tool's name; None for a built-in tool."""
    if not name.startswith(PREFIX):
        return None
    server, _, tool = name.removeprefix(PREFIX).partition("__")
    return (server, tool) if server and tool else None
