"""`research-bot search` on a stored history: what a person reads, the JSON, a search that finds
nothing, and input it refuses. It needs no model or search key. Run in this process with the
CLI library's runner: what is checked is the text (its start as a process of its own is checked
with the other reads, tests/cli/test_read_commands_start_light.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from bot.agent.report.model import Report
from bot.cli.app import app
from bot.domain import Origin, Request, RunStatus
from bot.store.runs import Store


async def _stored(db: Path, topic: str, origin: Origin, markdown: str) -> str:
    async with Store.connect(db) as store:
        run = await store.create_run(Request(topic=topic, origin=origin))
        report = (Report(title=topic, tldr="x"), markdown)
        await store.finish_run(run.run_id, status=RunStatus.DONE, ending="completed", report=report)
    return run.run_id


def test_search_lists_the_terminals_reports_with_where_to_open_them(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite3"
    acme = asyncio.run(
        _stored(
            db, "Acme Robotics", Origin(user_name="op"), "# Acme\n\nAcme builds *warehouse robots*."
        )
    )
    slack = Origin(platform="slack", workspace="T1", channel="C1", user_name="ada")
    globex = asyncio.run(_stored(db, "Globex", slack, "# Globex\n\nGlobex sells robots."))
    runner = CliRunner()
    commands = [
        ["search", "warehouse", "robots"],
        ["search", "robots", "--json"],
        ["search", "robots", "--platform", "slack", "--workspace", "T1", "--json"],
        ["search", "zebra"],
        ["search", '"*'],
        ["search", "x" * 401],
    ]

    env = {"RESEARCH_BOT_DB": str(db), "ANTHROPIC_API_KEY": "", "TAVILY_API_KEY": ""}
    ran = [runner.invoke(app, command, env=env) for command in commands]
    results = [(r.exit_code, r.stdout, r.stderr) for r in ran]

    (found, human, _), (_, terminal, _), (_, workspace, _), (none, nothing, _) = results[:4]
    assert found == 0
    assert human.splitlines()[0] == "Acme Robotics"
    assert ", asked by op" in human
    assert "  Acme builds warehouse robots." in human
    assert f"  open: research-bot show {acme}" in human
    [hit] = json.loads(terminal)
    assert set(hit) == {"run_id", "topic", "created_at", "asked_by", "snippet", "rank", "open"}
    assert (hit["run_id"], hit["asked_by"], hit["open"]) == (
        acme,
        "op",
        f"research-bot show {acme}",
    )
    assert [h["run_id"] for h in json.loads(workspace)] == [globex]
    assert none == 0 and nothing.startswith("Nothing in the terminal's reports has all of: zebra.")
    empty, long = results[4], results[5]
    assert (empty[0], empty[1]) == (2, "")
    assert empty[2].strip() == (
        'research-bot: Give words to search for, for example: research-bot search "acme robots".'
    )
    assert (long[0], long[2].strip()) == (2, "research-bot: Keep the search under 400 characters.")
