"""The workspace's recent report on the same company, for a run to start from (RESEARCH_BOT_REUSE_DAYS,
bot/agent/earlier.py): the newest completed run of the workspace within the window, not a
follow-up, of the same mode, a private conversation's only from it. The same company: the same
settled company when both runs have one, else the same name, case and spacing aside."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from bot.agent.earlier import EarlierRun
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
    """`EarlierReports` over `store`, reaching back `days` days of its clock."""

    def __init__(self, store: Store, *, days: int) -> None:
        self._store = store
        self._window = timedelta(days=days)

    async def recent_report(self, request: Request, *, run_id: str) -> EarlierRun | None:
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
