"""How a run ends: the report it chose to write, one synthesis call, or a report from evidence.

Every ending that has gathered evidence produces a report (seeds 000 and 001): synthesis is
one call that keeps the tools but may not use them; if it fails, the report is assembled
from the sources without the model, so work is never thrown away.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from bot.agent.calls import Limits, model_call
from bot.agent.events import (
    Ending,
    ReportReady,
    RunFinished,
    SynthesisStarted,
    TurnStarted,
    UsageRecorded,
)
from bot.agent.models import ModelCall, ModelPort
from bot.agent.prompts import evidence_prompt, synthesis_instruction
from bot.agent.report import Report, evidence_report, parse_report
from bot.agent.state import RunState, Stop, guarded
from bot.errors import ModelError

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
}
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
        tools: list[dict[str, Any]],
    ) -> None:
        self._model = model
        self._limits = limits
        self._tools = tools

    def completed(self, run: RunState, text: str) -> None:
        self._deliver(run, self._parse(run, text), synthesis=False)
        _finish(run, Ending.COMPLETED)

    async def end(self, run: RunState, control: Control, stop: Stop) -> None:
        if stop.why in ENDINGS:
            await self._synthesize(run, control, stop.why)
            return
        ending = NOT_SYNTHESIZED[stop.why]
        if run.registry.sources:
            why = stop.message or "The run was cancelled."
            self._deliver(
                run,
                evidence_report(run.request.topic, run.request.mode.value, run.registry, why),
                synthesis=False,
                evidence=True,
            )
        _finish(run, ending, stop.message)

    async def recover(self, run: RunState, control: Control) -> None:
        if run.prior_report is not None:
            self._deliver(run, run.prior_report, synthesis=True)
            _finish(run, Ending.INTERRUPTED_SYNTHESIZED)
        elif not run.evidence:
            _finish(
                run,
                Ending.INTERRUPTED_SYNTHESIS_FAILED,
                "The bot restarted before this run found anything: please start it again.",
            )
        else:
            await self._synthesize(run, control, "interrupted")

    async def _synthesize(self, run: RunState, control: Control, why: str) -> None:
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
            message = _failure(error)
            self._deliver(
                run,
                evidence_report(run.request.topic, run.request.mode.value, run.registry, message),
                synthesis=True,
                evidence=True,
            )
            _finish(run, Ending.CANCELLED if cancelled else failed, message)
            return
        self._deliver(run, self._parse(run, reply.text), synthesis=True)
        _finish(run, done)

    def _synthesis_call(self, run: RunState, why: str, until: float) -> ModelCall:
        if why in ("context", "interrupted"):
            # A full or lost conversation: write up in a fresh one from the gathered evidence.
            evidence = "\n\n".join(run.evidence)[:MAX_EVIDENCE_CHARS]
            run.messages = [
                {
                    "role": "user",
                    "content": evidence_prompt(run.request.mode, run.request.topic, evidence, why),
                }
            ]
        else:
            _say(run, synthesis_instruction(why))
        return model_call(run, self._tools, self._limits, tool_choice=NO_TOOLS, until=until)

    def _parse(self, run: RunState, text: str) -> Report:
        return parse_report(
            text, run.registry, topic=run.request.topic, mode=run.request.mode.value
        )

    def _deliver(
        self, run: RunState, report: Report, *, synthesis: bool, evidence: bool = False
    ) -> None:
        run.emit(
            ReportReady(
                turn=run.turn, report=report, synthesis=synthesis, from_evidence_only=evidence
            )
        )


def _say(run: RunState, text: str) -> None:
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


def _finish(run: RunState, ending: Ending, error: str | None = None) -> None:
    run.emit(RunFinished(ending=ending, turns=run.turn, usage=run.usage, error=error))
