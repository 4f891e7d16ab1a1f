"""The runs tables as SQL text and Python values: the statements the store runs, and how a row
becomes a `RunRecord` or a `Claim` (and back). Nothing here touches a connection by itself."""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from bot.agent.report.support import Claim, Support, Verdict
from bot.domain import RunRecord, RunStatus

Clock = Callable[[], datetime]

RUN_ID_ALPHABET = "23456789abcdefghijkmnpqrstuvwxyz"
"""Lowercase letters and digits without 0/o and 1/l, so an id read aloud or retyped survives."""
RUN_ID_LENGTH = 10
DEDUPE_TTL = timedelta(days=1)
FINAL = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)

ORIGIN_COLUMNS = {
    "platform": "platform",
    "workspace": "workspace",
    "channel": "channel",
    "thread": "thread",
    "user": "user_id",
    "user_name": "user_name",
}
"""Origin field -> runs column."""
SELECT_RUNS = "SELECT * FROM runs"
INSERT_RUN = f"""
    INSERT INTO runs (
        run_id, {", ".join(ORIGIN_COLUMNS.values())}, topic, mode, status, created_at,
        owner, lease_until, language, depth, parent_run_id
    ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_EVENT = """
    INSERT INTO events (run_id, seq, kind, payload, at)
    SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ? FROM events WHERE run_id = ?
"""
ADD_USAGE = """
    UPDATE runs SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
        cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,
        cost_usd = cost_usd + ?, cost_known = cost_known AND ?
    WHERE run_id = ?
"""
UPSERT_REPORT = """
    INSERT INTO reports (run_id, title, tldr, markdown, report_json, created_at)
    VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (run_id) DO UPDATE SET title = excluded.title, tldr = excluded.tldr,
        markdown = excluded.markdown, report_json = excluded.report_json,
        created_at = excluded.created_at
"""
FINISH_RUN = """
    UPDATE runs SET status = ?, termination_reason = ?, error = ?, finished_at = ?,
        owner = NULL, lease_until = NULL
    WHERE run_id = ?
"""
USAGE = """
    SELECT platform, workspace, substr(created_at, 1, 10) AS day, user_id AS user,
        MAX(user_name) AS user_name, COUNT(*) AS runs, SUM(cost_usd) AS cost_usd,
        SUM(cost_known = 0) AS unpriced
    FROM runs WHERE created_at >= ?{where}
    GROUP BY platform, workspace, day, user_id ORDER BY platform, workspace, day, user_id
"""
CLAIM_RUN = """
    UPDATE runs SET owner = ?, lease_until = ? WHERE run_id = ? AND owner IS ? AND status IN (?, ?, ?)
"""


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    # One fixed format, so text order is time order in the indexes and in ORDER BY.
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def new_run_id() -> str:
    return "".join(secrets.choice(RUN_ID_ALPHABET) for _ in range(RUN_ID_LENGTH))


def clean_id(run_id: str) -> str:
    """People paste ids with spaces around them or in capitals."""
    return run_id.strip().lower()


def run_record(row: sqlite3.Row) -> RunRecord:
    data = dict(zip(row.keys(), row, strict=True))
    origin = {field: data.pop(column) for field, column in ORIGIN_COLUMNS.items()}
    if not data.pop("cost_known"):
        data["cost_usd"] = None
    return RunRecord.model_validate({**data, "origin": origin})


def scope(platform: str | None, workspace: str | None) -> tuple[str, list[str]]:
    """Extra `AND` clauses (fixed text, values bound) for history scoped to a place."""
    wanted = {"platform": platform, "workspace": workspace}
    given = {column: value for column, value in wanted.items() if value is not None}
    return "".join(f" AND {column} = ?" for column in given), list(given.values())


def claim_row(row: sqlite3.Row) -> Claim:
    return Claim(
        sentence=row["sentence"],
        sources=json.loads(row["sources"]),
        verdict=Verdict(row["verdict"]),
        method=row["method"],
        note=row["note"],
    )


def write_claims(conn: sqlite3.Connection, run_id: str, support: Support) -> None:
    conn.execute("DELETE FROM claims WHERE run_id = ?", (run_id,))
    conn.executemany(
        "INSERT INTO claims (run_id, n, sentence, sources, verdict, method, note) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (run_id, n, c.sentence, json.dumps(c.sources), c.verdict.value, c.method, c.note)
            for n, c in enumerate(support.claims, start=1)
        ],
    )
