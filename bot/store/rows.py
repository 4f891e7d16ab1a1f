"""The runs tables as Python values: how a row becomes a `RunRecord` or a `Claim` (and back),
and the few statements several queries share. Written once in SQLAlchemy Core, they read the
same on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, Select, and_, delete, insert, or_, select
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from bot.agent.report.support import Claim, Support, Verdict
from bot.domain import RunRecord, RunStatus
from bot.store.schema import CLAIMS, RUNS

Clock = Callable[[], datetime]

RUN_ID_ALPHABET = "23456789abcdefghijkmnpqrstuvwxyz"
"""Lowercase letters and digits without 0/o and 1/l, so an id read aloud or retyped survives."""
RUN_ID_LENGTH = 10
DEDUPE_TTL = timedelta(days=1)
FINAL = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)
UNFINISHED = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)

ORIGIN_COLUMNS = {
    "platform": "platform",
    "workspace": "workspace",
    "channel": "channel",
    "thread": "thread",
    "user": "user_id",
    "user_name": "user_name",
    "private": "private",
}
"""Origin field -> runs column."""
NEWEST_FIRST = (RUNS.c.created_at.desc(), RUNS.c.created_seq.desc())
OLDEST_FIRST = (RUNS.c.created_at, RUNS.c.created_seq)


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


def run_record(row: Row[Any] | Mapping[str, Any]) -> RunRecord:
    data = dict(row._mapping) if isinstance(row, Row) else dict(row)
    origin = {field: data.pop(column) for field, column in ORIGIN_COLUMNS.items()}
    if not data.pop("cost_known"):
        data["cost_usd"] = None
    return RunRecord.model_validate({**data, "origin": origin})


def runs_where(*conditions: ColumnElement[bool]) -> Select[Any]:
    return select(RUNS).where(and_(True, *conditions))


def scope(platform: str | None, workspace: str | None) -> list[ColumnElement[bool]]:
    """The conditions of history scoped to a place (none for what is not named)."""
    wanted = [(RUNS.c.platform, platform), (RUNS.c.workspace, workspace)]
    return [column == value for column, value in wanted if value is not None]


def visible_from(viewer_channel: str | None) -> list[ColumnElement[bool]]:
    """What a conversation may see of its workspace: every public run, and the private runs asked
    in it. None: the operator's view (the terminal), which sees the whole workspace."""
    if viewer_channel is None:
        return []
    return [or_(RUNS.c.private == 0, RUNS.c.channel == viewer_channel)]


def records(conn: Connection, query: Select[Any]) -> list[RunRecord]:
    return [run_record(row) for row in conn.execute(query)]


def statuses(wanted: Sequence[RunStatus]) -> list[str]:
    return [status.value for status in wanted]


def insert_new(conn: Connection, table: Any, values: dict[str, Any]) -> bool:
    """Insert a row unless its key is taken; True when it was inserted."""
    dialect_insert = postgres_insert if conn.dialect.name == "postgresql" else sqlite_insert
    statement = dialect_insert(table).values(values).on_conflict_do_nothing()
    # RETURNING, not rowcount: what both drivers report the same way for a skipped row.
    return conn.execute(statement.returning(*table.primary_key.columns)).first() is not None


def claim_row(row: Row[Any]) -> Claim:
    return Claim(
        sentence=row.sentence,
        sources=json.loads(row.sources),
        verdict=Verdict(row.verdict),
        method=row.method,
        note=row.note,
    )


def write_claims(conn: Connection, run_id: str, support: Support) -> None:
    conn.execute(delete(CLAIMS).where(CLAIMS.c.run_id == run_id))
    rows = [
        {
            "run_id": run_id,
            "n": n,
            "sentence": c.sentence,
            "sources": json.dumps(c.sources),
            "verdict": c.verdict.value,
            "method": c.method,
            "note": c.note,
        }
        for n, c in enumerate(support.claims, start=1)
    ]
    if rows:
        conn.execute(insert(CLAIMS), rows)
