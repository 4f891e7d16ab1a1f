"""Deep research (seed 004): a plan, researchers in parallel, a coverage check, the report.

The planner scales the team to the subject: how many sub-questions (at most
`DeepLimits.researchers`) and how many turns each researcher may take (at most
`DeepLimits.max_turns`). The researchers share the run's source registry (one numbering) and a
page cache; each works on one sub-question and ends in a finding, whatever stops it. The
supervisor checks the findings against the report's sections and may send one more round for
the gaps it names. The report is written once, from the findings, else assembled from them
without the model: a deep run that found anything always ends with a report keeping every
source.

Summarize now stops every researcher (each writes its finding from its evidence) and the
report is written from the findings so far; so does the run's spend reaching its cost limit
(`budget`). Cancel stops everything.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from typing import Any

from bot.agent.brief import Effort, for_stage
from bot.agent.calls import Limits
from bot.agent.compress import Compressor
from bot.agent.control import Control
from bot.agent.cost import CostLimit
from bot.agent.deep.final import FinalWriter
from bot.agent.deep.pages import SharedPages
from bot.agent.deep.prompts import (
    CUT_OFF,
    fixed_plan,
    plan_prompt,
    planner_system,
    researcher_system,
    researcher_task,
)
from bot.agent.deep.researcher import DeepResearcher, evidence_finding
from bot.agent.deep.schema import Plan, SubQuestion
from bot.agent.deep.session import DeepLimits, Session
from bot.agent.deep.supervisor import Supervisor
from bot.agent.earlier import EarlierReports, start_from_earlier
from bot.agent.events import (
    CoverageChecked,
    Event,
    FindingReady,
    Notice,
    PlanReady,
    ResearcherStarted,
    RunStarted,
    ToolFinished,
    TurnStarted,
)
from bot.agent.loop import STARTED_AGAIN, drain
from bot.agent.models.port import ModelPort
from bot.agent.report.changes import WatchChanges
from bot.agent.report.judge import ClaimChecker
from bot.agent.report.recheck import ReadTexts
from bot.agent.state import RunState, Stop
from bot.agent.steps import Steps
from bot.agent.structured import ask_for
from bot.agent.web.registry import Toolbox
from bot.agent.writeup import ENDINGS, WriteUp
from bot.domain import Request

__all__ = ["DeepLimits", "DeepResearch"]
log = logging.getLogger(__name__)


class DeepResearch:
    def __init__(
        self,
        model: ModelPort,
        toolbox: Toolbox,
        compressor: Compressor,
        limits: Limits,
        deep: DeepLimits,
        *,
        earlier: EarlierReports | None = None,
    ) -> None:
        self._model = model
        self._earlier = earlier
        self._toolbox = toolbox
        self._compressor = compressor
        self._limits = limits
        self._deep = deep
        claims = ClaimChecker(
            model,
            fast_model=compressor.model,
            timeout_s=limits.model_timeout_s,
            max_cost_usd=limits.max_cost_usd,
        )
        changes = WatchChanges(earlier, claims) if earlier is not None else None
        writeup = WriteUp(model, limits=limits, claims=claims, changes=changes)
        self._writer = FinalWriter(model, compressor, limits, writeup)
        self._supervisor = Supervisor(model, self._writer, limits)
        self.pages_avoided = 0
        """Page reads answered by a run's shared cache (summed over runs, for the benchmark)."""

    def research(self, run_id: str, request: Request, control: Control) -> AsyncIterator[Event]:
        return drain(lambda emit: self._work(run_id, request, control, emit))

    def recover(
        self,
        run_id: str,
        request: Request,
        history: list[Event],
        control: Control,
        *,
        why: str = "interrupted",
    ) -> AsyncIterator[Event]:
        def work(emit: Callable[[Event], None]) -> Coroutine[Any, Any, None]:
            return self._recover(run_id, request, history, control, emit, why)

        return drain(work)

    # -- a run -------------------------------------------------------------------------------

    async def _work(
        self, run_id: str, request: Request, control: Control, emit: Callable[[Event], None]
    ) -> None:
        session = Session(request, control, emit, time.monotonic() + self._deep.deadline_s)
        session.budget = CostLimit(self._limits.max_cost_usd, run_id)
        main = self._main(session, run_id)
        main.emit(RunStarted(topic=request.topic, mode=request.mode.value))
        try:
            await self._run(session, main)
        except Stop as stop:
            session.endings.append(stop.why)
            await self._writer.write(session, main)
        except Exception:
            log.exception("run %s: deep research failed unexpectedly", run_id)
            session.endings.append("error")
            await self._writer.write(session, main)

    def _main(self, session: Session, run_id: str) -> RunState:
        request, deep = session.request, self._deep
        effort = Effort(deep.max_turns, deep.deadline_s / 60, deep.researchers)
        main = RunState.start(
            request,
            session.emit,
            session.deadline,
            system=planner_system(for_stage(request.mode, request.identity, effort)),
            task=plan_prompt(
                request.mode, request.topic, researchers=deep.researchers, turns=deep.max_turns
            ),
            run_id=run_id,
        )
        main.texts = ReadTexts()  # shared by the researchers: which pages the run read afresh
        return main

    async def _run(self, session: Session, main: RunState) -> None:
        pages = SharedPages(self._toolbox)
        try:
            async with session.watching(main):
                await start_from_earlier(main, self._earlier)  # the planner starts from it
                questions, turns = await self._plan(session, main)
                await self._round(session, main, pages, questions, turns, round=1)
                coverage = await self._supervisor.check(session, main, may_ask=True)
                if coverage is not None and coverage.gaps and self._may_go_on(session):
                    gaps = [SubQuestion(question=g.question, priority=1) for g in coverage.gaps]
                    await self._round(session, main, pages, gaps, turns, round=2)
                    await self._supervisor.check(session, main, may_ask=False)
        finally:
            self.pages_avoided += pages.hits
            await pages.close()
        await self._writer.write(session, main)

    def _may_go_on(self, session: Session) -> bool:
        left = session.deadline - time.monotonic()
        return not session.forced and session.ending == "completed" and left > self._reserve()

    def _reserve(self) -> float:
        """Time kept back from the researchers for the coverage check (the report has its own)."""
        return min(self._limits.synthesis_timeout_s, self._deep.deadline_s * 0.3)

    async def _plan(self, session: Session, main: RunState) -> tuple[list[SubQuestion], int]:
        """The sub-questions, most important first, and the turns each researcher may take:
        the planner's, within the settings."""
        main.turn += 1
        main.emit(TurnStarted(turn=main.turn))
        until = min(session.deadline, time.monotonic() + self._limits.synthesis_timeout_s)
        # Summarize during the plan is the watcher's to answer (nothing has been found yet).
        plan = await ask_for(
            self._model, main, session.control, Plan, "submit_plan",
            limits=self._limits, until=until,
        )  # fmt: skip
        questions = plan.questions if plan else fixed_plan(main.request.mode, main.request.topic)
        questions = sorted(questions, key=lambda q: q.priority)[: self._deep.researchers]
        main.emit(PlanReady(questions=questions, fallback=plan is None))
        turns = self._deep.max_turns
        if plan is not None and plan.turns is not None:
            turns = min(plan.turns, turns)
        return questions, turns

    async def _round(
        self,
        session: Session,
        main: RunState,
        pages: SharedPages,
        questions: list[SubQuestion],
        turns: int,
        *,
        round: int,
    ) -> None:
        researcher = DeepResearcher(
            self._model,
            Steps(self._model, pages, self._compressor, cut_off=CUT_OFF),
            self._toolbox.schemas(main.request.origin.scope),
            replace(self._limits, max_turns=turns),
        )
        questions = questions[: self._deep.researchers]
        at_once = len(questions)
        slots = asyncio.Semaphore(at_once)
        until = max(time.monotonic(), session.deadline - self._reserve())
        request = main.request
        # One brief for the round: every researcher's system prompt is the same cached prefix.
        effort = Effort(turns, (until - time.monotonic()) / 60, at_once)
        system = researcher_system(for_stage(request.mode, request.identity, effort))

        async def one(question: SubQuestion) -> None:
            async with slots:
                if session.forced or session.control.cancel_requested.is_set():
                    return  # the report is being written from what is in: do not start
                session.agents += 1
                agent, control = session.agents, session.child()
                part = RunState.start(
                    main.request,
                    session.tagged(agent),
                    until,
                    system=system,
                    task=researcher_task(request.mode, request.topic, question.question),
                    run_id=main.run_id,
                )
                part.registry, part.texts = main.registry, main.texts
                part.providers = main.providers
                part.emit(ResearcherStarted(question=question.question, round=round))
                try:
                    result = await researcher.run(part, control, question.question)
                except Exception:
                    log.exception("run %s: researcher %d failed", main.run_id, agent)
                    finding = evidence_finding(
                        part.registry, part.own_sources, question.question, "error", None
                    )
                    result_finding, from_evidence, ending = finding, True, "error"
                else:
                    result_finding, from_evidence = result.finding, result.from_evidence
                    ending = result.ending
                session.findings[agent] = result_finding
                if ending != "error":  # one researcher failing is told in its finding
                    session.endings.append(ending)
                part.emit(
                    FindingReady(finding=result_finding, from_evidence=from_evidence, ending=ending)
                )

        async with asyncio.TaskGroup() as group:
            for question in questions:
                group.create_task(one(question))
        if session.control.cancel_requested.is_set():
            raise Stop("cancelled")

    # -- restart recovery --------------------------------------------------------------------

    async def _recover(
        self,
        run_id: str,
        request: Request,
        history: list[Event],
        control: Control,
        emit: Callable[[Event], None],
        why: str,
    ) -> None:
        """Finish from the stored plan, findings, coverage check and evidence: a stopped
        researcher's finding is written from its evidence; nothing found at all starts the run
        again. A draft stored by an older version is not needed: the findings are all there."""
        session = Session(request, control, emit, time.monotonic() + self._deep.deadline_s)
        main = RunState.from_history(request, history, session.emit, session.deadline, run_id)
        main.texts = ReadTexts.of(history)
        session.turns = sum(isinstance(e, TurnStarted) for e in history)
        session.usage = main.usage
        questions: dict[int, str] = {}
        own: dict[int, dict[int, None]] = {}
        checks: list[CoverageChecked] = []
        for event in history:
            if isinstance(event, ResearcherStarted):
                questions[event.agent] = event.question
            elif isinstance(event, FindingReady):
                session.findings[event.agent] = event.finding
            elif isinstance(event, CoverageChecked):
                checks.append(event)
            elif isinstance(event, ToolFinished) and not event.is_error:
                own.setdefault(event.agent, {}).update((n, None) for n in event.numbers if n)
        if main.prior_report is not None:
            await self._writer.deliver(session, main, main.prior_report)
            self._writer.finish(session, main, ENDINGS[why][0])
            return
        if not main.registry.sources:
            main.emit(Notice(message=STARTED_AGAIN))
            await self._work(run_id, request, control, emit)
            return
        for agent, question in questions.items():
            if agent not in session.findings:
                session.findings[agent] = evidence_finding(
                    main.registry, own.get(agent, {}), question, why, None
                )
        for check in checks:
            session.checked(check.check)
        session.endings.append(why)
        await self._writer.write(session, main)
