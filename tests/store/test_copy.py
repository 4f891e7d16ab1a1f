"""`db copy` and `db status` at the store: a SQLite history written by the real store, copied into
a real PostgreSQL server; what arrives, what a second copy does, a copy cut short by the server,
files that are not research-bot's; and the status of each engine."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text

from bot.agent.events import (
    Ending,
    Notice,
    ReportReady,
    RunFinished,
    RunStarted,
    ToolCalled,
    TurnStarted,
    Usage,
    UsageRecorded,
)
from bot.agent.report.model import Report, Source
from bot.agent.report.support import Claim, Support, Verdict
from bot.domain import Origin, Request, RunStatus
from bot.errors import NotFoundError, StoreError
from bot.store.copy import NOT_HISTORY, Copied, copy_history, history_tables
from bot.store.migrations import latest
from bot.store.runs import Store
from bot.store.schema import METADATA, SQLITE_SCRIPTS
from bot.store.status import database_status
from tests.postgres import PgServer

START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
SLACK = Origin(platform="slack", workspace="T1", channel="C1", user="U1", user_name="ada")
DISCORD = Origin(platform="discord", workspace="G1", channel="9", user="7", user_name="bo")


class StepClock:
    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _report(title: str, claims: int = 0) -> Report:
    source = Source(url=f"https://{title.lower()}.example/", title=title, snippet="About.")
    support = Support(
        claims=[
            Claim(
                sentence=f"Claim {n} [1].", sources=[1], verdict=Verdict.SUPPORTED, method="judge"
            )
            for n in range(claims)
        ]
    )
    return Report(title=title, tldr=f"{title} makes robots [1].", sources=[source], support=support)


async def make_history(path: Path) -> dict[str, str]:
    """A team's history, written by the real store: finished runs with events, reports and
    claims, a follow-up that made report version 2, a failed run, a queued one, a dedupe key."""
    async with Store.connect(path, clock=StepClock()) as store:
        done = await store.create_run(Request(topic="Acme Robotics", origin=SLACK))
        await store.mark_running(done.run_id)
        for event in [
            RunStarted(topic="Acme Robotics", mode="company"),
            TurnStarted(turn=1),
            ToolCalled(turn=1, call_id="t1", name="web_search", input={"query": "acme"}),
            UsageRecorded(turn=1, model="m", usage=Usage(input_tokens=9, cost_usd=0.25)),
            ReportReady(turn=1, report=_report("Acme"), synthesis=False),
            RunFinished(ending=Ending.COMPLETED, turns=1, usage=Usage(input_tokens=9)),
        ]:
            await store.append_event(done.run_id, event)
        await store.finish_run(
            done.run_id,
            status=RunStatus.DONE,
            ending="completed",
            report=(_report("Acme", 3), "# Acme\n"),
        )
        await store.mark_report_posted(done.run_id)
        await store.mark_delivered(done.run_id)
        asked = Request(topic="Who are their customers?", origin=SLACK, parent_run_id=done.run_id)
        follow_up = await store.create_run(asked)
        await store.append_event(follow_up.run_id, Notice(message="answered from the run"))
        await store.finish_run(
            follow_up.run_id,
            status=RunStatus.DONE,
            ending="completed",
            revision=(_report("Acme v2"), "# Acme v2\n"),
        )
        failed = await store.create_run(Request(topic="Globex", origin=DISCORD))
        for turn in range(1, 8):  # enough events to fill several small batches
            await store.append_event(failed.run_id, TurnStarted(turn=turn))
        await store.finish_run(
            failed.run_id, status=RunStatus.FAILED, ending="llm_error", error="x"
        )
        queued = await store.create_run(Request(topic="Initech", origin=DISCORD))
        assert await store.claim("slack:event:Ev0001")
    return {"done": done.run_id, "follow_up": follow_up.run_id, "queued": queued.run_id}


def sync_url(target: str | Path) -> str:
    if isinstance(target, str):
        return target.replace("postgresql://", "postgresql+psycopg://")
    return f"sqlite:///{target}"


def table_rows(target: str | Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every history table's rows as the engine returns them (an event's own id left out: the
    target numbers its events itself), in a fixed order."""
    engine = create_engine(sync_url(target))
    try:
        with engine.connect() as conn:
            found = {}
            for table in history_tables():
                columns = [c for c in table.columns if c.name != "id" or table.name != "events"]
                rows = conn.execute(select(*columns)).all()
                found[table.name] = sorted(tuple(row) for row in rows)
            return found
    finally:
        engine.dispose()


@pytest.fixture
async def history(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "team.sqlite3"
    return path, await make_history(path)


@pytest.fixture
def empty_pg(pg_server: PgServer) -> Any:
    """A PostgreSQL database with nothing in it, not even the schema."""
    name = pg_server.empty_database()
    yield pg_server.url(name)
    pg_server.drop(name)


def by_table(counts: list[Copied]) -> dict[str, tuple[int, int]]:
    return {c.table: (c.copied, c.already) for c in counts}


async def test_a_whole_history_arrives_in_a_new_database_and_reads_the_same(
    history: tuple[Path, dict[str, str]], empty_pg: str
) -> None:
    path, runs = history
    heard: list[str] = []
    counts = await copy_history(path, empty_pg, batch=3, on_table=lambda c: heard.append(c.table))

    source, target = table_rows(path), table_rows(empty_pg)
    assert target == source
    assert {name: len(rows) for name, rows in source.items()} == {
        "dedupe": 1,
        "runs": 4,
        "claims": 3,
        "events": 14,
        "report_versions": 1,
        "reports": 1,
        "watches": 0,
    }
    assert by_table(counts) == {name: (len(rows), 0) for name, rows in source.items()}
    # Every table of the schema but the replicas' own, parents before children, each heard.
    assert heard == [c.table for c in counts] == [t.name for t in history_tables()]
    assert {t.name for t in history_tables()} == set(METADATA.tables) - NOT_HISTORY
    assert heard.index("runs") < min(heard.index(t) for t in ("events", "reports", "claims"))

    an_hour_on = StepClock(START + timedelta(hours=1))
    async with (
        Store.connect(path, readonly=True) as old,
        Store.connect(empty_pg, clock=an_hour_on) as new,
    ):
        for run_id in runs.values():
            assert await new.get_run(run_id) == await old.get_run(run_id)
            assert await new.events(run_id) == await old.events(run_id)
        assert await new.latest_report(runs["done"]) == await old.latest_report(runs["done"])
        assert (await new.latest_report(runs["done"]) or (0,))[0] == 2
        assert await new.claims(runs["done"]) == await old.claims(runs["done"])
        assert await new.follow_ups(runs["done"]) == await old.follow_ups(runs["done"])
        assert await new.list_runs() == await old.list_runs()
        assert not await new.claim("slack:event:Ev0001")  # the dedupe key came along
        # The copied database goes on: new events and runs number after the copied ones.
        await new.append_event(runs["done"], Notice(message="after the move"))
        later = await new.create_run(Request(topic="Hooli", origin=SLACK))
        assert (await new.list_runs(limit=1))[0].run_id == later.run_id
        assert [e.kind for e in await new.events(runs["done"])][-1] == "notice"


async def test_copying_again_copies_nothing_and_says_what_was_there(
    history: tuple[Path, dict[str, str]], pg_url: str
) -> None:
    path, _ = history
    first = by_table(await copy_history(path, pg_url))
    again = by_table(await copy_history(path, pg_url, batch=2))

    assert again == {name: (0, copied) for name, (copied, _) in first.items()}
    assert table_rows(pg_url) == table_rows(path)


REFUSE_AFTER_SIX = """
CREATE FUNCTION refuse_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(*) FROM events) >= 6 THEN
        RAISE EXCEPTION 'could not extend file: No space left on device';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_events BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_events();
"""


async def test_a_copy_the_server_cuts_short_keeps_its_batches_and_resumes(
    history: tuple[Path, dict[str, str]], pg_server: PgServer, pg_url: str
) -> None:
    path, _ = history
    database = pg_url.split("?")[0].rsplit("/", 1)[1]
    pg_server.execute(REFUSE_AFTER_SIX, database)

    with pytest.raises(StoreError) as refused:
        await copy_history(path, pg_url, batch=3)

    message = str(refused.value)
    assert "\n" not in message
    assert "No space left on device" in message
    assert "/" + database in message  # it names the database
    # Whole batches were kept: two of events, and every table before events.
    assert pg_server.execute("SELECT count(*) FROM events", database) == [(6,)]
    assert pg_server.execute("SELECT count(*) FROM runs", database) == [(4,)]
    assert pg_server.execute("SELECT count(*) FROM reports", database) == [(0,)]

    pg_server.execute("DROP TRIGGER refuse_events ON events", database)
    resumed = by_table(await copy_history(path, pg_url, batch=3))

    assert resumed["events"] == (14 - 6, 6)
    assert resumed["runs"] == (0, 4)
    assert resumed["reports"] == (1, 0)
    assert table_rows(pg_url) == table_rows(path)


def legacy_file(path: Path, version: int) -> None:
    """A SQLite file as a release before PostgreSQL left it, with a run and its event."""
    with closing(sqlite3.connect(path)) as db:
        for script in SQLITE_SCRIPTS[:version]:
            db.executescript(script)
        db.execute(f"PRAGMA user_version = {version}")
        for n, topic in enumerate(["Acme", "Globex"]):
            db.execute(
                "INSERT INTO runs (run_id, platform, workspace, channel, thread, user_id, "
                "user_name, topic, mode, status, created_at) VALUES (?, 'slack', 'T1', 'C1', '', "
                "'U1', 'ada', ?, 'company', 'done', '2025-01-01T00:00:00.000000+00:00')",
                (f"oldrun{n}345", topic),
            )
        db.execute(
            "INSERT INTO events (run_id, seq, kind, payload, at) VALUES ('oldrun0345', 1, "
            '\'notice\', \'{"kind": "notice", "message": "hi"}\', \'2025-01-01T00:00:00+00:00\')'
        )
        db.commit()


async def test_a_file_of_an_earlier_release_is_copied_and_left_as_it_was(
    tmp_path: Path, pg_url: str
) -> None:
    path = tmp_path / "old.sqlite3"
    legacy_file(path, len(SQLITE_SCRIPTS))
    before = hashlib.sha256(path.read_bytes()).hexdigest()

    counts = by_table(await copy_history(path, pg_url))

    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.sqlite3"]
    assert (counts["runs"], counts["events"]) == ((2, 0), (1, 0))
    async with Store.connect(pg_url) as store:
        # Made in the same instant: listed newest first in the order they were made.
        assert [r.topic for r in await store.list_runs()] == ["Globex", "Acme"]
        assert [e.kind for e in await store.events("oldrun0345")] == ["notice"]


async def test_a_file_of_a_newer_release_is_refused(tmp_path: Path, pg_url: str) -> None:
    path = tmp_path / "new.sqlite3"
    async with Store.connect(path):
        pass
    with closing(sqlite3.connect(path)) as db:
        db.execute(f"PRAGMA user_version = {latest() + 1}")

    with pytest.raises(
        StoreError,
        match=rf"newer research-bot \(schema {latest() + 1}; this one knows {latest()}\)",
    ):
        await copy_history(path, pg_url)


async def test_what_cannot_be_copied_is_refused_by_name_before_any_connection(
    tmp_path: Path,
) -> None:
    nowhere = "postgresql://bot:pw-42@127.0.0.1:1/research"  # never reached: refused first
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 20)
    other = tmp_path / "other.sqlite3"
    with closing(sqlite3.connect(other)) as db:
        db.execute("CREATE TABLE songs (title TEXT)")

    with pytest.raises(StoreError, match=r"notes.txt is not a SQLite file"):
        await copy_history(text, nowhere)
    with pytest.raises(StoreError, match=r"other.sqlite3 is a SQLite file, but not a research-bot"):
        await copy_history(other, nowhere)
    with pytest.raises(NotFoundError, match=r"No database at .*missing.sqlite3"):
        await copy_history(tmp_path / "missing.sqlite3", nowhere)
    with pytest.raises(StoreError, match="must be a PostgreSQL URL"):
        await copy_history(other, f"sqlite:///{tmp_path / 'x.sqlite3'}")
    with pytest.raises(StoreError, match="PostgreSQL URL cannot be read") as unreadable:
        await copy_history(other, "postgresql://bot:pw-42@host:port/research")
    assert "pw-42" not in str(unreadable.value)


async def test_status_says_engine_version_and_runs_on_both_engines(
    db_target: str | Path,
) -> None:
    async with Store.connect(db_target, clock=StepClock()) as store:
        first = await store.create_run(Request(topic="Acme", origin=SLACK))
        await store.finish_run(first.run_id, status=RunStatus.DONE, ending="completed")
        await store.create_run(Request(topic="Globex", origin=SLACK))
        await store.create_run(Request(topic="Initech", origin=SLACK))

    found = await database_status(db_target)

    assert found.engine == ("postgresql" if isinstance(db_target, str) else "sqlite")
    assert (found.version, found.latest) == (latest(), latest())
    assert found.runs == {"done": 1, "queued": 2}
    assert found.replicas == []  # the table is there; no replica has registered


async def test_status_reads_the_replicas_table_and_tells_alive_from_gone(
    db_target: str | Path,
) -> None:
    now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    async with Store.connect(db_target):
        pass
    # Rows as replicas register themselves (schema step 8), written by another writer.
    engine = create_engine(sync_url(db_target))
    with engine.begin() as conn:
        for replica_id, host, pid, seen, platforms in [
            ("r-alive", "web-1", 7, now - timedelta(seconds=5), "slack,discord"),
            # A time written without its zone (a timestamp column, or another writer) is UTC.
            ("r-gone", "web-2", 8, (now - timedelta(minutes=5)).replace(tzinfo=None), "slack"),
        ]:
            conn.execute(
                text(
                    "INSERT INTO replicas (replica_id, host, pid, started_at, seen_at, platforms) "
                    "VALUES (:id, :host, :pid, :started, :seen, :platforms)"
                ),
                {
                    "id": replica_id,
                    "host": host,
                    "pid": pid,
                    "started": (now - timedelta(hours=1)).isoformat(),
                    "seen": seen.isoformat(),
                    "platforms": platforms,
                },
            )
    engine.dispose()

    found = await database_status(db_target, now=now)

    assert found.replicas is not None
    assert [(r.replica_id, r.host, r.pid, r.alive) for r in found.replicas] == [
        ("r-alive", "web-1", 7, True),
        ("r-gone", "web-2", 8, False),
    ]
    assert found.replicas[0].seen_at == now - timedelta(seconds=5)
    assert found.replicas[0].platforms == "slack,discord"


async def test_status_of_databases_not_at_this_release(tmp_path: Path, empty_pg: str) -> None:
    old = tmp_path / "old.sqlite3"
    legacy_file(old, 3)
    before = hashlib.sha256(old.read_bytes()).hexdigest()

    older = await database_status(old)
    empty = await database_status(empty_pg)

    assert (older.version, older.runs) == (3, {"done": 2})
    assert hashlib.sha256(old.read_bytes()).hexdigest() == before  # status changed nothing
    assert (empty.engine, empty.version, empty.runs, empty.replicas) == ("postgresql", 0, {}, None)
