"""A command that only reads (and one refused before any work) starts without the model, web,
chat and export clients: their imports are most of a slow start. Checked on what the process
imports (`PYTHONPROFILEIMPORTTIME`), never on a stopwatch."""

from __future__ import annotations

import asyncio
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
    cli.nice = 19  # twelve fresh interpreters at once
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


@pytest.mark.timeout(60)  # twelve fresh interpreters
async def test_reads_and_early_refusals_load_no_client(cli: Cli) -> None:
    run_id = await _stored_run(Path(cli.env["RESEARCH_BOT_DB"]))
    commands = [
        (["history"], 0),
        (["usage"], 0),
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
