"""The follow-up engine: a question about a finished run, answered from that run's stored
evidence first, researched further only within a small budget when the evidence falls short.

The model decides both: it has the research tools and an `answer` tool, and is told to answer
at once when the evidence suffices (ending `answered`) or to research for at most
RESEARCH_BOT_FOLLOWUP_MAX_TURNS turns and RESEARCH_BOT_FOLLOWUP_MAX_COST_USD (ending
`completed`, or `*_synthesized` when a limit made it answer). Its answer cites the run's
numbered sources by the numbers the thread knows, new sources numbered after them, through the
same citation checks as a report. When the person asks for the report to change, the `answer`
tool's `update_report` carries the whole revised report: a `ReportRevised` event, stored as the
run's next report version. Front ends ask through `bot.runs.followups.FollowUps.ask`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from pydantic import ValidationError

from bot.agent.brief import Effort, for_stage
from bot.agent.calls import Limits, model_call
from bot.agent.compress import Compressor
from bot.agent.control import Control
from bot.agent.cost import CostLimit
from bot.agent.events import (
    Ending,
    Event,
    Notice,
    ReportReady,
    ReportRevised,
    RunFinished,
    RunStarted,
    SynthesisStarted,
    TurnStarted,
    Usage,
    UsageRecorded,
)
from bot.agent.followup.alone import AnswerAlone
from bot.agent.followup.answer import answer_report, revised_report
from bot.agent.followup.prompts import (
    ANSWER_TOOL,
    CUT_OFF,
    FollowUpAnswer,
    answer_now,
    evidence_turn,
    system_prompt,
)
from bot.agent.followup.thread import OneAtATime, Thread, ThreadStore, load_thread
from bot.agent.loop import drain
from bot.agent.models.port import ModelPort, ModelReply
from bot.agent.state import RunState, Stop
from bot.agent.steps import Steps
from bot.agent.structured import ask_for, tool_for
from bot.agent.web.registry import Toolbox
from bot.agent.writeup import ENDINGS, say_last
from bot.domain import Request
from bot.errors import BotError

log = logging.getLogger(__name__)
ASKED_AGAIN = "The bot restarted while answering: the question is asked again."
STOPPED_BY = {
    "max_turns": "its turns ran out",
    "deadline": "its time ran out",
    "forced": "the answer was asked for now",
    "budget": "its cost limit was reached",
}
FAILED = {
    "cancelled": (Ending.CANCELLED, None),
    "refused": (Ending.REFUSED, "The model declined to answer this question."),
}


class FollowUpEngine:
    """The `Engine` the runs service drives for a request with a `parent_run_id`."""

    def __init__(
        self,
        model: ModelPort,
        toolbox: Toolbox,
        compressor: Compressor,
        limits: Limits,
        store: ThreadStore,
    ) -> None:
        self._model = model
        self._limits = limits
        self._store = store
        self._toolbox = toolbox
        self._steps = Steps(model, AnswerAlone(toolbox), compressor, cut_off=CUT_OFF)
        self._turns_of = OneAtATime()

    def research(self, run_id: str, request: Request, control: Control) -> AsyncIterator[Event]:
        events = drain(lambda emit: self._work(run_id, request, control, emit))
        return self._turns_of.events(str(request.parent_run_id), control, events)

    def recover(
        self,
        run_id: str,
        request: Request,
        history: list[Event],
        control: Control,
        *,
        why: str = "interrupted",
    ) -> AsyncIterator[Event]:
        """A follow-up is small: interrupted, it is asked again; failed, it ends saying so."""

        def work(emit: Callable[[Event], None]) -> Coroutine[Any, Any, None]:
            if why == "interrupted":
                emit(Notice(message=ASKED_AGAIN))
                return self._work(run_id, request, control, emit)
            return _fail(emit, history, f"Something went wrong inside the bot ({run_id}).")

        return self._turns_of.events(str(request.parent_run_id), control, drain(work))

    async def _work(
        self, run_id: str, request: Request, control: Control, emit: Callable[[Event], None]
    ) -> None:
        emit(RunStarted(topic=request.topic, mode=request.mode.value))
        try:
            thread = await load_thread(self._store, str(request.parent_run_id), asking=run_id)
        except BotError as error:
            await _fail(emit, [], str(error))
            return
        run = self._start(run_id, request, thread, emit)
        try:
            answer = await self._turns(run, control)
            ending = Ending.COMPLETED if _researched(run) else Ending.ANSWERED
        except Stop as stop:
            if stop.why not in ENDINGS or stop.why in ("error", "context", "interrupted"):
                ending, message = FAILED.get(stop.why, (Ending.LLM_ERROR, None))
                message = message or f"The model could not answer: {stop.message or stop.why}."
                _finish(run, ending, None if ending is Ending.CANCELLED else message)
                return
            forced, ending = await self._answer_now(run, control, stop.why)
            if forced is None:
                stopped = STOPPED_BY.get(stop.why, stop.why)
                message = f"Research stopped ({stopped}) and the model could not write the answer."
                _finish(run, ending, None if ending is Ending.CANCELLED else message)
                return
            answer = forced
        except Exception:
            log.exception("run %s: the follow-up failed unexpectedly", run_id)
            message = f"Something went wrong inside the bot (logged with run id {run_id})."
            _finish(run, Ending.ERROR_SYNTHESIS_FAILED, message)
            return
        self._deliver(run, thread, answer, ending)

    def _start(
        self, run_id: str, request: Request, thread: Thread, emit: Callable[[Event], None]
    ) -> RunState:
        # `task` is the question alone: the compressor condenses tool output towards it.
        limits = self._limits
        effort = Effort(limits.max_turns, limits.deadline_s / 60)
        run = RunState.start(
            request,
            emit,
            time.monotonic() + limits.deadline_s,
            system=system_prompt(for_stage(thread.run.mode, request.identity, effort)),
            task=request.topic,
            run_id=run_id,
        )
        first = evidence_turn(
            topic=thread.run.topic,
            markdown=thread.markdown,
            sources=thread.evidence(),
            earlier=thread.earlier,
            question=request.topic,
            language=thread.run.language,
        )
        run.messages = [{"role": "user", "content": first}]
        run.registry, run.texts = thread.registry, thread.texts
        # The same tools as the research had, its workspace's own among them.
        run.tools = [
            *self._toolbox.schemas(request.origin.scope),
            tool_for(ANSWER_TOOL, FollowUpAnswer),
        ]
        return run

    async def _turns(self, run: RunState, control: Control) -> FollowUpAnswer:
        budget = CostLimit(self._limits.max_cost_usd, run.run_id)
        while run.turn < self._limits.max_turns:
            if budget.reached(run.usage):
                raise Stop("budget")
            run.turn += 1
            run.emit(TurnStarted(turn=run.turn))
            reply = await self._steps.ask(run, control, model_call(run, run.tools, self._limits))
            answer = _answer_in(reply)
            if answer is not None:
                return answer
            if reply.stop_reason in ("end_turn", "stop_sequence"):
                if not reply.text:
                    raise Stop("llm_error", "it ended without an answer")
                return FollowUpAnswer(answer=reply.text)
            if await self._steps.carry_on(run, control, reply):
                continue
            if reply.stop_reason == "refusal":
                raise Stop("refused")
            raise Stop("llm_error", f"it stopped for an unknown reason ({reply.stop_reason})")
        raise Stop("max_turns")

    async def _answer_now(
        self, run: RunState, control: Control, why: str
    ) -> tuple[FollowUpAnswer | None, Ending]:
        """A limit ended the research: one forced call of the `answer` tool."""
        done, failed = ENDINGS[why]
        say_last(run, answer_now(why))
        run.turn += 1
        run.emit(SynthesisStarted(turn=run.turn, reason=why))
        run.emit(TurnStarted(turn=run.turn))
        until = time.monotonic() + self._limits.synthesis_timeout_s
        try:
            answer = await ask_for(
                self._model,
                run,
                control,
                FollowUpAnswer,
                ANSWER_TOOL,
                limits=self._limits,
                until=until,
                tools=run.tools,
            )
        except Stop as stop:
            return None, Ending.CANCELLED if stop.why == "cancelled" else failed
        return answer, done if answer is not None else failed

    def _deliver(
        self, run: RunState, thread: Thread, answer: FollowUpAnswer, ending: Ending
    ) -> None:
        request, language = run.request, thread.run.language
        if answer.update_report and answer.updated_report:
            revised = revised_report(
                answer.updated_report,
                run.registry,
                topic=thread.run.topic,
                mode=thread.run.mode.value,
                language=language,
            )
            run.emit(ReportRevised(turn=run.turn, report=revised))
        report = answer_report(
            answer.answer,
            run.registry,
            question=request.topic,
            mode=thread.run.mode.value,
            language=language,
        )
        forced = ending not in (Ending.ANSWERED, Ending.COMPLETED)
        run.emit(ReportReady(turn=run.turn, report=report, synthesis=forced))
        _finish(run, ending)


def _answer_in(reply: ModelReply) -> FollowUpAnswer | None:
    """The `answer` tool's input, when the model called it alone (beside other calls, they run
    and it is asked again: see `AnswerAlone`) and was not cut off while writing it."""
    uses = reply.tool_uses
    use = next((u for u in uses if u.name == ANSWER_TOOL), None)
    if use is None or reply.stop_reason == "max_tokens":
        return None
    if any(u.name != ANSWER_TOOL for u in uses):
        return None
    try:
        return FollowUpAnswer.model_validate(use.input)
    except ValidationError:
        # Malformed: its text, if any, is still an answer; else the model is asked to finish.
        return FollowUpAnswer(answer=reply.text) if reply.text else None


def _researched(run: RunState) -> bool:
    """Whether the model called a research tool (the answer then rests on more than the run)."""
    return any(
        block.get("type") == "tool_use"
        for message in run.messages
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
    )


def _finish(run: RunState, ending: Ending, error: str | None = None) -> None:
    run.emit(RunFinished(ending=ending, turns=run.turn, usage=run.usage, error=error))


async def _fail(emit: Callable[[Event], None], history: list[Event], message: str) -> None:
    usage = Usage()
    for event in history:
        if isinstance(event, UsageRecorded):
            usage += event.usage
    turns = max((e.turn for e in history if isinstance(e, TurnStarted)), default=0)
    emit(RunFinished(ending=Ending.ERROR_SYNTHESIS_FAILED, turns=turns, usage=usage, error=message))
