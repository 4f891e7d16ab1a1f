"""How a run ends: the report it chose to write, one synthesis call, or a report from evidence.

Every ending that has gathered evidence produces a report (seeds 000 and 001): synthesis is
one call that keeps the tools but may not use them; if it fails, the report is assembled
from the sources without the model, so work is never thrown away.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from bot.agent.calls import Limits, model_call
from bot.agent.compress import compact_if_full
from bot.agent.events import (
    Ending,
    ReportReady,
    RunFinished,
    SynthesisStarted,
    TurnStarted,
    UsageRecorded,
)
from bot.agent.fence import fence_each
from bot.agent.models.port import ModelCall, ModelPort
from bot.agent.prompts import evidence_prompt, synthesis_instruction
from bot.agent.report.changes import WatchChanges
from bot.agent.report.judge import ClaimChecker
from bot.agent.report.model import Report, evidence_report, parse_report
from bot.agent.state import RunState, Stop, guarded
from bot.errors import ContextOverflow, ModelError

if TYPE_CHECKING:
    from bot.agent.control import Control

NO_TOOLS = {"type": "none"}
MAX_EVIDENCE_CHARS = 300_000
# Which `why` leads to which endings.
ENDINGS = {
    "max_turns": (Ending.MAX_TURNS_SYNTHESIZED, Ending.MAX_TURNS_SYNTHESIS_FAILED),
    "deadline": (Ending.DEADLINE_SYNTHESIZED, Ending.DEADLINE_SYNTHESIS_FAILED),
    "forced": (Ending.FORCED_SYNTHESIZED, Ending.FORCED_SYNTHESIS_FAILED),
    "context": (Ending.CONTEXT_FULL_SYNTHESIZED, Ending.CONTEXT_FULL_SYNTHESIS_FAILED),
    "interrupted": (Ending.INTERRUPTED_SYNTHESIZED, Ending.INTERRUPTED_SYNTHESIS_FAILED),
    "error": (Ending.ERROR_SYNTHESIZED, Ending.ERROR_SYNTHESIS_FAILED),
    "budget": (Ending.BUDGET_SYNTHESIZED, Ending.BUDGET_SYNTHESIS_FAILED),
}
FRESH = {"context", "interrupted", "error"}
"""Endings whose write-up starts a fresh conversation from the evidence: the old one is full,
lost, or was left in an unknown state by a failure."""
NOTHING_FOUND = {
    "interrupted": "The bot restarted before this run found anything: please start it again.",
    "error": (
        "Something went wrong inside the bot before anything was found; start the research again."
    ),
}
WRITTEN_FROM_EVIDENCE = "The report was written from what had been found before that."
NOT_SYNTHESIZED = {
    "cancelled": Ending.CANCELLED,
    "refused": Ending.REFUSED,
    "llm_error": Ending.LLM_ERROR,
}


class WriteUp:
    def __init__(
        self,
        model: ModelPort,
        *,
        limits: Limits,
        claims: ClaimChecker,
        changes: WatchChanges | None = None,
    ) -> None:
        """`changes`: what a watched run's report says changed since its watch's last one."""
        self._model = model
        self._limits = limits
        self._claims = claims
        self._changes = changes

    async def completed(self, run: RunState, control: Control, text: str) -> None:
        await self.deliver(run, control, self._parse(run, text), synthesis=False)
        _finish(run, Ending.COMPLETED)

    async def end(self, run: RunState, control: Control, stop: Stop) -> None:
        if stop.why == "error" and not run.has_evidence:
            message = f"{stop.message or ''} Nothing had been found yet: start the research again."
            _finish(run, Ending.ERROR_SYNTHESIS_FAILED, message.strip())
        elif stop.why in ENDINGS:
            await self._synthesize(run, control, stop.why, stop.message)
        else:
            if run.has_evidence:
                why = stop.message or "The run was cancelled."
                await self.deliver(
                    run, control, self._from_evidence(run, why), synthesis=False, evidence=True
                )
            _finish(run, NOT_SYNTHESIZED[stop.why], stop.message)

    async def recover(self, run: RunState, control: Control, why: str = "interrupted") -> None:
        """Finish from stored events: `why` is "interrupted" or "error"."""
        if run.prior_report is not None:
            await self.deliver(run, control, run.prior_report, synthesis=True)
            _finish(run, ENDINGS[why][0])
        elif not run.evidence:
            _finish(run, ENDINGS[why][1], NOTHING_FOUND[why])
        else:
            await self._synthesize(run, control, why)

    async def _synthesize(
        self, run: RunState, control: Control, why: str, cause: str | None = None
    ) -> None:
        """One model call without tools; on failure, the report from the evidence alone.
        `cause`: what went wrong first, for a person (the `error` ending)."""
        done, failed = ENDINGS[why]
        run.turn += 1
        run.emit(SynthesisStarted(turn=run.turn, reason=why))
        run.emit(TurnStarted(turn=run.turn))
        until = time.monotonic() + self._limits.synthesis_timeout_s
        call = self._synthesis_call(run, why, until)
        try:
            reply = await guarded(
                run, control, self._model.complete(call), until=until, allow_summarize=False
            )
            run.record(UsageRecorded(turn=run.turn, model=reply.model, usage=reply.usage))
            if not reply.text:
                raise ModelError("The model returned an empty report.")
        except (ModelError, Stop) as error:
            cancelled = isinstance(error, Stop) and error.why == "cancelled"
            if isinstance(error, ContextOverflow):
                # Whatever stopped the research, a full context is why nothing was written.
                failed = ENDINGS["context"][1]
            message = _joined(cause, _failure(error))
            await self.deliver(
                run, control, self._from_evidence(run, message), synthesis=True, evidence=True
            )
            _finish(run, Ending.CANCELLED if cancelled else failed, message)
            return
        await self.deliver(run, control, self._parse(run, reply.text), synthesis=True)
        _finish(run, done, _joined(cause, WRITTEN_FROM_EVIDENCE) if cause else None)

    def _synthesis_call(self, run: RunState, why: str, until: float) -> ModelCall:
        if why in FRESH:
            # A full, lost or suspect conversation: write up in a fresh one from the evidence.
            evidence = fence_each(run.evidence, MAX_EVIDENCE_CHARS)
            run.messages = [
                {
                    "role": "user",
                    "content": evidence_prompt(
                        run.request.mode, run.request.topic, evidence, why, run.request.language
                    ),
                }
            ]
        else:
            compact_if_full(run, self._limits.context_window_tokens)
            say_last(run, synthesis_instruction(why))
        return model_call(run, run.tools, self._limits, tool_choice=NO_TOOLS, until=until)

    def _parse(self, run: RunState, text: str) -> Report:
        request = run.request
        return parse_report(
            text,
            run.registry,
            topic=request.topic,
            mode=request.mode.value,
            language=request.language,
        )

    def _from_evidence(self, run: RunState, why: str) -> Report:
        request = run.request
        return evidence_report(
            request.topic, request.mode.value, run.registry, why, language=request.language
        )

    async def deliver(
        self,
        run: RunState,
        control: Control,
        report: Report,
        *,
        synthesis: bool,
        evidence: bool = False,
    ) -> None:
        measured = report.support is not None and report.support.claims
        if not (evidence or measured):
            # Claim support, measured before the report is emitted (and stored with it).
            support = await self._claims.measure(run, report, control)
            report = report.model_copy(update={"support": support})
        if self._changes is not None:
            report = await self._changes.add(run, report, control)
        run.emit(
            ReportReady(
                turn=run.turn, report=report, synthesis=synthesis, from_evidence_only=evidence
            )
        )


def say_last(run: RunState, text: str) -> None:
    """Add an instruction as the last user turn (merged into it when the last turn is the user's)."""
    last = run.messages[-1]
    if last["role"] == "user":
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        last["content"] = [*blocks, {"type": "text", "text": text}]
    else:
        run.messages.append({"role": "user", "content": text})


def _failure(error: ModelError | Stop) -> str:
    if isinstance(error, Stop):
        if error.why == "cancelled":
            return "The run was cancelled while writing the report."
        return "Writing the report took too long."
    return f"Writing the report failed: {error}"


def _joined(*parts: str | None) -> str:
    return " ".join(p for p in parts if p)


def _finish(run: RunState, ending: Ending, error: str | None = None) -> None:
    run.emit(RunFinished(ending=ending, turns=run.turn, usage=run.usage, error=error))
