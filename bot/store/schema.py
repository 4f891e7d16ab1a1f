"""The schema, defined once for SQLite and PostgreSQL (`METADATA`), and how a database reaches
it: a new database is created from `METADATA` at the latest version; a SQLite file of an earlier release
is first brought along its own frozen scripts, then every database takes the portable `STEPS`.

Times are ISO 8601 text in UTC with a fixed format (text order is time order on both engines),
JSON is text, flags are 0/1 integers: the same rows, the same queries, on either engine.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    Column,
    Connection,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    TypeDecorator,
    UniqueConstraint,
    event,
    inspect,
    text,
)
from sqlalchemy import Text as SQLText

from bot.store.search_index import create_search_index, scope_search_index, search_index_added
from bot.store.watch_schema import add_watches, watch_table

METADATA = MetaData()


class Text(TypeDecorator[str]):
    """Text without NUL characters: PostgreSQL refuses them, and a web page may carry one."""

    impl = SQLText
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return value.replace("\x00", "") if value is not None and "\x00" in value else value


class Flag(TypeDecorator[bool]):
    """A yes/no stored as 0/1, read back as a bool (a flag reads the same on either engine)."""

    impl = Integer
    cache_ok = True

    def process_bind_param(self, value: bool | None, dialect: Dialect) -> int | None:
        return None if value is None else int(value)

    def process_result_value(self, value: int | None, dialect: Dialect) -> bool | None:
        return None if value is None else bool(value)


def _counter(name: str) -> Column[int]:
    return Column(name, Integer, nullable=False, server_default=text("0"))


RUNS = Table(
    "runs",
    METADATA,
    Column("run_id", Text, primary_key=True),
    Column("platform", Text, nullable=False),
    Column("workspace", Text, nullable=False),
    Column("channel", Text, nullable=False),
    Column("thread", Text, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("user_name", Text, nullable=False),
    Column("topic", Text, nullable=False),
    Column("mode", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("termination_reason", Text),
    _counter("turns"),
    _counter("input_tokens"),
    _counter("output_tokens"),
    _counter("cache_read_tokens"),
    _counter("cache_write_tokens"),
    Column("cost_usd", Float, nullable=False, server_default=text("0")),
    Column("error", Text),
    Column("created_at", Text, nullable=False),
    Column("started_at", Text),
    Column("finished_at", Text),
    Column("owner", Text),
    Column("lease_until", Text),
    Column("delivered_at", Text),
    Column("cost_known", Integer, nullable=False, server_default=text("1")),
    Column("language", Text, nullable=False, server_default=text("'en'")),
    Column("depth", Text, nullable=False, server_default=text("'quick'")),
    Column("parent_run_id", Text, ForeignKey("runs.run_id", ondelete="CASCADE")),
    Column("created_seq", Integer, nullable=False, server_default=text("0")),
    Column("control", Text),
    Column("report_posted_at", Text),
    Column("identity", Text),
    Column("identity_key", Text),
    Column("private", Flag, nullable=False, server_default=text("1")),
    Index("runs_history", "platform", "workspace", text("created_at DESC")),
    Index("runs_status", "status"),
    Index("runs_undelivered", "delivered_at", "status"),
    Index("runs_parent", "parent_run_id", "created_at"),
    Index("runs_thread", "platform", "workspace", "thread"),
    Index("runs_queue", "status", "created_at", "created_seq"),
    Index("runs_identity", "platform", "workspace", "identity_key"),
)
EVENTS = Table(
    "events",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Text, ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("kind", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("at", Text, nullable=False),
    UniqueConstraint("run_id", "seq"),
    sqlite_autoincrement=True,
)
REPORTS = Table(
    "reports",
    METADATA,
    Column("run_id", Text, ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    Column("title", Text, nullable=False),
    Column("tldr", Text, nullable=False),
    Column("markdown", Text, nullable=False),
    Column("report_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
)
DEDUPE = Table(
    "dedupe",
    METADATA,
    Column("key", Text, primary_key=True),
    Column("created_at", Text, nullable=False),
    Index("dedupe_age", "created_at"),
)
CLAIMS = Table(
    "claims",
    METADATA,
    Column("run_id", Text, ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("n", Integer, nullable=False),
    Column("sentence", Text, nullable=False),
    Column("sources", Text, nullable=False),
    Column("verdict", Text, nullable=False),
    Column("method", Text, nullable=False),
    Column("note", Text, nullable=False),
    PrimaryKeyConstraint("run_id", "n"),
)
REPORT_VERSIONS = Table(
    "report_versions",
    METADATA,
    Column("run_id", Text, ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("version", Integer, nullable=False),
    Column("made_by", Text, ForeignKey("runs.run_id"), nullable=False),
    Column("title", Text, nullable=False),
    Column("tldr", Text, nullable=False),
    Column("markdown", Text, nullable=False),
    Column("report_json", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    PrimaryKeyConstraint("run_id", "version"),
)

REPLICAS = Table(
    "replicas",
    METADATA,
    Column("replica_id", Text, primary_key=True),
    Column("host", Text, nullable=False),
    Column("pid", Integer, nullable=False),
    Column("platforms", Text, nullable=False),
    Column("started_at", Text, nullable=False),
    Column("seen_at", Text, nullable=False),
)

PAGES = Table(
    "pages",
    METADATA,
    Column("scope", Text, nullable=False),
    Column("url_key", Text, nullable=False),
    Column("channel", Text, nullable=False),
    Column("private", Flag, nullable=False),
    Column("source", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("read_at", Text, nullable=False),
    PrimaryKeyConstraint("scope", "url_key", "channel"),
)
"""Pages runs read, per workspace (`Origin.scope`) and conversation, for its later runs."""
WATCHES = watch_table(METADATA, RUNS)
CONDENSED = Table(
    "condensed_pages",
    METADATA,
    Column("scope", Text, nullable=False),
    Column("text_key", Text, nullable=False),
    Column("goal_key", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("note", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("made_at", Text, nullable=False),
    PrimaryKeyConstraint("scope", "text_key", "goal_key"),
)
"""A page's condensed text, per workspace, by the hashes of the text and the goal it served."""

Step = Callable[[Connection], None]


def _runs_in_creation_order(conn: Connection) -> None:
    """7: runs numbered in the order they were made, for history and the queue when two were
    made in the same instant (SQLite's `rowid` did this, and PostgreSQL has none)."""
    conn.execute(text("ALTER TABLE runs ADD COLUMN created_seq INTEGER NOT NULL DEFAULT 0"))
    if conn.dialect.name == "sqlite":
        conn.execute(text("UPDATE runs SET created_seq = rowid"))
    else:
        numbered = "SELECT run_id, row_number() OVER (ORDER BY created_at) AS n FROM runs"
        conn.execute(
            text(
                f"UPDATE runs SET created_seq = o.n FROM ({numbered}) o WHERE runs.run_id = o.run_id"
            )
        )
    conn.execute(text("CREATE INDEX runs_queue ON runs (status, created_at, created_seq)"))


def _replicas(conn: Connection) -> None:
    """8: what replicas share: a run's pending control (summarize or cancel, pressed on any
    replica), and each replica's heartbeat."""
    conn.execute(text("ALTER TABLE runs ADD COLUMN control TEXT"))
    REPLICAS.create(conn)


def _report_posted(conn: Connection) -> None:
    """9: when a run's report reached its thread, ahead of its last status edit and its
    delivery, so that delivering it again after a crash does not post it twice."""
    conn.execute(text("ALTER TABLE runs ADD COLUMN report_posted_at TEXT"))


def _identities(conn: Connection) -> None:
    """10: the company a run researches (its `Identity` as JSON), settled before its research,
    and the key a later run of the same name in the same workspace finds it by."""
    conn.execute(text("ALTER TABLE runs ADD COLUMN identity TEXT"))
    conn.execute(text("ALTER TABLE runs ADD COLUMN identity_key TEXT"))
    conn.execute(text("CREATE INDEX runs_identity ON runs (platform, workspace, identity_key)"))


def _search(conn: Connection) -> None:
    """11: whether a run was asked in a private conversation (runs before this: private), and
    the full-text index over reports, their versions and follow-up answers, of the rows already
    stored too (bot/store/search_index.py; a new database gets it with `METADATA`). What a
    database made whole from `METADATA` already has is left as it is."""
    if "private" not in {column["name"] for column in inspect(conn).get_columns("runs")}:
        conn.execute(text("ALTER TABLE runs ADD COLUMN private INTEGER NOT NULL DEFAULT 1"))
    if not search_index_added(conn):
        create_search_index(conn)


def _pages(conn: Connection) -> None:
    """12: pages runs read and their condensed text, kept for the workspace's later runs."""
    PAGES.create(conn, checkfirst=True)
    CONDENSED.create(conn, checkfirst=True)


event.listen(METADATA, "after_create", lambda _, conn, **__: create_search_index(conn))

STEPS: tuple[Step, ...] = (
    _runs_in_creation_order,
    _replicas,
    _report_posted,
    _identities,
    _search,
    _pages,
    scope_search_index,
    add_watches,
    create_search_index,
)
"""Append-only, portable (SQLAlchemy DDL, or SQL both engines speak): step N takes version
`len(SQLITE_SCRIPTS) + N` to the next. Never edit a shipped step; add the next, and change
`METADATA` to match it."""


SQLITE_SCRIPTS: tuple[str, ...] = (
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
    # 2: who runs a run (and until when, a lease it renews), when its outcome was delivered,
    # and whether its cost is known. Runs that ended before this version count as delivered.
    """
    ALTER TABLE runs ADD COLUMN owner TEXT;
    ALTER TABLE runs ADD COLUMN lease_until TEXT;
    ALTER TABLE runs ADD COLUMN delivered_at TEXT;
    ALTER TABLE runs ADD COLUMN cost_known INTEGER NOT NULL DEFAULT 1;
    UPDATE runs SET delivered_at = finished_at WHERE status IN ('done', 'failed', 'cancelled');
    CREATE INDEX runs_undelivered ON runs (delivered_at, status);
    """,
    # 3: the asker's language, and each report's cited claims with their support.
    """
    ALTER TABLE runs ADD COLUMN language TEXT NOT NULL DEFAULT 'en';
    CREATE TABLE claims (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        n INTEGER NOT NULL, sentence TEXT NOT NULL, sources TEXT NOT NULL,
        verdict TEXT NOT NULL, method TEXT NOT NULL, note TEXT NOT NULL,
        PRIMARY KEY (run_id, n)
    );
    """,
    # 4: how deep a run researches; every run before this version was a quick one.
    """
    ALTER TABLE runs ADD COLUMN depth TEXT NOT NULL DEFAULT 'quick';
    """,
    # 5: follow-up questions (child runs) and the versions they make of a report (2, 3 …).
    """
    ALTER TABLE runs ADD COLUMN parent_run_id TEXT REFERENCES runs (run_id) ON DELETE CASCADE;
    CREATE INDEX runs_parent ON runs (parent_run_id, created_at);
    CREATE TABLE report_versions (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        version INTEGER NOT NULL, made_by TEXT NOT NULL REFERENCES runs (run_id),
        title TEXT NOT NULL, tldr TEXT NOT NULL, markdown TEXT NOT NULL,
        report_json TEXT NOT NULL, created_at TEXT NOT NULL,
        PRIMARY KEY (run_id, version)
    );
    """,
    # 6: a run found by its thread, for a follow-up question asked there.
    """
    CREATE INDEX runs_thread ON runs (platform, workspace, thread);
    """,
)
"""The SQLite files of releases before PostgreSQL: script N took `user_version` N to N+1. Frozen:
a file at one of these versions is brought up to date by the rest of them, then by `STEPS`."""
