"""The store's follow-up queries: a run's follow-ups, and the report versions a follow-up makes.
Version 1 is the run's own row in `reports`; `report_versions` holds 2, 3 …, each naming the
follow-up that made it. A part of `Store` (bot/store/runs.py), which provides the database."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, insert, select

from bot.agent.report.model import Report
from bot.domain import RunRecord
from bot.store.connection import Database
from bot.store.rows import OLDEST_FIRST, clean_id, records, runs_where
from bot.store.schema import REPORT_VERSIONS, REPORTS, RUNS


def latest_report(conn: Connection, run_id: str) -> tuple[int, Report, str] | None:
    """The run's newest report version: (version, report, markdown); None without a report."""
    versions = REPORT_VERSIONS.c
    newest = conn.execute(
        select(versions.version, versions.report_json, versions.markdown)
        .where(versions.run_id == run_id)
        .order_by(versions.version.desc())
        .limit(1)
    ).first()
    if newest is not None:
        return newest.version, Report.model_validate_json(newest.report_json), newest.markdown
    original = conn.execute(
        select(REPORTS.c.report_json, REPORTS.c.markdown).where(REPORTS.c.run_id == run_id)
    ).first()
    if original is None:
        return None
    return 1, Report.model_validate_json(original.report_json), original.markdown


def add_version(conn: Connection, follow_up: str, revision: tuple[Report, str], now: str) -> int:
    """Store `revision` as the next report version of the run `follow_up` asked about (inside
    the transaction that ends the follow-up); returns its number."""
    parent = conn.execute(
        select(RUNS.c.parent_run_id).where(RUNS.c.run_id == follow_up)
    ).scalar_one_or_none()
    if parent is None:
        raise ValueError(f"run {follow_up} is no follow-up: it has no report to revise")
    current = latest_report(conn, parent)
    version = (current[0] if current else 1) + 1
    report, markdown = revision
    conn.execute(
        insert(REPORT_VERSIONS).values(
            run_id=parent,
            version=version,
            made_by=follow_up,
            title=report.title,
            tldr=report.tldr,
            markdown=markdown,
            report_json=report.model_dump_json(),
            created_at=now,
        )
    )
    return version


class FollowUpQueries:
    """The follow-up reads of `Store`."""

    _db: Database

    async def report(self, run_id: str) -> tuple[Report, str] | None:
        """The run's report as it stands: its newest version when follow-ups revised it."""
        latest = await self.latest_report(run_id)
        return None if latest is None else latest[1:]

    async def latest_report(self, run_id: str) -> tuple[int, Report, str] | None:
        """(version, report, markdown) of the run's newest report version; 1 is the original."""
        wanted = clean_id(run_id)
        return await self._db.read(lambda conn: latest_report(conn, wanted))

    async def follow_ups(self, run_id: str) -> list[RunRecord]:
        """The follow-up runs asked about `run_id`, oldest first."""
        query = runs_where(RUNS.c.parent_run_id == clean_id(run_id)).order_by(*OLDEST_FIRST)
        return await self._db.read(lambda conn: records(conn, query))

    async def follow_ups_of(self, run_ids: Sequence[str]) -> dict[str, list[RunRecord]]:
        """The follow-ups of each of `run_ids` (history shows them under their run)."""
        found: dict[str, list[RunRecord]] = {run_id: [] for run_id in run_ids}
        if run_ids:
            query = runs_where(RUNS.c.parent_run_id.in_(list(run_ids))).order_by(*OLDEST_FIRST)
            for record in await self._db.read(lambda conn: records(conn, query)):
                found[str(record.parent_run_id)].append(record)
        return found

    async def version_made_by(self, run_id: str) -> tuple[int, str] | None:
        """(version, markdown) of the report version the follow-up `run_id` made, if any."""
        query = select(REPORT_VERSIONS.c.version, REPORT_VERSIONS.c.markdown).where(
            REPORT_VERSIONS.c.made_by == clean_id(run_id)
        )
        row = await self._db.read(lambda conn: conn.execute(query).first())
        return None if row is None else (int(row.version), str(row.markdown))
