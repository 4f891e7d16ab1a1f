"""The store against real databases, on both engines (a SQLite file and a PostgreSQL server):
schema, run lifecycle, trajectory, history; and SQLite files of earlier releases upgraded."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Connection, create_engine, inspect, make_url, text

from bot.agent.events import (
    Ending,
    Event,
    ModelText,
    Notice,
    ReportReady,
    RunFinished,
    RunStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    Usage,
    UsageRecorded,
)
from bot.agent.report.model import Report, Section, Source
from bot.domain import Depth, Mode, Origin, Request, RunStatus
from bot.errors import NotFoundError, StoreError
from bot.store import schema
from bot.store.migrations import latest
from bot.store.runs import Store
from bot.store.schema import SQLITE_SCRIPTS
from bot.store.sqlite import SQLiteDatabase
from tests.postgres import PgServer

START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
SLACK_T1 = Origin(platform="slack", workspace="T1", channel="C1", user="U1", user_name="ada")


class StepClock:
    """Each reading is one second after the last, so creation order is time order."""

    def __init__(self, start: datetime = START, step: timedelta = timedelta(seconds=1)) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


def request(topic: str = "Acme Robotics", origin: Origin = SLACK_T1) -> Request:
    return Request(topic=topic, mode=Mode.COMPANY, origin=origin)


def query_file(target: str | Path, sql: str) -> list[tuple[object, ...]]:
    """Read the database with a second, plain connection: what another process would see."""
    if isinstance(target, str):
        with psycopg.connect(target) as conn:
            return [tuple(row) for row in conn.execute(sql).fetchall()]  # type: ignore[arg-type]
    with closing(sqlite3.connect(target)) as db:
        return db.execute(sql).fetchall()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "nested" / "bot.sqlite3"


@pytest.fixture
async def store(db_target: str | Path) -> AsyncIterator[Store]:
    async with Store.connect(db_target, clock=StepClock()) as opened:
        yield opened


def legacy_file(path: Path, version: int) -> None:
    """A SQLite file as a release before PostgreSQL left it at `version`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as db:
        for script in SQLITE_SCRIPTS[:version]:
            db.executescript(script)
        db.execute(f"PRAGMA user_version = {version}")
        db.commit()


async def test_open_creates_parent_dirs_schema_and_wal(db_path: Path) -> None:
    async with Store.connect(db_path):
        pass
    assert await asyncio.to_thread(db_path.exists)
    assert query_file(db_path, "PRAGMA user_version") == [(latest(),)]
    assert query_file(db_path, "PRAGMA journal_mode") == [("wal",)]
    names = {row[0] for row in query_file(db_path, "SELECT name FROM sqlite_master")}
    assert {"runs", "events", "reports", "dedupe", "runs_history", "runs_status"} <= names


async def test_a_new_postgres_database_gets_the_schema_and_its_version(pg_server: PgServer) -> None:
    name = pg_server.empty_database()
    try:
        async with Store.connect(pg_server.url(name)) as store:
            await store.create_run(request())
        assert pg_server.execute("SELECT version FROM schema_version", name) == [(latest(),)]
        assert pg_server.execute("SELECT count(*) FROM runs", name) == [(1,)]
    finally:
        pg_server.drop(name)


def _add_extra_table(conn: Connection) -> None:
    conn.execute(text("CREATE TABLE extra (x TEXT)"))
    conn.execute(text("INSERT INTO extra VALUES ('a;b')"))


def _broken_step(conn: Connection) -> None:
    conn.execute(text("CREATE TABLE extra (x TEXT)"))
    conn.execute(text("INSERT INTO nowhere VALUES (1)"))


async def test_reopening_applies_only_new_migrations(
    db_target: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Store.connect(db_target) as first:
        run = await first.create_run(request())
    # Creating the schema again would fail: only the new step may run on this database.
    monkeypatch.setattr(schema, "STEPS", (*schema.STEPS, _add_extra_table))
    async with Store.connect(db_target) as second:
        assert (await second.get_run(run.run_id)).topic == "Acme Robotics"
    async with Store.connect(db_target):
        pass
    assert query_file(db_target, "SELECT x FROM extra") == [("a;b",)]


async def test_a_failing_migration_leaves_the_previous_version(
    db_target: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Store.connect(db_target):
        pass
    monkeypatch.setattr(schema, "STEPS", (*schema.STEPS, _broken_step))
    with pytest.raises(StoreError, match="nowhere"):
        await Store.open(db_target)
    monkeypatch.undo()
    async with Store.connect(db_target, readonly=True) as reader:  # still this release's schema
        assert await reader.list_runs() == []
    assert "extra" not in _table_names(db_target)


async def test_a_database_from_a_newer_bot_is_refused(db_target: str | Path) -> None:
    async with Store.connect(db_target):
        pass
    if isinstance(db_target, str):
        with psycopg.connect(db_target, autocommit=True) as conn:
            conn.execute("UPDATE schema_version SET version = version + 1")
    else:
        with closing(sqlite3.connect(db_target)) as db:
            db.execute(f"PRAGMA user_version = {latest() + 1}")
    with pytest.raises(StoreError, match="Upgrade research-bot"):
        await Store.open(db_target)


async def test_an_older_database_is_upgraded_and_its_runs_were_quick(db_path: Path) -> None:
    legacy_file(db_path, 3)  # the last version without depth
    with closing(sqlite3.connect(db_path)) as db, db:
        db.execute(
            "INSERT INTO runs (run_id, platform, workspace, channel, thread, user_id, user_name,"
            " topic, mode, status, created_at) VALUES ('oldrun2345', 'slack', 'T1', 'C1', '',"
            " 'U1', 'ada', 'Acme', 'company', 'done', '2025-01-01T00:00:00.000000+00:00')"
        )

    async with Store.connect(db_path, clock=StepClock()) as store:
        old_run = await store.get_run("oldrun2345")
        deep = Request(topic="Globex", mode=Mode.CONTRACTS, origin=SLACK_T1, depth=Depth.DEEP)
        new_run = await store.create_run(deep)
        listed = {run.topic: run.depth for run in await store.list_runs()}

    assert query_file(db_path, "PRAGMA user_version") == [(latest(),)]
    assert (old_run.topic, old_run.depth) == ("Acme", Depth.QUICK)
    assert (new_run.mode, new_run.depth) == (Mode.CONTRACTS, Depth.DEEP)
    assert listed == {"Acme": Depth.QUICK, "Globex": Depth.DEEP}
    assert sorted(query_file(db_path, "SELECT topic, depth FROM runs")) == [
        ("Acme", "quick"),
        ("Globex", "deep"),
    ]


async def test_a_file_of_the_last_sqlite_only_release_upgrades_with_nothing_lost(
    db_path: Path, tmp_path: Path
) -> None:
    legacy_file(db_path, len(SQLITE_SCRIPTS))
    with closing(sqlite3.connect(db_path)) as db, db:
        for n, topic in enumerate(["Acme", "Globex", "Initech"]):
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
    async with Store.connect(db_path) as store:
        listed = [run.topic for run in await store.list_runs()]
        trail = await store.events("oldrun0345")
    # Made in the same instant: newest first is the order they were made in, reversed.
    assert listed == ["Initech", "Globex", "Acme"]
    assert [event.kind for event in trail] == ["notice"]
    fresh = tmp_path / "fresh.sqlite3"
    async with Store.connect(fresh):
        pass
    assert _shape(db_path) == _shape(fresh)


def _table_names(target: str | Path) -> set[str]:
    return set(_shape(target))


def _shape(target: str | Path) -> dict[str, tuple[set[str], set[tuple[str, ...]]]]:
    """Each table's columns and indexes, as the engine itself reports them."""
    url = (
        target.replace("postgresql://", "postgresql+psycopg://")
        if isinstance(target, str)
        else f"sqlite:///{target}"
    )
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            seen = inspect(conn)
            return {
                table: (
                    {column["name"] for column in seen.get_columns(table)},
                    {
                        (str(index["name"]), *map(str, index["column_names"]))
                        for index in seen.get_indexes(table)
                    },
                )
                for table in seen.get_table_names()
            }
    finally:
        engine.dispose()


async def test_a_runs_depth_is_stored_and_read_back(store: Store) -> None:
    quick = await store.create_run(request())
    deep = await store.create_run(request("Globex").model_copy(update={"depth": Depth.DEEP}))
    assert (await store.get_run(quick.run_id)).depth is Depth.QUICK
    assert (await store.get_run(deep.run_id)).depth is Depth.DEEP
    queued = await store.runs_with_status(RunStatus.QUEUED)
    assert [run.depth for run in queued] == [Depth.QUICK, Depth.DEEP]


async def test_memory_database_works() -> None:
    async with await Store.open(":memory:") as store:
        run = await store.create_run(request())
        assert (await store.get_run(run.run_id)).run_id == run.run_id


async def test_writes_ride_out_a_restart_of_the_server(
    pg_server: PgServer, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A run's events and its thread, written while PostgreSQL restarts, are all stored: the
    writes wait for the server (bot/store/postgres.py `OUTAGE_PAUSES_S`), none fails."""
    async with Store.connect(pg_url) as store:
        run = await store.create_run(request())
        restart = asyncio.create_task(asyncio.to_thread(pg_server.restart))
        written = 0
        while not restart.done():
            await store.append_event(run.run_id, Notice(message=str(written)))
            written += 1
        await restart
        await store.set_location(run.run_id, channel="C9", thread="1700000000.000100")
        await store.append_event(run.run_id, Notice(message="after"))

        messages = [event.message for event in await store.events(run.run_id)]  # type: ignore[union-attr]
        assert messages[-1] == "after"
        # In order, each at least once (a commit cut by the restart may land twice).
        assert list(dict.fromkeys(messages[:-1])) == [str(n) for n in range(written)]
        found = await store.get_run(run.run_id)
        assert (found.origin.channel, found.origin.thread) == ("C9", "1700000000.000100")
    assert "out of reach; trying again" in caplog.text


async def test_connections_the_server_dropped_while_idle_are_replaced_not_failed(
    pg_server: PgServer, pg_url: str
) -> None:
    """The pool does not ping a connection before each use (bot/store/postgres.py): those the
    server ended while they sat idle (an idle timeout, a proxy, an administrator) are replaced,
    and the work done on them goes through, nothing lost."""
    database = make_url(pg_url).database
    async with Store.connect(pg_url) as store:
        run = await store.create_run(request())
        await asyncio.gather(*(store.get_run(run.run_id) for _ in range(4)))  # a few pooled
        ended = pg_server.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{database}' AND pid <> pg_backend_pid()"
        )
        assert ended and all(flag for (flag,) in ended)

        await store.append_event(run.run_id, Notice(message="after"))
        assert (await store.get_run(run.run_id)).run_id == run.run_id
        assert [event.message for event in await store.events(run.run_id)] == ["after"]  # type: ignore[union-attr]


async def test_run_lifecycle(store: Store) -> None:
    run = await store.create_run(request())
    assert re.fullmatch(r"[2-9a-km-np-z]{10}", run.run_id)
    assert run.status is RunStatus.QUEUED
    assert run.origin == SLACK_T1
    assert run.created_at.tzinfo is not None
    assert run.started_at is None

    await store.set_location(run.run_id, channel="C9", thread="1700000000.000100")
    await store.mark_running(run.run_id)
    running = await store.get_run(run.run_id)
    assert running.status is RunStatus.RUNNING
    assert (running.origin.channel, running.origin.thread) == ("C9", "1700000000.000100")
    assert running.started_at is not None
    assert running.started_at > run.created_at

    await store.finish_run(run.run_id, status=RunStatus.FAILED, ending=Ending.LLM_ERROR, error="x")
    done = await store.get_run(f"  {run.run_id.upper()}\n")
    assert (done.status, done.termination_reason, done.error) == (
        RunStatus.FAILED,
        "llm_error",
        "x",
    )
    assert done.finished_at is not None
    assert done.finished_at > running.started_at


async def test_unknown_runs_are_not_found(store: Store) -> None:
    with pytest.raises(NotFoundError, match="No run zzzz here"):
        await store.get_run("zzzz")
    with pytest.raises(NotFoundError):
        await store.mark_running("zzzz")
    with pytest.raises(NotFoundError):
        await store.append_event("zzzz", Notice(message="hi"))
    assert await store.events("zzzz") == []
    assert await store.report("zzzz") is None


async def test_events_round_trip_in_order_and_add_up(store: Store, db_target: str | Path) -> None:
    run = await store.create_run(request())
    source = Source(url="https://acme.example/about", title="About Acme", snippet="Robots.")
    report = Report(title="Acme Robotics", tldr="Makes robots [1].", sources=[source])
    trajectory: list[Event] = [
        RunStarted(topic="Acme Robotics", mode="company"),
        TurnStarted(turn=1),
        ModelText(turn=1, text="Searching first."),
        ToolCalled(turn=1, call_id="t1", name="web_search", input={"query": "acme robotics"}),
        ToolFinished(turn=1, call_id="t1", name="web_search", is_error=False, content="...",
                     sources=[source], duration_s=0.4),
        UsageRecorded(turn=1, model="m", usage=Usage(input_tokens=100, output_tokens=20,
                      cache_read_tokens=5, cache_write_tokens=7, cost_usd=0.25)),
        TurnStarted(turn=2),
        UsageRecorded(turn=2, model="m", usage=Usage(input_tokens=50, output_tokens=10,
                      cache_read_tokens=1, cache_write_tokens=2, cost_usd=0.5)),
        ReportReady(turn=2, report=report, synthesis=False),
        RunFinished(ending=Ending.COMPLETED, turns=2, usage=Usage(input_tokens=150)),
    ]  # fmt: skip
    for event in trajectory:
        await store.append_event(run.run_id, event)

    assert await store.events(run.run_id) == trajectory
    stored = query_file(db_target, "SELECT seq, kind FROM events ORDER BY id")
    assert stored == [(i, event.kind) for i, event in enumerate(trajectory, start=1)]
    counted = await store.get_run(run.run_id)
    assert (counted.input_tokens, counted.output_tokens) == (150, 30)
    assert (counted.cache_read_tokens, counted.cache_write_tokens) == (6, 9)
    assert counted.cost_usd == pytest.approx(0.75)
    assert counted.turns == 2


async def test_turns_never_go_down(store: Store) -> None:
    run = await store.create_run(request())
    for turn in (1, 3, 2):
        await store.append_event(run.run_id, TurnStarted(turn=turn))
    assert (await store.get_run(run.run_id)).turns == 3


async def test_report_saved_loaded_and_replaced(store: Store) -> None:
    run = await store.create_run(request())
    report = Report(
        title="Acme Robotics",
        tldr="Warehouse robots [1].",
        sections=[Section(heading="Products", body="Pickers [1].")],
        sources=[Source(url="https://acme.example", title="Acme")],
    )
    done = {"status": RunStatus.DONE, "ending": "completed"}
    await store.finish_run(run.run_id, **done, report=(report, "# Acme Robotics\n"))
    assert await store.report(run.run_id) == (report, "# Acme Robotics\n")

    revised = report.model_copy(update={"tldr": "Warehouse and farm robots [1]."})
    await store.finish_run(run.run_id, **done, report=(revised, "# Acme Robotics (v2)\n"))
    assert await store.report(run.run_id) == (revised, "# Acme Robotics (v2)\n")


async def test_foreign_keys_are_enforced(store: Store) -> None:
    report = Report(title="t", tldr="t")
    with pytest.raises(StoreError, match=r"(?i)foreign key"):
        await store.finish_run(
            "nosuchrun2", status=RunStatus.DONE, ending="completed", report=(report, "")
        )


async def test_history_is_scoped_to_its_workspace(store: Store) -> None:
    run = await store.create_run(request())
    found = await store.get_run(run.run_id, platform="slack", workspace="T1")
    assert found.run_id == run.run_id
    with pytest.raises(NotFoundError, match=f"No run {run.run_id} here"):
        await store.get_run(run.run_id, platform="slack", workspace="T2")
    with pytest.raises(NotFoundError):
        await store.get_run(run.run_id, platform="discord", workspace="T1")
    assert await store.list_runs(platform="slack", workspace="T2") == []
    assert await store.list_runs(platform="discord") == []


async def test_list_runs_newest_first_with_limit(store: Store) -> None:
    other = Origin(platform="slack", workspace="T2")
    made = [await store.create_run(request(f"topic {i}")) for i in range(5)]
    await store.create_run(request("elsewhere", origin=other))
    listed = await store.list_runs(platform="slack", workspace="T1", limit=3)
    assert [run.run_id for run in listed] == [run.run_id for run in reversed(made)][:3]
    assert len(await store.list_runs()) == 6


async def test_runs_made_in_the_same_instant_still_list_newest_first(
    db_target: str | Path,
) -> None:
    async with Store.connect(db_target, clock=lambda: START) as store:
        made = [await store.create_run(request(f"topic {i}")) for i in range(3)]
        listed = await store.list_runs()
    assert [run.run_id for run in listed] == [run.run_id for run in reversed(made)]


async def test_runs_left_running_are_found_after_reopen(db_target: str | Path) -> None:
    clock = StepClock()
    async with Store.connect(db_target, clock=clock) as store:
        queued = await store.create_run(request("queued"))
        running = await store.create_run(request("running"))
        finished = await store.create_run(request("finished"))
        await store.mark_running(running.run_id)
        await store.mark_running(finished.run_id)
        await store.finish_run(finished.run_id, status=RunStatus.DONE, ending="completed")
    async with Store.connect(db_target, clock=clock) as store:
        left = await store.runs_with_status(RunStatus.RUNNING, RunStatus.QUEUED)
        assert [run.run_id for run in left] == [queued.run_id, running.run_id]
        assert await store.runs_with_status() == []


async def test_claim_is_durable_and_expires_after_a_day(db_target: str | Path) -> None:
    clock = StepClock()
    async with Store.connect(db_target, clock=clock) as store:
        assert await store.claim("slack:Ev123") is True
        assert await store.claim("slack:Ev123") is False
        assert await store.claim("slack:Ev456") is True
    async with Store.connect(db_target, clock=clock) as store:
        assert await store.claim("slack:Ev123") is False
    clock.now += timedelta(days=2)
    async with Store.connect(db_target, clock=clock) as store:
        assert await store.claim("slack:Ev123") is True


async def test_concurrent_appends_keep_per_run_sequence(
    store: Store, db_target: str | Path
) -> None:
    runs = [await store.create_run(request(f"topic {i}")) for i in range(5)]
    await asyncio.gather(
        *(store.append_event(runs[i % 5].run_id, Notice(message=str(i))) for i in range(50))
    )
    for index, run in enumerate(runs):
        events = await store.events(run.run_id)
        messages = [event.message for event in events if isinstance(event, Notice)]
        assert sorted(messages, key=int) == [str(i) for i in range(index, 50, 5)]
        seqs = query_file(
            db_target, f"SELECT seq FROM events WHERE run_id = '{run.run_id}' ORDER BY seq"
        )
        assert [seq for (seq,) in seqs] == list(range(1, 11))


async def test_a_cancelled_append_still_lands_and_leaves_the_store_usable(store: Store) -> None:
    run = await store.create_run(request())
    pending = asyncio.create_task(store.append_event(run.run_id, Notice(message="first")))
    await asyncio.sleep(0)  # let it start its transaction, then cancel it mid-way
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    await store.append_event(run.run_id, Notice(message="second"))
    assert [event.kind for event in await store.events(run.run_id)] == ["notice", "notice"]


async def test_group_commit_keeps_each_runs_order_and_resumes_only_when_durable(
    db_path: Path,
) -> None:
    """SQLite's own: one thread, so concurrent small writes share commits."""
    async with Store.connect(db_path) as store:
        await _group_commits(store, db_path)


async def _group_commits(store: Store, db_path: Path) -> None:
    database = store.database
    assert isinstance(database, SQLiteDatabase)
    runs = [await store.create_run(request(f"topic {i}")) for i in range(20)]
    commits_before = database.commits

    async def emit(run_id: str) -> None:
        for n in range(1, 11):
            await store.append_event(run_id, Notice(message=str(n)))
            # What another process sees the moment this caller resumes: its event, committed.
            sql = f"SELECT COUNT(*) FROM events WHERE run_id = '{run_id}'"
            assert await asyncio.to_thread(query_file, db_path, sql) == [(n,)]

    await asyncio.gather(*(emit(run.run_id) for run in runs))

    for run in runs:
        rows = query_file(
            db_path, f"SELECT seq, payload FROM events WHERE run_id = '{run.run_id}' ORDER BY seq"
        )
        assert [seq for seq, _ in rows] == list(range(1, 11))
        assert [json.loads(payload)["message"] for _, payload in rows] == [
            str(n) for n in range(1, 11)
        ]
    # 200 events from 20 runs at once share transactions: far fewer commits than events.
    assert database.commits - commits_before < 100


async def test_a_failing_append_fails_only_its_caller(store: Store, db_target: str | Path) -> None:
    runs = [await store.create_run(request(f"topic {i}")) for i in range(3)]
    appends = [store.append_event(run.run_id, Notice(message="kept")) for run in runs]
    appends.insert(1, store.append_event("nosuchrun00", Notice(message="lost")))

    results = await asyncio.gather(*appends, return_exceptions=True)

    assert isinstance(results[1], NotFoundError)
    assert [result for i, result in enumerate(results) if i != 1] == [None, None, None]
    assert query_file(db_target, "SELECT COUNT(*) FROM events") == [(3,)]
    assert query_file(db_target, "SELECT COUNT(*) FROM events WHERE run_id = 'nosuchrun00'") == [
        (0,)
    ]


async def test_a_run_is_found_by_its_thread_in_its_own_workspace_only(store: Store) -> None:
    slack = Origin(platform="slack", workspace="T1", channel="C1", user="U1")
    run = await store.create_run(Request(topic="Acme Robotics", origin=slack))
    await store.set_location(run.run_id, channel="C1", thread="171.01")
    child = await store.create_run(
        Request(topic="Who are their customers?", origin=slack, parent_run_id=run.run_id)
    )
    await store.set_location(child.run_id, channel="C1", thread="171.01")

    found = await store.run_in_thread("171.01", platform="slack", workspace="T1", channel="C1")
    assert found is not None and found.run_id == run.run_id  # the run, not its follow-up
    assert await store.run_in_thread("171.01", platform="slack", workspace="T2") is None
    assert await store.run_in_thread("171.01", platform="discord", workspace="T1") is None
    assert (
        await store.run_in_thread("171.01", platform="slack", workspace="T1", channel="C2") is None
    )
    assert await store.run_in_thread("999.99", platform="slack", workspace="T1") is None
