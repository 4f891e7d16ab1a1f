"""A follow-up that researches and is stopped: by its turn limit, its cost cap, Summarize now or
Cancel (the terminal's Ctrl-C, once and twice), and the forced answer failing; and two
follow-ups of one run researching at once. The real runs service, store, engine and SDK
clients against the fake Messages API, Tavily and web."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from bot.agent.events import Ending, Notice
from bot.agent.followup.thread import WAITING
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import RunStatus
from tests.agent.followup.test_followup import REVISED, TERMINAL, answer, ask, research
from tests.conftest import Recorder
from tests.fakes.anthropic_api import FakeAnthropic, error, reply_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import FakeWeb


@pytest.fixture
def limited(settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb) -> Callable[..., Any]:
    """A bot whose follow-ups have the given limits, with one finished run: (services, run id)."""

    def opened(**limits: Any) -> Any:
        return _world_with_run(settings.model_copy(update=limits), anthropic_api, web)

    return opened


class _world_with_run:
    def __init__(self, settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb) -> None:
        self._opening = open_services(settings)
        self._api, self._web = anthropic_api, web

    async def __aenter__(self) -> tuple[Services, str]:
        world = await self._opening.__aenter__()
        run_id = await research(world, self._api, self._web)
        self._api.requests.clear()
        return world, run_id

    async def __aexit__(self, *exc: object) -> None:
        await self._opening.__aexit__(*exc)


def last_words(request: dict[str, Any]) -> str:
    """The text of the last user turn a request sent (where the forced answer is asked for)."""
    return str(request["messages"][-1]["content"])


async def test_the_turn_limit_makes_it_answer_from_what_it_found(
    limited: Callable[..., Any], anthropic_api: FakeAnthropic, tavily: FakeTavily
) -> None:
    async with limited(followup_max_turns=1) as (world, run_id):
        anthropic_api.script(
            reply_tools([("web_search", {"query": "Acme Robotics customers"})]),
            answer("From what was found: grocers [3]; nothing on their rivals."),
        )
        recorder = await ask(world, run_id, "Who are their customers and rivals?")
        child = await world.store.get_run(recorder.run.run_id)

    outcome = recorder.outcome
    assert outcome.ending is Ending.MAX_TURNS_SYNTHESIZED and outcome.error is None
    assert outcome.answer.startswith("From what was found: grocers [3]")
    assert tavily.default_results("Acme Robotics customers")[0]["url"] in outcome.answer
    forced = anthropic_api.requests[-1]
    assert forced["tool_choice"] == {"type": "tool", "name": "answer"}
    assert "used all the research turns" in last_words(forced)
    assert (child.status, child.termination_reason) == (RunStatus.DONE, "max_turns_synthesized")
    assert len(anthropic_api.requests) == 2


async def test_the_cost_cap_makes_it_answer_from_what_it_found(
    limited: Callable[..., Any], anthropic_api: FakeAnthropic
) -> None:
    async with limited(followup_max_turns=5, followup_max_cost_usd=0.000001) as (world, run_id):
        anthropic_api.script(
            reply_tools([("web_search", {"query": "Acme Robotics customers"})]),
            answer("Grocers [3]."),
        )
        recorder = await ask(world, run_id, "Who are their customers?")
        child = await world.store.get_run(recorder.run.run_id)

    assert recorder.outcome.ending is Ending.BUDGET_SYNTHESIZED
    assert recorder.outcome.answer.startswith("Grocers [3].")
    assert "cost budget for this question is spent" in last_words(anthropic_api.requests[-1])
    # One research turn, then the forced answer: the cap stopped it with turns to spare.
    assert len(anthropic_api.requests) == 2 and child.turns == 2
    assert child.termination_reason == "budget_synthesized" and child.cost_usd


async def test_a_failing_forced_answer_ends_it_saying_what_happened(
    limited: Callable[..., Any], anthropic_api: FakeAnthropic
) -> None:
    async with limited(followup_max_turns=1) as (world, run_id):
        anthropic_api.script(
            reply_tools([("web_search", {"query": "Acme Robotics customers"})]),
            error(500, "api_error", "boom", should_retry=False),
        )
        recorder = await ask(world, run_id, "Who are their customers?")
        child = await world.store.get_run(recorder.run.run_id)
        latest = await world.store.latest_report(run_id)

    outcome = recorder.outcome
    assert outcome.ending is Ending.MAX_TURNS_SYNTHESIS_FAILED and outcome.answer is None
    assert outcome.error == (
        "Research stopped (its turns ran out) and the model could not write the answer."
    )
    assert (child.status, child.error) == (RunStatus.FAILED, outcome.error)
    assert latest is not None and latest[0] == 1  # the run's report is untouched


def _held_then_answer(text: str) -> Any:
    """A model whose research turns never answer; the forced `answer` call does."""

    async def respond(body: dict[str, Any]) -> Any:
        if body.get("tool_choice", {}).get("type") == "tool":
            return answer(text)
        await asyncio.Event().wait()

    return respond


async def _researching(world: Services, anthropic_api: FakeAnthropic, run_id: str) -> Recorder:
    """A follow-up that searched once and waits on its second model turn."""
    anthropic_api.script(reply_tools([("web_search", {"query": "Acme Robotics customers"})]))
    recorder = Recorder()
    recorder.run = await world.followups.ask(run_id, "Who are their customers?", TERMINAL, recorder)
    await anthropic_api.wait_for_requests(2)
    return recorder


async def test_summarize_now_while_it_researches_answers_from_what_it_found(
    limited: Callable[..., Any], anthropic_api: FakeAnthropic
) -> None:
    async with limited() as (world, run_id):
        anthropic_api.responder = _held_then_answer("So far: grocers [3].")
        recorder = await _researching(world, anthropic_api, run_id)
        assert world.runs.summarize(recorder.run.run_id)
        await asyncio.wait_for(recorder.finished.wait(), 30)
        child = await world.store.get_run(recorder.run.run_id)

    assert recorder.outcome.ending is Ending.FORCED_SYNTHESIZED
    assert recorder.outcome.answer.startswith("So far: grocers [3].")
    assert "wants the answer now" in last_words(anthropic_api.requests[-1])
    assert child.status is RunStatus.DONE


async def test_cancel_while_it_researches_ends_it_without_an_answer(
    limited: Callable[..., Any], anthropic_api: FakeAnthropic
) -> None:
    async with limited() as (world, run_id):
        anthropic_api.responder = _held_then_answer("never")
        recorder = await _researching(world, anthropic_api, run_id)
        assert world.runs.cancel(recorder.run.run_id)
        await asyncio.wait_for(recorder.finished.wait(), 30)
        child = await world.store.get_run(recorder.run.run_id)
        latest = await world.store.latest_report(run_id)

    outcome = recorder.outcome
    assert outcome.ending is Ending.CANCELLED and outcome.answer is None and outcome.error is None
    assert (child.status, child.termination_reason) == (RunStatus.CANCELLED, "cancelled")
    assert len(anthropic_api.requests) == 2  # no forced answer was asked for
    assert latest is not None and latest[0] == 1


async def test_two_follow_ups_at_once_answer_one_after_the_other_numbering_as_one_thread(
    world: Services, anthropic_api: FakeAnthropic, tavily: FakeTavily, web: FakeWeb
) -> None:
    run_id = await research(world, anthropic_api, web)
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme customers"})]),
        answer("Grocers [3].", update_report=True, updated_report=REVISED),
        reply_tools([("web_search", {"query": "Acme rivals"})]),
        answer(
            "Rivals [6]; customers were grocers [3].",
            update_report=True,
            updated_report=REVISED + "\n## Rivals\nBeta [6].\n",
        ),
    )
    first, second = Recorder(), Recorder()
    first.run = await world.followups.ask(run_id, "Customers? Update the report", TERMINAL, first)
    second.run = await world.followups.ask(run_id, "Rivals? Update the report", TERMINAL, second)
    await asyncio.wait_for(asyncio.gather(first.finished.wait(), second.finished.wait()), 30)

    one, two = first.outcome, second.outcome
    assert (one.ending, two.ending) == (Ending.COMPLETED, Ending.COMPLETED)
    # The second waited for the first, said so, and started from the thread it left.
    assert any(isinstance(e, Notice) and e.message == WAITING for e in second.events)
    assert not any(isinstance(e, Notice) for e in first.events)
    customers = tavily.default_results("Acme customers")[0]["url"]
    rivals = tavily.default_results("Acme rivals")[0]["url"]
    assert one.report.sources[2].url == two.report.sources[2].url == customers
    assert two.report.sources[5].url == rivals and rivals not in one.answer
    # No number means two different URLs across the two answers.
    for n, source in enumerate(one.report.sources):
        assert two.report.sources[n].url == source.url
    assert "[6] " in two.answer and rivals in two.answer and customers in two.answer
    # Each made a version; the second's from the first's (the model was shown v2).
    assert (one.version, two.version) == (2, 3)
    second_asked = str(anthropic_api.requests[-2]["messages"][0]["content"])
    assert "Customers and market" in second_asked and "Customers? Update" in second_asked
    version, report, markdown = await world.store.latest_report(run_id) or (0, None, "")
    assert version == 3 and "## Rivals" in markdown and report is not None
    assert report.sources[5].url == rivals and report.sources[2].url == customers
