"""The store: runs with their owner's lease and delivery, the append-only event log, reports,
dedupe keys and claims, on SQLite or PostgreSQL (the schema: bot/store/schema.py). This module
writes a run's life; the reads are in bot/store/history.py and bot/store/followups.py, search in
bot/store/search.py, the row shapes in bot/store/rows.py; bot/store/connection.py picks the
engine that runs them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Text,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)

from bot.agent.events import EVENT_ADAPTER, Event
from bot.agent.report.model import Report
from bot.agent.report.support import Support
from bot.domain import Request, RunRecord, RunStatus
from bot.errors import NotFoundError
from bot.store.connection import Database, open_database
from bot.store.followups import FollowUpQueries, add_version
from bot.store.history import HistoryQueries
from bot.store.identities import IdentityQueries
from bot.store.rows import (
    DEDUPE_TTL,
    ORIGIN_COLUMNS,
    Clock,
    clean_id,
    insert_new,
    iso,
    new_run_id,
    run_record,
    utcnow,
    write_claims,
)
from bot.store.schema import DEDUPE, EVENTS, REPORTS, RUNS
from bot.store.search import SearchQueries
from bot.store.shared import SharedQueries
from bot.store.tallies import count_event
from bot.store.watches import WatchQueries


class Store(
    HistoryQueries, FollowUpQueries, SharedQueries, IdentityQueries, SearchQueries, WatchQueries
):
    """The runs database: reads, and short write transactions each run whole."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._now = clock

    @classmethod
    async def open(
        cls,
        target: str | Path,
        *,
        clock: Clock | None = None,
        readonly: bool = False,
        busy_timeout_s: float = 15.0,
    ) -> Store:
        """A SQLite file, or a `postgresql://` URL. Read-only stores (history, show) never
        take the write lock nor touch the file."""
        db = await open_database(target, readonly=readonly, busy_timeout_s=busy_timeout_s)
        return cls(db, clock or utcnow)

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        target: str | Path,
        *,
        clock: Clock | None = None,
        readonly: bool = False,
        busy_timeout_s: float = 15.0,
    ) -> AsyncIterator[Store]:
        store = await cls.open(
            target, clock=clock, readonly=readonly, busy_timeout_s=busy_timeout_s
        )
        try:
            yield store
        finally:
            await store.close()

    @property
    def database(self) -> Database:
        return self._db

    async def close(self) -> None:
        await self._db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def now(self) -> datetime:
        return self._now()

    async def _update_run(self, run_id: str, values: Mapping[str, Any]) -> None:
        statement = update(RUNS).where(RUNS.c.run_id == run_id).values(**values)
        if not await self._db.write(lambda conn: conn.execute(statement).rowcount):
            raise NotFoundError(f"No run {run_id} here.")

    async def create_run(
        self,
        request: Request,
        *,
        owner: str | None = None,
        lease_until: datetime | None = None,
        asked_at: datetime | None = None,
    ) -> RunRecord:
        """The run, stored queued, as read back. `asked_at` (default: now) orders the line: the
        moment it was asked for, not when this write got its turn."""
        values = {
            column: getattr(request.origin, field) for field, column in ORIGIN_COLUMNS.items()
        }
        values |= {
            "topic": request.topic,
            "mode": request.mode.value,
            "status": RunStatus.QUEUED.value,
            "created_at": iso(asked_at or self._now()),
            "owner": owner,
            "lease_until": iso(lease_until) if lease_until else None,
            "language": request.language,
            "depth": request.depth.value,
            "parent_run_id": request.parent_run_id,
            "watch_id": request.watch_id,
        }

        def work(conn: Connection) -> RunRecord:
            run_id = new_run_id()
            while conn.execute(_RUN_ID_TAKEN, {"run_id": run_id}).first():
                run_id = new_run_id()
            return run_record(conn.execute(_CREATE_RUN, {"run_id": run_id, **values}).one())

        # Grouped, and read back in the same transaction: a hundred runs asked for at once
        # share a commit, and none waits for a second round trip.
        return await self._db.write_grouped(work)

    async def set_location(self, run_id: str, *, channel: str, thread: str) -> None:
        await self._update_run(run_id, {"channel": channel, "thread": thread})

    async def mark_running(self, run_id: str) -> RunRecord:
        """The run as it now is, running (one round trip: its start waits for it)."""
        now = iso(self._now())
        statement = (
            update(RUNS)
            .where(RUNS.c.run_id == run_id)
            .values(status=RunStatus.RUNNING.value, started_at=now)
            .returning(*RUNS.c)
        )
        row = await self._db.write(lambda conn: conn.execute(statement).first())
        if row is None:
            raise NotFoundError(f"No run {run_id} here.")
        return run_record(row)

    async def claim_run(
        self, run_id: str, *, seen_owner: str | None, owner: str, lease_until: datetime
    ) -> bool:
        """Take over a run not yet delivered (unfinished, or ended with its outcome still to
        tell), only if its owner is still the one we judged gone: two replicas never both
        take it."""
        statement = (
            update(RUNS)
            .where(
                RUNS.c.run_id == run_id,
                RUNS.c.owner.is_not_distinct_from(seen_owner),
                RUNS.c.delivered_at.is_(None),
            )
            .values(owner=owner, lease_until=iso(lease_until))
        )
        return await self._db.write(lambda conn: conn.execute(statement).rowcount) == 1

    async def renew_leases(self, owner: str, lease_until: datetime) -> int:
        """The owner is alive: its runs (until their outcome is delivered) stay its own."""
        statement = (
            update(RUNS)
            .where(RUNS.c.owner == owner, RUNS.c.delivered_at.is_(None))
            .values(lease_until=iso(lease_until))
        )
        return await self._db.write(lambda conn: conn.execute(statement).rowcount)

    async def leave_run(self, run_id: str, status: RunStatus, *, error: str | None = None) -> None:
        """Give a run up for another process to finish: still queued, or interrupted."""
        values = {"status": status.value, "error": error, "owner": None, "lease_until": None}
        await self._update_run(run_id, values)

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
        finished = {
            "status": status.value,
            "termination_reason": ending,
            "error": error,
            "finished_at": now,
        }  # the owner keeps it until the outcome is delivered (`mark_delivered`)

        def work(conn: Connection) -> tuple[int, int | None]:
            if report is not None:
                document, markdown = report
                conn.execute(delete(REPORTS).where(REPORTS.c.run_id == run_id))
                row = {"title": document.title, "tldr": document.tldr, "markdown": markdown}
                saved = {"report_json": document.model_dump_json(), "created_at": now}
                conn.execute(insert(REPORTS).values(run_id=run_id, **row, **saved))
                if document.support is not None:
                    write_claims(conn, run_id, document.support)
            version = add_version(conn, run_id, revision, now) if revision is not None else None
            statement = update(RUNS).where(RUNS.c.run_id == run_id).values(**finished)
            return conn.execute(statement).rowcount, version

        changed, version = await self._db.write(work)
        if not changed:
            raise NotFoundError(f"No run {run_id} here.")
        return version

    async def mark_report_posted(self, run_id: str) -> None:
        """The summary and the report are in the run's thread; only the last status edit and
        `mark_delivered` are left."""
        await self._update_run(run_id, {"report_posted_at": iso(self._now())})

    async def mark_delivered(self, run_id: str) -> None:
        delivered = {"delivered_at": iso(self._now()), "owner": None, "lease_until": None}
        await self._update_run(run_id, delivered)

    async def append_event(self, run_id: str, event: Event) -> None:
        payload = EVENT_ADAPTER.dump_json(event).decode()

        def work(conn: Connection) -> None:
            if conn.execute(_LOCK_RUN, {"run_id": run_id}).first() is None:
                raise NotFoundError(f"No run {run_id} here.")
            row = {"run_id": run_id, "kind": event.kind, "payload": payload, "at": iso(event.at)}
            conn.execute(_APPEND_EVENT, row)
            count_event(conn, run_id, event)

        # Group commit: the events of concurrent runs share transactions; this returns once
        # this event is committed, so it is still stored before anyone hears it.
        await self._db.write_grouped(work)

    async def claim(self, key: str) -> bool:
        """A dedupe key, once: False when it was claimed before (within a day)."""
        now = self._now()

        def work(conn: Connection) -> bool:
            conn.execute(delete(DEDUPE).where(DEDUPE.c.created_at < iso(now - DEDUPE_TTL)))
            return insert_new(conn, DEDUPE, {"key": key, "created_at": iso(now)})

        return await self._db.write(work)

    async def save_claims(self, run_id: str, support: Support) -> None:
        """A run's measured claims, replacing any stored before (`finish_run` does this too)."""
        await self._db.write(lambda conn: write_claims(conn, clean_id(run_id), support))


_RUN_ID_TAKEN = select(RUNS.c.run_id).where(RUNS.c.run_id == bindparam("run_id"))
_CREATED_COLUMNS = [
    "run_id",
    *ORIGIN_COLUMNS.values(),
    *("topic", "mode", "status", "created_at", "owner", "lease_until", "language", "depth"),
    *("parent_run_id", "watch_id"),
]
_CREATE_RUN = (
    insert(RUNS)
    .values(
        {name: bindparam(name) for name in _CREATED_COLUMNS}
        | {
            "created_seq": select(
                func.coalesce(func.max(RUNS.c.created_seq), 0) + 1
            ).scalar_subquery()
        }
    )
    .returning(*RUNS.c)
)
"""A new run, numbered after every other, read back: built once, as the event statements are."""

# The two statements every event runs, built once: a statement built per event costs more than
# SQLite takes to run it (`bench.loop_overhead`).
_LOCK_RUN = select(RUNS.c.run_id).where(RUNS.c.run_id == bindparam("run_id")).with_for_update()
"""The run's row locked (PostgreSQL; SQLite's write lock already is one), so two appends to one
run never take the same next number."""
_APPEND_EVENT = insert(EVENTS).from_select(
    ["run_id", "seq", "kind", "payload", "at"],
    select(
        bindparam("run_id", type_=Text),
        func.coalesce(func.max(EVENTS.c.seq), 0) + 1,
        bindparam("kind", type_=Text),
        bindparam("payload", type_=Text),
        bindparam("at", type_=Text),
    ).where(EVENTS.c.run_id == bindparam("run_id", type_=Text)),
)
