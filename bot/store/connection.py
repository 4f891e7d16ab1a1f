"""The SQLite connection: opened read-write or read-only, migrated, and driven from one thread.

Each unit of work (a whole transaction) runs on the connection's own thread in one go, so a
write holds the database lock for the few microseconds of its statements, never across turns
of the event loop. Small writes that many tasks make at once (a run's events) are group
committed: whatever is pending when the thread gets to them shares one transaction, each in
its own savepoint, and each caller resumes once that transaction is committed. Every SQLite failure leaves here as a `StoreError` that names the file and
says what to do, so a locked, read-only, full or foreign file is one line, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from bot.errors import StoreError

log = logging.getLogger(__name__)
T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]
_Pending = tuple[Work[object], "asyncio.Future[object]"]
_Outcome = tuple[object, BaseException | None]


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


def statements(script: str) -> list[str]:
    """Split a script into statements; `complete_statement` keeps trigger bodies whole."""
    found: list[str] = []
    buffer = ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            found.append(buffer.strip())
            buffer = ""
    return [statement for statement in found if statement.strip(" \n\t;")]


def migrate(conn: sqlite3.Connection, migrations: Sequence[str]) -> None:
    """Apply each pending script in its own transaction. The version is re-read under the
    write lock, so two processes opening a new file do not both apply a script."""
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(migrations):
                raise StoreError(
                    f"The database is at schema version {version}, newer than this bot "
                    f"knows ({len(migrations)}). Upgrade research-bot."
                )
            if version < len(migrations):
                for statement in statements(migrations[version]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {version + 1}")
        except BaseException:
            conn.rollback()
            raise
        conn.commit()
        if version == len(migrations):
            return
        log.info("store schema migrated to version %d", version + 1)


def _connect(path: str, *, readonly: bool, busy_timeout_s: float) -> sqlite3.Connection:
    if readonly:
        # mode=ro never creates or writes the file; WAL readers take no write lock at all.
        conn = sqlite3.connect(
            f"file:{quote(path)}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    # The busy timeout first: switching to WAL may itself have to wait for another process.
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


class Database:
    """One connection and the one thread it is used from."""

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._conn = conn
        self.path = path
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite")
        self._pending: list[_Pending] = []
        self._pending_lock = threading.Lock()  # held for an append or a swap, nothing more
        self._flush_queued = False
        self.commits = 0
        """Transactions committed by `write_grouped` (tests and benchmarks count batches)."""

    @classmethod
    async def open(
        cls,
        path: str | Path,
        migrations: Sequence[str],
        *,
        readonly: bool = False,
        busy_timeout_s: float = 15.0,
    ) -> Database:
        """Open (and, read-write, migrate) the file. Read-only on a file that does not exist
        yet gives an empty database in memory: there is simply no history."""
        conn: sqlite3.Connection | None = None
        name = str(path)
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite")

        def setup() -> sqlite3.Connection:
            nonlocal conn, name, readonly
            if name != ":memory:":
                name = str(Path(name).expanduser())
                if readonly and not Path(name).exists():
                    name, readonly = ":memory:", False
            conn = _connect(name, readonly=readonly, busy_timeout_s=busy_timeout_s)
            if not readonly:
                migrate(conn, migrations)
            elif conn.execute("PRAGMA user_version").fetchone()[0] != len(migrations):
                raise StoreError(
                    f"The database {name} was written by another version of research-bot: "
                    "run any research once to upgrade it."
                )
            return conn

        try:
            opened = await asyncio.get_running_loop().run_in_executor(thread, setup)
        except sqlite3.Error as error:
            if conn is not None:
                conn.close()
            raise StoreError(_explain(error, name)) from None
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        finally:
            thread.shutdown(wait=False)
        return cls(opened, name)

    async def run(self, work: Work[T]) -> T:
        """Run `work(connection)` on the connection's thread, in submission order."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._thread, work, self._conn)
        except sqlite3.Error as error:
            raise StoreError(_explain(error, self.path)) from None

    async def write(self, work: Work[T]) -> T:
        """`work` inside one IMMEDIATE transaction, committed, or rolled back on any error."""

        def transaction(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(conn)
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
            return result

        # Shielded: a caller cancelled meanwhile (a cancelled run) does not stop the write; the
        # event it records did happen.
        return await asyncio.shield(self.run(transaction))

    async def write_grouped(self, work: Work[T]) -> T:
        """`work` committed together with every other grouped write pending at that moment.

        Each `work` runs in its own savepoint, so one that raises fails only its caller. The
        caller resumes once the shared transaction is committed (or with its own error); order
        is submission order, so one task's writes land in the order it made them."""
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
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                outcomes = [self._savepoint(work) for work, _ in batch]
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
            self.commits += 1
        except BaseException as error:  # the transaction failed: so did every write in it
            failure = (
                StoreError(_explain(error, self.path))
                if isinstance(error, sqlite3.Error)
                else error
            )
            outcomes = [(None, failure)] * len(batch)
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(_settle, [future for _, future in batch], outcomes)

    def _savepoint(self, work: Work[object]) -> _Outcome:
        self._conn.execute("SAVEPOINT grouped")
        try:
            result = work(self._conn)
        except Exception as error:
            self._conn.execute("ROLLBACK TO grouped")
            self._conn.execute("RELEASE grouped")
            if isinstance(error, sqlite3.Error):
                return None, StoreError(_explain(error, self.path))
            return None, error
        self._conn.execute("RELEASE grouped")
        return result, None

    async def read(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        return await self.run(lambda conn: conn.execute(sql, params).fetchall())

    async def close(self) -> None:
        await self.run(lambda conn: conn.close())
        self._thread.shutdown(wait=True)


def _settle(futures: list[asyncio.Future[object]], outcomes: list[_Outcome]) -> None:
    for future, (result, error) in zip(futures, outcomes, strict=True):
        if future.done():
            continue
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)
