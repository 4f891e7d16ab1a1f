"""`resources/list`: a page of report resources (`research-bot://runs/{run_id}/report`) for the
caller's newest runs, newest first, the cursor saying how many were given already."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ListResourcesResult, PaginatedRequestParams, Resource

from bot.adapters.mcp.callers import Caller
from bot.adapters.mcp.runs import McpRuns
from bot.domain import RunRecord

REPORT_URI = "research-bot://runs/{run_id}/report"
PAGE = 50
DEEPEST = 1_000
"""Runs further back than this are not listed (they stay readable by their id)."""


def _resource(run: RunRecord) -> Resource:
    return Resource(
        uri=REPORT_URI.format(run_id=run.run_id),
        name=f"report-{run.run_id}",
        title=f"{run.topic} ({run.created_at:%Y-%m-%d})"[:200],
        description=f"The report of run {run.run_id}: {run.status.value}.",
        mime_type="text/markdown",
    )


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit() or int(cursor) > DEEPEST:
        raise MCPError(code=INVALID_PARAMS, message="That cursor is not one this server gave.")
    return int(cursor)


def serve_listing(
    server: MCPServer, service: McpRuns, caller_of: Callable[[Context], Caller]
) -> None:
    """Answer `resources/list` with the caller's runs. The SDK's own handler lists only fixed
    resources; the low-level server is where a method's handler is replaced."""

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> ListResourcesResult:
        skip = _offset(params.cursor)
        caller = caller_of(Context(request_context=ctx, mcp_server=server))
        runs = await service.newest(caller, min(skip + PAGE, DEEPEST) + 1)
        page = runs[skip : skip + PAGE]
        further = len(runs) > skip + PAGE and skip + PAGE < DEEPEST
        return ListResourcesResult(
            resources=[_resource(run) for run in page],
            next_cursor=str(skip + PAGE) if further else None,
        )

    server._lowlevel_server.add_request_handler(
        "resources/list", PaginatedRequestParams, list_resources
    )
