"""Claims that no longer hold: a watched run checks its watch's last report again, against what
this run found, with the machinery that checks a report (the deterministic step, then the judge).

Which claims: the last report's cited sentences that state a number, amount or date (those a
later page can contradict), not the ones its own check found unsupported, at most `MAX_CLAIMS`
in the report's order. Against what: for each claim, (a) its own cited page, when this run read
that URL afresh (a page given again from the workspace's memory is the old text, so it does not
count), and (b) the one other source this run has text for whose passages share most with the
claim (a word besides the topic's, beside a figure). The judge sees them in one batched call.

What it says, per claim: still holds when any of them supports it (this is also where the
deterministic step settles most claims, without the judge); no longer holds when the judge finds
a source of this run says otherwise (contradicted), or when its own page, read again, no longer
states it (its figure is gone from the page, or the judge finds it not stated there). A claim
none of this run's sources speak to, or that the check could not settle, is not listed: absence
from new pages is not news.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.agent.control import Control
from bot.agent.events import Event, ToolFinished
from bot.agent.evidence import SourceTexts
from bot.agent.report import facts, wording
from bot.agent.report.claims import check, cited_sentences
from bot.agent.report.judge import ClaimChecker, contradicted
from bot.agent.report.model import Report, Source
from bot.agent.report.support import JUDGE, Claim, Verdict
from bot.agent.state import RunState

MAX_CLAIMS = 12
"""Of the last report's claims with figures, how many are checked again (the judge's cost)."""
QUOTE_CHARS = 200
CHANGES_HEADING = "What changed since"
"""Sections of a report that say what changed are not claims to check again."""


class ReadTexts(SourceTexts):
    """`SourceTexts` that also knows which sources this run read afresh (not from memory)."""

    def __init__(self) -> None:
        super().__init__()
        self.fresh: set[int] = set()

    def add(self, event: ToolFinished) -> None:
        super().add(event)
        if not event.is_error and not event.reused:
            pairs = zip(event.numbers, event.sources, strict=False)
            self.fresh.update(n for n, source in pairs if n and source.read)

    @classmethod
    def of(cls, history: list[Event]) -> ReadTexts:
        """Rebuilt from a run's stored events (restart recovery)."""
        texts = cls()
        for event in history:
            if isinstance(event, ToolFinished):
                texts.add(event)
        return texts


@dataclass
class Change:
    """A claim of the last report that no longer holds."""

    old: str
    """Its sentence, citations and Markdown taken off."""
    old_sources: list[Source]
    source: Source
    """The source of this run that says otherwise, or its own page that no longer states it."""
    new: str
    """What this run's source says instead ("" when the page no longer states it)."""


@dataclass
class _Item:
    claim: int
    number: int
    """The run's citation number of the source it is checked against."""
    same: bool
    """That source is the claim's own page, read again."""
    found: Claim | None = None
    """What the deterministic step settled (None: it could not)."""
    judged: Claim | None = None


async def no_longer_holds(
    run: RunState, last: Report, checker: ClaimChecker, control: Control
) -> list[Change]:
    """The last report's claims this run's sources contradict or its own pages no longer state."""
    claims = _candidates(last)
    items = [
        item for i, (s, numbers) in enumerate(claims) for item in _items(run, last, i, s, numbers)
    ]
    numbers = list(dict.fromkeys(item.number for item in items))
    shown = Report(
        title=last.title,
        tldr="",
        sources=[run.registry.sources[n - 1] for n in numbers],
        language=last.language,
    )
    for item in items:
        k = numbers.index(item.number) + 1
        sentence = facts.clean(claims[item.claim][0])
        item.found = check(sentence, [k], [run.texts.text(item.number)], last.language)
        if item.found is None or item.found.verdict is Verdict.UNSUPPORTED:
            # A figure missing from a page is not yet a contradiction: the judge tells which.
            item.judged = Claim(
                sentence=sentence, sources=[k], verdict=Verdict.UNKNOWN, method=JUDGE
            )
    if judged := [item.judged for item in items if item.judged is not None]:
        await checker.judge(run, shown, judged, control)
    changes = []
    for i, (sentence, cited) in enumerate(claims):
        change = _change(run, last, sentence, cited, [t for t in items if t.claim == i])
        if change is not None:
            changes.append(change)
    return changes


def _candidates(last: Report) -> list[tuple[str, list[int]]]:
    refuted = {
        c.sentence for c in (last.support.claims if last.support else [])
        if c.verdict is Verdict.UNSUPPORTED
    }  # fmt: skip
    sections = [s for s in last.sections if not s.heading.startswith(CHANGES_HEADING)]
    kept = last.model_copy(update={"sections": sections})
    return [
        (sentence, numbers)
        for sentence, numbers in cited_sentences(kept)
        if sentence not in refuted and facts.claim(sentence, last.language).quantities
    ][:MAX_CLAIMS]


def _items(run: RunState, last: Report, i: int, sentence: str, numbers: list[int]) -> list[_Item]:
    fresh = run.texts.fresh if isinstance(run.texts, ReadTexts) else set()
    own = [run.registry.number(last.sources[n - 1].url) for n in numbers]
    same = [n for n in dict.fromkeys(own) if n is not None and n in fresh]
    items = [_Item(claim=i, number=n, same=True) for n in same]
    other = _closest(run, last, sentence, exclude={n for n in own if n is not None})
    if other is not None:
        items.append(_Item(claim=i, number=other, same=False))
    return items


def _closest(run: RunState, last: Report, sentence: str, exclude: set[int]) -> int | None:
    """This run's source whose passages share most words with the claim (beside a figure)."""
    best, score = None, 0
    for n in range(1, len(run.registry.sources) + 1):
        text = run.texts.text(n)
        if n in exclude or not text.strip():
            continue
        shared, _ = _best_passage(text, sentence, last)
        if shared > score:
            best, score = n, shared
    return best


def _best_passage(text: str, sentence: str, last: Report) -> tuple[int, str]:
    """The sentence of `text` with a figure that shares most words with the claim (besides the
    topic's), and how many it shares (0, "" when none does)."""
    said = facts.claim(sentence, last.language)
    topic = {t.word for t in wording.tokens(last.title, [])}
    wanted = {t.word for t in wording.content(said.words)} - topic
    source = facts.source(text, last.language)
    best, score = "", 0
    for passage in source.passages[: source.sentences]:
        shared = len(wanted & {t.word for t in wording.content(passage.words)})
        if passage.quantities and shared > score:
            best, score = passage.text, shared
    return score, best


def _closest_passage(text: str, sentence: str, last: Report) -> str:
    """What the source says instead: its closest sentence, quoted short and without markup."""
    new = facts.clean(_best_passage(text, sentence, last)[1])
    return new if len(new) <= QUOTE_CHARS else new[:QUOTE_CHARS] + "…"


def _change(
    run: RunState, last: Report, sentence: str, numbers: list[int], items: list[_Item]
) -> Change | None:
    verdicts = [v for item in items for v in (item.found, item.judged) if v is not None]
    if any(v.verdict is Verdict.SUPPORTED for v in verdicts):
        return None
    old = facts.clean(sentence)
    old_sources = [last.sources[n - 1] for n in numbers]
    for item in items:
        if item.judged is not None and contradicted(item.judged):
            new = _closest_passage(run.texts.text(item.number), sentence, last)
            return Change(old, old_sources, run.registry.sources[item.number - 1], new)
    for item in items:
        settled = [v for v in (item.found, item.judged) if v is not None]
        if item.same and any(v.verdict is Verdict.UNSUPPORTED for v in settled):
            return Change(old, old_sources, run.registry.sources[item.number - 1], "")
    return None
