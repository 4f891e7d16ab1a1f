"""The finish guard (seed 002): an early, clearly short report gets one round of feedback from the
fast model; reports at the limit, summarize now and a second offer go straight through."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.agent.brief import SECTIONS
from bot.agent.events import FinishReviewed, ReportReady, RunFinished
from bot.agent.language import frame
from bot.agent.report.finish_guard import required_sections
from bot.agent.trajectory import trajectory
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Mode, Request
from tests.conftest import FAST_MODEL, Recorder
from tests.fakes.anthropic_api import FakeAnthropic, reply, reply_text, reply_tools, tool_use
from tests.fakes.web import ARTICLE_PATH, FakeWeb

# Claims a cited passage states word for word: settled without the claim judge's call.
RAISED = "It had raised $40 million in a Series B round led by Example Ventures [1]."
SHORT = f"# Acme\n\n## TL;DR\n- {RAISED}"
FULLER = f"# Acme\n\n## TL;DR\n- {RAISED}\n\n## Funding and financials\n{RAISED}"
FEEDBACK = "Add the People and Competitors sections; research who leads Acme."


def _verdict(ready: bool) -> Any:
    check = {"ready": ready, "missing": [] if ready else ["People"], "feedback": FEEDBACK}
    return reply([tool_use("record_finish_check", check)], "tool_use")


def _read(web: FakeWeb) -> Any:
    return reply_tools([("read_page", {"url": web.url + ARTICLE_PATH})])


async def _start(services: Services) -> Recorder:
    recorder = Recorder()
    record = await services.runs.submit(Request(topic="Acme Robotics"), recorder)
    recorder.run_id = record.run_id  # type: ignore[attr-defined]
    return recorder


def _research_calls(api: FakeAnthropic) -> list[dict[str, Any]]:
    """The run's own model calls, without the claim judge's check of the finished report."""
    return [
        body
        for body in api.requests
        if body.get("tool_choice") != {"type": "tool", "name": "record_verdicts"}
    ]


def _ending(recorder: Recorder) -> str:
    last = recorder.events[-1]
    assert isinstance(last, RunFinished)
    return last.ending.value


def test_the_required_sections_are_the_tldr_in_the_asker_language_then_the_mode_sections() -> None:
    assert required_sections(Mode.CONTRACTS, "en") == [
        "TL;DR",
        "Matching tenders and contracts",
        "Analysis",
    ]
    assert required_sections(Mode.COMPANY, "de") == [frame("de").tldr, *SECTIONS[Mode.COMPANY]]


async def test_the_review_is_shown_the_sections_it_checks_and_the_claim_figures_it_weighs(
    world: Services, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    anthropic_api.script(_read(web), reply_text(SHORT), _verdict(True))
    recorder = Recorder()
    await world.runs.submit(Request(topic="Acme Robotics", language="de"), recorder)
    await recorder.finished.wait()

    check = _research_calls(anthropic_api)[2]
    content = check["messages"][0]["content"]
    listed = content.split("\n\n")[0].splitlines()
    assert "<" not in content.split("The draft:")[0]  # no template placeholder among them
    assert listed == [
        "Required sections, in order:",
        f"- {frame('de').tldr}",
        *(f"- {name}" for name in SECTIONS[Mode.COMPANY]),
    ]
    assert "Cited claims: 1, checked in code against the text of their sources: 1 stated" in content
    assert "searched for and not found is present, not empty" in check["system"][0]["text"]


async def test_an_early_report_missing_sections_gets_one_round_of_feedback_then_completes(
    world: Services, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    # The second offer is still early and still short: the guard looks only once per run.
    anthropic_api.script(_read(web), reply_text(SHORT), _verdict(False), reply_text(FULLER))
    recorder = await _start(world)
    await recorder.finished.wait()

    assert _ending(recorder) == "completed"
    calls = _research_calls(anthropic_api)
    assert len(calls) == 4
    check = calls[2]
    assert check["model"] == FAST_MODEL
    assert check["tool_choice"] == {"type": "tool", "name": "record_finish_check"}
    assert "- People" in check["messages"][0]["content"]
    resumed = calls[3]["messages"]
    assert resumed[-2]["role"] == "assistant" and resumed[-2]["content"][0]["text"] == SHORT
    assert FEEDBACK in str(resumed[-1]["content"]) and "People" in str(resumed[-1]["content"])
    [review] = [e for e in recorder.events if isinstance(e, FinishReviewed)]
    assert (review.ready, review.missing, review.turn) == (False, ["People"], 2)
    report = next(e for e in recorder.events if isinstance(e, ReportReady)).report
    assert [s.heading for s in report.sections] == ["Funding and financials"]
    stored = await world.store.events(recorder.run_id)  # type: ignore[attr-defined]
    steps = trajectory("r", stored)
    assert steps["turns"][1]["finish_review"]["feedback"] == FEEDBACK


async def test_a_report_the_check_finds_ready_goes_out_at_once(
    world: Services, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    anthropic_api.script(_read(web), reply_text(SHORT), _verdict(True))
    recorder = await _start(world)
    await recorder.finished.wait()

    assert _ending(recorder) == "completed" and len(_research_calls(anthropic_api)) == 3
    assert [e.ready for e in recorder.events if isinstance(e, FinishReviewed)] == [True]


async def test_a_report_offered_late_in_the_turn_budget_is_not_reviewed(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    anthropic_api.script(_read(web), reply_text(SHORT))
    async with open_services(settings.model_copy(update={"max_turns": 3})) as services:
        recorder = await _start(services)
        await recorder.finished.wait()

    assert _ending(recorder) == "completed" and len(_research_calls(anthropic_api)) == 2
    assert not any(isinstance(e, FinishReviewed) for e in recorder.events)


async def test_summarize_now_during_the_review_delivers_the_report_in_hand(
    world: Services, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    asked = asyncio.Event()

    async def never(body: dict[str, Any]) -> Any:
        asked.set()
        await asyncio.Event().wait()

    anthropic_api.script(_read(web), reply_text(SHORT))
    anthropic_api.responder = never
    recorder = await _start(world)
    await asked.wait()

    world.runs.summarize(recorder.run_id)  # type: ignore[attr-defined]
    await recorder.finished.wait()

    assert _ending(recorder) == "completed"
    report = next(e for e in recorder.events if isinstance(e, ReportReady)).report
    assert report.tldr == f"- {RAISED}"
    assert not any(isinstance(e, FinishReviewed) for e in recorder.events)
    assert len(_research_calls(anthropic_api)) == 3  # no write-up call: the draft was the report


async def test_summarize_now_before_any_report_ends_in_synthesis_without_the_guard(
    world: Services, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    asked = asyncio.Event()

    async def hang_then_write(body: dict[str, Any]) -> Any:
        if not asked.is_set():
            asked.set()
            await asyncio.Event().wait()
        return reply_text(SHORT)

    anthropic_api.script(_read(web))
    anthropic_api.responder = hang_then_write
    recorder = await _start(world)
    await asked.wait()

    world.runs.summarize(recorder.run_id)  # type: ignore[attr-defined]
    await recorder.finished.wait()

    assert _ending(recorder) == "forced_synthesized" and len(anthropic_api.requests) == 3
    assert anthropic_api.requests[2]["tool_choice"] == {"type": "none"}
    assert not any(isinstance(e, FinishReviewed) for e in recorder.events)
