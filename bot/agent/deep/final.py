"""A deep run's final report (seed 004), written once: from the findings, the source index
and the supervisor's coverage check; else assembled from the findings without the model;
cancelled runs keep what their researchers found."""

from __future__ import annotations

import asyncio
import time

from bot.agent.brief import for_stage
from bot.agent.calls import Limits
from bot.agent.compress import Compressor
from bot.agent.deep.fallback import findings_report
from bot.agent.deep.findings import (
    coverage_text,
    final_markdown,
    finding_text,
    report_from,
    source_index,
)
from bot.agent.deep.prompts import final_prompt, final_system
from bot.agent.deep.schema import FinalReport, Finding
from bot.agent.deep.session import Session
from bot.agent.events import Ending, RunFinished, SynthesisStarted, TurnStarted, UsageRecorded
from bot.agent.language import frame
from bot.agent.models.port import ModelPort
from bot.agent.report.model import Report
from bot.agent.state import RunState, Stop
from bot.agent.structured import ask_for
from bot.agent.writeup import ENDINGS, WriteUp

NOTHING_FOUND = (
    "No researcher found anything: check the search and model settings, then start again."
)
NOTHING_FOUND_IN_BUDGET = (
    "The run's cost budget was spent before anything was found (RESEARCH_BOT_MAX_RUN_COST_USD)."
)
CANCELLED_NOTE = "The run was cancelled. This is what its researchers had found."
FINDINGS_ONLY = (
    "The final write-up failed, so each section below is one researcher's finding as it "
    "wrote it, with every source the run found listed once."
)


class FinalWriter:
    def __init__(
        self, model: ModelPort, compressor: Compressor, limits: Limits, writeup: WriteUp
    ) -> None:
        self._model = model
        self._compressor = compressor
        self._limits = limits
        self._writeup = writeup

    async def findings_text(self, session: Session, main: RunState) -> str:
        """The findings the report is written from, each compressed by the fast model when it
        is long (seed 003): at once, and once per finding (the supervisor and the final
        write-up read the same text)."""

        async def shortened(agent: int, finding: Finding) -> None:
            text, compressed, usage, served = await self._compressor.compress(
                finding_text(agent, finding), goal=main.request.topic, tool="finding"
            )
            if compressed:
                main.record(UsageRecorded(turn=main.turn, model=served, usage=usage))
            session.finding_texts[agent] = text

        kept = session.kept()
        missing = [(a, f) for a, f in kept.items() if a not in session.finding_texts]
        await asyncio.gather(*(shortened(a, f) for a, f in missing))
        return "\n\n".join(session.finding_texts[a] for a in kept)

    # -- the final report --------------------------------------------------------------------

    async def write(self, session: Session, main: RunState) -> None:
        """The final report from the findings, else from them without the model."""
        why = session.ending
        if why == "cancelled":
            await self._cancelled(session, main)
            return
        if not main.registry.sources:
            ending = Ending.LLM_ERROR if why in ("completed", "error") else ENDINGS[why][1]
            note = NOTHING_FOUND_IN_BUDGET if why == "budget" else NOTHING_FOUND
            self.finish(session, main, ending, note)
            return
        request = main.request
        main.turn += 1
        main.emit(SynthesisStarted(turn=main.turn, reason=why))
        main.emit(TurnStarted(turn=main.turn))
        main.system = final_system(for_stage(request.mode, request.identity))
        prompt = final_prompt(
            request.mode,
            request.topic,
            request.language,
            findings=await self.findings_text(session, main),
            index=source_index(main.registry),
            coverage=coverage_text(session.coverage),
            why=why,
            earlier=main.earlier_findings,
        )
        main.messages = [{"role": "user", "content": prompt}]
        until = time.monotonic() + self._limits.synthesis_timeout_s
        try:
            final = await ask_for(
                self._model, main, session.control, FinalReport, "submit_report",
                limits=self._limits, until=until,
            )  # fmt: skip
        except Stop as stop:  # cancelled or out of time while writing
            session.endings.append(stop.why if stop.why == "cancelled" else why)
            final = None
        if session.ending == "cancelled":
            await self._cancelled(session, main)
            return
        done, failed = _endings(why)
        if final is not None:
            text = final_markdown(final, frame(request.language).tldr)
            await self.deliver(session, main, report_from(text, main.registry, request))
            self.finish(session, main, done)
        else:
            report = findings_report(request, self._findings(session), main.registry, FINDINGS_ONLY)
            await self.deliver(session, main, report, evidence=True)
            self.finish(session, main, failed, FINDINGS_ONLY)

    def _findings(self, session: Session) -> list[Finding]:
        return list(session.kept().values())

    async def _cancelled(self, session: Session, main: RunState) -> None:
        if main.registry.sources:
            report = findings_report(
                main.request, self._findings(session), main.registry, CANCELLED_NOTE
            )
            await self.deliver(session, main, report, evidence=True)
        self.finish(session, main, Ending.CANCELLED, "The run was cancelled.")

    async def deliver(
        self, session: Session, main: RunState, report: Report, *, evidence: bool = False
    ) -> None:
        await self._writeup.deliver(
            main, session.control, report, synthesis=True, evidence=evidence
        )

    def finish(
        self, session: Session, main: RunState, ending: Ending, error: str | None = None
    ) -> None:
        main.emit(RunFinished(ending=ending, turns=session.turns, usage=session.usage, error=error))


def _endings(why: str) -> tuple[Ending, Ending]:
    if why == "completed":
        return Ending.COMPLETED, Ending.ERROR_SYNTHESIS_FAILED
    return ENDINGS[why]
