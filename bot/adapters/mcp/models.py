"""What the MCP tools answer: pydantic models, so each result carries `structuredContent` under
a published output schema, beside the readable text made from the same model; and how the
ones a run's record gives are made from it."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from bot.agent.report.model import Report, format_cost
from bot.agent.report.support import Verdict
from bot.domain import RunRecord


class RunState(BaseModel):
    """A run as a caller follows it."""

    run_id: str
    topic: str
    status: str
    """queued | running | done | failed | cancelled | interrupted"""
    step: str = ""
    """What it is doing now (`Searched: acme`, `Writing the report`), or how it ended."""
    sources: int = 0
    """Sources found so far (of a finished run: those its report numbers)."""
    cost_usd: float | None = 0.0
    """Spent so far; None when a model without a known price took part."""
    queue_position: int | None = None
    """1 = next to start; None when it is not waiting."""
    ending: str | None = None
    """Why it stopped (`completed`, `forced_synthesized` …), once it has."""
    claims_supported: int | None = None
    """Of its report's checked claims, how many their sources back (None: not measured)."""
    claims_checked: int | None = None
    error: str | None = None

    def text(self) -> str:
        line = f"Run {self.run_id} ({self.topic}): {self.status}"
        if self.queue_position is not None:
            line += f", #{self.queue_position} in the queue"
        if self.step:
            line += f"; {self.step}"
        line += f"; {self.sources} sources; {format_cost(self.cost_usd)}"
        if self.error:
            line += f"\n{self.error}"
        return line


class ReportText(BaseModel):
    """A run's report as text."""

    run_id: str
    format: str
    """md | html"""
    title: str
    content: str
    sources: int
    ending: str | None = None
    claims_supported: int | None = None
    claims_checked: int | None = None


class RunSummary(BaseModel):
    run_id: str
    topic: str
    mode: str
    depth: str
    status: str
    ending: str | None = None
    platform: str
    created_at: datetime
    cost_usd: float | None = None
    parent_run_id: str | None = None


class RunList(BaseModel):
    runs: list[RunSummary] = Field(default_factory=list)

    def text(self) -> str:
        if not self.runs:
            return "No runs yet."
        return "\n".join(
            f"{r.run_id}  {r.created_at:%Y-%m-%d %H:%M}  {r.status:<11} {r.topic}"
            for r in self.runs
        )


class Hit(BaseModel):
    run_id: str
    parent_run_id: str | None = None
    topic: str
    created_at: datetime
    version: int
    snippet: str


class Hits(BaseModel):
    hits: list[Hit] = Field(default_factory=list)

    def text(self) -> str:
        if not self.hits:
            return "No stored report has those words."
        return "\n\n".join(f"{h.run_id}  {h.topic}\n{h.snippet}" for h in self.hits)


class Answer(BaseModel):
    """A follow-up question's answer, as the thread's follow-up gives it."""

    run_id: str
    """The follow-up's own run."""
    asked_about: str
    status: str
    answer: str | None = None
    version: int | None = None
    """The report version the answer made (2, 3 …), if it made one."""
    error: str | None = None


def stored_state(record: RunRecord, report: Report | None) -> RunState:
    """An ended run's state, from its record and its report (if it made one)."""
    supported, checked = claim_support(report) if report is not None else (None, None)
    return RunState(
        run_id=record.run_id,
        topic=record.topic,
        status=record.status.value,
        step=record.termination_reason or record.status.value,
        sources=len(report.sources) if report is not None else 0,
        cost_usd=record.cost_usd,
        ending=record.termination_reason,
        claims_supported=supported,
        claims_checked=checked,
        error=record.error,
    )


def claim_support(report: Report) -> tuple[int | None, int | None]:
    if report.support is None:
        return None, None
    claims = report.support.claims
    checked = sum(claim.verdict is not Verdict.UNKNOWN for claim in claims)
    return report.support.count(Verdict.SUPPORTED), checked


def run_summary(run: RunRecord) -> RunSummary:
    return RunSummary(
        run_id=run.run_id,
        topic=run.topic,
        mode=run.mode.value,
        depth=run.depth.value,
        status=run.status.value,
        ending=run.termination_reason,
        platform=run.origin.platform,
        created_at=run.created_at,
        cost_usd=run.cost_usd,
        parent_run_id=run.parent_run_id,
    )
