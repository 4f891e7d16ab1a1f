"""Moving a team's history from its SQLite file into PostgreSQL (`research-bot db copy`).

Every table of the schema is copied in foreign-key order (a run before its events, a run before
its follow-ups), in batches, each committed on its own: a copy cut short keeps what it had
written (stopped by Ctrl-C, it finishes the batch it is writing and starts no other), and running
it again inserts only what is missing (a row whose key is already there is skipped and counted as
such). The source is only read; a file of an earlier release is first
brought to this release's schema in a temporary copy, never in place. The search index is not
copied: PostgreSQL's triggers compute its own from each report as it arrives (columns outside
`METADATA`, so never written here).
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Connection, Table, select, tuple_
from sqlalchemy.dialects.postgresql import insert as postgres_insert

from bot.errors import StoreError
from bot.store.connection import Database, is_postgres, open_database
from bot.store.migrations import latest
from bot.store.schema import METADATA, RUNS
from bot.store.status import check_sqlite, postgres_where, read_only

BATCH = 500
"""Rows per committed batch: small enough that a cut costs little, large enough to be quick."""
NOT_HISTORY = frozenset({"replicas", "pages", "condensed_pages"})
"""Tables about live processes, not history: each replica registers itself where it runs; kept
pages are a cache of the last days, read again from the web when missing."""
ORDER = {"runs": (RUNS.c.created_seq, RUNS.c.run_id)}
"""How a table is read when its key is not the order it needs: a run before its follow-ups
(a follow-up is always made after the run it asks about)."""


@dataclass
class Copied:
    """One table's count: rows inserted now, and rows whose key the target already had."""

    table: str
    copied: int = 0
    already: int = 0


def history_tables() -> list[Table]:
    """Every table of the schema that holds history, parents before children."""
    return [table for table in METADATA.sorted_tables if table.name not in NOT_HISTORY]


def _surrogate(table: Table) -> Column[Any] | None:
    """A key the database numbers itself (an event's id): not copied, the target numbers its
    rows anew (so they never collide with its own), and the table's natural unique key (an
    event's run and sequence number) tells a row already there."""
    key = list(table.primary_key.columns)
    return key[0] if len(key) == 1 and key[0].autoincrement is True else None


def _read_order(table: Table) -> tuple[Column[Any], ...]:
    return ORDER.get(table.name) or tuple(table.primary_key.columns)


def _batch_after(
    table: Table, last: tuple[Any, ...] | None, size: int
) -> Callable[[Connection], list[dict[str, Any]]]:
    """The next `size` rows of `table` after the row whose order key is `last` (keyset paging:
    each batch is one short read, however large the table)."""
    order = _read_order(table)
    query = select(table).order_by(*order).limit(size)
    if last is not None:
        query = query.where(tuple_(*order) > tuple_(*last))

    def work(conn: Connection) -> list[dict[str, Any]]:
        return [dict(row._mapping) for row in conn.execute(query)]

    return work


def _insert_missing(table: Table, rows: list[dict[str, Any]]) -> Callable[[Connection], int]:
    """Insert the rows whose keys the target lacks; how many that was."""
    surrogate = _surrogate(table)
    if surrogate is not None:
        rows = [{k: v for k, v in row.items() if k != surrogate.name} for row in rows]
    key = [column for column in table.primary_key.columns if column is not surrogate]
    returned = key or list(table.columns)[:1]
    statement = postgres_insert(table).on_conflict_do_nothing().returning(*returned)

    def work(conn: Connection) -> int:
        return len(conn.execute(statement, rows).all())

    return work


async def _copy_table(source: Database, target: Database, table: Table, size: int) -> Copied:
    counted = Copied(table.name)
    order = [column.name for column in _read_order(table)]
    last: tuple[Any, ...] | None = None
    while rows := await source.read(_batch_after(table, last, size)):
        inserted = await target.write(_insert_missing(table, rows))
        counted.copied += inserted
        counted.already += len(rows) - inserted
        last = tuple(rows[-1][name] for name in order)
    return counted


@asynccontextmanager
async def _readable(path: Path) -> AsyncIterator[Database]:
    """The source at this release's schema, read-only. An earlier release's file is upgraded in
    a temporary copy (as large as the file) made by SQLite's backup, a consistent snapshot even
    of a file in use."""
    version = await asyncio.to_thread(check_sqlite, path)
    if version > latest():
        raise StoreError(
            f"{path} was written by a newer research-bot (schema {version}; this one knows "
            f"{latest()}): copy it with that release."
        )
    async with AsyncExitStack() as stack:
        current, reading = version == latest(), path
        if not current:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="research-bot-copy-"))
            reading = Path(folder) / "snapshot.sqlite3"
            await asyncio.to_thread(_snapshot, path, reading)
        # A snapshot is migrated by its opening, like any start of this release.
        source = await open_database(reading, readonly=current)
        stack.push_async_callback(source.close)
        yield source


def _snapshot(path: Path, into: Path) -> None:
    try:
        with closing(read_only(path)) as src, closing(sqlite3.connect(into)) as dst:
            src.backup(dst)
    except sqlite3.Error as error:
        raise StoreError(f"Cannot read the database {path}: {error}.") from None


async def copy_history(
    source: Path,
    target: str,
    *,
    batch: int = BATCH,
    on_table: Callable[[Copied], None] | None = None,
) -> list[Copied]:
    """Copy every history table of the SQLite file `source` into the PostgreSQL database
    `target` (migrated first), skipping rows already there; each table's count, in order.
    `on_table` hears each table's count as soon as that table is done."""
    if not is_postgres(target):
        raise StoreError("The target must be a PostgreSQL URL: postgresql://user@host/database.")
    postgres_where(target)  # a URL that cannot be read is one line, before any connection
    counts: list[Copied] = []
    async with _readable(source) as reading:
        writing = await open_database(target)
        try:
            for table in history_tables():
                counted = await _copy_table(reading, writing, table, batch)
                counts.append(counted)
                if on_table is not None:
                    on_table(counted)
        finally:
            await writing.close()
    return counts
