"""The store's reads of runs: one run, a place's history, the runs in a state, spend and run
counts for the cost controls, usage, a run's trajectory and its claims. A part of `Store`
(bot/store/runs.py), which provides the database."""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import Connection, case, func, select

from bot.agent.events import EVENT_ADAPTER, Event
from bot.agent.report.support import Claim, Verdict
from bot.domain import RunRecord, RunStatus
from bot.errors import NotFoundError
from bot.store.connection import Database
from bot.store.rows import (
    FINAL,
    NEWEST_FIRST,
    OLDEST_FIRST,
    claim_row,
    clean_id,
    iso,
    records,
    runs_where,
    scope,
    statuses,
    visible_from,
)
from bot.store.schema import CLAIMS, EVENTS, REPORTS, RUNS
from bot.store.usage import UsageRow


class HistoryQueries:
    _db: Database

    async def get_run(
        self, run_id: str, *, platform: str | None = None, workspace: str | None = None
    ) -> RunRecord:
        wanted = clean_id(run_id)
        query = runs_where(RUNS.c.run_id == wanted, *scope(platform, workspace))
        found = await self._db.read(lambda conn: records(conn, query))
        if not found:
            raise NotFoundError(f"No run {wanted} here." if wanted else "No run id given.")
        return found[0]

    async def list_runs(
        self,
        *,
        platform: str | None = None,
        workspace: str | None = None,
        limit: int = 20,
        top_level: bool = False,
        viewer_channel: str | None = None,
    ) -> list[RunRecord]:
        """Newest first; `top_level`: without follow-ups (`follow_ups_of` gives them). With a
        `viewer_channel`, only what that conversation may see (`visible_from`)."""
        conditions = [*scope(platform, workspace), *visible_from(viewer_channel)]
        if top_level:
            conditions.append(RUNS.c.parent_run_id.is_(None))
        query = runs_where(*conditions).order_by(*NEWEST_FIRST).limit(limit)
        return await self._db.read(lambda conn: records(conn, query))

    async def run_in_thread(
        self, thread: str, *, platform: str, workspace: str, channel: str | None = None
    ) -> RunRecord | None:
        """The run (not a follow-up) whose thread this is, in that workspace; None if none."""
        conditions = [*scope(platform, workspace), RUNS.c.thread == thread]
        if channel is not None:
            conditions.append(RUNS.c.channel == channel)
        query = runs_where(*conditions, RUNS.c.parent_run_id.is_(None))
        found = await self._db.read(
            lambda conn: records(conn, query.order_by(*NEWEST_FIRST).limit(1))
        )
        return found[0] if found else None

    async def runs_with_status(self, *wanted: RunStatus) -> list[RunRecord]:
        query = runs_where(RUNS.c.status.in_(statuses(wanted))).order_by(*OLDEST_FIRST)
        return await self._db.read(lambda conn: records(conn, query))

    async def undelivered_runs(self, *, since: datetime) -> list[RunRecord]:
        """Runs that ended after `since` whose outcome never reached their front end."""
        query = runs_where(
            RUNS.c.delivered_at.is_(None),
            RUNS.c.status.in_(statuses(FINAL)),
            RUNS.c.finished_at >= iso(since),
        ).order_by(RUNS.c.finished_at, RUNS.c.run_id)
        return await self._db.read(lambda conn: records(conn, query))

    async def spent_since(self, platform: str, workspace: str, since: datetime) -> float:
        """What the runs started in a workspace since `since` have cost so far (runs in progress
        included; of a run with an unpriced model, its priced calls)."""
        query = select(func.coalesce(func.sum(RUNS.c.cost_usd), 0.0)).where(
            RUNS.c.platform == platform,
            RUNS.c.workspace == workspace,
            RUNS.c.created_at >= iso(since),
        )
        return float(await self._db.read(lambda conn: conn.execute(query).scalar_one()))

    async def started_after(
        self, platform: str, workspace: str, user: str, after: datetime
    ) -> list[datetime]:
        """When one person's runs in a workspace created after `after` were, oldest first."""
        query = (
            select(RUNS.c.created_at)
            .where(
                RUNS.c.platform == platform,
                RUNS.c.workspace == workspace,
                RUNS.c.user_id == user,
                RUNS.c.created_at > iso(after),
            )
            .order_by(RUNS.c.created_at)
        )
        found = await self._db.read(lambda conn: list(conn.execute(query).scalars()))
        return [datetime.fromisoformat(moment) for moment in found]

    async def usage(
        self, *, since: datetime, platform: str | None = None, workspace: str | None = None
    ) -> list[UsageRow]:
        """Runs and spend per workspace, UTC day and person since `since` (every workspace
        unless one is named)."""
        day = func.substr(RUNS.c.created_at, 1, 10)
        query = (
            select(
                RUNS.c.platform,
                RUNS.c.workspace,
                day.label("day"),
                RUNS.c.user_id.label("user"),
                func.max(RUNS.c.user_name).label("user_name"),
                func.count().label("runs"),
                func.sum(RUNS.c.cost_usd).label("cost_usd"),
                func.sum(case((RUNS.c.cost_known == 0, 1), else_=0)).label("unpriced"),
            )
            .where(RUNS.c.created_at >= iso(since), *scope(platform, workspace))
            .group_by(RUNS.c.platform, RUNS.c.workspace, day, RUNS.c.user_id)
            .order_by(RUNS.c.platform, RUNS.c.workspace, day, RUNS.c.user_id)
        )

        def work(conn: Connection) -> list[UsageRow]:
            return [UsageRow.model_validate(dict(row._mapping)) for row in conn.execute(query)]

        return await self._db.read(work)

    async def events(self, run_id: str) -> list[Event]:
        query = (
            select(EVENTS.c.payload)
            .where(EVENTS.c.run_id == clean_id(run_id))
            .order_by(EVENTS.c.seq)
        )
        payloads = await self._db.read(lambda conn: list(conn.execute(query).scalars()))
        return [EVENT_ADAPTER.validate_json(payload) for payload in payloads]

    async def claims(self, run_id: str) -> list[Claim]:
        """A run's cited claims with their verdicts, in report order ([] when not measured)."""
        query = select(CLAIMS).where(CLAIMS.c.run_id == clean_id(run_id)).order_by(CLAIMS.c.n)
        return await self._db.read(lambda conn: [claim_row(row) for row in conn.execute(query)])

    async def claim_counts(self) -> dict[str, dict[tuple[Verdict, str], int]]:
        """For every run with measured claims: how many got each (verdict, method)."""
        query = select(
            CLAIMS.c.run_id, CLAIMS.c.verdict, CLAIMS.c.method, func.count().label("n")
        ).group_by(CLAIMS.c.run_id, CLAIMS.c.verdict, CLAIMS.c.method)

        def work(conn: Connection) -> dict[str, dict[tuple[Verdict, str], int]]:
            counts: dict[str, dict[tuple[Verdict, str], int]] = {}
            for row in conn.execute(query):
                counts.setdefault(row.run_id, {})[(Verdict(row.verdict), row.method)] = row.n
            return counts

        return await self._db.read(work)

    async def uncited_counts(self) -> dict[str, int]:
        """For every run whose report marked statements that lost their citations: how many.
        (Read from each report's JSON here, the same way on both engines.)"""
        query = select(REPORTS.c.run_id, REPORTS.c.report_json)

        def work(conn: Connection) -> dict[str, int]:
            found = {}
            for row in conn.execute(query):
                support = json.loads(row.report_json).get("support") or {}
                if (unverified := int(support.get("unverified") or 0)) > 0:
                    found[row.run_id] = unverified
            return found

        return await self._db.read(work)
