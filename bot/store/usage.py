"""Spend and runs per day and per person, per workspace: the figures of the `usage` command and
the text every front end shows them in."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from pydantic import BaseModel

from bot.agent.report.model import format_cost


class UsageRow(BaseModel):
    """One person's runs on one UTC day in one workspace, as the store sums them."""

    platform: str
    workspace: str
    day: date
    user: str
    user_name: str
    runs: int
    cost_usd: float
    unpriced: int = 0
    """Runs among them with a model without a price: only their priced calls are counted."""


class Spend(BaseModel):
    """Runs and what they cost, for one day, one person, or the whole period."""

    key: str
    """The day (`2025-06-01`) or the person's platform id."""
    name: str
    """What to call it: the day, or the person's name as the platform gave it (untrusted text)."""
    runs: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0

    def add(self, row: UsageRow) -> None:
        self.runs += row.runs
        self.cost_usd += row.cost_usd
        self.unpriced += row.unpriced


class WorkspaceUsage(BaseModel):
    """One workspace's usage since `since` (UTC), by day (newest first) and by person (costliest
    first)."""

    platform: str
    workspace: str
    since: date
    days: int
    total: Spend
    by_day: list[Spend]
    by_person: list[Spend]


def period_start(now: datetime, days: int) -> datetime:
    """UTC midnight `days - 1` days before `now`: the last `days` days, today included."""
    today = now.astimezone(UTC).date()
    return datetime.combine(today - timedelta(days=days - 1), time(), tzinfo=UTC)


def by_workspace(rows: list[UsageRow], *, since: date, days: int) -> list[WorkspaceUsage]:
    """The store's rows gathered per workspace, in the order they come."""
    found: dict[tuple[str, str], list[UsageRow]] = {}
    for row in rows:
        found.setdefault((row.platform, row.workspace), []).append(row)
    return [
        _one(platform, workspace, part, since, days)
        for (platform, workspace), part in found.items()
    ]


def one_workspace(rows: list[UsageRow], *, since: date, days: int) -> WorkspaceUsage | None:
    """The usage of the one workspace `rows` were asked for; None when it had no runs."""
    found = by_workspace(rows, since=since, days=days)
    return found[0] if found else None


def _one(
    platform: str, workspace: str, rows: list[UsageRow], since: date, days: int
) -> WorkspaceUsage:
    total = Spend(key="total", name="total")
    by_day: dict[date, Spend] = {}
    by_person: dict[str, Spend] = {}
    for row in rows:
        total.add(row)
        day = row.day.isoformat()
        by_day.setdefault(row.day, Spend(key=day, name=day)).add(row)
        name = row.user_name or row.user or platform
        by_person.setdefault(row.user, Spend(key=row.user, name=name)).add(row)
    return WorkspaceUsage(
        platform=platform,
        workspace=workspace,
        since=since,
        days=days,
        total=total,
        by_day=[by_day[d] for d in sorted(by_day, reverse=True)],
        by_person=sorted(by_person.values(), key=lambda s: (-s.cost_usd, -s.runs, s.name)),
    )


def spend_text(spend: Spend) -> str:
    """`$1.20 · 4 runs`, and how many of them had a model without a price."""
    runs = f"{spend.runs} run{'s' if spend.runs != 1 else ''}"
    unknown = f" ({spend.unpriced} with an unknown cost)" if spend.unpriced else ""
    return f"{format_cost(spend.cost_usd)} · {runs}{unknown}"


def usage_lines(usage: WorkspaceUsage | None, *, days: int) -> list[str]:
    """Plain lines (names are untrusted: each platform escapes them); None: no runs at all."""
    period = f"the last {days} day{'s' if days != 1 else ''}"
    if usage is None:
        return [f"No runs here in {period}."]
    lines = [f"Total for {period} (UTC, since {usage.since}): {spend_text(usage.total)}", "By day:"]
    lines += [f"• {d.name} · {spend_text(d)}" for d in usage.by_day]
    lines.append("By person:")
    lines += [f"• {p.name} · {spend_text(p)}" for p in usage.by_person]
    return lines
