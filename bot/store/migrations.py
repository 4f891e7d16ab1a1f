"""Bringing a database to the schema this release knows, once, whoever else is starting.

One process at a time: the version is read and the steps applied inside one transaction that
holds the database's write lock (SQLite's `BEGIN IMMEDIATE`; on PostgreSQL a transaction-level
advisory lock), so two replicas starting together never both apply a step. A new database is
created whole from `METADATA`; a SQLite file of an earlier release takes its frozen scripts,
then the portable steps. SQLite keeps its version in `PRAGMA user_version` (as every release
did); PostgreSQL in the one-row table `schema_version`.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, inspect, text

from bot.errors import StoreError
from bot.store import schema

log = logging.getLogger(__name__)
MIGRATION_LOCK = 7_201_754_213
"""The advisory lock key replicas take while they migrate a PostgreSQL database."""


def schema_version(conn: Connection) -> int:
    if conn.dialect.name == "sqlite":
        return int(conn.exec_driver_sql("PRAGMA user_version").scalar_one())
    if not inspect(conn).has_table("schema_version"):
        return 0
    return int(conn.execute(text("SELECT version FROM schema_version")).scalar_one())


def _set_version(conn: Connection, version: int) -> None:
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(f"PRAGMA user_version = {int(version)}")
        return
    conn.execute(text("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"))
    conn.execute(text("DELETE FROM schema_version"))
    conn.execute(text("INSERT INTO schema_version (version) VALUES (:v)"), {"v": version})


def latest() -> int:
    """The version `schema.METADATA` describes (read when asked: tests append a step)."""
    return len(schema.SQLITE_SCRIPTS) + len(schema.STEPS)


def too_new(version: int) -> StoreError:
    return StoreError(
        f"The database is at schema version {version}, newer than this bot knows ({latest()}). "
        "Upgrade research-bot."
    )


def migrate(conn: Connection) -> int:
    """Inside the caller's write transaction: apply what is pending; returns the version
    the database was at before."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
    version, target = schema_version(conn), latest()
    if version > target:
        raise too_new(version)
    if version == target:
        return version
    frozen = len(schema.SQLITE_SCRIPTS)
    if version == 0 and not inspect(conn).get_table_names():
        schema.METADATA.create_all(conn)
    elif version < frozen and conn.dialect.name != "sqlite":
        raise StoreError(f"The database is at schema version {version}, which only SQLite had.")
    else:
        for script in schema.SQLITE_SCRIPTS[version:]:
            for statement in _statements(script):
                conn.exec_driver_sql(statement)
        for step in schema.STEPS[max(0, version - frozen) :]:
            step(conn)
    _set_version(conn, target)
    log.info("store schema migrated from version %d to %d", version, target)
    return version


def _statements(script: str) -> list[str]:
    """A frozen SQLite script as its statements (none of them holds a `;` of its own)."""
    return [part.strip() for part in script.split(";") if part.strip()]
