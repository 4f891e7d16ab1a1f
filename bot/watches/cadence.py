"""When a watch is next due: its cadence at the local hour and minute it was made, in its time
zone, so a daylight-saving change keeps the local hour. Pure; times in and out are UTC."""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.errors import RequestError


class Cadence(StrEnum):
    DAILY = "daily"
    WEEKDAYS = "weekdays"
    WEEKLY = "weekly"
    MONTHLY = "monthly"


def parse_cadence(value: str) -> Cadence:
    try:
        return Cadence(value.strip().lower())
    except ValueError:
        known = ", ".join(cadence.value for cadence in Cadence)
        raise RequestError(f"Unknown cadence {value!r}: use one of {known}.") from None


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise RequestError(f"Unknown time zone {name!r}.") from None


def _fits(cadence: Cadence, day: date, anchor: int) -> bool:
    if cadence is Cadence.WEEKDAYS:
        return day.weekday() < 5
    if cadence is Cadence.WEEKLY:
        return day.weekday() == anchor
    if cadence is Cadence.MONTHLY:
        # A watch made on the 31st comes on a shorter month's last day.
        return day.day == min(anchor, calendar.monthrange(day.year, day.month)[1])
    return True


def next_after(
    cadence: Cadence, tz: str, hour: int, minute: int, anchor: int, after: datetime
) -> datetime:
    """The first time strictly after `after` that the watch is due, in UTC. `anchor`: the weekday
    (0 = Monday) of a weekly watch, the day of the month of a monthly one; unused otherwise."""
    local_zone = zone(tz)
    day = after.astimezone(local_zone).date()
    for _ in range(64):
        if _fits(cadence, day, anchor):
            # A local time a spring-forward skips is read with the offset before the gap.
            due = datetime.combine(day, time(hour, minute), local_zone).astimezone(UTC)
            if due > after:
                return due
        day += timedelta(days=1)
    raise AssertionError("a cadence comes round within 64 days")


def periods_between(
    cadence: Cadence, tz: str, hour: int, minute: int, anchor: int, start: datetime, end: datetime
) -> tuple[int, datetime]:
    """How many due times fall in [start, end] (start is one), and the first after `end`:
    a watch whose bot was down for three periods runs once and says three were missed."""
    missed, due = 0, start
    while due <= end and missed < 1000:
        missed += 1
        due = next_after(cadence, tz, hour, minute, anchor, due)
    while due <= end:
        due = next_after(cadence, tz, hour, minute, anchor, due)
    return missed, due
