"""The checkable facts of a sentence (numbers, amounts, dates, names) and whether a text states them.

A deterministic first pass before any model is asked: `1,200` and `1200`, `$5M` and `5 million`
are the same number; a rounded figure matches the precise one it rounds; a name matches as a
whole word in any case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SCALES = {
    "k": 1e3,
    "thousand": 1e3,
    "m": 1e6,
    "mn": 1e6,
    "million": 1e6,
    "millions": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "billion": 1e9,
    "billions": 1e9,
    "t": 1e12,
    "tn": 1e12,
    "trillion": 1e12,
}
_NUMBER = re.compile(
    r"(?<![\w.,])(\d(?:[\d,.'\u00a0\u202f]*\d)?)"
    r"(?:\s?(" + "|".join(sorted(_SCALES, key=len, reverse=True)) + r")\b|(?!\w))",
    re.IGNORECASE,
)
_GROUPED = re.compile(r"\d{1,3}(?:[,.]\d{3})+")
_WORD = re.compile(r"[^\W\d_][\w'’&-]*")
_URL = re.compile(r"https?://\S+|<[^>\s]+>|\]\([^)]*\)")
_CITATIONS = re.compile(r"\[\d+(?:\s*[-–,]\s*\d+)*\]")
_MARKUP = re.compile(r"[*_`|#>]+")


@dataclass(frozen=True)
class Number:
    text: str
    readings: tuple[tuple[float, int], ...]
    """Every reading of the digits as (value, decimals): `1,200` is 1200 or (in German) 1.2."""
    scale: float
    """`M`, `million`: 1e6; 1 when none was recognised (`5 Mio.` is read as 5)."""
    scaled: bool


def clean(sentence: str) -> str:
    """The words of a sentence: citations, link targets, URLs and Markdown marks removed."""
    text = _URL.sub(" ", _CITATIONS.sub(" ", sentence))
    return " ".join(_MARKUP.sub(" ", text).replace("[", " ").replace("]", " ").split())


def numbers(text: str) -> list[Number]:
    found = []
    for match in _NUMBER.finditer(text):
        digits, word = match.group(1), match.group(2)
        readings = _readings(digits)
        if readings:
            scale = _SCALES[word.lower()] if word else 1.0
            found.append(Number(match.group(0).strip(), readings, scale, word is not None))
    return found


def _readings(digits: str) -> tuple[tuple[float, int], ...]:
    plain = digits.replace("\u00a0", ",").replace("\u202f", ",").replace("'", ",")
    out: list[tuple[float, int]] = []
    if _GROUPED.fullmatch(plain):
        out.append((float(re.sub(r"\D", "", plain)), 0))
    for point, other in ((".", ","), (",", ".")):
        whole, _, fraction = plain.rpartition(point) if point in plain else (plain, "", "")
        if (
            point in whole
            or other in fraction
            or (other in whole and not _GROUPED.fullmatch(whole))
        ):
            continue
        whole = whole.replace(other, "")
        if whole.isdigit() and (fraction.isdigit() or not fraction):
            out.append((float(f"{whole}.{fraction or 0}"), len(fraction)))
    return tuple(dict.fromkeys(out))


def number_found(number: Number, stated: list[Number]) -> bool:
    """A number of a sentence is among the numbers of a text, as written or rounded from it."""
    return any(_same(number, other) for other in stated)


def _same(mine: Number, theirs: Number) -> bool:
    for value, decimals in mine.readings:
        tolerance = 10.0**-decimals / 2
        for other, _ in theirs.readings:
            if _close(value * mine.scale, other * theirs.scale, tolerance * mine.scale):
                return True
            # A scale only one side names (`5 Mio.` is not one we know): compare the digits.
            if not (mine.scaled and theirs.scaled) and _close(value, other, tolerance):
                return True
    return False


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance + 1e-9 * abs(a)


def names(sentence: str, source: str) -> list[str]:
    """Capitalised words of a sentence. Its first word counts only when the source also writes it
    capitalised (a sentence's first word is capitalised whatever it is)."""
    words = _WORD.findall(sentence)
    out = [w for w in words[1:] if w[0].isupper() and len(w) > 1]
    if words and words[0][0].isupper() and len(words[0]) > 1 and _has_word(source, words[0], True):
        out.insert(0, words[0])
    return list(dict.fromkeys(out))


def name_found(name: str, source: str) -> bool:
    return _has_word(source, name, False)


def _has_word(text: str, word: str, case_sensitive: bool) -> bool:
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags) is not None
