"""The identity step end to end: which company a company run researches, settled before it
researches (a search, the fast model's answer, a person's choice among namesakes), stored with
the run and reused; against the fake Messages API and Tavily."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from bot.agent.events import Ending, IdentityOffered, IdentitySettled
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Depth, Mode, Request, RunStatus
from tests.conftest import FAST_MODEL, TEST_MODEL, Recorder
from tests.fakes.anthropic_api import FakeAnthropic, Reply, reply_text, reply_tools
from tests.fakes.deep_script import DeepScript, forced
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb

REPORT = "# Acme Robotics\n\n## TL;DR\nFound it [1]."
ACME = {"name": "Acme Robotics, Inc.", "website": "acme-robotics.com", "country": "United States"}
ACME_UK = {
    "name": "Acme Robotics Ltd",
    "website": "acmerobotics.co.uk",
    "country": "United Kingdom",
    "registry_id": "Companies House 01234567",
}
ACME_LINE = "Acme Robotics, Inc. (acme-robotics.com; United States)"
UK_LINE = "Acme Robotics Ltd (acmerobotics.co.uk; United Kingdom; Companies House 01234567)"


def named(*candidates: dict[str, str], others: tuple[dict[str, str], ...] = ()) -> Reply:
    """The fast model's answer through the identity step's tool."""
    return reply_tools([("name_company", {"candidates": list(candidates), "others": list(others)})])


@asynccontextmanager
async def bot(settings: Settings, **overrides: Any) -> AsyncIterator[Services]:
    wanted = {"identify": True, **overrides}
    async with open_services(settings.model_copy(update=wanted)) as services:
        yield services


async def start(services: Services, topic: str = "Acme Robotics") -> Recorder:
    recorder = Recorder()
    recorder.run = await services.runs.submit(Request(topic=topic), recorder)
    return recorder


def settled(recorder: Recorder) -> IdentitySettled:
    [event] = [e for e in recorder.events if isinstance(e, IdentitySettled)]
    return event


async def test_one_company_is_researched_at_once_and_named_in_the_brief(
    settings: Settings, anthropic_api: FakeAnthropic, tavily: FakeTavily
) -> None:
    anthropic_api.script(named(ACME), reply_text(REPORT))
    async with bot(settings) as services:
        recorder = await start(services)
        await recorder.finished.wait()
        stored = await services.store.identity_of(recorder.run.run_id)

    assert [r.query for r in tavily.requests] == ["Acme Robotics"]
    identify, research = anthropic_api.requests
    assert identify["model"] == FAST_MODEL
    assert identify["tool_choice"] == {"type": "tool", "name": "name_company"}
    assert "Acme Robotics - result 1" in str(identify["messages"])
    assert f"The company researched: {ACME_LINE}." in str(research["system"])
    event = settled(recorder)
    assert event.identity.settled_by == "search"
    assert event.note == f"Researching {ACME_LINE}."
    assert not any(isinstance(e, IdentityOffered) for e in recorder.events)
    assert stored == event.identity
    assert recorder.outcome.ending is Ending.COMPLETED
    assert recorder.outcome.markdown.startswith(
        "# Acme Robotics\n\nAcme Robotics, Inc. (acme-robotics.com; United States)\n\n*"
    )


async def test_namesakes_are_offered_and_research_starts_on_the_one_chosen(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(named(ACME, ACME_UK), reply_text(REPORT))
    async with bot(settings) as services:
        recorder = await start(services)
        await recorder.wait_for("identity_offered")
        assert len(anthropic_api.requests) == 1  # no research before the choice
        assert await services.runs.choose(recorder.run.run_id, 1) is not None
        await recorder.finished.wait()
        late = await services.runs.choose(recorder.run.run_id, 0)

    [offered] = [e for e in recorder.events if isinstance(e, IdentityOffered)]
    assert [c.line() for c in offered.candidates] == [ACME_LINE, UK_LINE]
    assert offered.timeout_s == 120
    event = settled(recorder)
    assert (event.identity.company.line(), event.identity.settled_by) == (UK_LINE, "person")
    assert [c.line() for c in event.identity.namesakes] == [ACME_LINE]
    assert event.note == f"Researching {UK_LINE}."
    research = str(anthropic_api.requests[1]["system"])
    assert f"The company researched: {UK_LINE}." in research
    assert f"Not to be confused with: {ACME_LINE}." in research
    assert late is None  # the run no longer waits
    assert recorder.outcome.ending is Ending.COMPLETED


async def test_unanswered_the_most_likely_is_taken_and_the_note_says_so(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(*[named(ACME, ACME_UK), reply_text(REPORT)] * 2)
    async with bot(settings, choice_timeout_s=0.05) as services:
        recorder = await start(services)
        await recorder.finished.wait()
        reused = await start(services)  # a guess nobody confirmed is not reused
        await reused.wait_for("identity_offered")
        await reused.finished.wait()

    event = settled(recorder)
    assert (event.identity.company.line(), event.identity.settled_by) == (ACME_LINE, "timeout")
    assert event.note == (
        f"Researching {ACME_LINE}: nobody chose within 0 seconds, so the most likely one was taken."
    )
    assert f"The company researched: {ACME_LINE}." in str(anthropic_api.requests[1]["system"])
    assert recorder.outcome.ending is Ending.COMPLETED


async def test_none_of_these_ends_the_run_and_says_how_to_ask_again(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(named(ACME, ACME_UK))
    async with bot(settings) as services:
        recorder = await start(services)
        await recorder.wait_for("identity_offered")
        await services.runs.choose(recorder.run.run_id, None)
        await recorder.finished.wait()
        stored = await services.store.get_run(recorder.run.run_id)

    assert recorder.outcome.ending is Ending.CANCELLED
    assert recorder.outcome.error == (
        "None of those companies was the one meant: start again with a more specific name, "
        "e.g. adding its website or its country."
    )
    assert (stored.status, stored.error) == (RunStatus.CANCELLED, recorder.outcome.error)
    assert len(anthropic_api.requests) == 1
    assert not any(isinstance(e, IdentitySettled) for e in recorder.events)


async def test_cancel_while_waiting_ends_the_run_cancelled(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(named(ACME, ACME_UK))
    async with bot(settings) as services:
        recorder = await start(services)
        await recorder.wait_for("identity_offered")
        await services.runs.control(recorder.run.run_id, "cancel")
        await recorder.finished.wait()

    assert (recorder.outcome.ending, recorder.outcome.error) == (Ending.CANCELLED, None)
    assert len(anthropic_api.requests) == 1
    assert recorder.outcome.usage.input_tokens > 0  # the identity call is counted


async def test_summarize_while_waiting_takes_the_most_likely_at_once(
    settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(named(ACME, ACME_UK), reply_text(REPORT))
    async with bot(settings) as services:
        recorder = await start(services)
        await recorder.wait_for("identity_offered")
        await services.runs.control(recorder.run.run_id, "summarize")
        await recorder.finished.wait()

    event = settled(recorder)
    assert event.identity.company.line() == ACME_LINE
    assert event.note == (
        f"Researching {ACME_LINE}: Summarize was pressed before anyone chose, so the most "
        "likely one was taken."
    )
    assert recorder.outcome.ending is Ending.COMPLETED  # the research itself was not cut short


async def test_a_later_run_of_the_same_company_reuses_its_identity(
    settings: Settings, anthropic_api: FakeAnthropic, tavily: FakeTavily
) -> None:
    anthropic_api.script(named(ACME, ACME_UK), reply_text(REPORT), reply_text(REPORT))
    async with bot(settings) as services:
        first = await start(services)
        await first.wait_for("identity_offered")
        await services.runs.choose(first.run.run_id, 1)
        await first.finished.wait()
        later = await start(services, "  acme ROBOTICS ")
        await later.finished.wait()

    assert [r.query for r in tavily.requests] == ["Acme Robotics"]
    assert [r["model"] for r in anthropic_api.requests] == [FAST_MODEL, TEST_MODEL, TEST_MODEL]
    event = settled(later)
    assert (event.identity.company.line(), event.identity.settled_by) == (UK_LINE, "earlier")
    assert event.note == f"Researching {UK_LINE}, as an earlier run here settled."
    assert f"The company researched: {UK_LINE}." in str(anthropic_api.requests[2]["system"])
    assert not any(isinstance(e, IdentityOffered) for e in later.events)


async def test_a_contracts_search_names_a_market_and_settles_nothing(
    settings: Settings, anthropic_api: FakeAnthropic, tavily: FakeTavily
) -> None:
    anthropic_api.script(reply_text("# Road tenders\n\n## TL;DR\nNone open [1]."))
    async with bot(settings) as services:
        recorder = Recorder()
        request = Request(topic="road maintenance, Ireland", mode=Mode.CONTRACTS)
        await services.runs.submit(request, recorder)
        await recorder.finished.wait()

    assert tavily.requests == []
    assert [r["model"] for r in anthropic_api.requests] == [TEST_MODEL]
    assert not any(e.kind.startswith("identity_") for e in recorder.events)


async def test_a_deep_run_gives_the_company_to_every_stage(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    anthropic_api.script(named(ACME))
    anthropic_api.responder = DeepScript(article_url=f"{web.url}{ARTICLE_PATH}")
    async with bot(settings) as services:
        recorder = Recorder()
        await services.runs.submit(Request(topic="Acme Robotics", depth=Depth.DEEP), recorder)
        await recorder.finished.wait()

    identify, *stages = anthropic_api.requests
    assert forced(identify) == "name_company"
    briefed = [r for r in stages if forced(r) != "record_verdicts"]  # the claim judge aside
    assert {forced(r) for r in briefed} >= {"submit_plan", "submit_coverage", "submit_report"}
    assert all(f"The company researched: {ACME_LINE}." in str(r["system"]) for r in briefed)
    assert recorder.outcome.report.company == ACME_LINE
