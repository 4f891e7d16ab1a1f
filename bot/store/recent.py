"""The earlier reports a run starts from (bot/agent/earlier.py). A run: the workspace's recent
report on the same company (RESEARCH_BOT_REUSE_DAYS): the newest completed run of the workspace
within the window, not a follow-up, of the same mode, a private conversation's only from it. The
same company: the same settled company when both runs have one, else the same name, case and
spacing aside. A watched run: its watch's earlier reports, whatever their age."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import or_, select

from bot.agent.earlier import EarlierRun
from bot.agent.report.model import Report
from bot.domain import Company, Identity, Request, RunStatus
from bot.store.rows import iso, visible_from
from bot.store.runs import Store
from bot.store.schema import REPORTS, RUNS

CANDIDATES = 20
"""Of the window's newest completed runs, how many are weighed."""


def same_name(topic: str) -> str:
    return " ".join(topic.casefold().split())


def company_key(company: Company) -> str:
    """What makes two settled companies the same one: the website, else the name."""
    return company.website.casefold().removeprefix("www.") or same_name(company.name)


class RecentReports:
    """`EarlierReports` over `store`, reaching back `days` days of its clock (0: a run starts
    from no recent report; a watched run still starts from its watch's last one)."""

    def __init__(self, store: Store, *, days: int) -> None:
        self._store = store
        self._days = days
        self._window = timedelta(days=days)

    async def watch_reports(self, request: Request, *, run_id: str) -> list[EarlierRun]:
        if request.watch_id is None:
            return []
        mine = select(RUNS.c.created_at).where(RUNS.c.run_id == run_id).scalar_subquery()
        query = (
            select(
                RUNS.c.run_id,
                RUNS.c.topic,
                RUNS.c.created_at,
                REPORTS.c.report_json,
                REPORTS.c.markdown,
            )
            .join(REPORTS, REPORTS.c.run_id == RUNS.c.run_id)
            .where(
                RUNS.c.watch_id == request.watch_id,
                RUNS.c.run_id != run_id,
                # A run not stored (a test's engine alone) comes after every stored one.
                or_(mine.is_(None), RUNS.c.created_at < mine),
            )
            .order_by(RUNS.c.created_at, RUNS.c.created_seq)
        )
        rows = await self._store.database.read(lambda conn: conn.execute(query).all())
        return [
            EarlierRun(
                run_id=row.run_id,
                topic=row.topic,
                created_at=row.created_at,
                report=Report.model_validate_json(row.report_json),
                markdown=row.markdown,
            )
            for row in rows
        ]

    async def recent_report(self, request: Request, *, run_id: str) -> EarlierRun | None:
        if not self._days:
            return None
        origin = request.origin
        viewer = None if origin.platform == "terminal" else origin.channel
        query = (
            select(RUNS.c.run_id, RUNS.c.topic, RUNS.c.identity, RUNS.c.created_at)
            .join(REPORTS, REPORTS.c.run_id == RUNS.c.run_id)
            .where(
                RUNS.c.platform == origin.platform,
                RUNS.c.workspace == origin.workspace,
                RUNS.c.status == RunStatus.DONE.value,
                RUNS.c.parent_run_id.is_(None),
                RUNS.c.mode == request.mode.value,
                RUNS.c.run_id != run_id,
                RUNS.c.created_at >= iso(self._store.now() - self._window),
                *visible_from(viewer),
            )
            .order_by(RUNS.c.created_at.desc(), RUNS.c.created_seq.desc())
            .limit(CANDIDATES)
        )
        rows = await self._store.database.read(lambda conn: conn.execute(query).all())
        for row in rows:
            if _same_company(request, row.topic, row.identity):
                stored = await self._store.report(row.run_id)
                if stored is not None:
                    report, markdown = stored
                    return EarlierRun(
                        run_id=row.run_id,
                        topic=row.topic,
                        created_at=row.created_at,
                        report=report,
                        markdown=markdown,
                    )
        return None


def _same_company(request: Request, topic: str, identity: str | None) -> bool:
    if request.identity is not None and identity is not None:
        earlier = Identity.model_validate_json(identity).company
        return company_key(earlier) == company_key(request.identity.company)
    return same_name(topic) == same_name(request.topic)
