"""The operator's MCP tools as tools of a run: `mcp__<server>__<tool>` (the naming Claude Code
uses), with the server's own description and input schema, offered only to runs of the
workspaces the server allows, and only while it is connected.

What the model sends is checked for size only: the server validates its own arguments and says
what is wrong, which the model reads as any tool error."""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp.types
from pydantic import BaseModel, ConfigDict, model_validator

from bot.agent.mcp.config import ServerConfig
from bot.agent.mcp.names import tool_name
from bot.agent.mcp.results import result_body, result_source
from bot.agent.mcp.servers import McpServers
from bot.agent.web.registry import Tool, ToolContext, ToolOutput
from bot.errors import ToolError

log = logging.getLogger(__name__)
MAX_DESCRIPTION_CHARS = 2_000
MAX_SCHEMA_CHARS = 16_000
"""A schema longer than this (as JSON) costs every turn more than the tool is likely worth."""
MAX_ARGUMENT_CHARS = 32_000
_TOP_LEVEL_REFUSED = ("anyOf", "oneOf", "allOf", "not", "enum", "if")
"""Combinators the providers refuse at the top of a tool's input schema."""


class McpArguments(BaseModel):
    """Whatever object the model sends, up to a size: the server checks the rest."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError("the arguments must be an object")
        size = len(json.dumps(value, ensure_ascii=False, default=str))
        if size > MAX_ARGUMENT_CHARS:
            raise ValueError(f"the arguments are {size:,} characters, over {MAX_ARGUMENT_CHARS:,}")
        return value


class McpTools:
    """`ScopedTools` for the toolbox: called at each run's start with its workspace."""

    def __init__(self, servers: McpServers) -> None:
        self._servers = servers
        self._refused: set[tuple[str, str]] = set()
        """Tools already logged as left out: each is said once per process, not once per run."""
        self._built: dict[str, tuple[list[mcp.types.Tool], list[Tool[Any] | None]]] = {}
        """By server: its listing and what was built of it (asked at every call, built once per
        listing; the listing held keeps its tools' ids unique)."""

    def __call__(self, scope: str) -> list[Tool[Any]]:
        tools: dict[str, Tool[Any]] = {}
        for config in self._servers.configs:
            if not config.allows_workspace(scope):
                continue
            for listed, tool in zip(*self._listing(config), strict=True):
                if tool is None:
                    continue
                if tool.name in tools:
                    self._leave_out(config.name, listed.name, f"its name is taken by {tool.name}")
                    continue
                tools[tool.name] = tool
        return list(tools.values())

    def _listing(
        self, config: ServerConfig
    ) -> tuple[list[mcp.types.Tool], list[Tool[Any] | None]]:
        listing = self._servers.tools(config.name)
        kept = self._built.get(config.name)
        if kept is None or [id(t) for t in kept[0]] != [id(t) for t in listing]:
            kept = self._built[config.name] = (listing, [self._tool(config, t) for t in listing])
        return kept

    def _tool(self, config: ServerConfig, listed: mcp.types.Tool) -> Tool[Any] | None:
        schema = usable_schema(listed.input_schema)
        if isinstance(schema, str):
            self._leave_out(config.name, listed.name, schema)
            return None
        servers, server, original = self._servers, config.name, listed.name

        async def call(ctx: ToolContext, args: McpArguments) -> ToolOutput:
            arguments = args.model_dump()
            result = await servers.call(server, original, arguments)
            body = result_body(result)
            if result.is_error:
                raise ToolError(body or "the server said the call failed, without a reason")
            source = result_source(server, original, arguments, result, body)
            number = ctx.registry.add(source)
            return ToolOutput(
                heading=f"[{number}] {source.title} answered (a private source of this team):",
                body=body,
                sources=[source],
            )

        description = (listed.description or listed.title or listed.name).strip()
        return Tool(
            tool_name(server, original),
            McpArguments,
            call,
            config.timeout_s + 2,  # past the server's own bound, which says more
            described=f"({server}) {description}"[:MAX_DESCRIPTION_CHARS],
            input_schema=schema,
        )

    def _leave_out(self, server: str, tool: str, why: str) -> None:
        if (server, tool) not in self._refused:
            self._refused.add((server, tool))
            log.warning("MCP: %s · %s is not offered to runs: %s", server, tool, why)


def usable_schema(schema: Any) -> dict[str, Any] | str:
    """The schema as the providers take it (an object at the top), or why it cannot be."""
    if not isinstance(schema, dict):
        return "its input schema is not an object"
    if len(json.dumps(schema, default=str)) > MAX_SCHEMA_CHARS:
        return f"its input schema is over {MAX_SCHEMA_CHARS:,} characters"
    refused = [key for key in _TOP_LEVEL_REFUSED if key in schema]
    if refused:
        return f"its input schema has {', '.join(refused)} at the top, which providers refuse"
    kind = schema.get("type", "object")
    if kind != "object":
        return f"its input takes {kind!r}, not an object"
    simplified = {key: value for key, value in schema.items() if key != "$schema"}
    simplified["type"] = "object"
    simplified.setdefault("properties", {})
    return simplified
