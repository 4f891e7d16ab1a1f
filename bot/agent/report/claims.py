"""Claim support, the deterministic step: each cited sentence of a final report, and what its
cited sources' own text settles about it (see `facts`). What it cannot settle goes to the judge
(`bot.agent.report.judge`), which measures the rest."""

from __future__ import annotations

import re

from bot.agent.report import facts
from bot.agent.report.model import Report
from bot.agent.report.support import DETERMINISTIC, JUDGE, Claim, Verdict
from bot.agent.state import RunState

QUOTE_CHARS = 200
"""Of the passage that supports a sentence, what its note quotes."""
NO_TEXT = "no stored text for the cited sources"
_CITED = re.compile(r"\[(\d+(?:\s*[-–,]\s*\d+)*)\]")
_BOUNDARY = re.compile(r"(?<=[.!?])((?:\s*\[[\d\s,–-]+\])*)\s+(?=[\"'(\[]?[^\W_a-z])")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_ABBREVIATION = re.compile(
    r"(?:\b\w|\b(?:Inc|Ltd|Corp|Co|Mr|Mrs|Ms|Dr|St|Jr|vs|approx|e\.g|i\.e))\.$"
)


def cited_sentences(report: Report) -> list[tuple[str, list[int]]]:
    """Each sentence (or bullet, or table row) that cites a source of `report`, with its
    citation numbers in the report's numbering; repeats (TL;DR restating a section) once."""
    out: dict[str, list[int]] = {}
    for block in [report.tldr, *(s.body for s in report.sections)]:
        for line in block.splitlines():
            for sentence in _split(_BULLET.sub("", line).strip()):
                numbers = [n for n in _numbers(sentence) if 1 <= n <= len(report.sources)]
                if numbers and sentence not in out:
                    out[sentence] = numbers
    return list(out.items())


def _split(line: str) -> list[str]:
    parts, start = [], 0
    for match in _BOUNDARY.finditer(line):
        if _ABBREVIATION.search(line[start : match.start()]):
            continue
        parts.append(line[start : match.end(1)].strip())
        start = match.end()
    parts.append(line[start:].strip())
    return [p for p in parts if p]


def _numbers(sentence: str) -> list[int]:
    out: list[int] = []
    for group in _CITED.findall(sentence):
        for part in group.split(","):
            low, _, high = re.sub(r"\s", "", part).replace("–", "-").partition("-")
            last = int(high) if high else int(low)
            if last - int(low) < 50:
                out.extend(range(int(low), last + 1))
    return list(dict.fromkeys(out))


def check(
    sentence: str, sources: list[int], texts: list[str], language: str = "en"
) -> Claim | None:
    """The verdict the sentence's own facts settle, or None when only the judge can tell.

    Unsupported: a quantity (number, amount, date) the sentence states that no cited source
    states or implies, read the way people write them. Supported: one cited passage says the
    same thing near word for word, its negations, quantifiers and quantities included (see
    `facts.supporting`). Names alone settle nothing."""
    if not any(text.strip() for text in texts):
        return Claim(
            sentence=sentence,
            sources=sources,
            verdict=Verdict.UNKNOWN,
            method=DETERMINISTIC,
            note=NO_TEXT,
        )
    claim = facts.claim(sentence, language)
    cited = [facts.source(text, language) for text in texts if text.strip()]
    if missing := facts.missing(claim, cited):
        note = "not in the cited sources: " + ", ".join(dict.fromkeys(q.text for q in missing))
        return Claim(
            sentence=sentence,
            sources=sources,
            verdict=Verdict.UNSUPPORTED,
            method=DETERMINISTIC,
            note=note,
        )
    passage = facts.supporting(claim, cited)
    if passage is None:
        return None
    quoted = passage.text if len(passage.text) <= QUOTE_CHARS else passage.text[:QUOTE_CHARS] + "…"
    return Claim(
        sentence=sentence,
        sources=sources,
        verdict=Verdict.SUPPORTED,
        method=DETERMINISTIC,
        note=f"the source says: {quoted}",
    )


def measure_deterministic(run: RunState, report: Report) -> tuple[list[Claim], list[Claim]]:
    """(settled claims, claims left for the judge with verdict `unknown`)."""
    settled: list[Claim] = []
    open_: list[Claim] = []
    for sentence, numbers in cited_sentences(report):
        texts = [source_text(run, report, n) for n in numbers]
        claim = check(sentence, numbers, texts, report.language)
        if claim is None:
            open_.append(
                Claim(sentence=sentence, sources=numbers, verdict=Verdict.UNKNOWN, method=JUDGE)
            )
        else:
            settled.append(claim)
    return settled, open_


def in_report_order(report: Report, claims: list[Claim]) -> list[Claim]:
    order = {sentence: i for i, (sentence, _) in enumerate(cited_sentences(report))}
    return sorted(claims, key=lambda c: order.get(c.sentence, len(order)))


def source_text(run: RunState, report: Report, n: int) -> str:
    """The text the model saw of the report's source `n` (reports renumber the run's sources)."""
    number = run.registry.number(report.sources[n - 1].url)
    return run.texts.text(number) if number else ""
