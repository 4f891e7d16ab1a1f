"""What a deep run's model calls return (seed 004): each is the input schema of a forced tool
call, validated with pydantic. These are also stored in the run's events."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Confidence = Literal["high", "medium", "low"]


class SubQuestion(BaseModel):
    question: str = Field(min_length=3, max_length=400)
    """One part of the request, answerable on its own."""
    priority: int = Field(default=2, ge=1, le=3)
    """1: the core of the request; 3: useful if time allows."""


class Plan(BaseModel):
    """Split the research request into 3 to 6 sub-questions, each for one researcher."""

    questions: list[SubQuestion] = Field(min_length=3, max_length=6)


class FindingDraft(BaseModel):
    """What one researcher found on its sub-question. Cite sources by their [n] numbers."""

    summary: str = Field(min_length=1, max_length=6000)
    """Only what the sources say, with [n] citations."""
    key_findings: list[str] = Field(default_factory=list, max_length=15)
    confidence: Confidence = "medium"
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


class Gap(BaseModel):
    question: str = Field(min_length=3, max_length=400)


class Draft(BaseModel):
    """The supervisor's draft report from all findings, in Markdown, with [n] citations."""

    draft: str = Field(min_length=1)
    gaps: list[Gap] = Field(default_factory=list, max_length=3)
    """Questions still open that another short round of research could answer (may be empty)."""


class FinalSection(BaseModel):
    heading: str = Field(min_length=1, max_length=200)
    body: str = Field(min_length=1)
    """Markdown with [n] citations."""


class FinalReport(BaseModel):
    """The final report, written in the asker's language, every claim cited with [n]."""

    title: str = Field(min_length=1, max_length=300)
    executive_summary: str = Field(min_length=1)
    sections: list[FinalSection] = Field(min_length=1, max_length=12)
    """The last section is the conclusion."""
    confidence: Confidence = "medium"
