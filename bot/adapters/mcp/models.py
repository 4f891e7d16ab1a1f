"""What the MCP tools answer: pydantic models, so each result carries `structuredContent` under
a published output schema, beside the readable text made from the same model."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from bot.agent.report.model import format_cost


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
