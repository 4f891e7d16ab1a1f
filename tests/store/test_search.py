"""Search over stored reports on both engines: what is found, in what order, from where (the
workspace and privacy rules), what user input cannot break; and the index after a migration from
the release before it and after `db copy`."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine

from bot.agent.report.model import Report
from bot.domain import Origin, Request, RunStatus
from bot.errors import RequestError
from bot.store import schema
from bot.store.copy import copy_history
from bot.store.runs import Store
from bot.store.search import ReportHit
from bot.store.search_index import scope_search_index
from tests.postgres import PgServer
from tests.store.stepped import StepClock

PUBLIC = Origin(
    platform="slack", workspace="T1", channel="C1", user="U1", user_name="ada", private=False
)
PRIVATE = Origin(platform="slack", workspace="T1", channel="D9", user="U2", user_name="bo")
OTHER = Origin(platform="slack", workspace="T2", channel="C1", user="U3", user_name="cy")
TERMINAL = Origin(platform="terminal", user_name="op")


async def _finished(store: Store, topic: str, origin: Origin, markdown: str) -> str:
    run = await store.create_run(Request(topic=topic, origin=origin))
    report = Report(title=topic, tldr=markdown.splitlines()[-1])
    await store.finish_run(
        run.run_id, status=RunStatus.DONE, ending="completed", report=(report, markdown)
    )
    return run.run_id


async def _history(store: Store) -> dict[str, str]:
    """Runs in two workspaces and the terminal, public and private, a follow-up's answer and the
    report version it made."""
    ids = {
        "acme": await _finished(
            store,
            "Acme Robotics",
            PUBLIC,
            "# Acme Robotics\n\n## Overview\n\nAcme builds **warehouse robots** in Lyon [1].",
        ),
        "globex": await _finished(
            store,
            "Globex",
            PUBLIC,
            "# Globex\n\nGlobex sells robots. Robots, robots and more robots <@U1> [1].",
        ),
        "secret": await _finished(
            store, "Initech", PRIVATE, "# Initech\n\nInitech is buying warehouse robots."
        ),
        "elsewhere": await _finished(store, "Hooli", OTHER, "# Hooli\n\nHooli warehouse robots."),
        "terminal": await _finished(store, "Umbrella", TERMINAL, "# Umbrella\n\nWarehouse robots."),
    }
    asked = Request(topic="Who pays Acme?", origin=PUBLIC, parent_run_id=ids["acme"])
    follow_up = await store.create_run(asked)
    await store.finish_run(
        follow_up.run_id,
        status=RunStatus.DONE,
        ending="completed",
        report=(Report(title="Answer", tldr="x"), "Acme is paid by Zalando for its fleet."),
        revision=(
            Report(title="Acme v2", tldr="x"),
            "# Acme Robotics\n\nZalando runs Acme's fleet.",
        ),
    )
    ids["follow_up"] = follow_up.run_id
    return ids


def _found(hits: list[ReportHit], ids: dict[str, str]) -> list[tuple[str, int]]:
    names = {run_id: name for name, run_id in ids.items()}
    return [(names[hit.run_id], hit.version) for hit in hits]


async def test_search_is_ranked_scoped_to_the_workspace_and_keeps_private_runs_private(
    store: Store,
) -> None:
    ids = await _history(store)
    t1 = {"platform": "slack", "workspace": "T1"}

    from_public = await store.search_reports("robots", **t1, viewer_channel="C1")
    from_private = await store.search_reports("ROBOTS", **t1, viewer_channel="D9")
    operator = await store.search_reports("warehouse robots", **t1, viewer_channel=None)
    zalando = await store.search_reports("zalando", **t1, viewer_channel="C1")
    terminal = await store.search_reports(
        "robots", platform="terminal", workspace="", viewer_channel=None
    )

    # Globex says robots five times; Acme once, and Initech's private run is not seen from C1.
    assert _found(from_public, ids) == [("globex", 1), ("acme", 1)]
    assert _found(from_private, ids)[0] == ("globex", 1)
    assert sorted(_found(from_private, ids)) == [("acme", 1), ("globex", 1), ("secret", 1)]
    assert sorted(_found(operator, ids)) == [("acme", 1), ("secret", 1)]  # both words
    # The answer is a text of its own; the version it made is the run's best text for the word.
    assert sorted(_found(zalando, ids)) == [("acme", 2), ("follow_up", 1)]
    assert _found(terminal, ids) == [("terminal", 1)]
    acme = next(hit for hit in from_public if hit.run_id == ids["acme"])
    assert (acme.topic, acme.user_name, acme.channel, acme.private) == (
        "Acme Robotics",
        "ada",
        "C1",
        False,
    )
    assert acme.snippet == "Acme builds warehouse robots in Lyon [1]."
    globex = from_public[0]
    assert "<" not in globex.snippet and "@U1" in globex.snippet
    assert globex.rank > acme.rank
    answer = next(hit for hit in zalando if hit.run_id == ids["follow_up"])
    assert answer.parent_run_id == ids["acme"]
    assert await store.search_reports("robots", **t1, viewer_channel="C1", limit=1) == [globex]


async def test_search_words_are_words_never_syntax(store: Store) -> None:
    ids = await _history(store)
    t1 = {"platform": "slack", "workspace": "T1", "viewer_channel": None}

    for nothing in ["", "   ", '"', "*", "-", ":", "NEAR(", "()", "___"]:
        assert await store.search_reports(nothing, **t1) == []
    for query in ['"robots', "robots*", "-robots", "(robots)", "robots^", "{robots}"]:
        assert {h.run_id for h in await store.search_reports(query, **t1)} >= {ids["acme"]}
    for words_too in ["robots OR", "NEAR(robots", "title:robots", "robots AND lyon"]:
        assert await store.search_reports(words_too, **t1) == []  # no text has "or", "near" …
    assert _found(await store.search_reports("Lyon, robots!", **t1), ids) == [("acme", 1)]
    assert await store.search_reports("x" * 400, **t1) == []
    with pytest.raises(RequestError, match="under 400 characters"):
        await store.search_reports("x" * 401, **t1)


async def test_history_from_a_conversation_keeps_private_runs_private(store: Store) -> None:
    ids = await _history(store)
    t1 = {"platform": "slack", "workspace": "T1", "top_level": True}

    seen = {r.run_id for r in await store.list_runs(**t1, viewer_channel="C1")}
    seen_there = {r.run_id for r in await store.list_runs(**t1, viewer_channel="D9")}
    everything = {r.run_id for r in await store.list_runs(**t1)}

    assert seen == {ids["acme"], ids["globex"]}
    assert seen_there == everything == {ids["acme"], ids["globex"], ids["secret"]}
    assert (await store.get_run(ids["secret"])).origin.private
    assert not (await store.get_run(ids["acme"])).origin.private


INSERT_REPORTED_RUN = (
    "INSERT INTO runs (run_id, platform, workspace, channel, thread, user_id, user_name, topic,"
    " mode, status, created_at) VALUES ('oldrun2345', 'slack', 'T1', 'C1', '', 'U1', 'ada',"
    " 'Acme', 'company', 'done', '2025-01-01T00:00:00.000000+00:00');"
    "INSERT INTO reports (run_id, title, tldr, markdown, report_json, created_at) VALUES"
    " ('oldrun2345', 'Acme', 'x', '# Acme\n\nAcme makes robots.', '{}', '2025-01-01T00:00:01');"
)


TEXT_TABLES = ("reports", "report_versions")
BEFORE_SEARCH = len(schema.SQLITE_SCRIPTS) + schema.STEPS.index(schema._search)
"""The schema version of the release before search."""


UNINDEXED = [
    "DROP FUNCTION runs_search_scope() CASCADE",
    "DROP FUNCTION report_search_fill() CASCADE",
    *(f"ALTER TABLE {t} DROP COLUMN search, DROP COLUMN search_seq" for t in TEXT_TABLES),
]
"""PostgreSQL: the index taken off (its triggers with their functions)."""


def _previous_release(target: str | Path, scratch: Path) -> None:
    """The database as the release before search left it, with a run and its report."""
    if isinstance(target, str):  # PostgreSQL: this release's schema, search taken off again
        _previous_release(scratch / "before.sqlite3", scratch)
        with closing(sqlite3.connect(scratch / "before.sqlite3")) as db:
            then = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        later = [name for name in schema.METADATA.tables if name not in then]  # later steps'
        with psycopg.connect(target, autocommit=True) as conn:
            for sql in [
                *(f"DROP TABLE {name}" for name in later),
                *UNINDEXED,
                "ALTER TABLE runs DROP COLUMN private",
                f"UPDATE schema_version SET version = {BEFORE_SEARCH}",
                *INSERT_REPORTED_RUN.split(";")[:2],
            ]:
                conn.execute(sql)  # type: ignore[arg-type]
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(target)) as db:
        for script in schema.SQLITE_SCRIPTS:
            db.executescript(script)
        db.commit()
    engine = create_engine(f"sqlite:///{target}")
    try:
        with engine.begin() as conn:
            for step in schema.STEPS[: schema.STEPS.index(schema._search)]:
                step(conn)
            conn.exec_driver_sql(f"PRAGMA user_version = {BEFORE_SEARCH}")
            for sql in INSERT_REPORTED_RUN.split(";")[:2]:
                conn.exec_driver_sql(sql)
    finally:
        engine.dispose()


async def test_reports_stored_before_search_are_found_after_the_migration(
    db_target: str | Path, tmp_path: Path
) -> None:
    _previous_release(db_target, tmp_path)

    async with Store.connect(db_target, clock=StepClock()) as store:
        found = await store.search_reports(
            "robots", platform="slack", workspace="T1", viewer_channel="C1"
        )
        elsewhere = await store.search_reports(
            "robots", platform="slack", workspace="T1", viewer_channel="C2"
        )
        old = await store.get_run("oldrun2345")
        later = await _finished(store, "Globex", PUBLIC, "# Globex\n\nGlobex makes robots too.")
        both = await store.search_reports(
            "robots", platform="slack", workspace="T1", viewer_channel=None
        )

    assert [hit.run_id for hit in found] == ["oldrun2345"]
    assert found[0].snippet == "Acme makes robots."
    assert (old.origin.private, elsewhere) == (True, [])  # asked before: taken as private
    assert {hit.run_id for hit in both} == {"oldrun2345", later}


async def test_a_copied_history_is_searched_as_it_was(tmp_path: Path, pg_server: PgServer) -> None:
    path = tmp_path / "team.sqlite3"
    name = pg_server.empty_database()
    try:
        async with Store.connect(path, clock=StepClock()) as source:
            ids = await _history(source)
            expected = await source.search_reports(
                "robots", platform="slack", workspace="T1", viewer_channel="C1"
            )
        await copy_history(path, pg_server.url(name))
        async with Store.connect(pg_server.url(name)) as copied:
            found = await copied.search_reports(
                "robots", platform="slack", workspace="T1", viewer_channel="C1"
            )
            private = await copied.get_run(ids["secret"])
    finally:
        pg_server.drop(name)

    assert [h.model_dump(exclude={"rank"}) for h in found] == [
        h.model_dump(exclude={"rank"}) for h in expected
    ]
    assert _found(found, ids) == [("globex", 1), ("acme", 1)]
    assert private.origin.private


async def test_a_run_moved_to_another_conversation_is_found_only_from_there(store: Store) -> None:
    ids = await _history(store)
    t1 = {"platform": "slack", "workspace": "T1"}

    await store.set_location(ids["secret"], channel="D8", thread="")

    assert ids["secret"] in {
        h.run_id for h in await store.search_reports("initech", **t1, viewer_channel="D8")
    }
    assert await store.search_reports("initech", **t1, viewer_channel="D9") == []


V1_INDEX = [
    "CREATE TABLE report_search_keys (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL,"
    " version INTEGER NOT NULL, UNIQUE (run_id, version))",
    "CREATE VIEW report_search_text AS SELECT k.id AS id, coalesce(v.markdown, r.markdown)"
    " AS markdown FROM report_search_keys k LEFT JOIN reports r ON k.version = 1"
    " AND r.run_id = k.run_id LEFT JOIN report_versions v ON k.version > 1"
    " AND v.run_id = k.run_id AND v.version = k.version",
    "CREATE VIRTUAL TABLE report_search USING fts5(markdown, content='report_search_text',"
    " content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
    "INSERT INTO report_search_keys (run_id, version) SELECT run_id, 1 FROM reports",
    "INSERT INTO report_search_keys (run_id, version) SELECT run_id, version FROM report_versions",
    "INSERT INTO report_search (report_search) VALUES ('rebuild')",
]
"""The index as the release before scopes built it (its triggers left out: the step drops them)."""


async def test_an_index_without_scopes_is_built_anew_with_them(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    t1 = {"platform": "slack", "workspace": "T1"}
    async with Store.connect(path, clock=StepClock()) as before:
        ids = await _history(before)
    with closing(sqlite3.connect(path)) as db:
        names = db.execute("SELECT type, name FROM sqlite_master WHERE name LIKE '%search%'")
        for kind, name in [row for row in names if row[0] in ("trigger", "view")]:
            db.execute(f"DROP {kind} {name}")
        db.execute("DROP TABLE report_search")
        db.execute("DROP TABLE report_search_keys")
        for sql in V1_INDEX:
            db.execute(sql)
        db.commit()
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            scope_search_index(conn)
    finally:
        engine.dispose()

    async with Store.connect(path, clock=StepClock()) as after:
        public = await after.search_reports("robots", **t1, viewer_channel="C1")
        private = await after.search_reports("robots", **t1, viewer_channel="D9")
        later = await _finished(after, "Vandelay", PUBLIC, "# Vandelay\n\nVandelay imports robots.")
        operator = await after.search_reports("robots", **t1, viewer_channel=None)

    assert _found(public, ids) == [("globex", 1), ("acme", 1)]
    assert sorted(_found(private, ids)) == [("acme", 1), ("globex", 1), ("secret", 1)]
    assert {h.run_id for h in operator} == {ids["acme"], ids["globex"], ids["secret"], later}


async def test_a_generated_index_of_words_only_is_made_again_with_scopes(pg_url: str) -> None:
    t1 = {"platform": "slack", "workspace": "T1"}
    async with Store.connect(pg_url, clock=StepClock()) as before:
        ids = await _history(before)
    words = "to_tsvector('simple'::regconfig, left(markdown, 400000))"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for sql in [
            *UNINDEXED,
            *(
                f"ALTER TABLE {t} ADD COLUMN search tsvector GENERATED ALWAYS AS ({words}) STORED"
                for t in TEXT_TABLES
            ),
            *(f"CREATE INDEX {t}_search ON {t} USING gin (search)" for t in TEXT_TABLES),
            f"UPDATE schema_version SET version = {len(schema.SQLITE_SCRIPTS) + len(schema.STEPS) - 1}",
        ]:
            conn.execute(sql)  # type: ignore[arg-type]

    async with Store.connect(pg_url, clock=StepClock()) as after:
        public = await after.search_reports("robots", **t1, viewer_channel="C1")
        private = await after.search_reports("robots", **t1, viewer_channel="D9")
        zalando = await after.search_reports("zalando", **t1, viewer_channel="C1")

    assert _found(public, ids) == [("globex", 1), ("acme", 1)]
    assert sorted(_found(private, ids)) == [("acme", 1), ("globex", 1), ("secret", 1)]
    assert sorted(_found(zalando, ids)) == [("acme", 2), ("follow_up", 1)]
