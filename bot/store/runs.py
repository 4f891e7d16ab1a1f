"""The runs queries (the schema: bot/store/schema.py): runs with their owner's lease and
delivery, the append-only event log, reports, dedupe keys, claims, and spend and run counts for
the cost controls. The statements and row shapes are in bot/store/rows.py, the follow-up and
report-version queries in bot/store/followups.py; bot/store/connection.py runs them."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.agent.events import EVENT_ADAPTER, Event, RunFinished, TurnStarted, UsageRecorded
from bot.agent.report.model import Report
from bot.agent.report.support import Claim, Support, Verdict
from bot.domain import Request, RunRecord, RunStatus
from bot.errors import NotFoundError
from bot.store.connection import Database
from bot.store.followups import FollowUpQueries, add_version
from bot.store.rows import (
    ADD_USAGE,
    CLAIM_RUN,
    DEDUPE_TTL,
    FINAL,
    FINISH_RUN,
    INSERT_EVENT,
    INSERT_RUN,
    ORIGIN_COLUMNS,
    SELECT_RUNS,
    UPSERT_REPORT,
    USAGE,
    Clock,
    claim_row,
    clean_id,
    iso,
    new_run_id,
    run_record,
    scope,
    utcnow,
    write_claims,
)
from bot.store.schema import MIGRATIONS
from bot.store.usage import UsageRow


class Store(FollowUpQueries):
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
        return cls(db, clock or utcnow)

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
        origin = [getattr(request.origin, field) for field in ORIGIN_COLUMNS]
        rest = [request.topic, request.mode.value, RunStatus.QUEUED.value, iso(self._now())]
        lease = iso(lease_until) if lease_until else None
        tail = (owner, lease, request.language, request.depth.value, request.parent_run_id)

        def work(conn: sqlite3.Connection) -> str:
            run_id = new_run_id()
            while conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                run_id = new_run_id()
            conn.execute(INSERT_RUN, (run_id, *origin, *rest, *tail))
            return run_id

        return await self.get_run(await self._db.write(work))

    async def set_location(self, run_id: str, *, channel: str, thread: str) -> None:
        await self._update_run(run_id, "channel = ?, thread = ?", (channel, thread))

    async def mark_running(self, run_id: str) -> None:
        now = iso(self._now())
        await self._update_run(run_id, "status = ?, started_at = ?", (RunStatus.RUNNING.value, now))

    async def claim_run(
        self, run_id: str, *, seen_owner: str | None, owner: str, lease_until: datetime
    ) -> bool:
        """Take over an unfinished run, only if its owner is still the one we judged gone (so
        two processes never both take it)."""
        unfinished = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)
        params = (owner, iso(lease_until), run_id, seen_owner, *(s.value for s in unfinished))
        return await self._exec(CLAIM_RUN, params) == 1

    async def renew_leases(self, owner: str, lease_until: datetime) -> int:
        sql = "UPDATE runs SET lease_until = ? WHERE owner = ? AND status IN (?, ?)"
        statuses = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)
        return await self._exec(sql, (iso(lease_until), owner, *statuses))

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
        now = iso(self._now())

        def work(conn: sqlite3.Connection) -> tuple[int, int | None]:
            if report is not None:
                document, markdown = report
                row = (document.title, document.tldr, markdown, document.model_dump_json(), now)
                conn.execute(UPSERT_REPORT, (run_id, *row))
                if document.support is not None:
                    write_claims(conn, run_id, document.support)
            version = add_version(conn, run_id, revision, now) if revision is not None else None
            changed = conn.execute(FINISH_RUN, (status.value, ending, error, now, run_id))
            return changed.rowcount, version

        changed, version = await self._db.write(work)
        if not changed:
            raise NotFoundError(f"No run {run_id} here.")
        return version

    async def mark_delivered(self, run_id: str) -> None:
        await self._update_run(run_id, "delivered_at = ?", (iso(self._now()),))

    async def undelivered_runs(self, *, since: datetime) -> list[RunRecord]:
        """Runs that ended after `since` whose outcome never reached their front end."""
        marks = ", ".join("?" * len(FINAL))
        sql = (
            f"{SELECT_RUNS} WHERE delivered_at IS NULL AND status IN ({marks}) "
            "AND finished_at >= ? ORDER BY finished_at, rowid"
        )
        rows = await self._db.read(sql, (*(s.value for s in FINAL), iso(since)))
        return [run_record(row) for row in rows]

    async def append_event(self, run_id: str, event: Event) -> None:
        row = (run_id, event.kind, EVENT_ADAPTER.dump_json(event).decode(), iso(event.at), run_id)

        def work(conn: sqlite3.Connection) -> None:
            if not conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                raise NotFoundError(f"No run {run_id} here.")
            conn.execute(INSERT_EVENT, row)
            if isinstance(event, UsageRecorded):
                use = event.usage
                known = use.cost_usd is not None
                counts = (use.input_tokens, use.output_tokens, use.cache_read_tokens)
                cost = (use.cost_usd or 0.0, known)
                conn.execute(ADD_USAGE, (*counts, use.cache_write_tokens, *cost, run_id))
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
        wanted = clean_id(run_id)
        where, params = scope(platform, workspace)
        rows = await self._db.read(f"{SELECT_RUNS} WHERE run_id = ?{where}", (wanted, *params))
        if not rows:
            raise NotFoundError(f"No run {wanted} here.")
        return run_record(rows[0])

    async def list_runs(
        self,
        *,
        platform: str | None = None,
        workspace: str | None = None,
        limit: int = 20,
        top_level: bool = False,
    ) -> list[RunRecord]:
        """Newest first; `top_level`: without follow-ups (`follow_ups_of` gives them)."""
        where, params = scope(platform, workspace)
        if top_level:
            where += " AND parent_run_id IS NULL"
        order = "ORDER BY created_at DESC, rowid DESC LIMIT ?"
        rows = await self._db.read(f"{SELECT_RUNS} WHERE 1{where} {order}", (*params, limit))
        return [run_record(row) for row in rows]

    async def run_in_thread(
        self, thread: str, *, platform: str, workspace: str, channel: str | None = None
    ) -> RunRecord | None:
        """The run (not a follow-up) whose thread this is, in that workspace; None if none."""
        where, params = scope(platform, workspace)
        if channel is not None:
            where += " AND channel = ?"
            params = [*params, channel]
        sql = (
            f"{SELECT_RUNS} WHERE thread = ?{where} AND parent_run_id IS NULL "
            "ORDER BY created_at DESC, rowid DESC LIMIT 1"
        )
        rows = await self._db.read(sql, (thread, *params))
        return run_record(rows[0]) if rows else None

    async def runs_with_status(self, *statuses: RunStatus) -> list[RunRecord]:
        marks = ", ".join("?" * len(statuses))
        sql = f"{SELECT_RUNS} WHERE status IN ({marks}) ORDER BY created_at, rowid"
        return [run_record(row) for row in await self._db.read(sql, [s.value for s in statuses])]

    async def spent_since(self, platform: str, workspace: str, since: datetime) -> float:
        """What the runs started in a workspace since `since` have cost so far (runs in progress
        included; of a run with an unpriced model, its priced calls)."""
        sql = (
            "SELECT COALESCE(SUM(cost_usd), 0) AS spent FROM runs "
            "WHERE platform = ? AND workspace = ? AND created_at >= ?"
        )
        rows = await self._db.read(sql, (platform, workspace, iso(since)))
        return float(rows[0]["spent"])

    async def started_after(
        self, platform: str, workspace: str, user: str, after: datetime
    ) -> list[datetime]:
        """When one person's runs in a workspace created after `after` were, oldest first."""
        sql = (
            "SELECT created_at FROM runs WHERE platform = ? AND workspace = ? AND user_id = ? "
            "AND created_at > ? ORDER BY created_at"
        )
        rows = await self._db.read(sql, (platform, workspace, user, iso(after)))
        return [datetime.fromisoformat(row["created_at"]) for row in rows]

    async def usage(
        self, *, since: datetime, platform: str | None = None, workspace: str | None = None
    ) -> list[UsageRow]:
        """Runs and spend per workspace, UTC day and person since `since` (every workspace
        unless one is named)."""
        where, params = scope(platform, workspace)
        rows = await self._db.read(USAGE.format(where=where), (iso(since), *params))
        return [UsageRow.model_validate(dict(zip(row.keys(), row, strict=True))) for row in rows]

    async def events(self, run_id: str) -> list[Event]:
        sql = "SELECT payload FROM events WHERE run_id = ? ORDER BY seq"
        rows = await self._db.read(sql, (clean_id(run_id),))
        return [EVENT_ADAPTER.validate_json(row["payload"]) for row in rows]

    async def report(self, run_id: str) -> tuple[Report, str] | None:
        """The run's report as it stands: its newest version when follow-ups revised it."""
        latest = await self.latest_report(run_id)
        return None if latest is None else latest[1:]

    async def claim(self, key: str) -> bool:
        """A dedupe key, once: False when it was claimed before (within a day)."""
        now = self._now()

        def work(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM dedupe WHERE created_at < ?", (iso(now - DEDUPE_TTL),))
            sql = "INSERT OR IGNORE INTO dedupe (key, created_at) VALUES (?, ?)"
            return conn.execute(sql, (key, iso(now))).rowcount == 1

        return await self._db.write(work)

    async def save_claims(self, run_id: str, support: Support) -> None:
        """A run's measured claims, replacing any stored before (`finish_run` does this too)."""
        await self._db.write(lambda conn: write_claims(conn, clean_id(run_id), support))

    async def claims(self, run_id: str) -> list[Claim]:
        """A run's cited claims with their verdicts, in report order ([] when not measured)."""
        sql = "SELECT sentence, sources, verdict, method, note FROM claims WHERE run_id = ? ORDER BY n"
        return [claim_row(row) for row in await self._db.read(sql, (clean_id(run_id),))]

    async def claim_counts(self) -> dict[str, dict[tuple[Verdict, str], int]]:
        """For every run with measured claims: how many got each (verdict, method)."""
        sql = (
            "SELECT run_id, verdict, method, COUNT(*) AS n FROM claims "
            "GROUP BY run_id, verdict, method"
        )
        counts: dict[str, dict[tuple[Verdict, str], int]] = {}
        for row in await self._db.read(sql, ()):
            counts.setdefault(row["run_id"], {})[(Verdict(row["verdict"]), row["method"])] = row[
                "n"
            ]
        return counts

    async def uncited_counts(self) -> dict[str, int]:
        """For every run whose report marked statements that lost their citations: how many."""
        sql = (
            "SELECT run_id, json_extract(report_json, '$.support.unverified') AS n FROM reports "
            "WHERE json_extract(report_json, '$.support.unverified') > 0"
        )
        return {row["run_id"]: int(row["n"]) for row in await self._db.read(sql, ())}
