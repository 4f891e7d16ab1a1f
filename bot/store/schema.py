"""The SQLite schema, as the migrations that build it: the one record of every table's shape."""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
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
    # 5: follow-up questions (child runs of the run they ask about) and the report versions a
    # follow-up makes (version 1 is the run's own row in `reports`; these are 2, 3 …).
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
"""Append-only: never edit a shipped script, add the next. Script N takes user_version N to N+1."""
