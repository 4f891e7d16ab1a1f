"""A watch's next due time: each cadence at its local hour, across a daylight-saving change."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.errors import RequestError
from bot.watches.cadence import Cadence, next_after, parse_cadence, periods_between


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_daily_comes_the_same_day_before_the_hour_and_the_next_day_after_it() -> None:
    assert next_after(Cadence.DAILY, "UTC", 9, 0, 0, utc(2026, 3, 2, 8)) == utc(2026, 3, 2, 9)
    assert next_after(Cadence.DAILY, "UTC", 9, 0, 0, utc(2026, 3, 2, 9)) == utc(2026, 3, 3, 9)


def test_weekdays_skip_the_weekend() -> None:
    friday_after = utc(2026, 3, 6, 10)
    assert next_after(Cadence.WEEKDAYS, "UTC", 9, 0, 0, friday_after) == utc(2026, 3, 9, 9)


def test_weekly_comes_on_its_weekday() -> None:
    assert next_after(Cadence.WEEKLY, "UTC", 9, 30, 0, utc(2026, 3, 3)) == utc(2026, 3, 9, 9, 30)


def test_monthly_on_the_31st_comes_on_a_short_months_last_day() -> None:
    assert next_after(Cadence.MONTHLY, "UTC", 9, 0, 31, utc(2026, 1, 31, 10)) == utc(
        2026, 2, 28, 9
    )


def test_daylight_saving_keeps_the_local_hour() -> None:
    # Berlin moves from UTC+1 to UTC+2 on 29 March 2026: 09:00 local is 08:00, then 07:00 UTC.
    before = next_after(Cadence.DAILY, "Europe/Berlin", 9, 0, 0, utc(2026, 3, 28, 0))
    after = next_after(Cadence.DAILY, "Europe/Berlin", 9, 0, 0, before)
    assert (before, after) == (utc(2026, 3, 28, 8), utc(2026, 3, 29, 7))


def test_missed_periods_are_counted_and_the_next_is_past_now() -> None:
    missed, due = periods_between(
        Cadence.DAILY, "UTC", 9, 0, 0, utc(2026, 3, 1, 9), utc(2026, 3, 3, 12)
    )
    assert (missed, due) == (3, utc(2026, 3, 4, 9))


def test_an_unknown_cadence_is_one_sentence() -> None:
    with pytest.raises(RequestError, match="Unknown cadence 'hourly'"):
        parse_cadence("hourly")
