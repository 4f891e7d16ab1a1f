"""`past_reports`: the team's earlier reports as a source of a run. It searches the run's own
workspace only (a terminal run: the terminal's), and a private conversation's reports only from
that conversation (the store's rule); each hit is a numbered source whose text is the stored
report, at an address that opens it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel, Field

from bot.agent.report.model import Report, Source
from bot.agent.web.listing import entry
from bot.agent.web.registry import Tool, ToolContext, ToolOutput

MAX_TEXT_CHARS = 12_000
"""Of each earlier report, what the model gets (condensed beyond that like a long page)."""


class Hit(Protocol):
    """What the tool reads of a search hit (the store's `ReportHit`)."""

    @property
    def run_id(self) -> str: ...
    @property
    def parent_run_id(self) -> str | None: ...
    @property
    def topic(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def snippet(self) -> str: ...


class ReportSearch(Protocol):
    """What the tool needs of the store."""

    async def search_reports(
        self,
        words: str,
        *,
        platform: str,
        workspace: str,
        viewer_channel: str | None,
        limit: int = 10,
    ) -> Sequence[Hit]: ...

    async def report(self, run_id: str) -> tuple[Report, str] | None: ...


class PastReportsArgs(BaseModel):
    query: str = Field(
        min_length=2,
        max_length=400,
        description="Words the earlier report would contain: the company's name, a product, a "
        "person. Every word must appear.",
    )
    max_results: int = Field(default=3, ge=1, le=5)


def report_address(run_id: str) -> str:
    """Where a stored report opens: `research-bot show ID` and the MCP resource name it."""
    return f"research-bot://runs/{run_id}/report"


def past_reports_tool(store: ReportSearch, *, timeout_s: float) -> Tool[PastReportsArgs]:
    async def past_reports(ctx: ToolContext, args: PastReportsArgs) -> ToolOutput:
        """Search this team's earlier research-bot reports (and answers to follow-up
        questions). Use it first for a company the team may have researched before; they are
        earlier findings to check and build on, not proof: cite the pages they cite when you
        can. Cite a report itself with the number in its heading."""
        origin = ctx.origin
        hits = await store.search_reports(
            args.query,
            platform=origin.platform,
            workspace=origin.workspace,
            viewer_channel=None if origin.platform == "terminal" else origin.channel,
            limit=args.max_results + 1,  # the run itself, when a follow-up asks
        )
        hits = [hit for hit in hits if ctx.run_id not in (hit.run_id, hit.parent_run_id)]
        hits = hits[: args.max_results]
        if not hits:
            return ToolOutput(
                heading=f"No earlier report of this team has the words {args.query!r}. Try "
                "fewer words or the company's short name, or research it on the web."
            )
        sources, parts = [], []
        for hit in hits:
            stored = await store.report(hit.run_id)
            text = stored[1] if stored is not None else hit.snippet
            day = hit.created_at.date().isoformat()
            source = Source(
                url=report_address(hit.run_id),
                title=f"Earlier report: {hit.topic} ({day})",
                snippet=hit.snippet,
                read=True,
                published=day,
            )
            number = ctx.registry.add(source)
            sources.append(source)
            parts.append(entry(number, source.title, source.url, text[:MAX_TEXT_CHARS]))
        return ToolOutput(
            heading=f"Earlier reports of this team for {args.query!r}, each a source to cite "
            "by its number:",
            body="\n\n".join(parts),
            sources=sources,
        )

    return Tool("past_reports", PastReportsArgs, past_reports, timeout_s)
