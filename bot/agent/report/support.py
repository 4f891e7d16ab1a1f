"""Claim support: how far a report's cited sentences are backed by the sources they cite.

Shared by the checker that measures it, the report footer that states it (`footer`), the store
that keeps it per run, and `research-bot eval` that prints it.
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
    """`deterministic` (its numbers, or a source passage saying the same) or `judge` (the fast
    model); a verdict `unknown` means it was left unchecked."""
    note: str = ""


class Support(BaseModel):
    """The figures a report footer and `eval` show."""

    claims: list[Claim] = Field(default_factory=list)
    unverified: int = 0
    """Statements that lost every citation (their sources were never retrieved): marked
    `[unverified]` (in the report's language) in the text. Not claims: they cite nothing."""

    def count(self, verdict: Verdict) -> int:
        return sum(claim.verdict is verdict for claim in self.claims)

    @property
    def unchecked(self) -> int:
        """Claims nothing could check (no source text; the judge failed, timed out, was
        skipped or over budget): never counted as supported."""
        return self.count(Verdict.UNKNOWN)

    def checked_by(self, method: str) -> int:
        """Claims `method` gave a verdict: `judge` (the model) or `deterministic`."""
        return sum(c.method == method and c.verdict is not Verdict.UNKNOWN for c in self.claims)
