"""What replicas share through the database: the queue (a queued run claimed by one replica
with a free slot, `FOR UPDATE SKIP LOCKED` on PostgreSQL, SQLite's write lock otherwise), a
run's place in it, control pressed on any replica (summarize, cancel), and which replicas are
alive. A part of `Store` (bot/store/runs.py), which provides the database."""

from __future__ import annotations

import os
import socket
from collections.abc import Collection
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    delete,
    exists,
    func,
    or_,
    select,
    update,
)

from bot.domain import RunRecord, RunStatus
from bot.store.connection import Database
from bot.store.rows import insert_new, iso, records, run_record
from bot.store.schema import REPLICAS, RUNS

QUEUED = RunStatus.QUEUED.value


class Replica(BaseModel):
    replica_id: str
    host: str
    pid: int
    platforms: str
    started_at: datetime
    seen_at: datetime


def _unclaimed(platforms: Collection[str]) -> list[ColumnElement[bool]]:
    return [
        RUNS.c.status == QUEUED,
        RUNS.c.owner.is_(None),
        RUNS.c.platform.in_(sorted(platforms)),
    ]


def _sibling_taken(parent: ColumnElement[str] | str) -> ColumnElement[bool]:
    """Another follow-up of the same run is taken by some replica: follow-ups of one run are
    answered one at a time, wherever they run."""
    sibling = RUNS.alias("sibling")
    return exists().where(
        sibling.c.parent_run_id == parent,
        sibling.c.owner.is_not(None),
        sibling.c.status.in_([QUEUED, RunStatus.RUNNING.value]),
    )


class SharedQueries:
    _db: Database

    async def claim_next(
        self, owner: str, lease_until: datetime, platforms: Collection[str]
    ) -> RunRecord | None:
        """The oldest queued run nobody has claimed, now this replica's; None when none waits.
        Two replicas asking at once get two different runs (or one gets none)."""

        def work(conn: Connection) -> RunRecord | None:
            free = or_(RUNS.c.parent_run_id.is_(None), ~_sibling_taken(RUNS.c.parent_run_id))
            oldest = (
                select(RUNS.c.run_id, RUNS.c.parent_run_id)
                .where(*_unclaimed(platforms), free)
                .order_by(RUNS.c.created_at, RUNS.c.created_seq)
                .limit(1)
                .with_for_update(skip_locked=True, of=RUNS)
            )
            found = conn.execute(oldest).first()
            if found is None:
                return None
            run_id, parent = found
            if parent is not None:
                # Two replicas may pick two follow-ups of one run at once: the run's own row,
                # locked, lets only the first through.
                conn.execute(select(RUNS.c.run_id).where(RUNS.c.run_id == parent).with_for_update())
                if conn.execute(select(_sibling_taken(parent))).scalar():
                    return None
            taken = (
                update(RUNS)
                .where(RUNS.c.run_id == run_id, RUNS.c.owner.is_(None))
                .values(owner=owner, lease_until=iso(lease_until))
                .returning(*RUNS.c)
            )
            row = conn.execute(taken).first()
            return None if row is None else run_record(row)

        return await self._db.write(work)

    async def queue_position(
        self, run_id: str, platforms: Collection[str], *, reserved_by: str | None = None
    ) -> int | None:
        """1 for the next run to be claimed; None once it is claimed (or gone). `reserved_by`:
        the run is still held back by this owner, and counts as in line."""

        def work(conn: Connection) -> int | None:
            free: ColumnElement[bool] = RUNS.c.owner.is_(None)
            if reserved_by is not None:
                free = or_(free, RUNS.c.owner == reserved_by)
            mine = conn.execute(
                select(RUNS.c.created_at, RUNS.c.created_seq).where(
                    RUNS.c.run_id == run_id,
                    RUNS.c.status == QUEUED,
                    free,
                    RUNS.c.platform.in_(sorted(platforms)),
                )
            ).first()
            if mine is None:
                return None
            before = or_(
                RUNS.c.created_at < mine.created_at,
                and_(RUNS.c.created_at == mine.created_at, RUNS.c.created_seq < mine.created_seq),
            )
            ahead = select(func.count()).where(*_unclaimed(platforms), before)
            return int(conn.execute(ahead).scalar_one()) + 1

        return await self._db.read(work)

    async def request_control(self, run_id: str, action: str) -> RunRecord | None:
        """Record summarize or cancel for whichever replica runs (or will run) the run; the
        run as it is, or None when it has already ended."""
        unfinished = [QUEUED, RunStatus.RUNNING.value, RunStatus.INTERRUPTED.value]
        # A cancel is never downgraded to a summarize pressed after it.
        keep_cancel = or_(RUNS.c.control.is_(None), RUNS.c.control != "cancel")
        statement = (
            update(RUNS)
            .where(RUNS.c.run_id == run_id, RUNS.c.status.in_(unfinished), keep_cancel)
            .values(control=action)
        )

        def work(conn: Connection) -> RunRecord | None:
            conn.execute(statement)
            found = records(conn, select(RUNS).where(RUNS.c.run_id == run_id))
            if not found or found[0].status.value not in unfinished:
                return None
            return found[0]

        return await self._db.write(work)

    async def pending_control(self, run_id: str) -> str | None:
        query = select(RUNS.c.control).where(RUNS.c.run_id == run_id)
        return await self._db.read(lambda conn: conn.execute(query).scalar_one_or_none())

    async def beat(self, replica_id: str, platforms: Collection[str], now: datetime) -> None:
        """This replica is alive (and serves these platforms)."""
        served = ",".join(sorted(platforms))

        def work(conn: Connection) -> None:
            seen = {"seen_at": iso(now), "platforms": served}
            changed = conn.execute(
                update(REPLICAS).where(REPLICAS.c.replica_id == replica_id).values(**seen)
            ).rowcount
            if not changed:
                host, pid = socket.gethostname(), os.getpid()
                row = {"replica_id": replica_id, "host": host, "pid": pid, "started_at": iso(now)}
                insert_new(conn, REPLICAS, row | seen)

        await self._db.write(work)

    async def replicas(self, *, seen_since: datetime) -> list[Replica]:
        """The replicas that beat since `seen_since`, oldest first; older ones are forgotten."""

        def work(conn: Connection) -> list[Replica]:
            query = select(REPLICAS).where(REPLICAS.c.seen_at >= iso(seen_since))
            found = [Replica.model_validate(dict(row._mapping)) for row in conn.execute(query)]
            return sorted(found, key=lambda replica: replica.started_at)

        return await self._db.read(work)

    async def forget_replica(self, replica_id: str) -> None:
        statement = delete(REPLICAS).where(REPLICAS.c.replica_id == replica_id)
        await self._db.write(lambda conn: conn.execute(statement))
