"""When a result or page was published, as an ISO calendar date, and the recency periods a web
search can be limited to.

Pure standard library: the extraction workers import it too.
"""

from __future__ import annotations

from datetime import date, datetime
from email.utils import parsedate_to_datetime
from typing import Literal

Recency = Literal["day", "week", "month", "year"]
EARLIEST_YEAR = 1990
"""Older "publication dates" are placeholders (epoch zero, year 1) more often than facts."""
_WRITTEN = ("%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y", "%Y/%m/%d", "%Y.%m.%d")
"""Absolute dates as engines write them: `August 16, 2023` (Brave's `age`), `16 Aug 2023`."""


def iso_date(text: str | None) -> str | None:
    """`YYYY-MM-DD` for an ISO 8601, RFC 2822 or written-out date (`2024-05-02T14:00:00Z`,
    `Thu, 02 May 2024 14:00:00 GMT`, `May 2, 2024`); None for anything else (`2 days ago`).
    The date is the one written, in the writer's own time zone: never shifted."""
    if not text or not (text := " ".join(text.split())) or len(text) > 64:
        return None
    day = _parsed(text)
    if day is None or day.year < EARLIEST_YEAR:
        return None
    return day.isoformat()


def _parsed(text: str) -> date | None:
    try:
        return datetime.fromisoformat(text).date()
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(text).date()
    except (TypeError, ValueError, IndexError):
        pass
    for pattern in _WRITTEN:
        try:
            return datetime.strptime(text, pattern).date()
        except ValueError:
            continue
    return None
