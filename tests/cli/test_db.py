"""`research-bot db copy` and `db status` as a person runs them: subprocesses against a SQLite
file written by the real store and a real PostgreSQL server."""

from __future__ import annotations

import json
import signal
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from bot.store.copy import BATCH, copy_history
from bot.store.migrations import latest
from bot.store.postgres import safe_url
from tests.postgres import PgServer
from tests.process import Cli, eventually
from tests.store.test_copy import make_history

# The first test in a worker also starts PostgreSQL.
pytestmark = pytest.mark.timeout(60)
PASSWORD = "s3cret-pw"
NOWHERE = f"postgresql://bot:{PASSWORD}@127.0.0.1:1/research"
"""A PostgreSQL URL where no server listens (port 1 refuses at once)."""


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path, {"RESEARCH_BOT_DB": str(tmp_path / "team.sqlite3")})


@pytest.fixture
def with_password(pg_url: str) -> str:
    """The same database, with a password in its URL (the test server trusts every local
    connection, so it is accepted whatever it is)."""
    return pg_url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@")


def one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("research-bot: ")
    return lines[0]


async def test_db_copy_moves_the_history_and_a_second_copy_finds_it_all_there(
    cli: Cli, tmp_path: Path, with_password: str
) -> None:
    path = tmp_path / "team.sqlite3"
    await make_history(path)

    code, out, err = await cli.run("db", "copy", "--from", str(path), "--to", with_password)

    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"Copying {path} into {safe_url(with_password)}"
    assert "postgresql://postgres:***@/" in lines[0]
    tables = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert tables["runs"] == ["4", "copied", "0", "already", "there"]
    assert tables["events"] == ["14", "copied", "0", "already", "there"]
    assert set(tables) == {
        "dedupe",
        "runs",
        "claims",
        "events",
        "report_versions",
        "reports",
        "watches",
    }
    assert lines[-1] == "Done: 24 rows copied, 0 already there."
    assert PASSWORD not in out + err

    # Again, from the settings alone: nothing is copied twice.
    cli.env["RESEARCH_BOT_DATABASE_URL"] = with_password
    code, out, err = await cli.run("db", "copy")

    assert code == 0, err
    assert out.splitlines()[-1] == "Done: 0 rows copied, 24 already there."
    assert PASSWORD not in out + err


async def test_db_copy_stopped_by_ctrl_c_keeps_its_batches_and_the_next_copy_finishes(
    cli: Cli, tmp_path: Path, pg_server: PgServer, pg_url: str
) -> None:
    path = tmp_path / "team.sqlite3"
    runs = await make_history(path)
    extra = 4 * BATCH  # with the history's own events first, five batches of events
    with closing(sqlite3.connect(path)) as db, db:
        db.executemany(
            "INSERT INTO events (run_id, seq, kind, payload, at) VALUES (?, ?, 'notice', "
            '\'{"kind": "notice", "message": "x"}\', \'2025-03-01T09:00:00+00:00\')',
            [(runs["done"], 100 + n) for n in range(extra)],
        )
    cli.env["RESEARCH_BOT_DATABASE_URL"] = pg_url
    database = pg_url.split("?")[0].rsplit("/", 1)[1]

    def events_in_target() -> int:
        return int(pg_server.execute("SELECT count(*) FROM events", database)[0][0])

    # The copy is stopped while it is surely mid-way: an uncommitted row of ours holds the key
    # of an event in its third batch, so that batch's insert waits for our transaction, after
    # two whole batches are in. (FK triggers are off in our transaction alone: its row needs
    # no run, so the runs the copy brings are not held.)
    with psycopg.connect(pg_server.dsn(database)) as holder:
        holder.execute("SET LOCAL session_replication_role = replica")
        holder.execute(
            "INSERT INTO events (run_id, seq, kind, payload, at) VALUES (%s, %s, '', '', '')",
            (runs["done"], 100 + 2 * BATCH),
        )
        ours = holder.info.backend_pid

        async def the_copy_waits_for_us() -> bool:
            blocked = (
                f"SELECT count(*) FROM pg_stat_activity WHERE {ours} = ANY(pg_blocking_pids(pid))"
            )
            return bool(pg_server.execute(blocked, database)[0][0])

        copying = await cli.start("db", "copy")
        await eventually(the_copy_waits_for_us, within_s=20, seen=events_in_target)
        assert events_in_target() == 2 * BATCH
        copying.send_signal(signal.SIGINT)
        holder.rollback()  # the third batch goes on, Ctrl-C already pending
    _, said = await copying.communicate()

    assert copying.returncode == 130
    assert one_line(said.decode()) == (
        "research-bot: db copy stopped: what it copied is kept; run it again to finish."
    )
    kept = events_in_target()
    assert kept == 3 * BATCH  # the batch it was writing is finished, and no other started

    code, out, err = await cli.run("db", "copy", within_s=60)

    assert code == 0, err
    events = next(line.split()[1:] for line in out.splitlines() if line.split()[0] == "events")
    assert events == [f"{14 + extra - kept:,}", "copied", f"{kept:,}", "already", "there"]
    assert events_in_target() == 14 + extra


async def test_db_copy_refuses_a_file_that_is_not_a_history_or_no_target(
    cli: Cli, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 20)

    # The file is judged before any connection: no server is needed to refuse it.
    code, _, err = await cli.run("db", "copy", "--from", str(notes), "--to", NOWHERE)
    assert code == 2
    assert one_line(err) == (
        f"research-bot: {notes} is not a SQLite file, so not a research-bot database."
    )

    code, _, err = await cli.run("db", "copy")
    assert code == 2
    assert "--to postgresql://" in one_line(err)


async def test_db_copy_to_a_server_that_is_not_there_is_one_line_without_the_password(
    cli: Cli, tmp_path: Path
) -> None:
    await make_history(tmp_path / "team.sqlite3")
    code, _, err = await cli.run("db", "copy", "--to", NOWHERE)
    assert code == 2
    assert one_line(err).startswith(
        "research-bot: Cannot reach the database postgresql://bot:***@127.0.0.1:1/research ("
    )
    assert PASSWORD not in err


async def test_db_status_on_sqlite_and_on_postgresql(
    cli: Cli, tmp_path: Path, with_password: str
) -> None:
    path = tmp_path / "team.sqlite3"
    await make_history(path)
    await copy_history(path, with_password)

    code, out, err = await cli.run("db", "status")

    assert code == 0, err
    assert out.splitlines() == [
        f"database  SQLite {path}",
        f"schema    version {latest()} (this release's)",
        "runs      4: 1 queued, 2 done, 1 failed",
        "replicas  no replica has registered",
    ]

    cli.env["RESEARCH_BOT_DATABASE_URL"] = with_password
    code, out, err = await cli.run("db", "status", "--json")

    assert code == 0, err
    assert json.loads(out) == {
        "engine": "postgresql",
        "where": safe_url(with_password),
        "version": latest(),
        "latest": latest(),
        "runs": {"queued": 1, "done": 2, "failed": 1},
        "replicas": [],
    }
    assert PASSWORD not in out + err


async def test_db_status_says_in_one_line_when_there_is_no_database(cli: Cli) -> None:
    code, out, err = await cli.run("db", "status")

    assert (code, out) == (1, "")
    assert (
        one_line(err) == f"research-bot: No database at {cli.cwd / 'team.sqlite3'}: check the path."
    )
