"""A quantity as read from text, and when two of them can be, or must be, the same.

A written number is an interval, not a point: `12%` in a report is anything that rounds to
it, `about 30%` anything a few percent off, `more than 183` anything above 183. Each possible
reading of what was written (`1,500` is 1500 in English and 1.5 in German; `45m` is metres
or millions) is kept; a comparison succeeds when any reading of each side does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bot.agent.report.units import Unit

PLAIN = Unit("")
PERCENT = Unit("percent")
POINTS = Unit("points")
ORDINAL = Unit("ordinal")
RATIO = Unit("ratio")
DATE = Unit("date")
"""A calendar date as `year * 10000 + month * 100 + day`; a month of a year spans its days."""
MONTH_DAY = Unit("monthday")
"""A day of a month, year unsaid: `month * 100 + day`."""
MONTH = Unit("month")
"""A month, its year said elsewhere or not at all (`in March`)."""
_GROUPED = re.compile(r"\d{1,3}(?:[,.]\d{3})+")
_ENGLISH = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_LOOSE = {"", "percent", "points", "ordinal", "ratio"}
"""Dimensions compared on their written values with each other (a share may be written as a
plain number, a rank as a numeral)."""
_CALENDAR = {"date", "monthday", "month"}
_SHARES = {"percent", "points", "ratio"}
"""Never a measure's value: `10-fold` is no `5 years`, `12%` no `12 km`."""


@dataclass(frozen=True)
class Reading:
    low: float
    high: float
    """As written, scales applied (`2.5 million` is 2.5e6), before any unit conversion."""
    unit: Unit = PLAIN
    slack: float = 0.0
    """How much wider the interval is when asking whether a text could mean the same thing
    (the grey zone of an approximation, left to the judge)."""
    grain: float = 0.0
    """How far a conversion of it into another unit may be off: half its last written digit,
    or of its last non-zero one, up to 2% (`91 m` for 300 ft, `160 km/h` for 100 mph)."""

    def base(self, loose: bool, converted: bool = False) -> tuple[float, float]:
        grow = (self.slack if loose else 0.0) + (self.grain if converted else 0.0)
        return self.unit.base(self.low - grow), self.unit.base(self.high + grow)

    def raw(self, loose: bool) -> tuple[float, float]:
        grow = self.slack if loose else 0.0
        return self.low - grow, self.high + grow


@dataclass(frozen=True)
class Quantity:
    text: str
    readings: tuple[Reading, ...]
    start: int = 0
    end: int = 0
    """Where it was written (in the prepared text it was read from)."""
    hedged: bool = False
    """Written with a bound or an approximation (`more than`, `about`), or a sign."""
    rank: bool = False
    """A source's chart or list position (`number 7`, `No. 7`) or a Roman numeral after a name
    (`World War II`): stated, but part of a name when a passage is matched word for word."""
    name: str = ""
    """A claim's number that is part of the name before it (`Boeing 737`, `Windows 11`): the
    name, since only a source that names it can say it is another number."""


def point(value: float, unit: Unit = PLAIN) -> Reading:
    return Reading(value, value, unit)


def _scale(a: Reading, b: Reading) -> str | None:
    """How two readings compare: `base` (converted to their dimension's base unit), `raw` (as
    written), or None (different things: metres and kilograms, euros and pounds)."""
    da, db = a.unit.dimension, b.unit.dimension
    if da in _CALENDAR or db in _CALENDAR:
        return "base" if da == db else None
    if da == db:
        return "base"
    if (da in _SHARES and db not in _LOOSE) or (db in _SHARES and da not in _LOOSE):
        return None
    if da in _LOOSE or db in _LOOSE:
        return "raw"
    return None


def _bounds(reading: Reading, how: str, loose: bool, other: Reading) -> tuple[float, float]:
    if how == "base":
        return reading.base(loose, converted=loose and reading.unit != other.unit)
    return reading.raw(loose)


def _tolerance(x: float) -> float:
    return 0.0 if math.isinf(x) else 1e-9 * max(1.0, abs(x))


def could_be(claim: Quantity, stated: Quantity) -> bool:
    """Whether a text stating `stated` could be saying the claim's quantity (loosely: the
    intervals, widened by their slack, meet). False is evidence the claim is not stated."""
    for mine in claim.readings:
        for theirs in stated.readings:
            how = _scale(mine, theirs)
            if how is None:
                continue
            low, high = _bounds(mine, how, True, theirs)
            other_low, other_high = _bounds(theirs, how, True, mine)
            if other_low <= high + _tolerance(high) and low - _tolerance(low) <= other_high:
                return True
    return False


def implies(stated: Quantity, claim: Quantity) -> bool:
    """Whether `stated` says at least what the claim says (strictly: its interval lies
    within the claim's, and a measure is stated as one: `16 million people` does not say `16
    million years`). `184` implies `more than 183`; `29.6%` implies `about 30%`."""
    for mine in claim.readings:
        for theirs in stated.readings:
            how = _scale(mine, theirs)
            if how is None or (
                how == "raw" and not {mine.unit.dimension, theirs.unit.dimension} <= _LOOSE
            ):
                continue
            low, high = _bounds(mine, how, False, theirs)
            other_low, other_high = _bounds(theirs, how, False, mine)
            if low - _tolerance(low) <= other_low and other_high <= high + _tolerance(high):
                return True
    return False


_EPSILON = 1e-6


def opened(reading: Reading, kind: str) -> Reading:
    """A reading with the bound said before it (`below`, `at_most`, `above`, `at_least`):
    `by June 2020` is at most June 2020, `fewer than 1 in 10` below 10%."""
    inf = float("inf")
    match kind:
        case "below":
            return Reading(-inf, reading.low - _EPSILON * max(1.0, abs(reading.low)), reading.unit)
        case "at_most":
            return Reading(-inf, reading.high, reading.unit)
        case "above":
            return Reading(reading.high + _EPSILON * max(1.0, abs(reading.high)), inf, reading.unit)
        case "at_least":
            return Reading(reading.low, inf, reading.unit)
    return reading


def written(
    value: float,
    decimals: int,
    scale: float,
    unit: Unit,
    qualifier: str,
    source: bool,
    *,
    grouped: bool,
) -> Reading:
    """A number as written, with its qualifier (`exact`, `about`, `nearly`, `above`,
    `at_least`, `below`, `at_most`), as an interval. A claim's exact number stands for what
    rounds to it; a source's for itself when it is a count (`184`), else for what rounds to
    it, short of the boundary (`1.23 million`, `12.3%`, `35,000`). An approximation allows 5% (10% before it counts as
    different, the grey zone between is the judge's; 20% when it has one significant digit
    and is 100 or more: `roughly 100 years` may be 116); a year, two years (ten)."""
    v = value * scale
    last = 0.5 * 10.0**-decimals * scale
    # A source's rounding stops short of the boundary: `12.3` is not a claim's `12.35`.
    share = 0.98 if source and qualifier == "exact" else 1.0
    counted = decimals == 0 and scale == 1.0
    rounding = 0.0 if source and qualifier == "exact" and counted else last * share
    zeros = len(str(int(value))) - len(str(int(value)).rstrip("0")) if value >= 1 else 0
    grain = max(last, min(0.5 * 10.0**zeros, 0.02 * abs(value)) * scale if decimals == 0 else 0)
    year_like = (
        unit is PLAIN and scale == 1.0 and decimals == 0 and not grouped and 1000 <= v <= 2100
    )
    if not year_like and decimals == 0 and value >= 1000 and zeros >= 2:
        # A round figure (`36,000`, `1,200`) stands for what rounds to it, up to 5%.
        rounding = max(rounding, min(0.5 * 10.0**zeros, 0.05 * value) * scale * share)
    one_digit = decimals == 0 and abs(v) >= 100 and len(str(int(value)).strip("0")) == 1
    near, far = (
        (2.0, 10.0)
        if year_like
        else (max(rounding, 0.05 * abs(v)), max(rounding, (0.2 if one_digit else 0.1) * abs(v)))
    )
    inf = float("inf")
    match qualifier:
        case "about":
            return Reading(v - near, v + near, unit, far - near, grain)
        case "nearly":
            return Reading(v - near, v + rounding, unit, far - near, grain)
        case "above":
            # `after 1990` may be said of late 1990: the year itself is the judge's.
            return Reading(v + _EPSILON * max(1.0, abs(v)), inf, unit, float(year_like), grain)
        case "at_least":
            return Reading(v, inf, unit, grain=grain)
        case "below":
            return Reading(-inf, v - _EPSILON * max(1.0, abs(v)), unit, float(year_like), grain)
        case "at_most":
            return Reading(-inf, v, unit, grain=grain)
    return Reading(v - rounding, v + rounding, unit, grain=grain)


def digit_values(digits: str, english: bool = False) -> tuple[tuple[float, int], ...]:
    """Every reading of the digits as (value, decimals): `1,200` is 1200 or (in German) 1.2;
    `english`, the English one alone when it has one."""
    plain = re.sub("[\u00a0\u2009\u202f' ]", ",", digits)
    if english and _ENGLISH.fullmatch(plain):
        return ((float(plain.replace(",", "")), len(plain.partition(".")[2])),)
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
