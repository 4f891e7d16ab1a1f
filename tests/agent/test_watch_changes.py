"""What changed since a watch's last report, through the real composition against the fakes: a
second run of the watch, against pages that changed (a new source, a changed figure), starts from
the first report and stores a report whose What changed section has its three parts; a quiet
second run says so in one line at the top of its TL;DR; a write-up without its New developments
section, with chatter and a citation that does not exist, is told as such."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from anthropic import AsyncAnthropic

from bot.agent.calls import Limits
from bot.agent.compress import Compressor
from bot.agent.control import Control
from bot.agent.events import Ending, Event, Notice, ReportReady, ToolFinished
from bot.agent.loop import Researcher
from bot.agent.models.port import AnthropicModel
from bot.agent.report.model import Source
from bot.agent.web.registry import Toolbox
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Request
from bot.store.recent import RecentReports
from bot.watches.model import NewWatch
from tests.conftest import FAST_MODEL, TEST_MODEL, Recorder, world_env
from tests.fakes.anthropic_api import FakeAnthropic, Reply, reply, reply_text, reply_tools, tool_use
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb

FILLER = "<p>Acme Robotics builds palletizing robots in Lyon and sells them across Europe.</p>"


def page(title: str, *facts: str) -> str:
    body = "".join(f"<p>{fact}</p>" for fact in facts) + FILLER * 6
    return f"<html><head><title>{title}</title></head><body><article>{body}</article></body>"


ABOUT_1 = page("About Acme", "Acme Robotics reported revenue of $12 million in 2025.")
ABOUT_2 = page("About Acme", "Acme Robotics reported revenue of $15 million in 2025.")
NEWS = page("Acme news", "Acme Robotics opened a second plant in Porto in November 2026.")
FIRST = (
    "# Acme Robotics\n\n## TL;DR\n- Acme Robotics reported revenue of $12 million in 2025 [1].\n\n"
    "## Overview\nAcme Robotics builds palletizing robots in Lyon [1].\n"
)
SECOND = (
    "# Acme Robotics\n\n## TL;DR\n- Acme Robotics reported revenue of $15 million in 2025 [1].\n\n"
    "## New developments\nAcme Robotics opened a second plant in Porto in November 2026 [2]. "
    "It also hired a new chief executive [9].\n\n"
    "## Overview\nAcme Robotics builds palletizing robots in Lyon [1].\n"
)
CLAIM = re.compile(r"Claim (\d+) \(section [^)]*\): (.*)")


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(str(block.get("text", block.get("content", ""))) for block in content)


class Model:
    """The researcher reads `urls` (when any) then writes `report`; the judge answers `on_12` for a claim
    with `$12 million` (contradicted) and supported for every other; it records its prompts."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.report = FIRST
        self.judged: list[str] = []
        self.on_12 = "unsupported"

    async def __call__(self, body: dict[str, Any]) -> Reply:
        last = _text(body["messages"][-1])
        if any(tool["name"] == "record_verdicts" for tool in body.get("tools", [])):
            self.judged.append(last)
            verdicts = [
                {"id": int(n), "verdict": self.on_12 if "$12" in said else "supported"}
                for n, said in CLAIM.findall(last)
            ]
            return reply([tool_use("record_verdicts", {"claims": verdicts})], "tool_use")
        if body["model"] == FAST_MODEL:
            return reply_text("ok")
        if self.urls and not any("tool_result" in str(m["content"]) for m in body["messages"]):
            return reply_tools([("read_page", {"url": url}) for url in self.urls])
        return reply_text(self.report)


@asynccontextmanager
async def _world(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> AsyncIterator[tuple[Services, Model, str]]:
    model = Model()
    anthropic_api.responder = model
    # Reuse off: a watched run still starts from its watch's last report, and reads afresh.
    env = {**world_env(tmp_path, anthropic_api, tavily, web), "RESEARCH_BOT_REUSE_DAYS": "0"}
    async with open_services(Settings.from_mapping(env)) as services:
        watch = await services.store.add_watch(NewWatch(topic="Acme Robotics"), limit=20)
        yield services, model, watch.id


async def _run(world: Services, watch_id: str) -> Recorder:
    recorder = Recorder()
    request = Request(topic="Acme Robotics", watch_id=watch_id)
    recorder.run = await world.runs.submit(request, recorder)
    await asyncio.wait_for(recorder.finished.wait(), 30)
    assert recorder.outcome.ending is Ending.COMPLETED
    return recorder


def _today() -> str:
    now = datetime.now(UTC)
    return f"{now.day} {now:%b %Y}"


async def test_a_second_run_against_changed_pages_says_what_changed_in_three_parts(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    async with _world(tmp_path, anthropic_api, tavily, web) as (world, model, watch_id):
        about = web.page("/about", ABOUT_1)
        model.urls = [about]
        first = await _run(world, watch_id)
        web.page("/about", ABOUT_2)  # the figure changed
        model.urls, model.report = [about, web.page("/news", NEWS)], SECOND
        judged_before = len(model.judged)
        second = await _run(world, watch_id)
        stored = await world.store.report(second.run.run_id)

    assert first.outcome.report.tldr.startswith("- Acme")  # a watch's first report: no section
    assert stored is not None
    report, markdown = stored
    day = _today()
    # It started from the watch's last report, even with reuse off.
    [notice] = [e.message for e in second.events if isinstance(e, Notice)]
    assert notice.startswith("This watch's last report is of ")
    assert report.tldr.startswith(
        f"What changed since {day}: 1 claim no longer holds, 1 new source."
    )
    changes = report.sections[0]
    assert changes.heading == f"What changed since {day}"
    assert [s.heading for s in report.sections[1:]] == ["Overview"]
    urls = [s.url for s in report.sources]
    news, about_n = urls.index(web.url + "/news") + 1, urls.index(about) + 1
    assert f"**New sources** (1):\n\n- [{news}] Acme news" in changes.body
    assert (
        f"- Acme Robotics reported revenue of $12 million in 2025 [{about_n}] ({day}) → "
        f"“Acme Robotics reported revenue of $15 million in 2025.” [{about_n}] ({day})"
    ) in changes.body
    # The model's own summary, moved here; a citation to no source is marked, not kept.
    assert (
        f"**New developments**\n\nAcme Robotics opened a second plant in Porto in November 2026 "
        f"[{news}]. It also hired a new chief executive [unverified]."
    ) in changes.body
    assert "[9]" not in markdown and f"## What changed since {day}" in markdown
    # One judge call checked the old claims again (the report's own claims had theirs).
    rechecks = [p for p in model.judged[judged_before:] if "$12 million" in p]
    assert len(rechecks) == 1
    # A claim without a figure is not checked again.
    assert [said for _, said in CLAIM.findall(rechecks[0])] == [
        "Acme Robotics reported revenue of $12 million in 2025."
    ]


async def test_a_quiet_second_run_says_so_in_one_line_and_a_missing_section_is_told(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    async with _world(tmp_path, anthropic_api, tavily, web) as (world, model, watch_id):
        stable = page("About Acme", "Acme Robotics employed 40 people in 2025.")
        about = web.page("/about", stable)
        model.urls = [about]
        model.report = FIRST.replace("reported revenue of $12 million", "employed 40 people")
        await _run(world, watch_id)
        # Chatter before the title, no New developments section, one more page cited.
        model.urls = [about, web.page("/news", NEWS)]
        model.report = "Sure! Here it is.\n\n" + model.report.replace(
            "Lyon [1].", "Lyon [1]. It opened a plant in Porto in November 2026 [2]."
        )
        quiet = await _run(world, watch_id)
        # A third run whose write-up has the section but cites nothing new: still quiet.
        model.report = SECOND.replace("reported revenue of $15 million", "employed 40 people")
        model.report = model.report.replace("[2]", "[1]")
        third = await _run(world, watch_id)

    day = _today()
    tldr = quiet.outcome.report.tldr
    assert (
        tldr.splitlines()[0] == f"No material change since {day}: 1 new source, no claim changed."
    )
    assert "Sure!" not in tldr
    assert not any(s.heading.startswith("What changed") for s in quiet.outcome.report.sections)
    report = third.outcome.report
    assert report.tldr.startswith(f"No material change since {day}: no new sources,")
    assert [s.heading for s in report.sections] == ["Overview", "New developments"]


async def test_a_figure_gone_from_its_page_read_again_is_listed_and_a_page_not_read_is_not(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    async with _world(tmp_path, anthropic_api, tavily, web) as (world, model, watch_id):
        about = web.page("/about", ABOUT_1)
        team = web.page("/team", page("Acme team", "Acme Robotics was founded in 2015."))
        model.urls = [about, team]
        model.report = FIRST.replace("in Lyon [1]", "in Lyon [1]. It was founded in 2015 [2]")
        await _run(world, watch_id)
        web.page("/about", page("About Acme", "Acme Robotics makes robots."))
        model.urls, model.on_12 = [about], "not_stated"
        model.report = SECOND.replace("$15 million", "an undisclosed sum").replace("[2]", "[1]")
        second = await _run(world, watch_id)

    report, day = second.outcome.report, _today()
    assert report.tldr.startswith(f"What changed since {day}: 1 claim no longer holds,")
    about_n = [s.url for s in report.sources].index(about) + 1
    body = report.sections[0].body
    assert (
        f"- Acme Robotics reported revenue of $12 million in 2025 [{about_n}] ({day}) → "
        f"no longer stated by [{about_n}] ({day})"
    ) in body
    # /team was not read again and no page of this run speaks to the founding year.
    assert "2015" not in body


async def test_a_watched_run_finished_after_a_restart_says_what_changed_from_the_store(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    async with _world(tmp_path, anthropic_api, tavily, web) as (world, model, watch_id):
        about = web.page("/about", ABOUT_1)
        model.urls = [about]
        await _run(world, watch_id)
        # The second run had read the changed page when the bot stopped: only its events remain.
        read = ToolFinished(
            turn=1,
            call_id="toolu_01",
            name="read_page",
            is_error=False,
            content="Acme Robotics reported revenue of $15 million in 2025.",
            sources=[Source(url=about, title="About Acme", read=True)],
            numbers=[1],
        )
        model.urls, model.report = [], SECOND.replace("[2]", "[1]")
        async with AsyncAnthropic(
            api_key="sk-test", base_url=anthropic_api.url, max_retries=0
        ) as client:
            port = AnthropicModel(client, model=TEST_MODEL, prices={})
            compressor = Compressor(
                port, fast_model=FAST_MODEL, threshold_tokens=3_000, timeout_s=5
            )
            researcher = Researcher(
                port, Toolbox([]), compressor, Limits(), earlier=RecentReports(world.store, days=0)
            )
            request = Request(topic="Acme Robotics", watch_id=watch_id)
            history: list[Event] = [read]
            events = [e async for e in researcher.recover("r2", request, history, Control())]

    [ready] = [e for e in events if isinstance(e, ReportReady)]
    assert not ready.from_evidence_only  # written by the model from the stored evidence
    day = _today()
    assert ready.report.tldr.startswith(f"What changed since {day}: 1 claim no longer holds,")
    assert "→ “Acme Robotics reported revenue of $15 million in 2025.” [1]" in (
        ready.report.sections[0].body
    )
