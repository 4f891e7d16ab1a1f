"""Who may start a run now: a workspace's spend today, and a person's runs in the last hour.

Checked when a run is submitted, from the store. A refusal is a `QuotaError` whose message is
for the person who asked: the limit, and when they can ask again. Nothing is stored for a
refused run, and runs already going are never stopped by these limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from bot.domain import Origin
from bot.errors import RequestError
from bot.store.runs import Store

WINDOW = timedelta(hours=1)


class QuotaError(RequestError):
    """A run refused by the daily budget or the hourly limit; `retry_at`: when it would not be."""

    def __init__(self, message: str, retry_at: datetime) -> None:
        super().__init__(message)
        self.retry_at = retry_at


@dataclass(frozen=True)
class QuotaLimits:
    daily_budget_usd: float | None = None
    """Spend per workspace per UTC day; None: no budget."""
    user_runs_per_hour: int = 0
    """Runs one person may start in any hour; 0: no limit. The terminal has no person."""


class Quota:
    def __init__(self, store: Store, limits: QuotaLimits) -> None:
        self._store = store
        self._limits = limits

    async def check(self, origin: Origin) -> None:
        """Raises QuotaError when a run from `origin` may not start now."""
        now = self._store.now()
        await self._check_budget(origin, now)
        await self._check_rate(origin, now)

    async def _check_budget(self, origin: Origin, now: datetime) -> None:
        budget = self._limits.daily_budget_usd
        if budget is None:
            return
        today = datetime.combine(now.astimezone(UTC).date(), time(), tzinfo=UTC)
        spent = await self._store.spent_since(origin.platform, origin.workspace, today)
        if spent < budget:
            return
        midnight = today + timedelta(days=1)
        raise QuotaError(
            f"Today's research budget here (${budget:.2f}) is spent: ${spent:.2f} so far. It "
            f"resets at midnight UTC ({_from_now(midnight, now)}); runs already going will "
            "finish.",
            midnight,
        )

    async def _check_rate(self, origin: Origin, now: datetime) -> None:
        limit = self._limits.user_runs_per_hour
        if not limit or not origin.user:
            return
        started = await self._store.started_after(
            origin.platform, origin.workspace, origin.user, now - WINDOW
        )
        if len(started) < limit:
            return
        # The run that must leave the window before one more fits in it.
        retry_at = (started[len(started) - limit] + WINDOW).astimezone(UTC)
        runs = f"{limit} research run{'s' if limit != 1 else ''}"
        raise QuotaError(
            f"Sorry, you have reached the limit of {runs} an hour. You can ask again at "
            f"{retry_at:%H:%M} UTC ({_from_now(retry_at, now)}).",
            retry_at,
        )


def _from_now(moment: datetime, now: datetime) -> str:
    """`in 3 h 12 min`, `in 17 min`, `in under a minute`."""
    minutes = math.ceil((moment - now).total_seconds() / 60)
    if minutes < 1:
        return "in under a minute"
    hours, minutes = divmod(minutes, 60)
    if not hours:
        return f"in {minutes} min"
    return f"in {hours} h {minutes} min" if minutes else f"in {hours} h"
