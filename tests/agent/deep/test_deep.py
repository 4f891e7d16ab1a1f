"""Deep research end to end: the real runs service, store, engine and SDK clients against the fake
Messages API (answered by `DeepScript`), the fake Tavily and the fake web."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.chat.sink import outcome_summary
from bot.agent.brief import SECTIONS
from bot.agent.deep.engine import DeepResearch
from bot.agent.deep.final import FINDINGS_ONLY
from bot.agent.deep.schema import Coverage, SectionCoverage
from bot.agent.events import (
    EVENT_ADAPTER,
    CoverageChecked,
    Ending,
    FindingReady,
    PlanReady,
    ReportReady,
    ResearcherStarted,
    RunFinished,
    ToolFinished,
)
from bot.agent.language import frame
from bot.agent.trajectory import trajectory
from bot.compose import Services, deep_limits, limits, open_services
from bot.config import Settings
from bot.domain import Depth, Mode, Request
from tests.conftest import Recorder, world_env
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.deep_script import QUESTIONS, DeepScript, forced
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb

DEEP = Request(topic="Acme Robotics", depth=Depth.DEEP)


@pytest.fixture
def script(anthropic_api: FakeAnthropic, web: FakeWeb) -> DeepScript:
    script = DeepScript(article_url=f"{web.url}{ARTICLE_PATH}")
    anthropic_api.responder = script
    return script


@asynccontextmanager
async def deep_world(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
    **env: str,
) -> AsyncIterator[Services]:
    settings = Settings.from_mapping({**world_env(tmp_path, anthropic_api, tavily, web), **env})
    async with open_services(settings) as services:
        yield services


async def run_deep(services: Services, request: Request = DEEP) -> Recorder:
    recorder = Recorder()
    recorder.run = await services.runs.submit(request, recorder)
    await asyncio.wait_for(recorder.finished.wait(), 30)
    return recorder


def of(recorder: Recorder, kind: type[Any]) -> list[Any]:
    return [e for e in recorder.events if isinstance(e, kind)]


async def test_a_deep_run_plans_researches_in_parallel_checks_coverage_and_reports(
    world: Services, script: DeepScript, web: FakeWeb, anthropic_api: FakeAnthropic
) -> None:
    recorder = await run_deep(world)

    outcome = recorder.outcome
    assert outcome.ending is Ending.COMPLETED
    plan = of(recorder, PlanReady)
    assert [q.question for q in plan[0].questions] == QUESTIONS and not plan[0].fallback
    started = of(recorder, ResearcherStarted)
    assert sorted(e.agent for e in started) == [1, 2, 3]
    findings = of(recorder, FindingReady)
    assert len(findings) == 3 and not any(f.from_evidence for f in findings)
    assert all(f.finding.read for f in findings)  # each read the article, under one number
    [checked] = of(recorder, CoverageChecked)
    assert [c.section for c in checked.check.sections] == list(SECTIONS[Mode.COMPANY])
    # One page cache for the run: three researchers asked for the article, it was fetched once.
    assert sum(1 for r in web.requests if r.path == ARTICLE_PATH) == 1
    report = outcome.report
    assert report.title == script.title
    # The report is written once, in the sections quick runs have too.
    assert script.calls.count("final") == 1
    assert [s.heading for s in report.sections] == list(SECTIONS[Mode.COMPANY])
    # Every source of every researcher is kept, once: three searches' results and the article.
    urls = {s.url for s in report.sources}
    retrieved = {s.url for e in of(recorder, ToolFinished) for s in e.sources}
    assert len(urls) == len(report.sources) == len(retrieved) == 10
    assert f"{web.url}{ARTICLE_PATH}" in urls
    # Researchers share one system prompt and tools: one cached prefix for all of them.
    researcher_calls = [
        r for r in anthropic_api.requests if any(t["name"] == "submit_finding" for t in r["tools"])
    ]
    assert len({str(r["system"]) for r in researcher_calls}) == 1
    # Cost and tokens over every agent: the stored run adds up every call of every agent.
    finished = of(recorder, RunFinished)[0]
    stored = await world.store.get_run(record_id(recorder))
    assert stored is not None and stored.depth is Depth.DEEP
    assert finished.turns >= 3 * 3 + 2 and finished.usage.input_tokens > 0
    assert stored.input_tokens == finished.usage.input_tokens


def record_id(recorder: Recorder) -> str:
    return str(recorder.run.run_id)


async def test_the_trajectory_nests_each_researcher(world: Services, script: DeepScript) -> None:
    recorder = await run_deep(world)
    shape = trajectory("run", recorder.events)
    researchers = sorted(shape["researchers"], key=lambda r: r["agent"])
    assert sorted(r["question"] for r in researchers) == sorted(QUESTIONS)
    assert all(len(r["turns"]) == 3 for r in researchers)  # search, read, finish
    assert all(r["finding"]["summary"] for r in shape["researchers"])
    assert shape["plan"]["questions"] and shape["coverage"]["sections"]
    assert "draft" not in shape
    assert any(t.get("final") for t in shape["turns"])


async def test_a_malformed_plan_is_asked_again_once(world: Services, script: DeepScript) -> None:
    script.plan = "malformed_once"
    recorder = await run_deep(world)
    assert script.calls.count("plan") == 2
    assert not of(recorder, PlanReady)[0].fallback
    assert recorder.outcome.ending is Ending.COMPLETED


async def test_a_plan_malformed_twice_falls_back_to_the_fixed_plan(
    world: Services, script: DeepScript
) -> None:
    script.plan = "malformed"
    recorder = await run_deep(world)
    plan = of(recorder, PlanReady)[0]
    assert plan.fallback and len(plan.questions) == 4  # the company plan
    assert len(of(recorder, FindingReady)) == 4
    assert recorder.outcome.ending is Ending.COMPLETED


async def test_a_failing_researcher_still_contributes_a_finding(
    world: Services, script: DeepScript
) -> None:
    script.failing = {QUESTIONS[1]}
    recorder = await run_deep(world)
    findings = {f.finding.topic: f for f in of(recorder, FindingReady)}
    assert findings[QUESTIONS[1]].from_evidence and findings[QUESTIONS[1]].ending == "error"
    assert not findings[QUESTIONS[0]].from_evidence
    assert recorder.outcome.ending is Ending.COMPLETED
    assert recorder.outcome.report is not None


async def test_summarize_stops_every_researcher_and_writes_up_from_the_findings(
    world: Services, script: DeepScript
) -> None:
    script.hold = asyncio.Event()
    recorder = Recorder()
    record = await world.runs.submit(DEEP, recorder)
    await script.searched.wait()
    await recorder.wait_for("tool_finished")  # the run has sources
    assert world.runs.summarize(record.run_id)
    await asyncio.wait_for(recorder.finished.wait(), 5)
    script.hold.set()

    assert recorder.outcome.ending is Ending.FORCED_SYNTHESIZED
    findings = of(recorder, FindingReady)
    assert findings and all(f.from_evidence and f.ending == "forced" for f in findings)
    assert "draft" not in script.calls  # straight to the report from the findings
    assert script.calls.count("final") == 1


async def test_summarize_before_anything_is_found_says_so_and_goes_on(
    world: Services, script: DeepScript
) -> None:
    script.plan_gate = asyncio.Event()
    recorder = Recorder()
    record = await world.runs.submit(DEEP, recorder)
    await recorder.wait_for("run_started")
    assert world.runs.summarize(record.run_id)
    await recorder.wait_for("notice")
    script.plan_gate.set()
    await asyncio.wait_for(recorder.finished.wait(), 30)

    notices = [e.message for e in recorder.events if e.kind == "notice"]
    assert len(notices) == 1 and "Nothing has been gathered yet" in notices[0]
    assert recorder.outcome.ending is Ending.COMPLETED


async def test_cancel_stops_everything(world: Services, script: DeepScript) -> None:
    script.hold = asyncio.Event()
    recorder = Recorder()
    record = await world.runs.submit(DEEP, recorder)
    await script.searched.wait()
    assert world.runs.cancel(record.run_id)
    await asyncio.wait_for(recorder.finished.wait(), 5)
    script.hold.set()
    assert recorder.outcome.ending is Ending.CANCELLED
    assert "final" not in script.calls
    assert recorder.outcome.report.from_evidence_only  # what the researchers had found
    assert outcome_summary(recorder.outcome).count("The run was cancelled") == 1


async def test_the_deadline_stops_researchers_and_the_report_is_written(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
    script: DeepScript,
) -> None:
    script.read_delay_s = 30  # every researcher is stuck reading when time is up
    async with deep_world(
        tmp_path, anthropic_api, tavily, web, RESEARCH_BOT_DEEP_DEADLINE_S="2"
    ) as services:
        recorder = await run_deep(services)
    assert recorder.outcome.ending is Ending.DEADLINE_SYNTHESIZED
    assert {f.ending for f in of(recorder, FindingReady)} == {"deadline"}
    assert recorder.outcome.report.sources


async def test_without_a_coverage_check_the_report_is_written_from_the_findings(
    world: Services, script: DeepScript, anthropic_api: FakeAnthropic
) -> None:
    script.supervisor = "fail"
    recorder = await run_deep(world)
    assert not of(recorder, CoverageChecked)
    final = [
        r
        for r in anthropic_api.requests
        if (r.get("tool_choice") or {}).get("name") == "submit_report"
    ]
    prompt = str(final[0]["messages"][0]["content"])
    assert "Researcher 3" in prompt and "coverage check" not in prompt
    assert recorder.outcome.ending is Ending.COMPLETED
    assert recorder.outcome.report.title == script.title


async def test_when_everything_fails_a_minimal_report_keeps_every_source(
    world: Services, script: DeepScript
) -> None:
    script.supervisor, script.final = "fail", "fail"
    recorder = await run_deep(world)
    report = recorder.outcome.report
    assert report.from_evidence_only
    assert [s.heading for s in report.sections] == QUESTIONS
    assert len(report.sources) == 10
    assert recorder.outcome.ending is Ending.ERROR_SYNTHESIS_FAILED


async def test_a_report_from_the_findings_reads_like_one_report(
    world: Services, script: DeepScript, web: FakeWeb
) -> None:
    """Findings written like whole reports (a title, a sources list of their own) and one written
    from its sources, after its researcher failed: one title, one sources list, one line each."""
    script.supervisor, script.final, script.findings = "fail", "fail", "report"
    script.failing_late = {QUESTIONS[2]}
    recorder = await run_deep(world)
    outcome = recorder.outcome
    markdown = outcome.markdown

    headings = re.findall(r"^#+ (.+)$", markdown, re.M)
    assert headings == ["Research: Acme Robotics", "TL;DR", *QUESTIONS, "Sources"]
    assert outcome.report.tldr == FINDINGS_ONLY
    assert outcome_summary(outcome).splitlines()[1:] == [f"TL;DR: {FINDINGS_ONLY}"]
    listed = re.findall(r"^\d+\. \[.+\]\((\S+)\)", markdown, re.M)
    assert len(listed) == len(set(listed)) == 10 and f"{web.url}{ARTICLE_PATH}" in listed
    assert not re.search(r"^\\?\[\d+", markdown, re.M)  # no line opens like a sources entry
    assert "&#" not in markdown and "\\[" not in markdown and "never-retrieved" not in markdown
    # The page read by the failed researcher: its title once in its section, once in Sources.
    assert markdown.count("Acme Robotics raises $40M to scale warehouse robots") == 2


async def test_when_the_write_up_fails_the_findings_are_the_report(
    world: Services, script: DeepScript
) -> None:
    """No draft stands in for the report any more: the findings do, without the model."""
    script.final = "fail"
    recorder = await run_deep(world)
    assert of(recorder, CoverageChecked)
    report = recorder.outcome.report
    assert report.from_evidence_only and report.tldr == FINDINGS_ONLY
    assert [s.heading for s in report.sections] == QUESTIONS
    assert recorder.outcome.ending is Ending.ERROR_SYNTHESIS_FAILED


async def test_gaps_send_one_more_round_of_researchers(world: Services, script: DeepScript) -> None:
    script.supervisor = "gaps"
    recorder = await run_deep(world)
    rounds = [e.round for e in of(recorder, ResearcherStarted)]
    assert rounds.count(2) == 1 and rounds.count(1) == 3
    checks = of(recorder, CoverageChecked)
    assert [c.round for c in checks] == [1, 2] and checks[0].gaps and not checks[1].gaps
    assert script.calls.count("final") == 1


async def test_a_german_request_gets_a_german_report(
    world: Services, script: DeepScript, anthropic_api: FakeAnthropic
) -> None:
    request = Request(topic="Acme Robotics", depth=Depth.DEEP, language="de")
    recorder = await run_deep(world, request)
    report = recorder.outcome.report
    assert report.language == "de" and report.title == "Acme Robotics: Tiefenprofil"
    assert f"## {frame('de').tldr}" in recorder.outcome.markdown
    asked = [
        str(r["messages"][0]["content"])
        for r in anthropic_api.requests
        if (r.get("tool_choice") or {}).get("name") == "submit_report"
    ]
    assert len(asked) == 1 and "German (Deutsch)" in asked[0]


async def test_contracts_mode_plans_for_contracts(world: Services, script: DeepScript) -> None:
    script.plan = "malformed"
    recorder = await run_deep(
        world, Request(topic="road works, Bavaria", mode=Mode.CONTRACTS, depth=Depth.DEEP)
    )
    assert len(of(recorder, PlanReady)[0].questions) == 3


async def test_an_interrupted_deep_run_is_finished_from_its_findings_and_evidence(
    world: Services, script: DeepScript, settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    done = await run_deep(world)
    # What was stored when the process died: the plan, one finding, another researcher's search.
    first_finding = next(i for i, e in enumerate(done.events) if isinstance(e, FindingReady))
    history = done.events[: first_finding + 1]
    assert any(
        isinstance(e, ToolFinished) and e.agent != history[first_finding].agent for e in history
    )

    async with _engine(world, settings) as engine:
        events = [e async for e in engine.recover("run1", DEEP, history, _control())]
    last = events[-1]
    assert isinstance(last, RunFinished) and last.ending is Ending.INTERRUPTED_SYNTHESIZED
    report = next(e for e in events if isinstance(e, ReportReady)).report
    assert report.title == script.title
    recovered = [
        r
        for r in anthropic_api.requests[-3:]
        if (r.get("tool_choice") or {}).get("name") == "submit_report"
    ]
    assert recovered and "Researcher 3" in str(recovered[-1]["messages"][0]["content"])


async def test_a_run_stored_by_an_older_version_with_its_draft_is_finished_from_its_findings(
    world: Services, script: DeepScript, settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    """Its stored supervisor's draft still loads and is not needed: the report is written from
    the findings, and the writer is told the research was interrupted."""
    done = await run_deep(world)
    last_finding = max(i for i, e in enumerate(done.events) if isinstance(e, FindingReady))
    stored = '{"kind": "draft_ready", "draft": "OLD DRAFT [1]", "gaps": [], "round": 1}'
    history = [*done.events[: last_finding + 1], EVENT_ADAPTER.validate_json(stored)]

    async with _engine(world, settings) as engine:
        events = [e async for e in engine.recover("run1", DEEP, history, _control())]
    last = events[-1]
    assert isinstance(last, RunFinished) and last.ending is Ending.INTERRUPTED_SYNTHESIZED
    prompt = last_report_prompt(anthropic_api)
    assert "OLD DRAFT" not in prompt and "Researcher 3" in prompt
    assert "The research was interrupted. The research was cut short" in prompt


async def test_a_recovered_run_keeps_its_coverage_check(
    world: Services, script: DeepScript, settings: Settings, anthropic_api: FakeAnthropic
) -> None:
    done = await run_deep(world)
    last_finding = max(i for i, e in enumerate(done.events) if isinstance(e, FindingReady))
    check = Coverage(
        sections=[SectionCoverage(section="Overview", status="thin", note="one page")],
        other_entity=[2],
    )
    history = [*done.events[: last_finding + 1], CoverageChecked(check=check)]

    async with _engine(world, settings) as engine:
        [e async for e in engine.recover("run1", DEEP, history, _control())]
    prompt = last_report_prompt(anthropic_api)
    assert "- Overview: thin (one page)" in prompt
    assert "Researcher 1" in prompt and "Researcher 2" not in prompt


def last_report_prompt(api: FakeAnthropic) -> str:
    final = [r for r in api.requests if forced(r) == "submit_report"]
    return str(final[-1]["messages"][0]["content"])


def _control() -> Any:
    from bot.agent.control import Control

    return Control()


@asynccontextmanager
async def _engine(world: Services, settings: Settings) -> AsyncIterator[DeepResearch]:
    from anthropic import AsyncAnthropic

    from bot.agent.compress import Compressor
    from bot.agent.models.port import AnthropicModel
    from bot.agent.web.registry import Toolbox

    async with AsyncAnthropic(
        api_key="sk-test", base_url=settings.anthropic_base_url, max_retries=0
    ) as client:
        model = AnthropicModel(client, model=settings.model, prices={})
        compressor = Compressor(
            model, fast_model=settings.fast_model, threshold_tokens=3_000, timeout_s=5
        )
        yield DeepResearch(model, Toolbox([]), compressor, limits(settings), deep_limits(settings))


async def test_researchers_out_of_turns_are_asked_for_their_finding(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    tavily: FakeTavily,
    web: FakeWeb,
    script: DeepScript,
) -> None:
    async with deep_world(
        tmp_path, anthropic_api, tavily, web, RESEARCH_BOT_DEEP_MAX_TURNS="1"
    ) as services:
        recorder = await run_deep(services)
    findings = of(recorder, FindingReady)
    assert {f.ending for f in findings} == {"max_turns"}
    assert not any(f.from_evidence for f in findings)  # each wrote it when asked
    assert all(f.finding.seen and not f.finding.read for f in findings)  # searched, never read
    assert recorder.outcome.ending is Ending.MAX_TURNS_SYNTHESIZED
