"""A deep run's supervisor: a short coverage check of the findings against the report's
required sections (covered, thin or missing; conflicts; findings about another entity) and
the gaps worth one more round. It writes no report: the final writer writes it, once."""

from __future__ import annotations

import time

from bot.agent.brief import for_stage
from bot.agent.calls import Limits
from bot.agent.deep.final import FinalWriter
from bot.agent.deep.findings import source_index
from bot.agent.deep.prompts import coverage_prompt, supervisor_system
from bot.agent.deep.schema import Coverage
from bot.agent.deep.session import Session
from bot.agent.events import CoverageChecked, TurnStarted
from bot.agent.models.port import ModelPort
from bot.agent.state import RunState, Stop
from bot.agent.structured import ask_for

TOOL = "submit_coverage"


class Supervisor:
    def __init__(self, model: ModelPort, writer: FinalWriter, limits: Limits) -> None:
        self._model = model
        self._writer = writer
        self._limits = limits

    async def check(self, session: Session, main: RunState, *, may_ask: bool) -> Coverage | None:
        """The check, kept in `session` for the writer; None when there is nothing to check or
        it failed (the report is then written from the findings alone)."""
        if session.forced or not main.registry.sources:
            return None
        request = main.request
        main.system = supervisor_system(for_stage(request.mode, request.identity))
        findings = await self._writer.findings_text(session, main)
        index = source_index(main.registry)
        prompt = coverage_prompt(request.mode, request.topic, findings, index, may_ask=may_ask)
        main.messages = [{"role": "user", "content": prompt}]
        main.turn += 1
        main.emit(TurnStarted(turn=main.turn))
        until = min(session.deadline, time.monotonic() + self._limits.synthesis_timeout_s)
        try:
            coverage = await ask_for(
                self._model, main, session.control, Coverage, TOOL,
                limits=self._limits, until=until, allow_summarize=True,
            )  # fmt: skip
        except Stop as stop:
            if stop.why == "cancelled":
                raise
            session.endings.append(stop.why)
            return None
        if coverage is None:
            return None
        if not may_ask:
            coverage = coverage.model_copy(update={"gaps": []})
        session.checked(coverage)
        main.emit(CoverageChecked(check=coverage, round=1 if may_ask else 2))
        return coverage
