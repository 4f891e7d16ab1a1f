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
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import psycopg
from sqlalchemy import Connection, make_url, text
from sqlalchemy.exc import DBAPIError, InterfaceError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bot.errors import StoreError
from bot.store.grouped import OneFailed, Pending, T, Work, apart, settle, together
from bot.store.migrations import latest, migrate, schema_version

log = logging.getLogger(__name__)

OUTAGE_PAUSES_S = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)
"""The database's one retry policy: once open, a unit of work that finds the server gone (a
restart, a failover) is tried again after each of these pauses, about 16 s in all, before it
fails with its one line. A run's events, its thread and its ending are not lost to a restart.
A connection cut during COMMIT leaves it unknown whether that commit landed; trying again may
then store an event twice, which a reader sees as a repeated line, never as a lost run."""
_GONE = {"57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006"}
"""SQLSTATEs of a server shut down, restarting, or a connection lost or refused."""
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


def _gone(error: BaseException) -> bool:
    """The server is out of reach (restarting, failing over), rather than refusing this work."""
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    cause = error.orig if isinstance(error, DBAPIError) else error
    if not isinstance(cause, psycopg.OperationalError):
        return False
    return cause.sqlstate is None or cause.sqlstate in _GONE


class PostgresDatabase:
    dialect = "postgresql"

    def __init__(self, engine: AsyncEngine, where: str) -> None:
        self._engine = engine
        self.where = where
        self.path = where
        self._pending: list[Pending] = []
        self._flusher: asyncio.Task[None] | None = None
        self._writing: set[asyncio.Task[Any]] = set()
        """Writes under way, whose callers may have gone: `close` lets them finish."""
        self._opened = False

    @classmethod
    async def open(cls, url: str, *, readonly: bool = False) -> PostgresDatabase:
        """Connect, and (read-write) migrate under the migration lock. A read-only opening
        only checks that the schema is this release's."""
        where = safe_url(url)
        engine = create_async_engine(
            async_url(url),
            pool_size=POOL_SIZE,
            max_overflow=4,
            # No ping at each checkout: a round trip and a statement before every unit of
            # work, 7% of the bot's CPU in bench.scale's burst. A connection the server ended
            # while idle is found broken at checkout and replaced; one lost mid-work fails, and
            # `_through_outages` tries again on a fresh one.
            pool_pre_ping=False,
            connect_args={"connect_timeout": CONNECT_TIMEOUT_S},
        )
        database = cls(engine, where)
        try:
            if readonly:
                await database.read(_check_version)
            else:
                await database.write(migrate)
        except BaseException:
            await database.close()  # a migration stopped meanwhile finishes or rolls back first
            raise
        # From here on an outage is waited out: at the start, it is said at once.
        database._opened = True
        return database

    async def read(self, work: Work[T]) -> T:
        async def attempt() -> T:
            async with self._engine.connect() as conn:
                return await conn.run_sync(work)

        return await self._through_outages(attempt)

    async def write(self, work: Work[T]) -> T:
        # Shielded: a caller cancelled meanwhile does not stop the write; what it records did
        # happen. Kept until it ends, so that `close` waits for it rather than cut it off.
        writing = asyncio.ensure_future(self._through_outages(partial(self._transaction, work)))
        self._writing.add(writing)
        writing.add_done_callback(self._writing.discard)
        return await asyncio.shield(writing)

    async def _through_outages(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """`attempt()`, tried again while the server is out of reach (`OUTAGE_PAUSES_S`); any
        failure that leaves is the one line a person reads."""
        for pause in (*(OUTAGE_PAUSES_S if self._opened else ()), None):
            try:
                return await attempt()
            except (DBAPIError, psycopg.Error) as error:
                if pause is None or not _gone(error):
                    raise explain(error, self.where) from None
                log.warning(
                    "the database %s is out of reach; trying again in %.1f s", self.where, pause
                )
                await asyncio.sleep(pause)
        raise AssertionError("unreachable: the last try raises or returns")

    async def write_grouped(self, work: Work[T]) -> T:
        """`work` committed together with the other grouped writes pending at that moment
        (bot/store/grouped.py): one connection, one round trip to begin and one to commit for
        the whole batch, where each write alone would pay both."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._pending.append((work, future))  # type: ignore[arg-type]
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush())
        # Shielded like `write`: what it records did happen.
        return await asyncio.shield(future)

    async def _flush(self) -> None:
        """Batch after batch until nothing is pending; what arrives meanwhile waits for the
        next one."""
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                works = [work for work, _ in batch]
                try:
                    try:
                        outcomes = await self._through_outages(
                            partial(self._transaction, partial(together, works=works))
                        )
                    except OneFailed:
                        explain_here = partial(explain, where=self.where)
                        outcomes = await self._through_outages(
                            partial(
                                self._transaction,
                                partial(apart, works=works, explain=explain_here),
                            )
                        )
                except Exception as error:  # the transaction failed: so did every write in it
                    outcomes = [(None, explain(error, self.where))] * len(batch)
                except BaseException:  # cancelled with the loop: nobody will hear of it
                    for _, future in [*batch, *self._pending]:
                        future.cancel()
                    self._pending = []
                    raise
                settle([future for _, future in batch], outcomes)
        finally:
            self._flusher = None

    async def _transaction(self, work: Work[T]) -> T:
        async with self._engine.begin() as conn:
            return await conn.run_sync(work)

    async def close(self) -> None:
        if self._flusher is not None:
            await self._flusher
        if self._writing:  # their callers are gone (Ctrl-C, a shutdown): what they record stays
            await asyncio.wait(self._writing)
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
