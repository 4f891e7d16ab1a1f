"""The SQLite database: one file, opened read-write or read-only, migrated, and driven from one
thread through one SQLAlchemy connection (the embedded default: nothing to run beside it).

Each unit of work (a whole transaction) runs on the connection's own thread in one go, so a
write holds the database lock for the few microseconds of its statements, never across turns
of the event loop. Small writes that many tasks make at once (a run's events) are group
committed: whatever is pending when the thread gets to them shares one transaction, each in
its own savepoint, and each caller resumes once that transaction is committed. Every SQLite
failure leaves here as a `StoreError` that names the file and says what to do, so a locked,
read-only, full or foreign file is one line, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Connection, create_engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import StaticPool

from bot.errors import StoreError
from bot.store.grouped import OneFailed, Pending, T, Work, apart, settle, together
from bot.store.migrations import latest, migrate, schema_version

log = logging.getLogger(__name__)


def _explain(error: sqlite3.Error, path: str) -> str:
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF  # the primary result code
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return (
            f"The database {path} is locked by another process: try again in a moment "
            "(or raise RESEARCH_BOT_DB_BUSY_TIMEOUT_S)."
        )
    if code == sqlite3.SQLITE_READONLY:
        return f"The database {path} is read-only: make it and its folder writable."
    if code in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR):
        return f"Could not write the database {path} (disk full or I/O error): free some space."
    if code == sqlite3.SQLITE_NOTADB:
        return (
            f"{path} is not a research-bot database (not SQLite): point RESEARCH_BOT_DB "
            "at another file."
        )
    if code in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH):
        return (
            f"Cannot open the database {path}: check that its folder exists and is writable "
            "(RESEARCH_BOT_DB)."
        )
    if code == sqlite3.SQLITE_CORRUPT:
        return f"The database {path} is damaged: restore it from a backup or move it aside."
    return f"The database {path} failed: {error}"


def _connect(path: str, *, readonly: bool, busy_timeout_s: float) -> sqlite3.Connection:
    if readonly:
        # mode=ro never creates or writes the file; WAL readers take no write lock at all.
        conn = sqlite3.connect(
            f"file:{quote(path)}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    # The busy timeout first: switching to WAL may itself have to wait for another process.
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _failure(error: BaseException, path: str) -> BaseException:
    """A SQLite error (raw, or wrapped by SQLAlchemy) as the one line a person reads."""
    cause = error.orig if isinstance(error, DBAPIError) else error
    return StoreError(_explain(cause, path)) if isinstance(cause, sqlite3.Error) else error


def _engine_on(raw: sqlite3.Connection) -> Connection:
    """A SQLAlchemy connection over `raw`, whose transactions this module begins itself:
    `BEGIN IMMEDIATE` for a write, so a read-then-write never fails half way on the lock."""
    engine = create_engine("sqlite://", creator=lambda: raw, poolclass=StaticPool)

    @event.listens_for(engine, "begin")
    def begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine.connect()


class SQLiteDatabase:
    """One connection and the one thread it is used from."""

    dialect = "sqlite"

    def __init__(self, conn: Connection, path: str) -> None:
        self._conn = conn
        self.path = path
        self.where = path
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite")
        self._pending: list[Pending] = []
        self._pending_lock = threading.Lock()  # held for an append or a swap, nothing more
        self._flush_queued = False
        self.commits = 0
        """Transactions committed by `write_grouped` (tests and benchmarks count batches)."""

    @classmethod
    async def open(
        cls, path: str | Path, *, readonly: bool = False, busy_timeout_s: float = 15.0
    ) -> SQLiteDatabase:
        """Open (and, read-write, migrate) the file. Read-only on a file that does not exist
        yet gives an empty database in memory: there is simply no history."""
        raw: sqlite3.Connection | None = None
        name = str(path)
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite")

        def setup() -> Connection:
            nonlocal raw, name, readonly
            if name != ":memory:":
                name = str(Path(name).expanduser())
                if readonly and not Path(name).exists():
                    name, readonly = ":memory:", False
            raw = _connect(name, readonly=readonly, busy_timeout_s=busy_timeout_s)
            conn = _engine_on(raw)
            if not readonly:
                with conn.execution_options(write=True).begin():
                    migrate(conn)
            elif (version := schema_version(conn)) != latest():
                conn.rollback()
                raise StoreError(
                    f"The database {name} was written by another version of research-bot "
                    f"(schema {version}, this one knows {latest()}): run any research once to "
                    "upgrade it."
                )
            else:
                conn.rollback()
            return conn

        try:
            opened = await asyncio.get_running_loop().run_in_executor(thread, setup)
        except (sqlite3.Error, DBAPIError) as error:
            if raw is not None:
                raw.close()
            raise _failure(error, name) from None
        except BaseException:
            if raw is not None:
                raw.close()
            raise
        finally:
            thread.shutdown(wait=False)
        return cls(opened, name)

    async def _on_thread(self, work: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._thread, work)
        except (sqlite3.Error, DBAPIError) as error:
            raise _failure(error, self.path) from None

    async def read(self, work: Work[T]) -> T:
        """`work(connection)` in a read transaction on the connection's thread."""

        def transaction() -> T:
            with self._conn.execution_options(write=False).begin():
                return work(self._conn)

        return await self._on_thread(transaction)

    async def write(self, work: Work[T]) -> T:
        """`work` inside one IMMEDIATE transaction, committed, or rolled back on any error."""

        def transaction() -> T:
            with self._conn.execution_options(write=True).begin():
                return work(self._conn)

        # Shielded: a caller cancelled meanwhile (a cancelled run) does not stop the write; the
        # event it records did happen.
        return await asyncio.shield(self._on_thread(transaction))

    async def write_grouped(self, work: Work[T]) -> T:
        """`work` committed together with every other grouped write pending at that moment.

        One that raises fails only its caller, who resumes once the shared transaction is
        committed, or with its own error (bot/store/grouped.py)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._pending_lock:
            self._pending.append((work, future))  # type: ignore[arg-type]
            queue_flush, self._flush_queued = not self._flush_queued, True
        if queue_flush:
            self._thread.submit(self._flush, loop)
        # Shielded like `write`: the event it records did happen.
        return await asyncio.shield(future)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the connection's thread: everything pending, in one transaction."""
        with self._pending_lock:
            batch, self._pending = self._pending, []
            self._flush_queued = False
        works = [work for work, _ in batch]
        try:
            try:
                outcomes = self._in_write(lambda conn: together(conn, works))
            except OneFailed:
                explain = partial(_failure, path=self.path)
                outcomes = self._in_write(lambda conn: apart(conn, works, explain))
            self.commits += 1
        except BaseException as error:  # the transaction failed: so did every write in it
            outcomes = [(None, _failure(error, self.path))] * len(batch)
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(settle, [future for _, future in batch], outcomes)

    def _in_write(self, work: Work[T]) -> T:
        with self._conn.execution_options(write=True).begin():
            return work(self._conn)

    async def close(self) -> None:
        def close() -> None:
            raw = self._conn.connection.dbapi_connection
            self._conn.close()
            if raw is not None:
                raw.close()

        await self._on_thread(close)
        self._thread.shutdown(wait=True)
