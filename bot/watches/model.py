"""A watch as the store keeps it and people are shown it."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel

from bot.domain import Depth, Mode
from bot.watches.cadence import Cadence


class WatchStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"


class NewWatch(BaseModel):
    """What a person asks for: a topic researched again each period, in its conversation."""

    topic: str
    mode: Mode = Mode.COMPANY
    depth: Depth = Depth.QUICK
    platform: str = "terminal"
    workspace: str = ""
    channel: str = ""
    created_by: str = ""
    created_by_name: str = ""
    cadence: Cadence = Cadence.WEEKLY
    tz: str = "UTC"


class Watch(NewWatch):
    id: str
    hour: int
    minute: int
    anchor: int
    """The weekday (0 = Monday) of a weekly watch, the day of the month of a monthly one."""
    status: WatchStatus
    paused_reason: str | None = None
    next_run_at: datetime
    last_run_at: datetime | None = None
    last_run_id: str | None = None
    last_missed: int = 0
    """How many periods fell due while nothing served, when its last run was started."""
    refused: str | None = None
    """Why its last run was refused (the budget), told once; cleared by the next run."""
    created_at: datetime


class DueWatch(BaseModel):
    """A watch claimed by one replica to start one run, and how many periods it covers."""

    watch: Watch
    missed: int
