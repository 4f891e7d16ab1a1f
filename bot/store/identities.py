"""The company each run researches: stored once it is settled, found again by a later run of
the same name in the same workspace, and a person's choice among namesakes recorded for
whichever replica runs the run. A part of `Store` (bot/store/runs.py), which provides the
database."""

from __future__ import annotations

from sqlalchemy import Connection, or_, select, update

from bot.domain import Identity, RunRecord, RunStatus
from bot.store.connection import Database
from bot.store.rows import NEWEST_FIRST, clean_id, records
from bot.store.schema import EVENTS, RUNS

OFFERED, SETTLED = "identity_offered", "identity_settled"


class IdentityQueries:
    _db: Database

    async def save_identity(self, run_id: str, identity: Identity, *, key: str | None) -> None:
        """The run's settled company; `key` (a normalised name) lets later runs of the
        workspace find it, None when it should not be reused."""
        statement = (
            update(RUNS)
            .where(RUNS.c.run_id == run_id)
            .values(identity=identity.model_dump_json(), identity_key=key)
        )
        await self._db.write(lambda conn: conn.execute(statement))

    async def identity_of(self, run_id: str) -> Identity | None:
        query = select(RUNS.c.identity).where(RUNS.c.run_id == clean_id(run_id))
        found = await self._db.read(lambda conn: conn.execute(query).scalar_one_or_none())
        return Identity.model_validate_json(found) if found else None

    async def earlier_identity(self, *, platform: str, workspace: str, key: str) -> Identity | None:
        """The newest identity a run of this name settled in this workspace, if any."""
        query = (
            select(RUNS.c.identity)
            .where(
                RUNS.c.platform == platform,
                RUNS.c.workspace == workspace,
                RUNS.c.identity_key == key,
                RUNS.c.identity.is_not(None),
            )
            .order_by(*NEWEST_FIRST)
            .limit(1)
        )
        found = await self._db.read(lambda conn: conn.execute(query).scalar_one_or_none())
        return Identity.model_validate_json(found) if found else None

    async def request_choice(self, run_id: str, action: str) -> RunRecord | None:
        """Record a person's choice (a `choose:` control action) for whichever replica runs
        the run, if it is waiting for one now: running, its last identity event an offer, and
        neither cancel nor summarize pressed. The run, or None when it is not waiting."""
        last = (
            select(EVENTS.c.kind)
            .where(EVENTS.c.run_id == run_id, EVENTS.c.kind.in_([OFFERED, SETTLED]))
            .order_by(EVENTS.c.seq.desc())
            .limit(1)
            .scalar_subquery()
        )
        statement = (
            update(RUNS)
            .where(
                RUNS.c.run_id == run_id,
                RUNS.c.status == RunStatus.RUNNING.value,
                or_(RUNS.c.control.is_(None), RUNS.c.control.like("choose:%")),
                last == OFFERED,
            )
            .values(control=action)
        )

        def work(conn: Connection) -> RunRecord | None:
            if not conn.execute(statement).rowcount:
                return None
            return records(conn, select(RUNS).where(RUNS.c.run_id == run_id))[0]

        return await self._db.write(work)
