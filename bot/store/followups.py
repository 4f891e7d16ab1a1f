"""The follow-up queries of the store (bot/store/runs.py calls them on its DB thread): a run's
follow-ups, and the report versions a follow-up makes. Version 1 is the run's own row in
`reports`; `report_versions` holds 2, 3 …, each naming the follow-up that made it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from bot.agent.report.model import Report
from bot.domain import RunRecord
from bot.store.connection import Database
from bot.store.rows import clean_id, run_record

FOLLOW_UPS = "SELECT * FROM runs WHERE parent_run_id = ? ORDER BY created_at, rowid"
CHILDREN_OF = "SELECT * FROM runs WHERE parent_run_id IN ({marks}) ORDER BY created_at, rowid"
_LATEST = """
    SELECT version, report_json, markdown FROM report_versions
    WHERE run_id = ? ORDER BY version DESC LIMIT 1
"""
_ORIGINAL = "SELECT report_json, markdown FROM reports WHERE run_id = ?"
_INSERT_VERSION = """
    INSERT INTO report_versions (run_id, version, made_by, title, tldr, markdown, report_json,
        created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""
_MADE_BY = "SELECT version, markdown FROM report_versions WHERE made_by = ?"


def latest_report(conn: sqlite3.Connection, run_id: str) -> tuple[int, Report, str] | None:
    """The run's newest report version: (version, report, markdown); None without a report."""
    row = conn.execute(_LATEST, (run_id,)).fetchone()
    if row is not None:
        return row["version"], Report.model_validate_json(row["report_json"]), row["markdown"]
    row = conn.execute(_ORIGINAL, (run_id,)).fetchone()
    if row is None:
        return None
    return 1, Report.model_validate_json(row["report_json"]), row["markdown"]


def add_version(
    conn: sqlite3.Connection, follow_up: str, revision: tuple[Report, str], now: str
) -> int:
    """Store `revision` as the next report version of the run `follow_up` asked about (inside
    the transaction that ends the follow-up); returns its number."""
    row = conn.execute("SELECT parent_run_id FROM runs WHERE run_id = ?", (follow_up,)).fetchone()
    if row is None or row["parent_run_id"] is None:
        raise ValueError(f"run {follow_up} is no follow-up: it has no report to revise")
    parent = row["parent_run_id"]
    current = latest_report(conn, parent)
    version = (current[0] if current else 1) + 1
    report, markdown = revision
    values = (report.title, report.tldr, markdown, report.model_dump_json(), now)
    conn.execute(_INSERT_VERSION, (parent, version, follow_up, *values))
    return version


def version_made_by(conn: sqlite3.Connection, follow_up: str) -> tuple[int, str] | None:
    """(version, markdown) of the report version the follow-up made, if it made one."""
    row = conn.execute(_MADE_BY, (follow_up,)).fetchone()
    return None if row is None else (int(row["version"]), str(row["markdown"]))


class FollowUpQueries:
    """The store's follow-up reads (a part of `Store`, which provides `_db`)."""

    _db: Database

    async def latest_report(self, run_id: str) -> tuple[int, Report, str] | None:
        """(version, report, markdown) of the run's newest report version; 1 is the original."""
        wanted = clean_id(run_id)
        return await self._db.run(lambda conn: latest_report(conn, wanted))

    async def follow_ups(self, run_id: str) -> list[RunRecord]:
        """The follow-up runs asked about `run_id`, oldest first."""
        return [run_record(row) for row in await self._db.read(FOLLOW_UPS, (clean_id(run_id),))]

    async def follow_ups_of(self, run_ids: Sequence[str]) -> dict[str, list[RunRecord]]:
        """The follow-ups of each of `run_ids` (history shows them under their run)."""
        found: dict[str, list[RunRecord]] = {run_id: [] for run_id in run_ids}
        if run_ids:
            sql = CHILDREN_OF.format(marks=", ".join("?" * len(run_ids)))
            for row in await self._db.read(sql, list(run_ids)):
                record = run_record(row)
                found[str(record.parent_run_id)].append(record)
        return found

    async def version_made_by(self, run_id: str) -> tuple[int, str] | None:
        """(version, markdown) of the report version the follow-up `run_id` made, if any."""
        wanted = clean_id(run_id)
        return await self._db.run(lambda conn: version_made_by(conn, wanted))
