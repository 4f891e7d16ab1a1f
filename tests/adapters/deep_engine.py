"""A scripted deep run for the front-end tests: a plan of two sub-questions, two researchers
side by side, the coverage check, the report. No model, no sleeps.

It parks (see `parked`) once researcher 1 is done and researcher 2 is reading a page, until
`release`; then researcher 2 finishes at its turn limit and the run writes up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from bot.agent.control import Control
from bot.agent.deep.schema import Coverage, Finding, SectionCoverage, SubQuestion
from bot.agent.events import (
    CoverageChecked,
    Ending,
    Event,
    FindingReady,
    PlanReady,
    ReportReady,
    ResearcherStarted,
    RunFinished,
    RunStarted,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    Usage,
    UsageRecorded,
)
from bot.agent.report.model import Report, Section, Source
from bot.domain import Request
from tests.adapters.scripted_engine import ScriptedEngine

FUNDING = "Who funds Acme Robotics?"
HOSTILE = "What does Acme sell <!here> to @everyone and <@123456789012345678>?"
"""Researcher 2's sub-question: the model's text, which must ping nobody wherever it shows."""
CHECK = Coverage(
    sections=[
        SectionCoverage(section="Overview", status="covered"),
        SectionCoverage(section="Funding and financials", status="thin", note="one VC name"),
    ]
)


class DeepScriptedEngine(ScriptedEngine):
    async def research(
        self, run_id: str, request: Request, control: Control
    ) -> AsyncIterator[Event]:
        self.controls[run_id] = control
        yield RunStarted(topic=request.topic, mode=request.mode.value)
        yield PlanReady(questions=[SubQuestion(question=FUNDING), SubQuestion(question=HOSTILE)])
        for agent, question in ((1, FUNDING), (2, HOSTILE)):
            yield ResearcherStarted(agent=agent, question=question)
            yield TurnStarted(agent=agent, turn=1)
        yield _search(1, "a", "Acme Robotics investors")
        yield _search(2, "a", "Acme Robotics products")
        yield _found(1, "a", 1, 2)
        yield _found(2, "a", 2, 3)
        yield UsageRecorded(agent=1, turn=1, model="claude-test", usage=_usage())
        yield FindingReady(
            agent=1,
            finding=Finding(
                topic=FUNDING, summary="VCs [1].", confidence="high", read=[1], seen=[2]
            ),
        )
        yield TurnStarted(agent=2, turn=2)
        yield ToolCalled(
            agent=2,
            turn=2,
            call_id="b",
            name="read_page",
            input={"url": "https://docs.example/acme"},
        )
        self.parked(run_id).set()
        await self.release.wait()
        yield _found(2, "b", 4)
        yield FindingReady(
            agent=2,
            finding=Finding(topic=HOSTILE, summary="Robots [3].", read=[3, 4], seen=[2]),
            ending="max_turns",
        )
        yield CoverageChecked(check=CHECK)
        yield SynthesisStarted(turn=1, reason="completed")
        report = Report(
            title="Acme Robotics",
            tldr=self.tldr,
            sections=[Section(heading="Overview", body="Robots [3].")],
            sources=[_source(n) for n in range(1, 5)],
        )
        yield ReportReady(turn=1, report=report, synthesis=False)
        yield RunFinished(ending=Ending.COMPLETED, turns=1, usage=_usage() + _usage())


def _search(agent: int, call_id: str, query: str) -> ToolCalled:
    return ToolCalled(
        agent=agent, turn=1, call_id=call_id, name="web_search", input={"query": query}
    )


def _found(agent: int, call_id: str, *numbers: int) -> ToolFinished:
    return ToolFinished(
        agent=agent,
        turn=1 if call_id == "a" else 2,
        call_id=call_id,
        name="web_search" if call_id == "a" else "read_page",
        is_error=False,
        content="...",
        sources=[_source(n) for n in numbers],
        numbers=list(numbers),
    )


def _source(n: int) -> Source:
    return Source(url=f"https://news.example/{n}", title=f"Page {n}", snippet="...")


def _usage() -> Usage:
    return Usage(input_tokens=1_000, output_tokens=200, cost_usd=0.01)
