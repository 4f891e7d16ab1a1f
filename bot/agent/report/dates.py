"""Dates as people write them: `9 April 1865`, `April 9th, 1865`, `9. April 1865`, `April
1865`, `2003.06.11`, `2003-06-11`, `25/06/2003`, `06/25/2003` (both orders kept when both are
valid), decades (`1990s`, `'90s`, `the fifties`) and centuries (`12th century`, `the 1800s`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from bot.agent.report.readings import DATE, MONTH, MONTH_DAY, Quantity, Reading, point
from bot.agent.report.units import DECADE_WORDS, MONTHS

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th|er|º|\.)?"
_YEAR = r"(?P<year>1\d{3}|20\d{2})"
_TEXTUAL = [
    re.compile(rf"\b{_DAY}\s+(?:of\s+|de\s+)?{_MONTH}(?:,?\s+(?:de\s+)?{_YEAR})?(?!\d)", re.I),
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?!\d)(?:,?\s+{_YEAR})?(?!\d)", re.I),
    re.compile(rf"\b{_MONTH}\s+(?:of\s+|de\s+)?{_YEAR}(?!\d)", re.I),
]
_YMD = re.compile(r"(?<![\d.])(1\d{3}|20\d{2})([./-])(\d{1,2})\2(\d{1,2})(?![\d])")
_DMY = re.compile(r"(?<![\d.])(\d{1,2})([./])(\d{1,2})\2(1\d{3}|20\d{2})(?![\d])")
_BARE_MONTH = re.compile(
    r"\b(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b(?!\.?\s*\d)", re.I
)
_DECADE = re.compile(r"(?<![\w'’])(?:(1\d|20)(\d)0|['’](\d)0)['’]?s\b")
_CENTURY_DIGITS = re.compile(r"\b(1\d|20)00['’]?s\b")
_CENTURY = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)[\s-]+century\b", re.I)
_DECADE_WORD = re.compile(r"\b(?:the\s+)(" + "|".join(DECADE_WORDS) + r")\b", re.I)


def read_dates(text: str, *, source: bool) -> list[Quantity]:
    """Every date, decade and century of `text`. A source's full dates also state their year
    (a claim `in 1865` is stated by `9 April 1865`)."""
    found: list[Quantity] = []
    taken: list[tuple[int, int]] = []

    def add(match: re.Match[str], readings: list[Reading]) -> None:
        if readings and not any(s < match.end() and match.start() < e for s, e in taken):
            taken.append(match.span())
            found.append(Quantity(match.group(0), tuple(readings), *match.span()))

    for pattern, reader in _READERS:
        for match in pattern.finditer(text):
            add(match, reader(match))
    if source:
        found += [part for q in list(found) for part in _parts(q)]
        for match in _BARE_MONTH.finditer(text):
            if match[1][0].isupper() or match[1] not in ("may", "march"):
                add(match, [point(MONTHS[match[1].lower()], MONTH)])
    return found


def _ymd(match: re.Match[str]) -> list[Reading]:
    return _numeric(int(match[1]), [(int(match[3]), int(match[4]))])


def _dmy(match: re.Match[str]) -> list[Reading]:
    a, b = int(match[1]), int(match[3])
    return _numeric(int(match[4]), [(b, a), (a, b)] if match[2] == "/" else [(b, a)])


def _named(match: re.Match[str]) -> list[Reading]:
    if match["month"] in ("may", "Mars"):
        return []  # the modal verb; the planet
    return _textual(match)


def _century_digits(match: re.Match[str]) -> list[Reading]:
    start = int(match[1]) * 100
    return [Reading(start, start + 99), Reading(start, start + 9)]


def _decade(match: re.Match[str]) -> list[Reading]:
    start = int(match[1]) * 100 + int(match[2]) * 10 if match[1] else 1900 + int(match[3]) * 10
    return [Reading(start, start + 9)]


def _century(match: re.Match[str]) -> list[Reading]:
    end = int(match[1]) * 100
    return [Reading(end - 100, end)]


def _decade_word(match: re.Match[str]) -> list[Reading]:
    start = DECADE_WORDS[match[1].lower()]
    return [Reading(start, start + 9)]


_READERS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], list[Reading]]]] = [
    (_YMD, _ymd),
    (_DMY, _dmy),
    *((pattern, _named) for pattern in _TEXTUAL),
    (_CENTURY_DIGITS, _century_digits),
    (_DECADE, _decade),
    (_CENTURY, _century),
    (_DECADE_WORD, _decade_word),
]
"""In order: a span read by one is not read again by the next."""


def _parts(date: Quantity) -> list[Quantity]:
    """The year and the day a source's date states, as numbers of their own."""
    first = date.readings[0]
    if first.unit is not DATE:
        return []
    year, day = divmod(int(first.low), 10000)
    parts = [Quantity(date.text, (point(year),), date.start, date.end)]
    if first.low == first.high:
        parts.append(Quantity(date.text, (point(day % 100),), date.start, date.end))
    return parts


def _numeric(year: int, orders: list[tuple[int, int]]) -> list[Reading]:
    return [
        reading
        for month, day in orders
        if 1 <= month <= 12 and 1 <= day <= 31
        for reading in (
            point(year * 10000 + month * 100 + day, DATE),
            point(month * 100 + day, MONTH_DAY),
        )
    ]


def _textual(match: re.Match[str]) -> list[Reading]:
    month = MONTHS[match["month"].lower().rstrip(".")]
    groups = match.groupdict()
    day = int(groups["day"]) if groups.get("day") else None
    year = int(groups["year"]) if groups.get("year") else None
    if day is not None and not 1 <= day <= 31:
        return []
    if year is None:
        return [point(month * 100 + day, MONTH_DAY)] if day is not None else []
    if day is None:
        first = year * 10000 + month * 100
        # The month alone is a second reading: a source may name the year elsewhere.
        return [Reading(first + 1, first + 31, DATE), point(month, MONTH)]
    return [point(year * 10000 + month * 100 + day, DATE), point(month * 100 + day, MONTH_DAY)]
