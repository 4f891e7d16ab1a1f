"""A store clock that moves one second at every reading: rows are ordered as they were written,
whatever the machine's clock does between two writes (tests/store/conftest.py's `store`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


class StepClock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now
