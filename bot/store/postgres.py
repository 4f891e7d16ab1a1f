"""The PostgreSQL database, for a team that runs several replicas (or wants its history off one
disk): an async SQLAlchemy engine on psycopg 3, migrated at start by one replica at a time.

Each unit of work is written once against SQLAlchemy's synchronous `Connection` (the same
function SQLite runs on its thread) and runs here through `run_sync`, inside one transaction.
Every failure of the server leaves as a `StoreError` that says which database and what to do:
unreachable, a refused password, read-only, full, or a migration held by another replica.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

import psycopg
from sqlalchemy import Connection, make_url, text
from sqlalchemy.exc import DBAPIError, InterfaceError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bot.errors import StoreError
from bot.store.migrations import latest, migrate, schema_version

log = logging.getLogger(__name__)
T = TypeVar("T")
Work = Callable[[Connection], T]

CONNECT_TIMEOUT_S = 10
POOL_SIZE = 8
"""Connections per replica: a run's event appends, the runs service's queries and the readers."""

_EXPLAINED = {
    "28P01": "refused the password: check the user and password in RESEARCH_BOT_DATABASE_URL.",
    "28000": "refused the connection: check the user in RESEARCH_BOT_DATABASE_URL.",
    "3D000": "has no such database: create it, or fix its name in RESEARCH_BOT_DATABASE_URL.",
    "25006": "is read-only (a standby?): point RESEARCH_BOT_DATABASE_URL at the primary.",
    "53100": "is out of disk space: free some space on the database server.",
    "53300": "has no free connections: raise its max_connections or run fewer replicas.",
    "55P03": "is busy with another replica's migration: try again in a moment.",
    "57P01": "was shut down: it is restarting, or gone; try again in a moment.",
    "57P03": "is starting up or shutting down: try again in a moment.",
}


def safe_url(url: str) -> str:
    """The database's address for messages and logs: never its password."""
    return make_url(url).render_as_string(hide_password=True)


def explain(error: BaseException, where: str) -> BaseException:
    """A database failure as the one line a person reads; anything else unchanged."""
    cause = error.orig if isinstance(error, DBAPIError) else error
    if not isinstance(cause, psycopg.Error):
        return error
    said = _EXPLAINED.get(cause.sqlstate or "")
    if said is not None:
        return StoreError(f"The database {where} {said}")
    if isinstance(cause, psycopg.OperationalError) or isinstance(error, InterfaceError):
        first = str(cause).strip().splitlines()[0] if str(cause).strip() else "no answer"
        return StoreError(f"Cannot reach the database {where} ({first}): is PostgreSQL running?")
    return StoreError(f"The database {where} failed: {str(cause).strip().splitlines()[0]}")


def async_url(url: str) -> str:
    """`postgresql://…` (what people write) as the URL of SQLAlchemy's psycopg async driver."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


class PostgresDatabase:
    dialect = "postgresql"

    def __init__(self, engine: AsyncEngine, where: str) -> None:
        self._engine = engine
        self.where = where
        self.path = where

    @classmethod
    async def open(cls, url: str, *, readonly: bool = False) -> PostgresDatabase:
        """Connect, and (read-write) migrate under the migration lock. A read-only opening
        only checks that the schema is this release's."""
        where = safe_url(url)
        engine = create_async_engine(
            async_url(url),
            pool_size=POOL_SIZE,
            max_overflow=4,
            pool_pre_ping=True,  # a restarted server's dead connections are replaced, not used
            connect_args={"connect_timeout": CONNECT_TIMEOUT_S},
        )
        database = cls(engine, where)
        try:
            if readonly:
                await database.read(_check_version)
            else:
                await database.write(migrate)
        except BaseException:
            await engine.dispose()
            raise
        return database

    async def read(self, work: Work[T]) -> T:
        try:
            async with self._engine.connect() as conn:
                return await conn.run_sync(work)
        except (DBAPIError, psycopg.Error) as error:
            raise explain(error, self.where) from None

    async def write(self, work: Work[T]) -> T:
        async def transaction() -> T:
            try:
                async with self._engine.begin() as conn:
                    return await conn.run_sync(work)
            except (DBAPIError, psycopg.Error) as error:
                raise explain(error, self.where) from None

        # Shielded: a caller cancelled meanwhile does not stop the write; what it records did
        # happen.
        return await asyncio.shield(transaction())

    async def write_grouped(self, work: Work[T]) -> T:
        """PostgreSQL takes concurrent writers itself: each is its own short transaction."""
        return await self.write(work)

    async def close(self) -> None:
        await self._engine.dispose()


def _check_version(conn: Connection) -> None:
    version = schema_version(conn)
    if version != latest():
        raise StoreError(
            f"The database was written by another version of research-bot (schema {version}, "
            f"this one knows {latest()}): start the bot once to upgrade it."
        )


async def ping(database: PostgresDatabase) -> None:
    await database.read(lambda conn: conn.execute(text("SELECT 1")).scalar_one())
