"""The SQLite connection: opened read-write or read-only, migrated, and driven from one thread.

Each unit of work (a whole transaction) runs on the connection's own thread in one go, so a
write holds the database lock for the few microseconds of its statements, never across turns
of the event loop. Every SQLite failure leaves here as a `StoreError` that names the file and
says what to do, so a locked, read-only, full or foreign file is one line, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from bot.errors import StoreError

log = logging.getLogger(__name__)
T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


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

    async def read(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        return await self.run(lambda conn: conn.execute(sql, params).fetchall())

    async def close(self) -> None:
        await self.run(lambda conn: conn.close())
        self._thread.shutdown(wait=True)
