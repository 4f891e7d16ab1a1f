"""Follow-up questions end to end: the real runs service, store, engines and SDK clients against
the fake Messages API (scripted turns), the fake Tavily and the fake web."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.agent.events import Ending, ReportRevised, ToolCalled
from bot.compose import Services
from bot.domain import Origin, Request, RunStatus
from bot.errors import NotFoundError, RequestError
from tests.conftest import Recorder
from tests.fakes.anthropic_api import FakeAnthropic, error, reply, reply_text, reply_tools, tool_use
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb

TERMINAL = Origin(platform="terminal")
# The run searches (sources 1-3) and reads the article (4); its report cites the article first,
# so the report numbers it [1], and search result 1 [2].
REPORT = (
    "# Acme Robotics\n\n## TL;DR\n- Acme raised $40 million [4].\n\n"
    "## Overview\nFounded in 2019 [4]. Listed in search results [1].\n"
)
REVISED = (
    "# Acme Robotics\n\n## TL;DR\n- Acme raised $40 million [1].\n- It sells to grocers [3].\n\n"
    "## Overview\nFounded in 2019 [1].\n\n## Customers and market\nGrocers [3].\n"
)


def answer(text: str, **more: Any) -> Any:
    """A turn that calls the `answer` tool."""
    return reply([tool_use("answer", {"answer": text, **more})], "tool_use")


async def research(world: Services, anthropic_api: FakeAnthropic, web: FakeWeb) -> str:
    anthropic_api.script(
        reply_tools(
            [
                ("web_search", {"query": "Acme Robotics"}),
                ("read_page", {"url": web.url + ARTICLE_PATH}),
            ]
        ),
        reply_text(REPORT),
    )
    recorder = Recorder()
    record = await world.runs.submit(Request(topic="Acme Robotics"), recorder)
    await asyncio.wait_for(recorder.finished.wait(), 30)
    assert recorder.outcome.ending is Ending.COMPLETED
    return record.run_id


async def ask(world: Services, run_id: str, question: str) -> Recorder:
    recorder = Recorder()
    recorder.run = await world.followups.ask(run_id, question, TERMINAL, recorder)
    await asyncio.wait_for(recorder.finished.wait(), 30)
    return recorder


@pytest.fixture
async def parent(world: Services, anthropic_api: FakeAnthropic, web: FakeWeb) -> str:
    run_id = await research(world, anthropic_api, web)
    anthropic_api.requests.clear()
    return run_id


async def test_a_question_the_evidence_covers_is_answered_from_it(
    world: Services, anthropic_api: FakeAnthropic, tavily: FakeTavily, parent: str
) -> None:
    searches = len(tavily.requests)
    anthropic_api.script(answer("Acme raised $40 million in a Series B [1]."))

    recorder = await ask(world, parent, "How much did they raise?")

    outcome = recorder.outcome
    assert outcome.ending is Ending.ANSWERED and outcome.error is None
    assert "Acme raised $40 million in a Series B [1]." in outcome.answer
    assert f"({'<'}{outcome.report.sources[0].url}>)" in outcome.answer  # [1] listed: the article
    assert ARTICLE_PATH in outcome.report.sources[0].url
    assert outcome.version is None and outcome.filename is None
    assert len(tavily.requests) == searches and not any(
        isinstance(e, ToolCalled) for e in recorder.events
    )
    # The model was given the run's evidence: the report and what was read of the article.
    first = str(anthropic_api.requests[0]["messages"][0]["content"])
    assert "Example Ventures" in first and "Source [1]" in first and "How much" in first
    assert any(t["name"] == "web_search" for t in anthropic_api.requests[0]["tools"])
    child = await world.store.get_run(recorder.run.run_id)
    assert child.parent_run_id == parent and child.status is RunStatus.DONE
    assert child.termination_reason == "answered" and child.turns == 1
    assert child.cost_usd and child.cost_usd > 0
    assert [r.run_id for r in await world.store.follow_ups(parent)] == [child.run_id]


async def test_a_question_beyond_the_evidence_researches_and_numbers_new_sources_next(
    world: Services, anthropic_api: FakeAnthropic, tavily: FakeTavily, parent: str
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics customers"})]),
        answer("They sell to grocers [3], and raised $40 million [1]."),
    )

    recorder = await ask(world, parent, "Who are their customers?")

    outcome = recorder.outcome
    assert outcome.ending is Ending.COMPLETED
    assert tavily.requests[-1].query == "Acme Robotics customers"
    new = tavily.default_results("Acme Robotics customers")[0]["url"]
    assert outcome.report.sources[2].url == new  # after the report's two sources
    assert "They sell to grocers [3]" in outcome.answer and new in outcome.answer
    child = await world.store.get_run(recorder.run.run_id)
    assert child.termination_reason == "completed" and child.turns == 2
    # The next follow-up finds the list as it grew: the new source keeps its number.
    anthropic_api.script(answer("Grocers [3]."))
    again = await ask(world, parent, "Remind me of the customers?")
    assert again.outcome.report.sources[2].url == new and "[3]" in again.outcome.answer
    assert "Who are their customers?" in str(anthropic_api.requests[-1]["messages"][0])


async def test_update_the_report_makes_v2_then_v3_and_the_store_gives_the_latest(
    world: Services, anthropic_api: FakeAnthropic, parent: str
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics customers"})]),
        answer("Updated: customers added [3].", update_report=True, updated_report=REVISED),
    )
    first = await ask(world, parent, "Please update the report with their customers")

    outcome = first.outcome
    assert outcome.version == 2 and outcome.filename == f"acme-robotics-{parent}-v2.md"
    assert "Grocers [3]" in outcome.markdown and outcome.markdown.count("## Sources") == 1
    assert any(isinstance(e, ReportRevised) for e in first.events)
    version, report, markdown = await world.store.latest_report(parent) or (0, None, "")
    assert version == 2 and markdown == outcome.markdown
    assert report is not None and len(report.sources) == 5  # the two, then the three new ones

    anthropic_api.script(
        answer("Shortened.", update_report=True, updated_report=REVISED.replace("Grocers", "Shops"))
    )
    second = await ask(world, parent, "Now make the customers section say shops")
    assert second.outcome.version == 3 and second.outcome.ending is Ending.ANSWERED
    saved = await world.store.report(parent)
    assert saved is not None and "Shops [3]" in saved[1]
    assert second.outcome.filename == f"acme-robotics-{parent}-v3.md"


async def test_refusals_are_short_and_store_nothing(
    world: Services, anthropic_api: FakeAnthropic, parent: str
) -> None:
    with pytest.raises(NotFoundError, match="No run nosuchrun"):
        await world.followups.ask("nosuchrun", "Why?", TERMINAL, Recorder())
    slack = Origin(platform="slack", workspace="T1")
    with pytest.raises(NotFoundError, match="No run"):
        await world.followups.ask(parent, "Why?", slack, Recorder())
    with pytest.raises(RequestError, match="Ask a question"):
        await world.followups.ask(parent, "   ", TERMINAL, Recorder())
    queued = await world.store.create_run(Request(topic="Globex"))
    with pytest.raises(RequestError, match="still researching"):
        await world.followups.ask(queued.run_id, "Why?", TERMINAL, Recorder())
    assert await world.store.follow_ups(parent) == [] and anthropic_api.requests == []


async def test_a_model_failure_mid_follow_up_ends_it_with_a_message(
    world: Services, anthropic_api: FakeAnthropic, parent: str
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics customers"})]),
        error(500, "api_error", "boom", should_retry=False),
    )

    recorder = await ask(world, parent, "Who are their customers?")

    outcome = recorder.outcome
    assert outcome.ending is Ending.LLM_ERROR and outcome.answer is None
    assert outcome.error and "could not answer" in outcome.error
    child = await world.store.get_run(recorder.run.run_id)
    assert child.status is RunStatus.FAILED and child.error == outcome.error
    assert await world.store.latest_report(parent) is not None  # the run's report is untouched
