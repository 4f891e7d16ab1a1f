"""The `watches` table (bot/store/watches.py) and the step that adds it, with `runs.watch_id`,
to a database of an earlier version. Apart from bot/store/schema.py, which only names them."""

from __future__ import annotations

from sqlalchemy import Column, Connection, Index, Integer, MetaData, Table, Text, inspect, text


def watch_table(metadata: MetaData, runs: Table | None = None) -> Table:
    """The table, in `metadata`; given `runs`, that table gains `watch_id` too."""
    if runs is not None:
        runs.append_column(Column("watch_id", Text))
        Index("runs_watch", runs.c.watch_id, runs.c.status)
    return Table(
        "watches",
        metadata,
        Column("id", Text, primary_key=True),
        Column("topic", Text, nullable=False),
        Column("mode", Text, nullable=False),
        Column("depth", Text, nullable=False),
        Column("platform", Text, nullable=False),
        Column("workspace", Text, nullable=False),
        Column("channel", Text, nullable=False),
        Column("created_by", Text, nullable=False),
        Column("created_by_name", Text, nullable=False),
        Column("cadence", Text, nullable=False),
        Column("tz", Text, nullable=False),
        Column("hour", Integer, nullable=False),
        Column("minute", Integer, nullable=False),
        Column("anchor", Integer, nullable=False),
        Column("status", Text, nullable=False),
        Column("paused_reason", Text),
        Column("next_run_at", Text, nullable=False),
        Column("last_run_at", Text),
        Column("last_run_id", Text),
        Column("last_missed", Integer, nullable=False, server_default=text("0")),
        Column("refused", Text),
        Column("created_at", Text, nullable=False),
        Index("watches_due", "status", "next_run_at"),
        Index("watches_place", "platform", "workspace", "channel"),
    )


def add_watches(conn: Connection) -> None:
    """14: watches, and which watch a run was made for (`runs.watch_id`, None for the others).
    What a database made whole from `METADATA` already has is left as it is."""
    if "watch_id" not in {column["name"] for column in inspect(conn).get_columns("runs")}:
        conn.execute(text("ALTER TABLE runs ADD COLUMN watch_id TEXT"))
        conn.execute(text("CREATE INDEX runs_watch ON runs (watch_id, status)"))
    watch_table(MetaData()).create(conn, checkfirst=True)
