"""Numbers written in words, turned into digits before anything reads them: `three hundred and
twelve`, `zwei Millionen`, `dos millones y medio`, `a quarter of`, footnote marks and digits
glued to words taken apart. text2num (MIT, offline, Rust) does the languages it knows (English,
German, French, Spanish, Italian, Portuguese); Russian and Japanese numbers are read as digits.
"""

from __future__ import annotations

import re

from text_to_num import alpha2digit

from bot.agent.report.units import FRACTIONS, SCALES

SPELLED_LANGUAGES = ("en", "de", "fr", "es", "it", "pt")
_FOOTNOTE = re.compile(r"(?<=[^\s\d])\[\d{1,3}\]")
_GLUED_BEFORE = re.compile(r"\b([A-Z]?[a-z]{2,})(\d{4}|\d{1,3}(?:,\d{3})+)\b")
_GLUED_AFTER = re.compile(r"\b(\d{4})([A-Z][a-z]{2,})\b")
_SCALE_AFTER_DIGITS = re.compile(
    r"(?<=\d)(\s+)(" + "|".join(sorted(map(re.escape, SCALES), key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_FRACTION = re.compile(
    r"(?<!first )(?<!second )(?<!latter )(?<!the )(?<!1st )(?<!2nd )\b("
    + "|".join(sorted(map(re.escape, FRACTIONS), key=len, reverse=True))
    + r")\s+(?=of\s+(?!an?\b)|the\b|(?:had|have|has|were|was|are|is|by)\b)",
    re.IGNORECASE,
)
_VAGUE = re.compile(r"(?<!\d)(?<!\d\s)\b(tens|dozens|hundreds|thousands|millions|billions)\b", re.I)
_NAMED = re.compile(
    r"(?<=[A-Z][a-z]\s)(?:One|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Twelve|Hundred|Thousand)\b"
    r"|\b(?:One|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Twelve|Hundred|Thousand)(?=\s[A-Z][a-z])"
)
_HALVES = re.compile(r"(\d)\s*(?:-\s*)?(1/2|½|1/4|¼|3/4|¾)(?!\d)")
_HALF_VALUES = {"1/2": ".5", "½": ".5", "1/4": ".25", "¼": ".25", "3/4": ".75", "¾": ".75"}
_HIDDEN = re.compile(r"qqkept([a-j]+)qq")
_HALF = re.compile(r"\b(\d+)\s+(?:y|e|et|und)\s+(?:medio|media|mezzo|mezza|meio|meia|demi|demie)\b")


def prepare(text: str, language: str, *, every: bool = False) -> str:
    """`text` with its spelled numbers (in `language`) as digits, fractions as percentages,
    footnote marks removed and digits glued to words taken apart (`Spain1986`). `every`: also
    a lone small number or ordinal (`second`, `one`), which text2num leaves as words."""
    text = _FOOTNOTE.sub(" ", text)
    text = _GLUED_BEFORE.sub(r"\1 \2", text)
    text = _GLUED_AFTER.sub(r"\1 \2", text)
    text = _FRACTION.sub(lambda m: f"{FRACTIONS[m.group(1).lower()]:.4g}% ", text)
    text = _HALVES.sub(lambda m: m.group(1) + _HALF_VALUES[m.group(2)], text)
    if language in SPELLED_LANGUAGES:
        # text2num would turn `1.5 million` into `1.5 1000000`: a scale after digits is ours.
        # `millions of hashtags` is no number, nor the `Hundred` of the Hundred Years' War.
        kept = _Kept()
        hidden = _SCALE_AFTER_DIGITS.sub(lambda m: m.group(1) + kept.hide(m.group(2)), text)
        hidden = _VAGUE.sub(lambda m: kept.hide(m.group(1)), hidden)
        if language == "en":
            hidden = _NAMED.sub(lambda m: kept.hide(m.group(0)), hidden)
        threshold = {"threshold": 0} if every else {}
        text = _HALF.sub(_plus_half, kept.restore(alpha2digit(hidden, language, **threshold)))
    return text


class _Kept:
    """Words kept from text2num behind placeholders it does not know, put back after."""

    def __init__(self) -> None:
        self.words: list[str] = []

    def hide(self, word: str) -> str:
        self.words.append(word)
        return f"qqkept{_letters(len(self.words) - 1)}qq"

    def restore(self, text: str) -> str:
        return _HIDDEN.sub(lambda m: self.words[_index(m.group(1))], text)


def _letters(n: int) -> str:
    return "".join(chr(ord("a") + int(d)) for d in str(n))


def _index(letters: str) -> int:
    return int("".join(str(ord(ch) - ord("a")) for ch in letters))


def _plus_half(match: re.Match[str]) -> str:
    """`2000000 y medio` (from `dos millones y medio`) is 2,500,000."""
    whole = match.group(1)
    zeros = len(whole) - len(whole.rstrip("0"))
    unit = 10 ** (zeros - zeros % 3) if zeros >= 3 else 1
    return f"{int(whole) + unit / 2:g}" if unit == 1 else str(int(whole) + unit // 2)
