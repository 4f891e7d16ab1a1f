"""Which database the store talks to: SQLite (a file, the default) or PostgreSQL (a
`postgresql://` URL), behind one small interface. The queries are written once, as functions
of a SQLAlchemy `Connection`, and each engine runs them its own way."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from bot.store.grouped import T, Work


class Database(Protocol):
    dialect: str
    """`sqlite` or `postgresql`."""
    where: str
    """The file or the address (without password), for messages."""

    async def read(self, work: Work[T]) -> T: ...

    async def write(self, work: Work[T]) -> T:
        """`work` in one write transaction: committed, or rolled back on any error."""
        ...

    async def write_grouped(self, work: Work[T]) -> T:
        """Like `write`, but it may share its transaction with other small writes."""
        ...

    async def close(self) -> None: ...


def is_postgres(target: str | Path) -> bool:
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


async def open_database(
    target: str | Path, *, readonly: bool = False, busy_timeout_s: float = 15.0
) -> Database:
    """A SQLite file path, or a PostgreSQL URL; opened (read-write: migrated) and ready."""
    if is_postgres(target):
        from bot.store.postgres import PostgresDatabase  # psycopg loads only when it is used

        return await PostgresDatabase.open(str(target), readonly=readonly)
    from bot.store.sqlite import SQLiteDatabase

    return await SQLiteDatabase.open(target, readonly=readonly, busy_timeout_s=busy_timeout_s)
