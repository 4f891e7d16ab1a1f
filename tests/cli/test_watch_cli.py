"""`research-bot watch` in the terminal: a watch added, listed (text and JSON), paused, resumed
and ended, and input it refuses in one line. Run in this process with the CLI library's runner;
no model or search key is needed to keep watches."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from typer.testing import CliRunner

from bot.cli.app import app
from bot.domain import Request
from bot.store.runs import Store
from bot.watches.model import NewWatch


def test_a_watch_is_added_listed_paused_resumed_and_ended(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"RESEARCH_BOT_DB": str(tmp_path / "runs.sqlite3"), "ANTHROPIC_API_KEY": ""}

    def run(*args: str) -> tuple[int, str, str]:
        result = runner.invoke(app, ["watch", *args], env=env)
        return result.exit_code, result.stdout, result.stderr

    added = run("add", "Acme Robotics", "--every", "weekly", "--deep")
    assert added[0] == 0
    watch_id = added[1].split()[1].rstrip(":")
    assert "Acme Robotics, weekly, deep; next" in added[1]

    code, listed, _ = run("list", "--json")
    [row] = json.loads(listed)
    assert code == 0
    assert set(row) == {
        "id",
        "topic",
        "channel",
        "cadence",
        "tz",
        "status",
        "paused_reason",
        "next_run_at",
        "last_run_at",
        "last_run_id",
    }
    assert (row["id"], row["cadence"], row["status"], row["last_run_id"]) == (
        watch_id,
        "weekly",
        "active",
        None,
    )

    assert "paused (paused by hand)" in run("pause", watch_id)[1]
    assert json.loads(run("list", "--json")[1])[0]["status"] == "paused"
    assert "; next " in run("resume", watch_id)[1]
    assert run("remove", watch_id)[:2] == (0, f"Watch {watch_id} ended: Acme Robotics\n")
    assert run("list")[1].startswith("No watches yet")


def test_a_watch_keeps_the_hour_in_the_time_zone_it_is_given(tmp_path: Path) -> None:
    env = {"RESEARCH_BOT_DB": str(tmp_path / "runs.sqlite3")}

    added = CliRunner().invoke(app, ["watch", "add", "Acme", "--tz", "asia/tokyo"], env=env)
    [row] = json.loads(CliRunner().invoke(app, ["watch", "list", "--json"], env=env).stdout)

    assert added.exit_code == 0
    assert row["tz"] == "Asia/Tokyo"
    due = datetime.fromisoformat(row["next_run_at"]).astimezone(ZoneInfo("Asia/Tokyo"))
    assert f"next {due:%Y-%m-%d %H:%M} Asia/Tokyo" in added.stdout


def test_bad_input_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"RESEARCH_BOT_DB": str(tmp_path / "runs.sqlite3"), "RESEARCH_BOT_MAX_WATCHES": "1"}

    def run(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, ["watch", *args], env=env)
        return result.exit_code, result.stderr.strip()

    assert run("add", "Acme", "--every", "hourly") == (
        2,
        "research-bot: Unknown cadence 'hourly': use one of daily, weekdays, weekly, monthly.",
    )
    assert run("add", "Acme", "--tz", "Mars/Base") == (
        2,
        "research-bot: Unknown time zone 'Mars/Base': give its name in the tz database, "
        "such as Europe/Berlin or America/New_York.",
    )
    assert run("pause", "w000000") == (1, "research-bot: No watch w000000 here.")
    assert run("add", "Acme")[0] == 0
    code, said = run("add", "Globex")
    assert (code, said.count("\n")) == (2, 0)
    assert "No more watches here: 1 is the most" in said


def test_history_json_marks_a_watched_run_with_its_watch(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite3"

    async def stored() -> tuple[str, str, str]:
        async with Store.connect(db) as store:
            watch = await store.add_watch(NewWatch(topic="Acme Robotics"), limit=20)
            watched = await store.create_run(Request(topic="Acme Robotics"))
            other = await store.create_run(Request(topic="Globex"))
            await store.record_watch_run(watch.id, watched.run_id)
            return watch.id, watched.run_id, other.run_id

    watch_id, watched, other = asyncio.run(stored())
    result = CliRunner().invoke(app, ["history", "--json"], env={"RESEARCH_BOT_DB": str(db)})
    rows = {row["run_id"]: row["watch_id"] for row in json.loads(result.stdout)}
    assert rows == {watched: watch_id, other: None}
    listed = CliRunner().invoke(app, ["watch", "list", "--json"], env={"RESEARCH_BOT_DB": str(db)})
    assert json.loads(listed.stdout)[0]["last_run_id"] == watched
    lines = CliRunner().invoke(app, ["history"], env={"RESEARCH_BOT_DB": str(db)}).stdout
    [marked] = [line for line in lines.splitlines() if f"(watch {watch_id})" in line]
    assert marked.startswith(watched)


def test_the_operator_sees_and_changes_a_channels_watch_and_run_makes_it_due(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.sqlite3"
    env = {"RESEARCH_BOT_DB": str(db)}
    slack = NewWatch(topic="Acme Robotics", platform="slack", workspace="T1", channel="C1")

    async def stored() -> str:
        async with Store.connect(db) as store:
            watch = await store.add_watch(slack, limit=20)
            await store.record_watch_run(watch.id, "r1", advance=True)  # next period: later
            return watch.id

    async def next_run() -> datetime:
        async with Store.connect(db) as store:
            return (await store.find_watch(watch_id)).next_run_at

    watch_id = asyncio.run(stored())
    later = asyncio.run(next_run())
    runner = CliRunner()
    [row] = json.loads(runner.invoke(app, ["watch", "list", "--json"], env=env).stdout)
    assert (row["id"], row["channel"]) == (watch_id, "C1")
    assert "[slack C1]" in runner.invoke(app, ["watch", "list"], env=env).stdout

    ran = runner.invoke(app, ["watch", "run", watch_id], env=env)
    assert ran.exit_code == 0 and "in slack channel C1" in ran.stdout
    assert asyncio.run(next_run()) < later  # due now, for serve's clock; nothing ran here
    paused = runner.invoke(app, ["watch", "pause", watch_id], env=env)
    assert paused.exit_code == 0 and "paused" in paused.stdout
