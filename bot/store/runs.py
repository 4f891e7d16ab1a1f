"""SQLite storage (its schema: bot/store/schema.py): runs (with their owner's lease and delivery), the
append-only event log, reports, dedupe keys, and spend and run counts for the cost controls.
Every query lives here (follow-ups' and report versions' in bot/store/followups.py); `bot/store/connection.py`
runs it."""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.agent.events import EVENT_ADAPTER, Event, RunFinished, TurnStarted, UsageRecorded
from bot.agent.report.model import Report
from bot.agent.report.support import Claim, Support, Verdict
from bot.domain import Request, RunRecord, RunStatus
from bot.errors import NotFoundError
from bot.store.connection import Database
from bot.store.followups import (
    CHILDREN_OF,
    FOLLOW_UPS,
    add_version,
    latest_report,
    version_made_by,
)
from bot.store.schema import MIGRATIONS
from bot.store.usage import UsageRow

Clock = Callable[[], datetime]

RUN_ID_ALPHABET = "23456789abcdefghijkmnpqrstuvwxyz"
"""Lowercase letters and digits without 0/o and 1/l, so an id read aloud or retyped survives."""
RUN_ID_LENGTH = 10
DEDUPE_TTL = timedelta(days=1)
FINAL = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)

_ORIGIN_COLUMNS = {
    "platform": "platform",
    "workspace": "workspace",
    "channel": "channel",
    "thread": "thread",
    "user": "user_id",
    "user_name": "user_name",
}
"""Origin field -> runs column."""
_SELECT_RUNS = "SELECT * FROM runs"
_INSERT_RUN = f"""
    INSERT INTO runs (
        run_id, {", ".join(_ORIGIN_COLUMNS.values())}, topic, mode, status, created_at,
        owner, lease_until, language, depth, parent_run_id
    ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_INSERT_EVENT = """
    INSERT INTO events (run_id, seq, kind, payload, at)
    SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ? FROM events WHERE run_id = ?
"""
_ADD_USAGE = """
    UPDATE runs SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
        cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,
        cost_usd = cost_usd + ?, cost_known = cost_known AND ?
    WHERE run_id = ?
"""
_UPSERT_REPORT = """
    INSERT INTO reports (run_id, title, tldr, markdown, report_json, created_at)
    VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (run_id) DO UPDATE SET title = excluded.title, tldr = excluded.tldr,
        markdown = excluded.markdown, report_json = excluded.report_json,
        created_at = excluded.created_at
"""
_FINISH_RUN = """
    UPDATE runs SET status = ?, termination_reason = ?, error = ?, finished_at = ?,
        owner = NULL, lease_until = NULL
    WHERE run_id = ?
"""
_USAGE = """
    SELECT platform, workspace, substr(created_at, 1, 10) AS day, user_id AS user,
        MAX(user_name) AS user_name, COUNT(*) AS runs, SUM(cost_usd) AS cost_usd,
        SUM(cost_known = 0) AS unpriced
    FROM runs WHERE created_at >= ?{where}
    GROUP BY platform, workspace, day, user_id ORDER BY platform, workspace, day, user_id
"""
_CLAIM_RUN = """
    UPDATE runs SET owner = ?, lease_until = ? WHERE run_id = ? AND owner IS ? AND status IN (?, ?, ?)
"""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    # One fixed format, so text order is time order in the indexes and in ORDER BY.
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _new_run_id() -> str:
    return "".join(secrets.choice(RUN_ID_ALPHABET) for _ in range(RUN_ID_LENGTH))


def _clean_id(run_id: str) -> str:
    """People paste ids with spaces around them or in capitals."""
    return run_id.strip().lower()


def _record(row: sqlite3.Row) -> RunRecord:
    data = dict(zip(row.keys(), row, strict=True))
    origin = {field: data.pop(column) for field, column in _ORIGIN_COLUMNS.items()}
    if not data.pop("cost_known"):
        data["cost_usd"] = None
    return RunRecord.model_validate({**data, "origin": origin})


def _scope(platform: str | None, workspace: str | None) -> tuple[str, list[str]]:
    """Extra `AND` clauses (fixed text, values bound) for history scoped to a place."""
    wanted = {"platform": platform, "workspace": workspace}
    given = {column: value for column, value in wanted.items() if value is not None}
    return "".join(f" AND {column} = ?" for column in given), list(given.values())


class Store:
    """The runs database. Reads and short write transactions, each run whole on the DB thread."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._now = clock

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        clock: Clock | None = None,
        readonly: bool = False,
        busy_timeout_s: float = 15.0,
    ) -> Store:
        """Read-only stores (history, show) never take the write lock nor touch the file."""
        db = await Database.open(path, MIGRATIONS, readonly=readonly, busy_timeout_s=busy_timeout_s)
        return cls(db, clock or _utcnow)

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        path: str | Path,
        *,
        clock: Clock | None = None,
        readonly: bool = False,
        busy_timeout_s: float = 15.0,
    ) -> AsyncIterator[Store]:
        store = await cls.open(path, clock=clock, readonly=readonly, busy_timeout_s=busy_timeout_s)
        try:
            yield store
        finally:
            await store.close()

    async def close(self) -> None:
        await self._db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def now(self) -> datetime:
        return self._now()

    async def _exec(self, sql: str, params: Sequence[Any]) -> int:
        """One statement in its own write transaction; returns the number of rows it changed."""
        return await self._db.write(lambda conn: conn.execute(sql, params).rowcount)

    async def _update_run(self, run_id: str, sets: str, params: Sequence[Any]) -> None:
        if not await self._exec(f"UPDATE runs SET {sets} WHERE run_id = ?", (*params, run_id)):
            raise NotFoundError(f"No run {run_id} here.")

    async def create_run(
        self, request: Request, *, owner: str | None = None, lease_until: datetime | None = None
    ) -> RunRecord:
        origin = [getattr(request.origin, field) for field in _ORIGIN_COLUMNS]
        rest = [request.topic, request.mode.value, RunStatus.QUEUED.value, _iso(self._now())]
        lease = _iso(lease_until) if lease_until else None
        tail = (owner, lease, request.language, request.depth.value, request.parent_run_id)

        def work(conn: sqlite3.Connection) -> str:
            run_id = _new_run_id()
            while conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                run_id = _new_run_id()
            conn.execute(_INSERT_RUN, (run_id, *origin, *rest, *tail))
            return run_id

        return await self.get_run(await self._db.write(work))

    async def set_location(self, run_id: str, *, channel: str, thread: str) -> None:
        await self._update_run(run_id, "channel = ?, thread = ?", (channel, thread))

    async def mark_running(self, run_id: str) -> None:
        now = _iso(self._now())
        await self._update_run(run_id, "status = ?, started_at = ?", (RunStatus.RUNNING.value, now))

    async def claim_run(
        self, run_id: str, *, seen_owner: str | None, owner: str, lease_until: datetime
    ) -> bool:
        """Take over an unfinished run, only if its owner is still the one we judged gone (so
        two processes never both take it)."""
        unfinished = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)
        params = (owner, _iso(lease_until), run_id, seen_owner, *(s.value for s in unfinished))
        return await self._exec(_CLAIM_RUN, params) == 1

    async def renew_leases(self, owner: str, lease_until: datetime) -> int:
        sql = "UPDATE runs SET lease_until = ? WHERE owner = ? AND status IN (?, ?)"
        statuses = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)
        return await self._exec(sql, (_iso(lease_until), owner, *statuses))

    async def leave_run(self, run_id: str, status: RunStatus, *, error: str | None = None) -> None:
        """Give a run up for another process to finish: still queued, or interrupted."""
        sets = "status = ?, error = ?, owner = NULL, lease_until = NULL"
        await self._update_run(run_id, sets, (status.value, error))

    async def finish_run(
        self,
        run_id: str,
        *,
        status: RunStatus,
        ending: str | None,
        error: str | None = None,
        report: tuple[Report, str] | None = None,
        revision: tuple[Report, str] | None = None,
    ) -> int | None:
        """The ending, and the report with its Markdown, in one transaction. A follow-up's
        `revision` becomes the next report version of the run it asked about: its number is
        returned (None without one)."""
        now = _iso(self._now())

        def work(conn: sqlite3.Connection) -> tuple[int, int | None]:
            if report is not None:
                document, markdown = report
                row = (document.title, document.tldr, markdown, document.model_dump_json(), now)
                conn.execute(_UPSERT_REPORT, (run_id, *row))
                if document.support is not None:
                    _write_claims(conn, run_id, document.support)
            version = add_version(conn, run_id, revision, now) if revision is not None else None
            changed = conn.execute(_FINISH_RUN, (status.value, ending, error, now, run_id))
            return changed.rowcount, version

        changed, version = await self._db.write(work)
        if not changed:
            raise NotFoundError(f"No run {run_id} here.")
        return version

    async def mark_delivered(self, run_id: str) -> None:
        await self._update_run(run_id, "delivered_at = ?", (_iso(self._now()),))

    async def undelivered_runs(self, *, since: datetime) -> list[RunRecord]:
        """Runs that ended after `since` whose outcome never reached their front end."""
        marks = ", ".join("?" * len(FINAL))
        sql = (
            f"{_SELECT_RUNS} WHERE delivered_at IS NULL AND status IN ({marks}) "
            "AND finished_at >= ? ORDER BY finished_at, rowid"
        )
        rows = await self._db.read(sql, (*(s.value for s in FINAL), _iso(since)))
        return [_record(row) for row in rows]

    async def append_event(self, run_id: str, event: Event) -> None:
        row = (run_id, event.kind, EVENT_ADAPTER.dump_json(event).decode(), _iso(event.at), run_id)

        def work(conn: sqlite3.Connection) -> None:
            if not conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                raise NotFoundError(f"No run {run_id} here.")
            conn.execute(_INSERT_EVENT, row)
            if isinstance(event, UsageRecorded):
                use = event.usage
                known = use.cost_usd is not None
                counts = (use.input_tokens, use.output_tokens, use.cache_read_tokens)
                cost = (use.cost_usd or 0.0, known)
                conn.execute(_ADD_USAGE, (*counts, use.cache_write_tokens, *cost, run_id))
            elif isinstance(event, TurnStarted) and event.agent:
                # A deep run's researchers count their own turns: the run's count is their sum.
                conn.execute("UPDATE runs SET turns = turns + 1 WHERE run_id = ?", (run_id,))
            elif isinstance(event, TurnStarted):
                sql = "UPDATE runs SET turns = MAX(turns, ?) WHERE run_id = ?"
                conn.execute(sql, (event.turn, run_id))
            elif isinstance(event, RunFinished):
                sql = "UPDATE runs SET turns = MAX(turns, ?) WHERE run_id = ?"
                conn.execute(sql, (event.turns, run_id))

        # Group commit: the events of concurrent runs share transactions; this returns once
        # this event is committed, so it is still stored before anyone hears it.
        await self._db.write_grouped(work)

    async def get_run(
        self, run_id: str, *, platform: str | None = None, workspace: str | None = None
    ) -> RunRecord:
        wanted = _clean_id(run_id)
        where, params = _scope(platform, workspace)
        rows = await self._db.read(f"{_SELECT_RUNS} WHERE run_id = ?{where}", (wanted, *params))
        if not rows:
            raise NotFoundError(f"No run {wanted} here.")
        return _record(rows[0])

    async def list_runs(
        self,
        *,
        platform: str | None = None,
        workspace: str | None = None,
        limit: int = 20,
        top_level: bool = False,
    ) -> list[RunRecord]:
        """Newest first; `top_level`: without follow-ups (`follow_ups_of` gives them)."""
        where, params = _scope(platform, workspace)
        if top_level:
            where += " AND parent_run_id IS NULL"
        order = "ORDER BY created_at DESC, rowid DESC LIMIT ?"
        rows = await self._db.read(f"{_SELECT_RUNS} WHERE 1{where} {order}", (*params, limit))
        return [_record(row) for row in rows]

    async def run_in_thread(
        self, thread: str, *, platform: str, workspace: str, channel: str | None = None
    ) -> RunRecord | None:
        """The run (not a follow-up) whose thread this is, in that workspace; None if none."""
        where, params = _scope(platform, workspace)
        if channel is not None:
            where += " AND channel = ?"
            params = [*params, channel]
        sql = (
            f"{_SELECT_RUNS} WHERE thread = ?{where} AND parent_run_id IS NULL "
            "ORDER BY created_at DESC, rowid DESC LIMIT 1"
        )
        rows = await self._db.read(sql, (thread, *params))
        return _record(rows[0]) if rows else None

    async def runs_with_status(self, *statuses: RunStatus) -> list[RunRecord]:
        marks = ", ".join("?" * len(statuses))
        sql = f"{_SELECT_RUNS} WHERE status IN ({marks}) ORDER BY created_at, rowid"
        return [_record(row) for row in await self._db.read(sql, [s.value for s in statuses])]

    async def spent_since(self, platform: str, workspace: str, since: datetime) -> float:
        """What the runs started in a workspace since `since` have cost so far (runs in progress
        included; of a run with an unpriced model, its priced calls)."""
        sql = (
            "SELECT COALESCE(SUM(cost_usd), 0) AS spent FROM runs "
            "WHERE platform = ? AND workspace = ? AND created_at >= ?"
        )
        rows = await self._db.read(sql, (platform, workspace, _iso(since)))
        return float(rows[0]["spent"])

    async def started_after(
        self, platform: str, workspace: str, user: str, after: datetime
    ) -> list[datetime]:
        """When one person's runs in a workspace created after `after` were, oldest first."""
        sql = (
            "SELECT created_at FROM runs WHERE platform = ? AND workspace = ? AND user_id = ? "
            "AND created_at > ? ORDER BY created_at"
        )
        rows = await self._db.read(sql, (platform, workspace, user, _iso(after)))
        return [datetime.fromisoformat(row["created_at"]) for row in rows]

    async def usage(
        self, *, since: datetime, platform: str | None = None, workspace: str | None = None
    ) -> list[UsageRow]:
        """Runs and spend per workspace, UTC day and person since `since` (every workspace
        unless one is named)."""
        where, params = _scope(platform, workspace)
        rows = await self._db.read(_USAGE.format(where=where), (_iso(since), *params))
        return [UsageRow.model_validate(dict(zip(row.keys(), row, strict=True))) for row in rows]

    async def events(self, run_id: str) -> list[Event]:
        sql = "SELECT payload FROM events WHERE run_id = ? ORDER BY seq"
        rows = await self._db.read(sql, (_clean_id(run_id),))
        return [EVENT_ADAPTER.validate_json(row["payload"]) for row in rows]

    async def report(self, run_id: str) -> tuple[Report, str] | None:
        """The run's report as it stands: its newest version when follow-ups revised it."""
        latest = await self.latest_report(run_id)
        return None if latest is None else latest[1:]

    async def latest_report(self, run_id: str) -> tuple[int, Report, str] | None:
        """(version, report, markdown) of the run's newest report version; 1 is the original."""
        wanted = _clean_id(run_id)
        return await self._db.run(lambda conn: latest_report(conn, wanted))

    async def follow_ups(self, run_id: str) -> list[RunRecord]:
        """The follow-up runs asked about `run_id`, oldest first."""
        return [_record(row) for row in await self._db.read(FOLLOW_UPS, (_clean_id(run_id),))]

    async def follow_ups_of(self, run_ids: Sequence[str]) -> dict[str, list[RunRecord]]:
        """The follow-ups of each of `run_ids` (history shows them under their run)."""
        found: dict[str, list[RunRecord]] = {run_id: [] for run_id in run_ids}
        if run_ids:
            sql = CHILDREN_OF.format(marks=", ".join("?" * len(run_ids)))
            for row in await self._db.read(sql, list(run_ids)):
                record = _record(row)
                found[str(record.parent_run_id)].append(record)
        return found

    async def version_made_by(self, run_id: str) -> tuple[int, str] | None:
        """(version, markdown) of the report version the follow-up `run_id` made, if any."""
        wanted = _clean_id(run_id)
        return await self._db.run(lambda conn: version_made_by(conn, wanted))

    async def claim(self, key: str) -> bool:
        """A dedupe key, once: False when it was claimed before (within a day)."""
        now = self._now()

        def work(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM dedupe WHERE created_at < ?", (_iso(now - DEDUPE_TTL),))
            sql = "INSERT OR IGNORE INTO dedupe (key, created_at) VALUES (?, ?)"
            return conn.execute(sql, (key, _iso(now))).rowcount == 1

        return await self._db.write(work)

    async def save_claims(self, run_id: str, support: Support) -> None:
        """A run's measured claims, replacing any stored before (`finish_run` does this too)."""
        await self._db.write(lambda conn: _write_claims(conn, _clean_id(run_id), support))

    async def claims(self, run_id: str) -> list[Claim]:
        """A run's cited claims with their verdicts, in report order ([] when not measured)."""
        sql = "SELECT sentence, sources, verdict, method, note FROM claims WHERE run_id = ? ORDER BY n"
        return [_claim(row) for row in await self._db.read(sql, (_clean_id(run_id),))]

    async def claim_counts(self) -> dict[str, dict[Verdict, int]]:
        """For every run with measured claims: how many got each verdict."""
        sql = "SELECT run_id, verdict, COUNT(*) AS n FROM claims GROUP BY run_id, verdict"
        counts: dict[str, dict[Verdict, int]] = {}
        for row in await self._db.read(sql, ()):
            counts.setdefault(row["run_id"], {})[Verdict(row["verdict"])] = row["n"]
        return counts


def _claim(row: sqlite3.Row) -> Claim:
    return Claim(
        sentence=row["sentence"],
        sources=json.loads(row["sources"]),
        verdict=Verdict(row["verdict"]),
        method=row["method"],
        note=row["note"],
    )


def _write_claims(conn: sqlite3.Connection, run_id: str, support: Support) -> None:
    conn.execute("DELETE FROM claims WHERE run_id = ?", (run_id,))
    conn.executemany(
        "INSERT INTO claims (run_id, n, sentence, sources, verdict, method, note) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (run_id, n, c.sentence, json.dumps(c.sources), c.verdict.value, c.method, c.note)
            for n, c in enumerate(support.claims, start=1)
        ],
    )
