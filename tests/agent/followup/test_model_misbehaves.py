"""Follow-ups when the model does what real ones do: `answer` beside other tool calls, a reply
cut off at the output limit; and what its system prompt tells it (the research brief)."""

from __future__ import annotations

from datetime import date

from bot.agent.events import Ending, ToolFinished
from bot.compose import Services
from bot.domain import Request
from tests.agent.followup.test_followup import TERMINAL, answer, ask, parent
from tests.agent.test_brief import ACME
from tests.conftest import Recorder
from tests.fakes.anthropic_api import FakeAnthropic, reply, tool_use
from tests.fakes.tavily_api import FakeTavily

__all__ = ["parent"]  # the fixture, shared


async def test_an_answer_beside_other_calls_is_not_taken_they_run_and_it_is_asked_alone(
    world: Services, anthropic_api: FakeAnthropic, tavily: FakeTavily, parent: str
) -> None:
    both = reply(
        [
            tool_use("web_search", {"query": "Acme Robotics customers"}),
            tool_use("answer", {"answer": "Written before the search came back."}),
        ],
        "tool_use",
    )
    anthropic_api.script(both, answer("They sell to grocers [3]."))

    recorder = await ask(world, parent, "Who are their customers?")

    outcome = recorder.outcome
    assert outcome.ending is Ending.COMPLETED
    assert "They sell to grocers [3]." in outcome.answer and "Written before" not in outcome.answer
    assert tavily.requests[-1].query == "Acme Robotics customers"
    search, early = anthropic_api.requests[1]["messages"][-1]["content"]
    assert not search["is_error"] and early["is_error"]
    assert "call `answer` alone" in early["content"]
    finished = {e.name: e.is_error for e in recorder.events if isinstance(e, ToolFinished)}
    assert finished == {"web_search": False, "answer": True}


async def test_a_follow_up_cut_off_at_the_output_limit_is_told_to_answer_shorter(
    world: Services, anthropic_api: FakeAnthropic, parent: str
) -> None:
    cut = reply([tool_use("answer", {"answer": "A very long ans"})], "max_tokens")
    anthropic_api.script(cut, answer("Grocers [1]."))

    recorder = await ask(world, parent, "Who are their customers?")

    assert recorder.outcome.ending is Ending.ANSWERED
    assert "Grocers [1]." in recorder.outcome.answer and "long ans" not in recorder.outcome.answer
    told = str(anthropic_api.requests[1]["messages"][-1]["content"])
    assert "call `answer` alone with a shorter answer" in told
    assert "report" not in told


async def test_the_follow_up_hears_the_research_brief_with_its_limits_and_the_company(
    world: Services, anthropic_api: FakeAnthropic, parent: str
) -> None:
    # A follow-up request carries the identity its run settled.
    question = Request(
        topic="Who leads them?", origin=TERMINAL, parent_run_id=parent, identity=ACME
    )
    anthropic_api.script(answer("Nobody named [1]."))
    recorder = Recorder()
    await world.runs.submit(question, recorder)
    await recorder.finished.wait()

    system = anthropic_api.requests[0]["system"][0]["text"]
    assert f"Today is {date.today().isoformat()}." in system
    assert "Limits: at most 3 turns of tool calls" in system
    assert "The company researched: Acme Robotics, Inc. (acme-robotics.com" in system
    assert "Not to be confused with: Acme Robotik GmbH" in system
    assert system.count("untrusted data") == 1 and system.count("Today is") == 1
    assert "filings and official registries" in system
