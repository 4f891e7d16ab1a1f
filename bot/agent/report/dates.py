"""Dates as people write them: `9 April 1865`, `April 9th, 1865`, `9. April 1865`, `April
1865`, `2003.06.11`, `2003-06-11`, `25/06/2003`, `06/25/2003` (both orders kept when both are
valid), decades (`1990s`, `'90s`, `the fifties`, `the 1920s and 30s`), centuries (`12th
century`, `the 1800s`, `the 17th and 18th centuries`), their parts (`the mid-1990s`, `the late
19th century`), ages by decade (`in her 80s`), fiscal years (`FY2023`), and time bounds on any of them (`by June 2020`,
`before the 1990s`, `since May 2019`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from bot.agent.report.readings import (
    DATE,
    MONTH,
    MONTH_DAY,
    PLAIN,
    Quantity,
    Reading,
    opened,
    point,
)
from bot.agent.report.units import DECADE_WORDS, MONTHS

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th|er|º|\.)?"
_YEAR = r"(?P<year>1\d{3}|20\d{2})"
_TEXTUAL = [
    re.compile(rf"\b{_DAY}\s+(?:of\s+|de\s+)?{_MONTH}(?:,?\s+(?:de\s+)?{_YEAR})?(?!\d)", re.I),
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?!\d)(?:,?\s+{_YEAR})?(?!\d)", re.I),
    re.compile(rf"\b{_MONTH}\s+(?:of\s+|de\s+)?{_YEAR}(?!\d)", re.I),
]
# Not inside a longer code of the same separator (`10.1101/2020.03.05.20031773`, a DOI).
_YMD = re.compile(r"(?<![\d.])(1\d{3}|20\d{2})([./-])(\d{1,2})\2(\d{1,2})(?!\d|\2\d)")
_DMY = re.compile(r"(?<![\d.])(\d{1,2})([./])(\d{1,2})\2(1\d{3}|20\d{2})(?!\d|\2\d)")
_BARE_MONTH = re.compile(
    r"\b(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b(?!\.?\s*\d)", re.I
)
_DECADE = re.compile(r"(?<![\w'’])(?:(1\d|20)(\d)0|['’](\d)0)['’]?s\b")
_CENTURY_DIGITS = re.compile(r"\b(1\d)00['’]?s\b")
"""`the 1800s`, a century or its first decade; `the 2000s` is the decade."""
_CENTURY = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)[\s-]+century\b", re.I)
_DECADE_WORD = re.compile(r"\b(?:the\s+)(" + "|".join(DECADE_WORDS) + r")\b", re.I)
_JOINED = r"\s*(?:and|or|to|through|-|–)\s*(?:the\s+)?"
_DECADES = re.compile(rf"(?<![\w'’])(1\d|20)(\d)0['’]?s{_JOINED}['’]?(\d)0['’]?s\b")
_CENTURIES = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th){_JOINED}(\d{{1,2}})(?:st|nd|rd|th)[\s-]+centuries\b", re.I
)
_AGE = re.compile(
    r"\b(?:her|his|their)\s+(?:(?:early|mid|late)[-\s]+)?(?:(\d)0['’]?s|("
    + "|".join(DECADE_WORDS)
    + r"))\b",
    re.I,
)
_FISCAL = re.compile(r"\bFY\s?['’]?(\d{4}|\d{2})\b")
"""A fiscal year by its code (`FY2023`, `FY23`, `FY '99`): its year."""
_PART = re.compile(r"\b(early|mid|late)(?:-|\s+)(?:(?:the\s+)?)$", re.I)
_PARTS = {"early": (0.0, 0.45), "mid": (0.25, 0.75), "late": (0.55, 1.0)}
_BOUND = re.compile(
    r"\b(before|earlier than|after|later than|since|by)\s+(?:the\s+)?(?:(?:early|mid|late)(?:-|\s+))?$",
    re.I,
)
_BOUNDS = {"before": "below", "earlier than": "below", "after": "above", "later than": "above"}
_BOUNDS |= {"since": "at_least", "by": "at_most"}


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
    found = [_bounded(text, q) for q in found]
    if source:
        for match in _BARE_MONTH.finditer(text):
            if match[1][0].isupper() or match[1] not in ("may", "march"):
                month = MONTHS[match[1].lower()]
                add(
                    match,
                    [point(month, MONTH), Reading(month * 100 + 1, month * 100 + 31, MONTH_DAY)],
                )
        found += [part for q in list(found) for part in _parts(q)]
    return found


def _bounded(text: str, date: Quantity) -> Quantity:
    """A date, decade or century narrowed to the part said before it (`the late 1990s`), then
    opened by the bound said before that (`by June 2020`: at most June 2020)."""
    before = text[max(0, date.start - 40) : date.start]
    readings, start = list(date.readings), date.start
    if (part := _PART.search(before)) is not None and date.readings[0].unit is not DATE:
        first, last = _PARTS[part[1].lower()]
        readings = [
            Reading(r.low + first * (w := r.high - r.low), r.low + last * w, r.unit, 0.1 * w)
            for r in readings
        ]
        before, start = before[: part.start()], start - len(before) + part.start()
    if (bound := _BOUND.search(before)) is not None:
        kind = _BOUNDS[bound[1].lower()]
        readings = [opened(r, kind) for r in readings]
        start -= len(before) - bound.start()
    if start == date.start and readings == list(date.readings):
        return date
    return Quantity(text[start : date.end], tuple(readings), start, date.end, hedged=True)


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


def _decades(match: re.Match[str]) -> list[Reading]:
    start = int(match[1]) * 100 + int(match[2]) * 10
    end = int(match[1]) * 100 + int(match[3]) * 10 + 9
    return [Reading(start, end)] if end > start else []


def _centuries(match: re.Match[str]) -> list[Reading]:
    first, last = int(match[1]), int(match[2])
    return [Reading((first - 1) * 100, last * 100)] if last > first else []


def _age(match: re.Match[str]) -> list[Reading]:
    start = int(match[1]) * 10 if match[1] else DECADE_WORDS[match[2].lower()] - 1900
    return [Reading(start, start + 9, PLAIN)]


def _century(match: re.Match[str]) -> list[Reading]:
    end = int(match[1]) * 100
    return [Reading(end - 100, end)]


def _fiscal(match: re.Match[str]) -> list[Reading]:
    year = int(match[1])
    year += 0 if year >= 100 else 2000 if year < 70 else 1900
    return [point(year)]


def _decade_word(match: re.Match[str]) -> list[Reading]:
    start = DECADE_WORDS[match[1].lower()]
    return [Reading(start, start + 9)]


_READERS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], list[Reading]]]] = [
    (_YMD, _ymd),
    (_DMY, _dmy),
    *((pattern, _named) for pattern in _TEXTUAL),
    (_DECADES, _decades),
    (_CENTURIES, _centuries),
    (_AGE, _age),
    (_CENTURY_DIGITS, _century_digits),
    (_DECADE, _decade),
    (_CENTURY, _century),
    (_DECADE_WORD, _decade_word),
    (_FISCAL, _fiscal),
]
"""In order: a span read by one is not read again by the next."""


def _parts(date: Quantity) -> list[Quantity]:
    """What else a source's date states: its year and its day as numbers of their own, and a
    day's month (a claim's `February 2020` is `February 20`'s month); a month spans its days."""
    first = date.readings[0]
    if abs(first.low) == float("inf") or abs(first.high) == float("inf"):
        return []  # a bound: `before May 2019` states no day
    if first.unit is MONTH_DAY and first.low == first.high:
        month, day = divmod(int(first.low), 100)
        return [_part(date, point(day)), _part(date, point(month, MONTH))]
    if first.unit is not DATE:
        return []
    year, day = divmod(int(first.low), 10000)
    parts = [_part(date, point(year))]
    if first.low == first.high:
        parts.append(_part(date, point(day % 100)))
    else:
        parts.append(_part(date, Reading(day + 1, day + 31, MONTH_DAY)))
    return parts


def _part(date: Quantity, reading: Reading) -> Quantity:
    return Quantity(date.text, (reading,), date.start, date.end)


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
