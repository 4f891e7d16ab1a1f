"""Watches in the store: made, listed, paused and ended in their workspace, and claimed when due,
all due watches in one query per tick, each by one replica only (`FOR UPDATE SKIP LOCKED` on
PostgreSQL, SQLite's write lock otherwise). A part of `Store` (bot/store/runs.py)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, delete, exists, func, insert, select, update

from bot.agent.report.model import Report
from bot.domain import RunStatus
from bot.errors import NotFoundError, RequestError
from bot.store.connection import Database
from bot.store.rows import iso
from bot.store.schema import REPORTS, RUNS, WATCHES
from bot.watches.cadence import Cadence, next_after, periods_between, zone
from bot.watches.model import DueWatch, NewWatch, Watch, WatchStatus

_TIMES = ("next_run_at", "last_run_at", "created_at")


def _watch(row: Row[Any]) -> Watch:
    values = dict(row._mapping)
    for key in _TIMES:
        if values[key] is not None:
            values[key] = datetime.fromisoformat(values[key])
    return Watch.model_validate(values)


def _running() -> Any:
    """The watch has a run still queued or going: the next one waits for it."""
    return exists().where(
        RUNS.c.watch_id == WATCHES.c.id,
        RUNS.c.status.in_([RunStatus.QUEUED.value, RunStatus.RUNNING.value]),
    )


class WatchQueries:
    _db: Database

    _now: Callable[[], datetime]

    async def add_watch(self, new: NewWatch, *, limit: int) -> Watch:
        """Stored, first due now; refused past `limit` watches in its workspace."""
        now = self._now()
        local = now.astimezone(zone(new.tz))
        anchor = local.day if new.cadence is Cadence.MONTHLY else local.weekday()
        values = {
            **new.model_dump(mode="json"),
            "id": "w" + secrets.token_hex(3),
            "hour": local.hour,
            "minute": local.minute,
            "anchor": anchor,
            "status": WatchStatus.ACTIVE.value,
            "next_run_at": iso(now),
            "created_at": iso(now),
        }

        def work(conn: Connection) -> Watch:
            count = conn.execute(
                select(func.count()).where(
                    WATCHES.c.platform == new.platform, WATCHES.c.workspace == new.workspace
                )
            ).scalar_one()
            if count >= limit:
                raise RequestError(
                    f"No more watches here: {count} is the most (RESEARCH_BOT_MAX_WATCHES). "
                    "End one first."
                )
            row = conn.execute(insert(WATCHES).values(**values).returning(*WATCHES.c)).one()
            return _watch(row)

        return await self._db.write(work)

    async def list_watches(
        self, platform: str, workspace: str, channel: str | None = None
    ) -> list[Watch]:
        query = select(WATCHES).where(
            WATCHES.c.platform == platform, WATCHES.c.workspace == workspace
        )
        if channel is not None:
            query = query.where(WATCHES.c.channel == channel)
        rows = await self._db.read(lambda conn: conn.execute(query.order_by(WATCHES.c.id)).all())
        return [_watch(row) for row in rows]

    async def all_watches(self) -> list[Watch]:
        """Every watch, of every platform and workspace: the operator's view (the terminal)."""
        query = select(WATCHES).order_by(WATCHES.c.platform, WATCHES.c.workspace, WATCHES.c.id)
        rows = await self._db.read(lambda conn: conn.execute(query).all())
        return [_watch(row) for row in rows]

    async def find_watch(self, watch_id: str) -> Watch:
        """The watch of that id wherever it is (the operator's view); none is not found."""
        query = select(WATCHES).where(WATCHES.c.id == watch_id)
        row = await self._db.read(lambda conn: conn.execute(query).first())
        if row is None:
            raise NotFoundError(f"No watch {watch_id} here.")
        return _watch(row)

    async def get_watch(self, watch_id: str, platform: str, workspace: str) -> Watch:
        """The watch of this workspace; any other (or none) is not found, in one sentence."""
        query = select(WATCHES).where(
            WATCHES.c.id == watch_id,
            WATCHES.c.platform == platform,
            WATCHES.c.workspace == workspace,
        )
        row = await self._db.read(lambda conn: conn.execute(query).first())
        if row is None:
            raise NotFoundError(f"No watch {watch_id} here.")
        return _watch(row)

    async def _change_watch(
        self, watch_id: str, platform: str, workspace: str, values: dict[str, Any]
    ) -> Watch:
        statement = (
            update(WATCHES)
            .where(
                WATCHES.c.id == watch_id,
                WATCHES.c.platform == platform,
                WATCHES.c.workspace == workspace,
            )
            .values(**values)
            .returning(*WATCHES.c)
        )
        row = await self._db.write(lambda conn: conn.execute(statement).first())
        if row is None:
            raise NotFoundError(f"No watch {watch_id} here.")
        return _watch(row)

    async def pause_watch(
        self, watch_id: str, platform: str, workspace: str, reason: str = "paused by hand"
    ) -> Watch:
        values = {"status": WatchStatus.PAUSED.value, "paused_reason": reason}
        return await self._change_watch(watch_id, platform, workspace, values)

    async def resume_watch(self, watch_id: str, platform: str, workspace: str) -> Watch:
        """Active again, next due at its next time from now (missed periods are not made up)."""
        watch = await self.get_watch(watch_id, platform, workspace)
        due = next_after(
            watch.cadence, watch.tz, watch.hour, watch.minute, watch.anchor, self._now()
        )
        values = {
            "status": WatchStatus.ACTIVE.value,
            "paused_reason": None,
            "next_run_at": iso(due),
        }
        return await self._change_watch(watch_id, platform, workspace, values)

    async def make_watch_due(self, watch_id: str, platform: str, workspace: str) -> Watch:
        values = {"next_run_at": iso(self._now())}
        return await self._change_watch(watch_id, platform, workspace, values)

    async def remove_watch(self, watch_id: str, platform: str, workspace: str) -> None:
        statement = delete(WATCHES).where(
            WATCHES.c.id == watch_id,
            WATCHES.c.platform == platform,
            WATCHES.c.workspace == workspace,
        )
        if not await self._db.write(lambda conn: conn.execute(statement).rowcount):
            raise NotFoundError(f"No watch {watch_id} here.")

    async def claim_due_watches(self, platforms: list[str]) -> list[DueWatch]:
        """Every active watch due by now whose last run is over, each advanced past now and
        now this caller's to start once. Two replicas asking at once never get the same one."""
        now = self._now()

        def work(conn: Connection) -> list[DueWatch]:
            due = (
                select(WATCHES)
                .where(
                    WATCHES.c.status == WatchStatus.ACTIVE.value,
                    WATCHES.c.next_run_at <= iso(now),
                    WATCHES.c.platform.in_(sorted(platforms)),
                    ~_running(),
                )
                .order_by(WATCHES.c.next_run_at)
                .with_for_update(skip_locked=True, of=WATCHES)
            )
            claimed = []
            for row in conn.execute(due).all():
                watch = _watch(row)
                missed, following = periods_between(
                    watch.cadence,
                    watch.tz,
                    watch.hour,
                    watch.minute,
                    watch.anchor,
                    watch.next_run_at,
                    now,
                )
                conn.execute(
                    update(WATCHES)
                    .where(WATCHES.c.id == watch.id)
                    .values(next_run_at=iso(following), last_missed=missed)
                )
                claimed.append(DueWatch(watch=watch, missed=missed))
            return claimed

        return await self._db.write(work)

    async def record_watch_run(self, watch_id: str, run_id: str, *, advance: bool = False) -> None:
        """The run started for the watch, on the run's row and the watch's; `advance`: started
        by hand, so its next period is counted from now."""
        now = self._now()
        values: dict[str, Any] = {"last_run_at": iso(now), "last_run_id": run_id, "refused": None}

        def work(conn: Connection) -> None:
            conn.execute(update(RUNS).where(RUNS.c.run_id == run_id).values(watch_id=watch_id))
            if advance:
                row = conn.execute(select(WATCHES).where(WATCHES.c.id == watch_id)).one()
                watch = _watch(row)
                due = next_after(
                    watch.cadence, watch.tz, watch.hour, watch.minute, watch.anchor, now
                )
                values["next_run_at"] = iso(due)
            conn.execute(update(WATCHES).where(WATCHES.c.id == watch_id).values(**values))

        await self._db.write(work)

    async def watch_ids_of(self, run_ids: list[str]) -> dict[str, str]:
        """The watch each of these runs was made for, of those made for one."""
        query = select(RUNS.c.run_id, RUNS.c.watch_id).where(
            RUNS.c.run_id.in_(run_ids), RUNS.c.watch_id.is_not(None)
        )
        rows = await self._db.read(lambda conn: conn.execute(query).all())
        return {run_id: watch_id for run_id, watch_id in rows}

    async def earlier_watch_reports(self, watch_id: str, run_id: str) -> list[Report]:
        """The reports of the watch's runs made before `run_id`, oldest first."""
        mine = select(RUNS.c.created_at).where(RUNS.c.run_id == run_id).scalar_subquery()
        query = (
            select(REPORTS.c.report_json)
            .join(RUNS, RUNS.c.run_id == REPORTS.c.run_id)
            .where(RUNS.c.watch_id == watch_id, RUNS.c.run_id != run_id, RUNS.c.created_at < mine)
            .order_by(RUNS.c.created_at)
        )
        rows = await self._db.read(lambda conn: conn.execute(query).scalars().all())
        return [Report.model_validate_json(row) for row in rows]

    async def record_watch_refused(self, watch_id: str, reason: str) -> bool:
        """The watch's run was refused; True the first time in a row (tell it once)."""
        statement = (
            update(WATCHES)
            .where(WATCHES.c.id == watch_id, WATCHES.c.refused.is_(None))
            .values(refused=reason)
        )
        return bool(await self._db.write(lambda conn: conn.execute(statement).rowcount))
