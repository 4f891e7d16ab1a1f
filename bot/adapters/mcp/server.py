"""The MCP server's tools and resource, built with the official SDK (`MCPServer`) over the bot's
one runs service. Each tool answers with readable text and `structuredContent` (its pydantic
model, whose schema the tool publishes); what the caller got wrong is a tool error of one
sentence; anything else is logged here, the adapter's edge, and said in one sentence too."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult

from bot.adapters.mcp.callers import Caller
from bot.adapters.mcp.listing import REPORT_URI, serve_listing
from bot.adapters.mcp.live import LiveRun
from bot.adapters.mcp.models import Answer, Hits, ReportText, RunList, RunState
from bot.adapters.mcp.results import FAILED_INSIDE, ended_result, tool_result
from bot.adapters.mcp.runs import McpRuns
from bot.adapters.mcp.tasks import TasksExtension
from bot.errors import BotError

log = logging.getLogger(__name__)
CallerOf = Callable[[Context], Caller]
T = TypeVar("T")
STATELESS_REVISION = "2026-07-28"
INSTRUCTIONS = (
    "research-bot researches a company (or public contracts) on the web and writes a cited, "
    "checked report. `research` waits for the report; `start_research` returns at once and "
    "`research_status` / `get_report` follow the run. Runs are kept in the team's history."
)


async def _guarded(work: Awaitable[T]) -> T:
    try:
        return await work
    except BotError as error:
        raise ToolError(str(error)) from None
    except Exception:
        log.exception("an MCP tool failed unexpectedly")
        raise ToolError(FAILED_INSIDE) from None


def _client_cancelled(ctx: Context) -> bool:
    """The client cancelled this request, rather than went away. Over JSON-RPC sessions (stdio,
    HTTP before the 2026-07-28 revision) it sends `notifications/cancelled`, which the SDK marks
    on the request's dispatch context (no public name) before it cancels the handler. Over HTTP
    from that revision on, closing the response stream is how a client cancels: no other sign."""
    outbound = getattr(ctx.request_context.session, "_request_outbound", None)
    event = getattr(outbound, "cancel_requested", None)
    if isinstance(event, anyio.Event) and event.is_set():
        return True
    return ctx.headers is not None and (ctx.protocol_version or "") >= STATELESS_REVISION


def build_server(service: McpRuns, caller_of: CallerOf, *, wait_s: float) -> MCPServer:
    @contextlib.asynccontextmanager
    async def taking_over(_: MCPServer) -> AsyncIterator[None]:
        # Entered once as the server starts, over stdio (its one connection) as over HTTP (the
        # session manager's start): MCP runs whose process died are finished from here.
        await service.take_over()
        yield

    server = MCPServer(
        "research-bot",
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        lifespan=taking_over,
        extensions=[TasksExtension(service, caller_of)],
    )
    _run_tools(server, service, caller_of, wait_s)
    _research_tool(server, service, caller_of, wait_s)
    _read_tools(server, service, caller_of, wait_s)
    serve_listing(server, service, caller_of)
    return server


def _run_tools(server: MCPServer, service: McpRuns, caller_of: CallerOf, wait_s: float) -> None:

    @server.tool()
    async def start_research(
        topic: str,
        ctx: Context,
        mode: str = "company",
        depth: str = "quick",
        language: str | None = None,
    ) -> Annotated[CallToolResult, RunState]:
        """Start researching a company (mode "company", the default) or public tenders and
        contracts matching free-text filters (mode "contracts"); depth "quick" (one researcher)
        or "deep" (a plan, researchers in parallel: slower). `language`: the report's (de,
        fr, ja …), by default the topic's. Returns at once with the run's id: follow it with
        research_status and read it with get_report."""
        state, _ = await _guarded(service.start(caller_of(ctx), topic, mode, depth, language))
        return tool_result(state, state.text())

    @server.tool()
    async def research_status(run_id: str, ctx: Context) -> Annotated[CallToolResult, RunState]:
        """A run's status: its current step, sources found and cost so far, place in the queue."""
        state = await _guarded(service.status(caller_of(ctx), run_id))
        return tool_result(state, state.text())

    @server.tool()
    async def summarize_now(run_id: str, ctx: Context) -> Annotated[CallToolResult, RunState]:
        """Stop researching and write the report now from what the run has found."""
        state = await _guarded(service.control(caller_of(ctx), run_id, "summarize"))
        return tool_result(state, f"Summarizing run {run_id} now.\n{state.text()}")

    @server.tool()
    async def cancel_research(run_id: str, ctx: Context) -> Annotated[CallToolResult, RunState]:
        """Cancel a run: it ends without a report."""
        state = await _guarded(service.control(caller_of(ctx), run_id, "cancel"))
        return tool_result(state, f"Cancelling run {run_id}.\n{state.text()}")


def _read_tools(server: MCPServer, service: McpRuns, caller_of: CallerOf, wait_s: float) -> None:
    @server.tool()
    async def get_report(
        run_id: str, ctx: Context, format: str = "md"
    ) -> Annotated[CallToolResult, ReportText]:
        """A run's report as text: Markdown ("md", the default) or a whole HTML page ("html")."""
        report = await _guarded(service.report(caller_of(ctx), run_id, format))
        return tool_result(report, report.content)

    @server.tool()
    async def list_runs(ctx: Context, limit: int = 20) -> Annotated[CallToolResult, RunList]:
        """The newest runs of your workspace (at most 100), newest first."""
        runs = await _guarded(service.list_runs(caller_of(ctx), limit))
        return tool_result(runs, runs.text())

    @server.tool()
    async def search_reports(
        query: str, ctx: Context, limit: int = 10
    ) -> Annotated[CallToolResult, Hits]:
        """Your workspace's stored reports and follow-up answers that have every word of
        `query`, best first, each with a snippet."""
        hits = await _guarded(service.search(caller_of(ctx), query, limit))
        return tool_result(hits, hits.text())

    @server.tool()
    async def ask_followup(
        run_id: str, question: str, ctx: Context
    ) -> Annotated[CallToolResult, Answer]:
        """Ask a question about a finished run's report; answered from its sources (researching
        further when they fall short), as a follow-up in its thread would be."""
        answer = await _guarded(service.ask(caller_of(ctx), run_id, question, wait_s))
        return tool_result(answer, answer.answer or answer.error or answer.status)

    @server.resource(REPORT_URI, mime_type="text/markdown")
    async def run_report(run_id: str, ctx: Context) -> str:
        """A stored run's report, in Markdown."""
        try:
            return (await service.report(caller_of(ctx), run_id, "md")).content
        except BotError as error:
            raise ResourceError(str(error)) from None


def _research_tool(server: MCPServer, service: McpRuns, caller_of: CallerOf, wait_s: float) -> None:
    @server.tool()
    async def research(
        topic: str,
        ctx: Context,
        mode: str = "company",
        depth: str = "quick",
        language: str | None = None,
    ) -> Annotated[CallToolResult, RunState]:
        """Research a company (or, with mode "contracts", public tenders) and wait for the
        report, with a progress notification at each step. Cancelling the call summarizes the
        run from what it found (get_report gives that report). A run still going after the
        server's wait answers with its id and status instead: follow it with research_status."""
        caller = caller_of(ctx)
        state, live = await _guarded(service.start(caller, topic, mode, depth, language))
        run_id = state.run_id

        async def progress(run: LiveRun) -> None:
            await ctx.report_progress(run.steps, None, run.step)

        try:
            await progress(live)
            ended = await service.wait(live, wait_s, progress)
        except asyncio.CancelledError:
            if _client_cancelled(ctx):
                with anyio.CancelScope(shield=True):
                    log.info("run %s: the MCP client cancelled; summarizing", run_id)
                    await service.control(caller, run_id, "summarize")
            raise
        record = ended if ended is not None else live.record
        assert record is not None  # `start` set it
        state = await _guarded(service.state(record))
        if ended is None:
            why = (
                "The server is stopping; the run is kept and finishes once it is back"
                if service.stopping
                else f"Still researching after {wait_s:g} s"
            )
            return tool_result(state, f"{state.text()}\n{why}: research_status follows it.")
        return await ended_result(service, caller, state)
