"""A command that only reads (and one refused before any work) starts without the model, web,
chat and export clients: their imports are most of a slow start. Checked on what the process
imports (`PYTHONPROFILEIMPORTTIME`), never on a stopwatch. And once it has printed, it ends:
nothing left running or open, nothing for the collector to walk on the way out."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import pytest

from bot.agent.report.model import Report, Section, Source
from bot.agent.report.support import Claim, Support, Verdict
from bot.domain import Request, RunStatus
from bot.store.runs import Store
from tests.conftest import world_env
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb
from tests.process import Cli

HEAVY = {
    "anthropic",
    "openai",
    "httpx2",
    "aiohttp",
    "tavily",
    "ddgs",
    "trafilatura",
    "pypdf",
    "weasyprint",
    "docx",
    "slack_sdk",
    "slack_bolt",
    "discord",
    "bot.compose",
    "bot.agent.models",
    "bot.agent.web",
}


@pytest.fixture
def cli(tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb) -> Cli:
    cli = Cli(tmp_path, world_env(tmp_path, anthropic_api, tavily, web))
    cli.env["PYTHONPROFILEIMPORTTIME"] = "1"
    cli.nice = 19  # thirteen fresh interpreters at once
    return cli


async def _stored_run(db: Path) -> str:
    page = Source(url="https://acme.example/about", title="About Acme")
    # Measured when it was written, as every run is now (one stored before that is measured
    # by `eval` with the checker, whose module loads the model client's).
    claim = Claim(
        sentence="Acme was founded in 2019 [1].",
        sources=[1],
        verdict=Verdict.SUPPORTED,
        method="deterministic",
    )
    report = Report(
        title="Acme",
        tldr="- Builds robots [1].",
        sections=[Section(heading="Overview", body="Acme was founded in 2019 [1].")],
        sources=[page],
        support=Support(claims=[claim]),
    )
    async with Store.connect(db) as store:
        record = await store.create_run(Request(topic="Acme"))
        await store.finish_run(
            record.run_id, status=RunStatus.DONE, ending="completed", report=(report, "# Acme")
        )
    return record.run_id


def _heavy_imports(stderr: str) -> set[str]:
    imported = re.findall(r"^import time: +\d+ \| +\d+ \| +(\S+)$", stderr, re.MULTILINE)
    assert imported, "no import times: PYTHONPROFILEIMPORTTIME had no effect"
    return {
        heavy
        for name in imported
        for heavy in HEAVY
        if name == heavy or name.startswith(heavy + ".")
    }


@pytest.mark.timeout(60)  # thirteen fresh interpreters
async def test_reads_and_early_refusals_load_no_client(cli: Cli) -> None:
    run_id = await _stored_run(Path(cli.env["RESEARCH_BOT_DB"]))
    commands = [
        (["history"], 0),
        (["usage"], 0),
        (["search", "acme"], 0),
        (["show", run_id], 0),
        (["show", run_id, "--json"], 0),
        (["show", run_id, "--trajectory"], 0),
        (["eval", run_id], 0),
        (["eval", "--all"], 0),
        (["export", run_id, "--format", "md"], 0),
        (["show", "nosuchrun"], 1),
        (["ask", "nosuchrun", "Who are their customers?"], 1),
        (["resume", "nosuchrun"], 1),
        (["serve"], 2),  # no chat platform's token is set
    ]

    results = await asyncio.gather(*(cli.run(*command) for command, _ in commands))

    for (command, expected), (code, _, err) in zip(commands, results, strict=True):
        assert code == expected, (command, err[-2000:])
        assert _heavy_imports(err) == set(), command


EXIT_PROBE = """
import atexit, gc, json, sqlite3, sys, threading

opened = []  # held here: one the command dropped unclosed still shows as open
sys.addaudithook(
    lambda event, args: opened.append(args[0]) if event == "sqlite3.connect/handle" else None
)


def is_open(conn):
    try:
        conn.total_changes
    except sqlite3.ProgrammingError:
        return False
    return True


def report():  # registered first, so it runs last: after threads are joined, before teardown
    seen = {
        "threads": [t.name for t in threading.enumerate() if t is not threading.main_thread()],
        "open_connections": sum(1 for conn in opened if is_open(conn)),
        "connections": len(opened),
        "tracked": len(gc.get_objects()),
        "frozen": gc.get_freeze_count(),
    }
    sys.stderr.write("exit-probe: " + json.dumps(seen) + "\\n")


atexit.register(report)
"""


def _at_exit(stderr: str) -> dict[str, object]:
    found = re.findall(r"^exit-probe: (.*)$", stderr, re.MULTILINE)
    assert found, "the exit probe did not report: " + stderr[-2000:]
    seen: dict[str, object] = json.loads(found[-1])
    return seen


@pytest.mark.timeout(60)  # two fresh interpreters
async def test_a_read_that_has_printed_leaves_nothing_for_its_exit_to_wait_on(
    cli: Cli, tmp_path: Path
) -> None:
    run_id = await _stored_run(Path(cli.env["RESEARCH_BOT_DB"]))
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(EXIT_PROBE)
    cli.env["PYTHONPATH"] = os.pathsep.join([str(probe), cli.env["PYTHONPATH"]])
    cli.nice = 0
    commands = [["export", run_id, "--format", "md"], ["show", run_id]]

    results = await asyncio.gather(*(cli.run(*command) for command in commands))

    for command, (code, out, err) in zip(commands, results, strict=True):
        assert code == 0 and out.strip(), (command, err[-2000:])
        seen = _at_exit(err)
        assert seen["threads"] == [] and seen["open_connections"] == 0, (command, seen)
        assert seen["connections"], (command, seen)  # the probe saw the store's connection
        # The heap is frozen once the command has returned: the interpreter's last collections
        # have next to nothing to walk (a fifth of the command's CPU when they walked it all).
        assert seen["tracked"] < seen["frozen"] / 10, (command, seen)
