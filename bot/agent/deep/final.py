"""A deep run's final report (seed 004): from the supervisor's draft, else from the findings,
else assembled without the model; cancelled runs keep what their researchers found."""

from __future__ import annotations

import asyncio
import time

from bot.agent.calls import Limits
from bot.agent.compress import Compressor
from bot.agent.deep.fallback import findings_report
from bot.agent.deep.findings import (
    DRAFT_AS_REPORT_CHARS,
    DRAFT_HEAD_CHARS,
    FINDINGS_FOR_REFERENCE_CHARS,
    WHOLE_DRAFT_CHARS,
    final_markdown,
    finding_text,
    report_from,
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

    async def findings_text(
        self, session: Session, main: RunState, limit: int | None = None
    ) -> str:
        """All findings, each compressed by the fast model when it is long (seed 003): at once,
        and once per finding (the supervisor and the final write-up read the same text).
        `limit`: as many whole findings as fit in that many characters (a fence is never cut)."""

        async def shortened(agent: int, finding: Finding) -> None:
            text, compressed, usage, served = await self._compressor.compress(
                finding_text(agent, finding), goal=main.request.topic, tool="finding"
            )
            if compressed:
                main.record(UsageRecorded(turn=main.turn, model=served, usage=usage))
            session.finding_texts[agent] = text

        missing = [(a, f) for a, f in session.findings.items() if a not in session.finding_texts]
        await asyncio.gather(*(shortened(a, f) for a, f in missing))
        texts = [session.finding_texts[a] for a in sorted(session.findings)]
        if limit is not None:
            room = limit
            texts = [t for t in texts if (room := room - len(t) - 2) >= 0]
        return "\n\n".join(texts)

    # -- the final report --------------------------------------------------------------------

    async def write(self, session: Session, main: RunState, draft: str | None) -> None:
        """The final report from the draft, else the findings, else without the model."""
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
        limit = FINDINGS_FOR_REFERENCE_CHARS if draft else None
        findings = await self.findings_text(session, main, limit)
        draft_text = await self._draft_for_prompt(main, draft)
        main.system = final_system()
        main.messages = [
            {
                "role": "user",
                "content": final_prompt(
                    request.mode,
                    request.topic,
                    request.language,
                    draft=draft_text,
                    findings=findings,
                ),
            }
        ]
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
        elif draft is not None and len(draft) >= DRAFT_AS_REPORT_CHARS:
            note = "The final write-up failed; this is the supervisor's draft."
            await self.deliver(session, main, report_from(draft, main.registry, request))
            self.finish(session, main, done, note)
        else:
            note = FINDINGS_ONLY
            report = findings_report(request, self._findings(session), main.registry, note)
            await self.deliver(session, main, report, evidence=True)
            self.finish(session, main, failed, note)

    async def _draft_for_prompt(self, main: RunState, draft: str | None) -> str | None:
        """The draft whole up to 50k characters; above, its head and a summary of the rest."""
        if draft is None or len(draft) <= WHOLE_DRAFT_CHARS:
            return draft
        rest, compressed, usage, served = await self._compressor.compress(
            draft[DRAFT_HEAD_CHARS:], goal=main.request.topic, tool="draft"
        )
        if compressed:
            main.record(UsageRecorded(turn=main.turn, model=served, usage=usage))
        return f"{draft[:DRAFT_HEAD_CHARS]}\n\n[The rest of the draft, summarized:]\n{rest}"

    def _findings(self, session: Session) -> list[Finding]:
        return [f for _, f in sorted(session.findings.items())]

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
