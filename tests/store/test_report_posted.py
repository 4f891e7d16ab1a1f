"""A run's report recorded as posted in its thread (ahead of its last status edit and its
delivery), on both engines; and a database of the release before that mark, upgraded."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine

from bot.agent.report.model import Report
from bot.domain import Origin, Request, RunStatus
from bot.errors import NotFoundError
from bot.store import schema
from bot.store.migrations import latest
from bot.store.runs import Store
from tests.store.stepped import START, StepClock

SLACK = Origin(platform="slack", workspace="T1", channel="C1", thread="1.1", user="U1")
INSERT_RUN = (
    "INSERT INTO runs (run_id, platform, workspace, channel, thread, user_id, user_name, topic,"
    " mode, status, termination_reason, created_at, finished_at) VALUES ('{run_id}', 'slack',"
    " 'T1', 'C1', '1.1', 'U1', 'ada', 'Acme', 'company', 'done', 'completed',"
    " '2025-03-01T09:00:00.000000+00:00', '2025-03-01T09:05:00.000000+00:00')"
)


async def test_a_posted_report_is_recorded_and_the_run_stays_to_deliver(store: Store) -> None:
    run = await store.create_run(Request(topic="Acme Robotics", origin=SLACK))
    report = Report(title="Acme", tldr="Builds robots.")
    await store.finish_run(
        run.run_id, status=RunStatus.DONE, ending="completed", report=(report, "# Acme\n")
    )
    assert (await store.get_run(run.run_id)).report_posted_at is None

    await store.mark_report_posted(run.run_id)

    [waiting] = await store.undelivered_runs(since=START)
    assert waiting.run_id == run.run_id
    assert waiting.report_posted_at is not None and waiting.delivered_at is None
    await store.mark_delivered(run.run_id)
    delivered = await store.get_run(run.run_id)
    assert delivered.report_posted_at is not None and delivered.delivered_at is not None
    assert delivered.report_posted_at < delivered.delivered_at
    assert await store.undelivered_runs(since=START) == []
    with pytest.raises(NotFoundError):
        await store.mark_report_posted("zzzz")


LATER_STEPS = len(schema.STEPS) - 1 - schema.STEPS.index(schema._report_posted)
"""Steps that came after `report_posted_at`; that release had none of them."""
LATER_COLUMNS = ("identity", "identity_key")
"""The runs columns those steps added (the PostgreSQL path drops them by hand)."""


def _previous_release(target: str | Path) -> None:
    """The database as the release before `report_posted_at` left it, with one run that ended
    and was never delivered."""
    if isinstance(target, str):  # PostgreSQL: made whole from that release's schema
        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute("ALTER TABLE runs DROP COLUMN report_posted_at")
            for column in LATER_COLUMNS:
                conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
            conn.execute(f"UPDATE schema_version SET version = version - {LATER_STEPS + 1}")
            conn.execute(INSERT_RUN.format(run_id="oldrun2345"))  # type: ignore[arg-type]
        return
    # SQLite: a file of the last SQLite-only release, brought along that release's steps.
    target.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(target)) as db:
        for script in schema.SQLITE_SCRIPTS:
            db.executescript(script)
        db.commit()
    engine = create_engine(f"sqlite:///{target}")
    try:
        with engine.begin() as conn:
            for step in schema.STEPS[: -LATER_STEPS - 1]:
                step(conn)
            conn.exec_driver_sql(f"PRAGMA user_version = {latest() - LATER_STEPS - 1}")
            conn.exec_driver_sql(INSERT_RUN.format(run_id="oldrun2345"))
    finally:
        engine.dispose()


def _runs_columns(target: str | Path) -> set[str]:
    if isinstance(target, str):
        with psycopg.connect(target) as conn:
            sql = "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'"
            return {str(row[0]) for row in conn.execute(sql).fetchall()}
    with closing(sqlite3.connect(target)) as db:
        return {str(row[1]) for row in db.execute("PRAGMA table_info(runs)")}


async def test_a_database_of_the_previous_release_gains_the_mark_with_nothing_lost(
    db_target: str | Path,
) -> None:
    _previous_release(db_target)
    assert "report_posted_at" not in _runs_columns(db_target)

    async with Store.connect(db_target, clock=StepClock()) as store:
        old = await store.get_run("oldrun2345")
        [waiting] = await store.undelivered_runs(since=START - timedelta(days=1))
        await store.mark_report_posted("oldrun2345")
        marked = await store.get_run("oldrun2345")

    assert (old.status, old.termination_reason, old.report_posted_at) == (
        RunStatus.DONE,
        "completed",
        None,
    )
    assert waiting.run_id == "oldrun2345"
    assert marked.report_posted_at is not None and marked.delivered_at is None
    assert "report_posted_at" in _runs_columns(db_target)
    async with Store.connect(db_target, readonly=True) as reader:  # at the latest version now
        assert (await reader.get_run("oldrun2345")).report_posted_at == marked.report_posted_at
