"""A quantity as read from text, and when two of them can be, or must be, the same.

A written number is an interval, not a point: `12%` in a report is anything that rounds to
it, `about 30%` anything a few percent off, `more than 183` anything above 183. Each possible
reading of what was written (`1,500` is 1500 in English and 1.5 in German; `45m` is metres
or millions) is kept; a comparison succeeds when any reading of each side does.
"""

from __future__ import annotations

import math
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
_LOOSE = {"", "percent", "points", "ordinal", "ratio"}
"""Dimensions compared on their written values with each other (a share may be written as a
plain number, a rank as a numeral)."""
_CALENDAR = {"date", "monthday", "month"}


@dataclass(frozen=True)
class Reading:
    low: float
    high: float
    """As written, scales applied (`2.5 million` is 2.5e6), before any unit conversion."""
    unit: Unit = PLAIN
    slack: float = 0.0
    """How much wider the interval is when asking whether a text could mean the same thing
    (the grey zone of an approximation, left to the judge)."""

    def base(self, loose: bool) -> tuple[float, float]:
        grow = self.slack if loose else 0.0
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
    if da in _LOOSE or db in _LOOSE:
        return "raw"
    return None


def _bounds(reading: Reading, how: str, loose: bool) -> tuple[float, float]:
    return reading.base(loose) if how == "base" else reading.raw(loose)


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
            low, high = _bounds(mine, how, loose=True)
            other_low, other_high = _bounds(theirs, how, loose=True)
            if other_low <= high + _tolerance(high) and low - _tolerance(low) <= other_high:
                return True
    return False


def implies(stated: Quantity, claim: Quantity) -> bool:
    """Whether `stated` says at least what the claim says (strictly: its interval lies
    within the claim's). `184` implies `more than 183`; `29.6%` implies `about 30%`."""
    for mine in claim.readings:
        for theirs in stated.readings:
            how = _scale(mine, theirs)
            if how is None:
                continue
            low, high = _bounds(mine, how, loose=False)
            other_low, other_high = _bounds(theirs, how, loose=False)
            if low - _tolerance(low) <= other_low and other_high <= high + _tolerance(high):
                return True
    return False


_EPSILON = 1e-6


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
    rounds to it; a source's for itself. An approximation allows 5% (10% before it counts as
    different, the grey zone between is the judge's); a year, two years (ten)."""
    v = value * scale
    rounding = 0.0 if source and qualifier == "exact" else 0.5 * 10.0**-decimals * scale
    year_like = (
        unit is PLAIN and scale == 1.0 and decimals == 0 and not grouped and 1000 <= v <= 2100
    )
    if not source and not year_like and decimals == 0 and value >= 1000:
        # A round figure (`36,000`, `1,200`) stands for what rounds to it, up to 5%.
        zeros = len(str(int(value))) - len(str(int(value)).rstrip("0"))
        if zeros >= 2:
            rounding = max(rounding, min(0.5 * 10.0**zeros, 0.05 * value) * scale)
    near, far = (
        (2.0, 10.0) if year_like else (max(rounding, 0.05 * abs(v)), max(rounding, 0.10 * abs(v)))
    )
    inf = float("inf")
    match qualifier:
        case "about":
            return Reading(v - near, v + near, unit, far - near)
        case "nearly":
            return Reading(v - near, v + rounding, unit, far - near)
        case "above":
            return Reading(v + _EPSILON * max(1.0, abs(v)), inf, unit)
        case "at_least":
            return Reading(v, inf, unit)
        case "below":
            return Reading(-inf, v - _EPSILON * max(1.0, abs(v)), unit)
        case "at_most":
            return Reading(-inf, v, unit)
    return Reading(v - rounding, v + rounding, unit)
