"""The cost limit of a run (RESEARCH_BOT_MAX_RUN_COST_USD): a quick run and a deep run whose
spend reaches it write up from what they have; a run whose cost is unknown cannot be held to it.
The real runs service, store, engines and SDK against the fake Messages API, Tavily and web."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path

import pytest

from bot.adapters.chat.sink import deep_milestone, ending_label
from bot.agent.events import Ending, FindingReady
from bot.compose import open_services
from bot.config import Settings
from bot.domain import Depth, Request
from tests.conftest import TEST_MODEL, Recorder, world_env
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.deep_script import DeepScript
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb

REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n\n## Overview\nFounded 2015 [1].\n"
# The research model's price in the fake world: $15 per million output tokens.
COSTLY = 100_000
"""Output tokens of a turn that costs $1.50."""


async def research(settings: Settings, request: Request, **env: str) -> Recorder:
    async with open_services(settings.model_copy(update=env)) as services:
        recorder = Recorder()
        recorder.run = await services.runs.submit(request, recorder)
        await asyncio.wait_for(recorder.finished.wait(), 30)
        recorder.run = await services.store.get_run(recorder.run.run_id)
    return recorder


async def test_a_quick_run_that_reaches_its_cost_limit_writes_up_from_what_it_found(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    costly = dataclasses.replace(
        reply_tools([("web_search", {"query": "acme"})]), output_tokens=COSTLY
    )
    anthropic_api.script(costly, reply_text(REPORT))

    recorder = await research(settings, Request(topic="Acme Robotics"), max_run_cost_usd=1.0)

    outcome = recorder.outcome
    assert outcome.ending is Ending.BUDGET_SYNTHESIZED
    assert outcome.report is not None and outcome.report.sources
    assert outcome.usage.cost_usd is not None and outcome.usage.cost_usd >= 1.0
    # No second research turn: the one call after the limit is the write-up, without tools,
    # over the search results the costly turn asked for.
    first, write_up = [r for r in anthropic_api.requests if r["model"] == TEST_MODEL]
    assert "tool_choice" not in first and write_up["tool_choice"] == {"type": "none"}
    assert "The cost budget for this run is spent." in str(write_up["messages"][-1])
    assert "tool_result" in str(write_up["messages"][-1])
    assert recorder.run.termination_reason == "budget_synthesized"
    assert ending_label(outcome.ending) == "Done (cost limit reached, written up)"


async def test_a_run_whose_cost_is_unknown_is_not_held_to_the_limit_and_says_so_once(
    settings: Settings, anthropic_api: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    turns = [reply_tools([("web_search", {"query": q})]) for q in ("a", "b", "c")]
    anthropic_api.script(*turns, reply_text(REPORT))

    with caplog.at_level(logging.WARNING, logger="bot.agent.cost"):
        recorder = await research(
            settings, Request(topic="Acme"), model="claude-unpriced-1", max_run_cost_usd=0.0001
        )

    assert recorder.outcome.ending is Ending.COMPLETED
    assert recorder.outcome.usage.cost_usd is None
    warned = [r.getMessage() for r in caplog.records if r.name == "bot.agent.cost"]
    assert len(warned) == 1
    assert recorder.run.run_id in warned[0] and "cannot be checked" in warned[0]


async def test_a_deep_run_that_reaches_its_cost_limit_stops_every_researcher_and_writes_up(
    tmp_path: Path, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    script = DeepScript(article_url=f"{web.url}{ARTICLE_PATH}", read_output_tokens=COSTLY)
    anthropic_api.responder = script
    env = {**world_env(tmp_path, anthropic_api, tavily, web), "RESEARCH_BOT_MAX_RUN_COST_USD": "1"}
    settings = Settings.from_mapping(env)
    assert settings.model == TEST_MODEL

    recorder = await research(settings, Request(topic="Acme Robotics", depth=Depth.DEEP))

    outcome = recorder.outcome
    assert outcome.ending is Ending.BUDGET_SYNTHESIZED
    # The first costly turn stopped them all, as Summarize does: none asked for its finding,
    # each wrote it from its evidence.
    findings = [e for e in recorder.events if isinstance(e, FindingReady)]
    assert len(findings) == 3
    assert all(f.from_evidence and f.ending == "budget" for f in findings)
    assert findings[0].finding.summary == "Stopped: the run's cost budget is spent."
    assert "cost limit reached" in str(deep_milestone(findings[0]))
    assert "draft" not in script.calls and script.calls.count("final") == 1
    assert outcome.report is not None and outcome.report.sources
    assert outcome.usage.cost_usd is not None and outcome.usage.cost_usd >= 1.0
    assert recorder.run.termination_reason == "budget_synthesized"
