"""What a deep run's model calls return (seed 004): each is the input schema of a forced tool
call, validated with pydantic. These are also stored in the run's events.

The docstring under each field is its `description` in the JSON schema the model is sent
(`use_attribute_docstrings`): it is part of the prompt."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Confidence = Literal["high", "medium", "low"]
Status = Literal["covered", "thin", "missing"]


class ToolInput(BaseModel):
    """A model's answer through a tool: its field docstrings are the schema's descriptions."""

    model_config = ConfigDict(use_attribute_docstrings=True)


class SubQuestion(ToolInput):
    question: str = Field(min_length=3, max_length=400)
    """One part of the request, answerable on its own."""
    priority: int = Field(default=2, ge=1, le=3)
    """1: the core of the request; 3: useful if time allows."""


class Plan(ToolInput):
    """The research plan: as many sub-questions as the company is worth, one researcher each."""

    questions: list[SubQuestion] = Field(min_length=1, max_length=8)
    """The sub-questions: fewer for a small or obscure company (one can cover several parts)."""
    turns: int | None = Field(default=None, ge=1, le=50)
    """Turns of tool calls each researcher may take: fewer where little is published."""


class FindingDraft(ToolInput):
    """What one researcher found on its sub-question. Cite sources by their [n] numbers."""

    summary: str = Field(min_length=1, max_length=6000)
    """Only what the sources say, with [n] citations and the date of each figure."""
    key_findings: list[str] = Field(default_factory=list, max_length=15)
    """The main facts, one short line each, with [n]."""
    confidence: Confidence = "medium"
    """How well the sources you read support the summary."""
    notes: list[str] = Field(default_factory=list, max_length=10)
    """Gaps, contradictions, what could not be confirmed."""


class Finding(FindingDraft):
    """A researcher's finding as kept: the model's part plus what the run knows for itself."""

    topic: str
    """The sub-question."""
    read: list[int] = Field(default_factory=list)
    """Citation numbers of the pages this researcher read."""
    seen: list[int] = Field(default_factory=list)
    """Citation numbers it only saw as search results."""


class Gap(ToolInput):
    question: str = Field(min_length=3, max_length=400)
    """A question one researcher could answer in a short round."""


class SectionCoverage(ToolInput):
    section: str = Field(min_length=1, max_length=200)
    """The required section, named as given."""
    status: Status
    """covered: a reputable page read supports it; thin: only search snippets, one weak or
    old source; missing: nothing found for it."""
    note: str = Field(default="", max_length=300)
    """What is thin or missing, in a few words; empty when covered."""


class Coverage(ToolInput):
    """The supervisor's check of the findings against the report's required sections."""

    sections: list[SectionCoverage] = Field(default_factory=list, max_length=12)
    """One entry per required section, in the order given."""
    conflicts: list[str] = Field(default_factory=list, max_length=5)
    """Where findings disagree: both claims, each with its [n] and date."""
    other_entity: list[int] = Field(default_factory=list, max_length=10)
    """Researchers (by number) whose finding is about another company or person than the one
    researched, such as a namesake: their findings are left out of the report."""
    gaps: list[Gap] = Field(default_factory=list, max_length=3)
    """Questions still open that another short round of research could answer (may be empty)."""

    def tally(self) -> str:
        """`5 of 8 sections covered, 2 thin, 1 missing`: our words and counts, for people."""
        if not self.sections:
            return "no sections named"
        count = {s: sum(c.status == s for c in self.sections) for s in ("thin", "missing")}
        covered = len(self.sections) - sum(count.values())
        rest = "".join(f", {n} {status}" for status, n in count.items() if n)
        return f"{covered} of {len(self.sections)} sections covered{rest}"


class FinalSection(ToolInput):
    heading: str = Field(min_length=1, max_length=200)
    """The section's heading, in the report's language."""
    body: str = Field(min_length=1)
    """Markdown with [n] citations."""


class FinalReport(ToolInput):
    """The report, written in the asker's language, every claim cited with [n]."""

    title: str = Field(min_length=1, max_length=300)
    """The report's title."""
    executive_summary: str = Field(min_length=1)
    """The TL;DR: 3-5 short Markdown bullet points, with [n]."""
    sections: list[FinalSection] = Field(min_length=1, max_length=12)
    """The required sections, in the order given."""
