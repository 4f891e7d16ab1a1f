"""SQLite storage (aiosqlite): schema, migrations, runs, event log, reports, dedupe keys."""

from __future__ import annotations

import asyncio
import logging
import secrets
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from bot.agent.events import EVENT_ADAPTER, Event, TurnStarted, UsageRecorded
from bot.agent.report import Report
from bot.domain import Request, RunRecord, RunStatus
from bot.errors import ConfigError, NotFoundError

log = logging.getLogger(__name__)

T = TypeVar("T")
Clock = Callable[[], datetime]
Work = Callable[[aiosqlite.Connection], Awaitable[T]]

RUN_ID_ALPHABET = "23456789abcdefghijkmnpqrstuvwxyz"
"""Lowercase letters and digits without 0/o and 1/l, so an id read aloud or retyped survives."""
RUN_ID_LENGTH = 10
DEDUPE_TTL = timedelta(days=1)

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, platform TEXT NOT NULL, workspace TEXT NOT NULL,
        channel TEXT NOT NULL, thread TEXT NOT NULL, user_id TEXT NOT NULL,
        user_name TEXT NOT NULL, topic TEXT NOT NULL, mode TEXT NOT NULL,
        status TEXT NOT NULL, termination_reason TEXT, turns INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0, cost_usd REAL NOT NULL DEFAULT 0,
        error TEXT, created_at TEXT NOT NULL, started_at TEXT, finished_at TEXT
    );
    CREATE INDEX runs_history ON runs (platform, workspace, created_at DESC);
    CREATE INDEX runs_status ON runs (status);
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        seq INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, at TEXT NOT NULL,
        UNIQUE (run_id, seq)
    );
    CREATE TABLE reports (
        run_id TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        title TEXT NOT NULL, tldr TEXT NOT NULL, markdown TEXT NOT NULL,
        report_json TEXT NOT NULL, created_at TEXT NOT NULL
    );
    CREATE TABLE dedupe (key TEXT PRIMARY KEY, created_at TEXT NOT NULL);
    CREATE INDEX dedupe_age ON dedupe (created_at);
    """,
)
"""Append-only: never edit a shipped script, add the next. Script N takes user_version N to N+1."""

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
        run_id, {", ".join(_ORIGIN_COLUMNS.values())}, topic, mode, status, created_at
    ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_INSERT_EVENT = """
    INSERT INTO events (run_id, seq, kind, payload, at)
    SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ? FROM events WHERE run_id = ?
"""
_ADD_USAGE = """
    UPDATE runs SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
        cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,
        cost_usd = cost_usd + ?
    WHERE run_id = ?
"""
_UPSERT_REPORT = """
    INSERT INTO reports (run_id, title, tldr, markdown, report_json, created_at)
    VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (run_id) DO UPDATE SET title = excluded.title, tldr = excluded.tldr,
        markdown = excluded.markdown, report_json = excluded.report_json,
        created_at = excluded.created_at
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


def _statements(script: str) -> list[str]:
    """Split a script into statements; `complete_statement` keeps trigger bodies whole."""
    statements: list[str] = []
    buffer = ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return [statement for statement in statements if statement.strip(" \n\t;")]


def _record(row: sqlite3.Row) -> RunRecord:
    data = dict(zip(row.keys(), row, strict=True))
    origin = {field: data.pop(column) for field, column in _ORIGIN_COLUMNS.items()}
    return RunRecord.model_validate({**data, "origin": origin})


def _scope(platform: str | None, workspace: str | None) -> tuple[str, list[str]]:
    """Extra `AND` clauses (fixed text, values bound) for history scoped to a place."""
    wanted = {"platform": platform, "workspace": workspace}
    given = {column: value for column, value in wanted.items() if value is not None}
    return "".join(f" AND {column} = ?" for column in given), list(given.values())


def _prepare_path(path: str | Path) -> str:
    if str(path) == ":memory:":
        return ":memory:"
    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    return str(target)


async def _configure(db: aiosqlite.Connection) -> None:
    db.row_factory = sqlite3.Row
    for pragma in ("journal_mode = WAL", "busy_timeout = 5000", "synchronous = NORMAL"):
        await db.execute(f"PRAGMA {pragma}")
    await db.execute("PRAGMA foreign_keys = ON")


async def _migrate(db: aiosqlite.Connection) -> None:
    """Apply each pending script in its own transaction. The version is re-read under the
    write lock, so two processes opening a new file do not both apply a script."""
    while True:
        await db.execute("BEGIN IMMEDIATE")
        try:
            version = next(iter(await db.execute_fetchall("PRAGMA user_version")))[0]
            if version > len(MIGRATIONS):
                raise ConfigError(
                    f"The database is at schema version {version}, newer than this bot "
                    f"knows ({len(MIGRATIONS)}). Upgrade research-bot."
                )
            if version < len(MIGRATIONS):
                for statement in _statements(MIGRATIONS[version]):
                    await db.execute(statement)
                await db.execute(f"PRAGMA user_version = {version + 1}")
        except BaseException:
            await db.rollback()
            raise
        await db.commit()
        if version == len(MIGRATIONS):
            return
        log.info("store schema migrated to version %d", version + 1)


class Store:
    """The one connection to the database; every write is a short transaction behind one lock."""

    def __init__(self, db: aiosqlite.Connection, clock: Clock) -> None:
        self._db = db
        self._now = clock
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str | Path, *, clock: Clock | None = None) -> Store:
        db = await aiosqlite.connect(
            await asyncio.to_thread(_prepare_path, path), isolation_level=None
        )
        try:
            await _configure(db)
            await _migrate(db)
            store = cls(db, clock or _utcnow)
            cutoff = _iso(store._now() - DEDUPE_TTL)
            await store._exec("DELETE FROM dedupe WHERE created_at < ?", (cutoff,))
        except BaseException:
            await db.close()
            raise
        return store

    @classmethod
    @asynccontextmanager
    async def connect(cls, path: str | Path, *, clock: Clock | None = None) -> AsyncIterator[Store]:
        store = await cls.open(path, clock=clock)
        try:
            yield store
        finally:
            await store.close()

    async def close(self) -> None:
        async with self._lock:
            await self._db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _write(self, work: Work[T]) -> T:
        # Shielded: a caller cancelled mid-transaction (a cancelled run) must not leave BEGIN
        # open on the shared connection, and the event it was recording did happen.
        return await asyncio.shield(self._transaction(work))

    async def _transaction(self, work: Work[T]) -> T:
        async with self._lock:
            await self._db.execute("BEGIN IMMEDIATE")
            try:
                result = await work(self._db)
            except BaseException:
                await self._db.rollback()
                raise
            await self._db.commit()
            return result

    async def _exec(self, sql: str, params: Sequence[Any]) -> int:
        """One statement in its own write transaction; returns the number of rows it changed."""

        async def work(db: aiosqlite.Connection) -> int:
            return (await db.execute(sql, params)).rowcount

        return await self._write(work)

    async def _update_run(self, run_id: str, sets: str, params: Sequence[Any]) -> None:
        if not await self._exec(f"UPDATE runs SET {sets} WHERE run_id = ?", (*params, run_id)):
            raise NotFoundError(f"No run {run_id} here.")

    async def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        async with self._lock:
            return list(await self._db.execute_fetchall(sql, params))

    async def create_run(self, request: Request) -> RunRecord:
        origin = [getattr(request.origin, field) for field in _ORIGIN_COLUMNS]
        rest = [request.topic, request.mode.value, RunStatus.QUEUED.value, _iso(self._now())]

        async def work(db: aiosqlite.Connection) -> str:
            run_id = _new_run_id()
            while await db.execute_fetchall("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
                run_id = _new_run_id()
            await db.execute(_INSERT_RUN, (run_id, *origin, *rest))
            return run_id

        return await self.get_run(await self._write(work))

    async def set_location(self, run_id: str, *, channel: str, thread: str) -> None:
        await self._update_run(run_id, "channel = ?, thread = ?", (channel, thread))

    async def mark_running(self, run_id: str) -> None:
        now = _iso(self._now())
        await self._update_run(run_id, "status = ?, started_at = ?", (RunStatus.RUNNING.value, now))

    async def finish_run(
        self, run_id: str, *, status: RunStatus, ending: str | None, error: str | None = None
    ) -> None:
        sets = "status = ?, termination_reason = ?, error = ?, finished_at = ?"
        await self._update_run(run_id, sets, (status.value, ending, error, _iso(self._now())))

    async def append_event(self, run_id: str, event: Event) -> None:
        row = (run_id, event.kind, EVENT_ADAPTER.dump_json(event).decode(), _iso(event.at), run_id)

        async def work(db: aiosqlite.Connection) -> None:
            if not await db.execute_fetchall("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
                raise NotFoundError(f"No run {run_id} here.")
            await db.execute(_INSERT_EVENT, row)
            if isinstance(event, UsageRecorded):
                use = event.usage
                counts = (use.input_tokens, use.output_tokens, use.cache_read_tokens)
                await db.execute(
                    _ADD_USAGE, (*counts, use.cache_write_tokens, use.cost_usd, run_id)
                )
            elif isinstance(event, TurnStarted):
                sql = "UPDATE runs SET turns = MAX(turns, ?) WHERE run_id = ?"
                await db.execute(sql, (event.turn, run_id))

        await self._write(work)

    async def save_report(self, run_id: str, report: Report, markdown: str) -> None:
        document = report.model_dump_json()
        now = _iso(self._now())
        await self._exec(
            _UPSERT_REPORT, (run_id, report.title, report.tldr, markdown, document, now)
        )

    async def get_run(
        self, run_id: str, *, platform: str | None = None, workspace: str | None = None
    ) -> RunRecord:
        wanted = _clean_id(run_id)
        where, params = _scope(platform, workspace)
        rows = await self._read(f"{_SELECT_RUNS} WHERE run_id = ?{where}", (wanted, *params))
        if not rows:
            raise NotFoundError(f"No run {wanted} here.")
        return _record(rows[0])

    async def list_runs(
        self, *, platform: str | None = None, workspace: str | None = None, limit: int = 20
    ) -> list[RunRecord]:
        where, params = _scope(platform, workspace)
        order = "ORDER BY created_at DESC, rowid DESC LIMIT ?"
        rows = await self._read(f"{_SELECT_RUNS} WHERE 1{where} {order}", (*params, limit))
        return [_record(row) for row in rows]

    async def runs_with_status(self, *statuses: RunStatus) -> list[RunRecord]:
        marks = ", ".join("?" * len(statuses))
        sql = f"{_SELECT_RUNS} WHERE status IN ({marks}) ORDER BY created_at, rowid"
        return [_record(row) for row in await self._read(sql, [s.value for s in statuses])]

    async def events(self, run_id: str) -> list[Event]:
        sql = "SELECT payload FROM events WHERE run_id = ? ORDER BY seq"
        rows = await self._read(sql, (_clean_id(run_id),))
        return [EVENT_ADAPTER.validate_json(row["payload"]) for row in rows]

    async def report(self, run_id: str) -> tuple[Report, str] | None:
        sql = "SELECT report_json, markdown FROM reports WHERE run_id = ?"
        rows = await self._read(sql, (_clean_id(run_id),))
        if not rows:
            return None
        return Report.model_validate_json(rows[0]["report_json"]), rows[0]["markdown"]

    async def claim(self, key: str) -> bool:
        sql = "INSERT OR IGNORE INTO dedupe (key, created_at) VALUES (?, ?)"
        return await self._exec(sql, (key, _iso(self._now()))) == 1
