"""Claim support: how far a report's cited sentences are backed by the sources they cite.

Shared by the checker that measures it, the report footer that states it, the store that keeps
it per run, and `research-bot eval` that prints it.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

DETERMINISTIC = "deterministic"
"""Settled without a model: by its numbers, or by a source passage that says the same thing."""
JUDGE = "judge"
"""Left to the fast model's judgement (unchecked while its verdict is `unknown`)."""


class Verdict(StrEnum):
    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"
    UNKNOWN = "unknown"
    """Neither check could tell (the judge was unsure, failed, or the source text is missing)."""


class Claim(BaseModel):
    """One cited sentence of a report and what its cited sources say about it."""

    sentence: str
    sources: list[int]
    """The citation numbers the sentence carries (in the final report's numbering)."""
    verdict: Verdict
    method: str
    """`deterministic` (numbers, amounts, dates, names found or missing) or `judge` (fast model)."""
    note: str = ""


class Support(BaseModel):
    """The figures a report footer and `eval` show."""

    claims: list[Claim] = Field(default_factory=list)
    unverified: int = 0
    """Statements that lost every citation (their sources were never retrieved): marked in the text."""

    def count(self, verdict: Verdict) -> int:
        return sum(claim.verdict is verdict for claim in self.claims)


def support_line(support: Support, words: str, uncited: str) -> str:
    """The footer line, e.g. "14 cited claims · 12 supported by their source · 1 not · 1
    unverified"; `words` and `uncited` are the report language's templates (bot/agent/language.py)."""
    line = words.format(
        claims=len(support.claims),
        supported=support.count(Verdict.SUPPORTED),
        unsupported=support.count(Verdict.UNSUPPORTED),
        unknown=support.count(Verdict.UNKNOWN),
    )
    return line + (uncited.format(unverified=support.unverified) if support.unverified else "")
