"""What a database is, read without changing it (`research-bot db status`, and the source check
of `db copy`): which engine and where, its schema version against this release's, its runs by
status, and the replicas that registered in it.

Unlike the store's own opening, this reads a database of any schema version: the point is to
say which version it is. A SQLite file is checked to be research-bot's before anything else.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel
from sqlalchemy import Connection, MetaData, Table, create_engine, func, inspect, make_url, select
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.pool import NullPool

from bot.errors import NotFoundError, StoreError
from bot.store.connection import is_postgres
from bot.store.migrations import latest, schema_version
from bot.store.schema import RUNS

Facts = tuple[int, dict[str, int], list[dict[str, Any]] | None]
SQLITE_HEADER = b"SQLite format 3\x00"
ALIVE_WITHIN = timedelta(seconds=60)
"""A replica seen this recently is alive: the length of a run's lease, which replicas renew
well within it."""


class Replica(BaseModel):
    replica_id: str
    host: str
    pid: int | None
    started_at: datetime | None
    seen_at: datetime | None
    platforms: str
    alive: bool


class DatabaseStatus(BaseModel):
    engine: Literal["sqlite", "postgresql"]
    where: str
    """The file, or the URL without its password."""
    version: int
    latest: int
    """The schema version this release knows."""
    runs: dict[str, int]
    """Runs by status."""
    replicas: list[Replica] | None
    """None: the database has no table of replicas (SQLite, or a release before replicas)."""


def check_sqlite(path: Path) -> int:
    """The schema version of a research-bot SQLite file, read without writing anything; one
    clear line (a `StoreError`) when the file is missing, not SQLite, or not research-bot's."""
    if not path.is_file():
        raise NotFoundError(f"No database at {path}: check the path.")
    try:
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError as error:
        raise StoreError(f"Cannot read {path} ({error.strerror}).") from None
    if header != SQLITE_HEADER:
        raise StoreError(f"{path} is not a SQLite file, so not a research-bot database.")
    try:
        with closing(read_only(path)) as db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error as error:
        raise StoreError(f"Cannot read the database {path}: {error}.") from None
    if version < 1 or "runs" not in tables:
        raise StoreError(f"{path} is a SQLite file, but not a research-bot database.")
    return version


def read_only(path: Path) -> sqlite3.Connection:
    """A connection that can neither create nor write the file."""
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=5)


def postgres_where(url: str) -> str:
    """A PostgreSQL URL as it may be shown (no password); one line when it cannot be read."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        # Not the URL itself in the message: it may hold the password.
        raise StoreError(
            "The PostgreSQL URL cannot be read: write it as "
            "postgresql://user:password@host:5432/database."
        ) from None


def _facts(conn: Connection) -> Facts:
    """Version, runs by status, and the replicas' rows: the same reads on both engines."""
    tables = set(inspect(conn).get_table_names())
    runs: dict[str, int] = {}
    if "runs" in tables:
        counted = select(RUNS.c.status, func.count()).group_by(RUNS.c.status)
        runs = {str(status): int(n) for status, n in conn.execute(counted)}
    replicas = None
    if "replicas" in tables:
        # Reflected, not imported: the table is the runs service's, and its columns may grow.
        table = Table("replicas", MetaData(), autoload_with=conn)
        replicas = [dict(row._mapping) for row in conn.execute(select(table))]
    return schema_version(conn), runs, replicas


def _when(value: object) -> datetime | None:
    """A stored time (ISO text, or a timestamp column), in UTC when it names no zone."""
    if isinstance(value, str) and value:
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _replica(row: dict[str, Any], now: datetime) -> Replica:
    seen = _when(row.get("seen_at"))
    platforms = row.get("platforms") or ""
    return Replica(
        replica_id=str(row.get("replica_id", "")),
        host=str(row.get("host", "")),
        pid=row.get("pid"),
        started_at=_when(row.get("started_at")),
        seen_at=seen,
        platforms=platforms if isinstance(platforms, str) else ",".join(platforms),
        alive=seen is not None and now - seen <= ALIVE_WITHIN,
    )


async def _postgres_facts(url: str) -> tuple[str, Facts]:
    from sqlalchemy.ext.asyncio import create_async_engine

    from bot.store.postgres import CONNECT_TIMEOUT_S, PostgresDatabase, async_url

    where = postgres_where(url)
    engine = create_async_engine(
        async_url(url), poolclass=NullPool, connect_args={"connect_timeout": CONNECT_TIMEOUT_S}
    )
    database = PostgresDatabase(engine, where)
    try:
        return database.where, await database.read(_facts)
    finally:
        await database.close()


def _sqlite_facts(target: Path) -> tuple[str, Facts]:
    path = target.expanduser()
    check_sqlite(path)
    engine = create_engine("sqlite://", creator=lambda: read_only(path), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return str(path), _facts(conn)
    except (sqlite3.Error, DBAPIError) as error:
        cause = error.orig if isinstance(error, DBAPIError) else error
        raise StoreError(f"Cannot read the database {path}: {cause}.") from None
    finally:
        engine.dispose()


async def database_status(target: str | Path, *, now: datetime | None = None) -> DatabaseStatus:
    """The status of the SQLite file or PostgreSQL database `target`, changing nothing."""
    now = now or datetime.now(UTC)
    if is_postgres(target):
        where, (version, runs, rows) = await _postgres_facts(str(target))
        engine: Literal["sqlite", "postgresql"] = "postgresql"
    else:
        engine = "sqlite"
        where, (version, runs, rows) = await asyncio.to_thread(_sqlite_facts, Path(target))
    replicas = None if rows is None else [_replica(row, now) for row in rows]
    if replicas is not None:
        replicas.sort(key=lambda r: (not r.alive, r.host, r.replica_id))
    return DatabaseStatus(
        engine=engine,
        where=where,
        version=version,
        latest=latest(),
        runs=runs,
        replicas=replicas,
    )
