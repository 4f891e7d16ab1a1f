"""The clock the watches' tests set by hand: the schedule advances when a test says so."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

MONDAY_9 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass
class Clock:
    now: datetime = MONDAY_9

    def __call__(self) -> datetime:
        return self.now
