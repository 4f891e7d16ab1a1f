"""The checkable facts of a sentence and of a cited source, and what the one says of the other.

A sentence's facts are its quantities (numbers, amounts, dates, read as people write them: see
`quantities`) and its words (see `wording`). A source is read once into passages (sentences and
pairs of them), each with its quantities and words, plus every quantity it states in any of the
languages spelled numbers are read in, and the differences, ratios and changes a passage's own
numbers imply (`from 7.5% to 5.5%` says `2 percentage points`; `1939 … 1945` says `six years`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import combinations, pairwise

from bot.agent.report import quantities, wording
from bot.agent.report.readings import PERCENT, PLAIN, Quantity, Reading, could_be, implies, point
from bot.agent.report.spelled import SPELLED_LANGUAGES, prepare

_URL = re.compile(r"https?://\S+|<[^>\s]+>|\]\([^)]*\)")
_CITATIONS = re.compile(r"\[\d+(?:\s*[-–,]\s*\d+)*\]")
_MARKUP = re.compile(r"[*_`|#>]+")
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:!?])(?=\s|$)")
_SENTENCE_END = re.compile(
    r"(?<![A-Z])(?<!\b(?:Mr|Dr|St|Jr|vs|No|Co))(?<!\b(?:Mrs|Inc|Ltd|Fig))(?<!\bapprox)(?<!\be\.g)(?<!\bi\.e)"
    r"[.!?](?=\s+[\"“‘(\[]?[A-Z0-9])|\n+"
)
_NOT_DIGIT = re.compile(r"\D")
_DERIVED_AT_MOST = 12
"""A passage with more numbers than this derives nothing (pairs would match anything)."""


@dataclass
class Passage:
    text: str
    quantities: list[Quantity]
    words: list[wording.Token]
    first_end: int | None = None
    """Where its first sentence ends, when it is a pair of them."""

    def sentence_around(self, span: tuple[int, int]) -> tuple[int, int]:
        """The stretch of its sentences that `span` lies in: one of the pair, or both."""
        if self.first_end is None:
            return 0, len(self.text)
        if span[1] <= self.first_end:
            return 0, self.first_end
        if span[0] > self.first_end:
            return self.first_end, len(self.text)
        return 0, len(self.text)


@dataclass
class Claim:
    text: str
    quantities: list[Quantity]
    words: list[wording.Token]


@dataclass
class Source:
    passages: list[Passage]
    """Its sentences, then each pair of neighbouring sentences."""
    stated: list[Quantity] = field(default_factory=list)
    """Every quantity the text states or its passages imply, read in the claim's language."""
    sentences: int = 0
    text: str = ""
    language: str = "en"

    @cached_property
    def spelled_otherwise(self) -> list[Quantity]:
        """The numbers its words make in the other languages read (`zwei Millionen` in a page
        cited by an English report), or beside a capitalised word (`Two American soldiers`);
        read only when a claim's number is not found otherwise."""
        primary = prepare(self.text, self.language, every=True)
        variants = [prepare(self.text, self.language, every=True, names=False)]
        variants += [
            prepare(self.text, o, every=True) for o in SPELLED_LANGUAGES if o != self.language
        ]
        found: list[Quantity] = []
        for variant in variants:
            if variant != primary:
                # Only the numbers the variant's words made: another language's reading of
                # English words (`miles` is Spanish for thousands) must not change the digits.
                found += [q for q in quantities.read(variant, source=True) if q.text not in primary]
        return found

    def names(self, name: str) -> bool:
        """Whether it has the name a claim's number is part of (`Boeing` of `Boeing 737`)."""
        return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", self.text) is not None

    def has_unread_digits(self, written: str) -> bool:
        """Every group of digits of `written` is in the text where no quantity was read (`21` in
        `FGF21`, a number in mangled text): read there another way, so maybe stated."""
        groups = re.findall(r"\d+(?:[.,'\u00a0\u202f]\d+)*", written)
        return bool(groups) and all(
            any(
                _unread(p, form)
                for p in self.passages[: self.sentences]
                for form in (g, _NOT_DIGIT.sub("", g))
            )
            for g in groups
        )


def _unread(passage: Passage, digits: str) -> bool:
    for match in re.finditer(rf"(?<!\d){re.escape(digits)}(?!\d)", passage.text):
        if not any(q.start <= match.start() < q.end for q in passage.quantities):
            return True
    return False


def clean(sentence: str) -> str:
    """The words of a sentence: citations, link targets, URLs and Markdown marks removed."""
    text = _URL.sub(" ", _CITATIONS.sub(" ", sentence))
    words = " ".join(_MARKUP.sub(" ", text).replace("[", " ").replace("]", " ").split())
    return _SPACE_BEFORE_STOP.sub(r"\1", words)


def claim(sentence: str, language: str = "en") -> Claim:
    text = prepare(clean(sentence), language, every=True, claim=True)
    found = quantities.read(text, source=False, english=language == "en")
    return Claim(text, found, wording.tokens(text, [(q.start, q.end) for q in found]))


@lru_cache(maxsize=256)
def source(text: str, language: str = "en") -> Source:
    """A cited source's passages and what it states (cached: a page is cited many times)."""
    primary = prepare(text, language, every=True)
    sentences = [_passage(s) for s in _sentences(primary)]
    windows = sentences + [_joined(a, b) for a, b in pairwise(sentences)]
    stated = [q for p in sentences for q in p.quantities]
    for window in windows:
        stated += _derived([q for q in window.quantities if not q.rank])
    stated += [
        _share(q)
        for q in stated
        if not q.rank and any(r.unit in (PLAIN, PERCENT) for r in q.readings)
    ]
    unique = {(q.readings, q.hedged): q for q in stated}
    return Source(windows, list(unique.values()), len(sentences), text, language)


def missing(sentence: Claim, sources: list[Source]) -> list[Quantity]:
    """The sentence's quantities that no cited source states or implies, read correctly: not
    those of a denial, nor a number whose digits a source has where it read nothing (`Top-10`
    for `the top 10`: read otherwise there, so maybe stated), nor a name's number (`Boeing
    737`) where no source has the name."""
    if wording.denies(sentence.words):
        return []
    return [
        q
        for q in sentence.quantities
        if (not q.name or any(src.names(q.name) for src in sources))
        and not any(could_be(q, s) for src in sources for s in src.stated)
        and not any(src.has_unread_digits(q.text) for src in sources)
        and not any(could_be(q, s) for src in sources for s in src.spelled_otherwise)
    ]


def supporting(sentence: Claim, sources: list[Source]) -> Passage | None:
    """A cited passage that says what the sentence says, word for word in all that matters:
    its content words in order with none between and the same role words among them (see
    `wording`), the same negations, quantifiers, hedges, contrast and falsity words, every
    quantity of the sentence stated as a measure of its kind in the sentence of those words,
    and no other quantity among them."""
    if not wording.says_enough(sentence.words):
        return None
    wanted, roles = wording.markers(sentence.words), wording.roles(sentence.words)
    for src in sources:
        for passage in src.passages:
            span = wording.matched_span(sentence.words, passage.words)
            if span is None or wording.markers(passage.words) != wanted:
                continue
            if wording.roles(passage.words, span) != roles:
                continue
            # Its quantities are stated in the sentence of its words, not anywhere in the pair.
            start, end = passage.sentence_around(span)
            stated = [p for p in passage.quantities if start <= p.start < end]
            if not all(any(implies(p, q) for p in stated) for q in sentence.quantities):
                continue
            inside = [p for p in passage.quantities if span[0] <= p.start < span[1] and not p.rank]
            if all(any(could_be(q, p) for q in sentence.quantities) for p in inside):
                return passage
    return None


def _sentences(text: str) -> list[str]:
    out, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        out.append(text[start : match.end()].strip())
        start = match.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def _passage(text: str) -> Passage:
    found = quantities.read(text, source=True)
    # A name's number (`number 7`, `World War II`) stays a word, as a claim reads it.
    words = wording.tokens(text, [(q.start, q.end) for q in found if not q.rank])
    return Passage(text, found, words)


def _joined(a: Passage, b: Passage) -> Passage:
    shift = len(a.text) + 1
    moved = [Quantity(q.text, q.readings, q.start + shift, q.end + shift) for q in b.quantities]
    words = [
        wording.Token(t.word, t.start + shift, t.end + shift, t.kind, t.capital) for t in b.words
    ]
    return Passage(f"{a.text} {b.text}", a.quantities + moved, a.words + words, len(a.text))


def _share(q: Quantity) -> Quantity:
    """A share written the other way: `0.5` as `50%`, `50%` as `0.5`."""
    readings = [
        Reading(r.low * 100, r.high * 100, PERCENT)
        if r.unit is PLAIN
        else Reading(r.low / 100, r.high / 100)
        for r in q.readings
        if (r.unit is PLAIN and 0 < r.low <= r.high <= 1)
        or (r.unit is PERCENT and 0 < r.low <= r.high <= 100)
    ]
    return Quantity(q.text, tuple(readings), q.start, q.end, q.hedged)


def _derived(found: list[Quantity]) -> list[Quantity]:
    """What a passage's numbers imply between two of the same kind: their difference (`from
    7.5% to 5.5%`: 2 points; 1939 and 1945: six years, or five or seven, since an age or a span
    counted from years is off by one either way), and for amounts that are not years their
    ratio and percent change, written without its sign (`from 40,000 to 50,000`: 25%). Two
    readings of one number (`1,500` as 1500 or 1.5) imply nothing."""
    values = [
        (i, (r.low + r.high) / 2, r.unit)
        for i, q in enumerate(found)
        for r in q.readings
        if _figure(r) and r.unit.dimension not in ("date", "monthday", "month")
    ]
    if len(values) > _DERIVED_AT_MOST or len(values) < 2:
        return []
    out: list[Quantity] = []
    for (i, a, unit_a), (j, b, unit_b) in combinations(values, 2):
        if unit_a != unit_b or i == j:
            continue
        if _year(a) and _year(b):
            span = abs(a - b)
            out.append(Quantity("derived", (Reading(span - 1, span + 1),)))
            continue
        derived = [abs(a - b)]
        if a and b and not (_year(a) or _year(b)):
            derived += [b / a, a / b, abs(b - a) / a * 100, abs(a - b) / b * 100]
        out.append(Quantity("derived", tuple(point(v) for v in derived)))
    return out


def _figure(r: Reading) -> bool:
    """One figure, as written or rounded (`1.2 million`), not a range or a bound."""
    finite = math.isfinite(r.low) and math.isfinite(r.high)
    return finite and r.high - r.low <= 0.1 * abs(r.low + r.high) / 2 and not r.slack


def _year(value: float) -> bool:
    return value == int(value) and 1000 <= value <= 2100
