"""The tool-use loop and its endings: turns, parallel tools, stop reasons, limits, synthesis.

A run is the message list plus counters (`RunState`). Work happens in one task that emits
events into a queue; `research()` hands them on as they come, so a notice can be emitted
while a model call is still in flight. Endings are `Stop` exceptions carrying their reason;
whatever else fails inside a run becomes the `error` ending, written up from its evidence.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from bot.agent.brief import Brief, Effort, for_stage
from bot.agent.calls import Limits, model_call
from bot.agent.compress import Compressor, compact_if_full
from bot.agent.control import Control
from bot.agent.cost import CostLimit
from bot.agent.earlier import EarlierReports, start_from_earlier
from bot.agent.events import (
    Event,
    Notice,
    RunStarted,
    TurnStarted,
)
from bot.agent.models.port import ModelPort
from bot.agent.prompts import system_prompt, task
from bot.agent.report.changes import WatchChanges
from bot.agent.report.finish_guard import FinishGuard
from bot.agent.report.judge import ClaimChecker
from bot.agent.report.recheck import ReadTexts
from bot.agent.state import RunState, Stop
from bot.agent.steps import Steps, Written
from bot.agent.web.registry import Toolbox
from bot.agent.writeup import WriteUp
from bot.domain import Request

log = logging.getLogger(__name__)


STARTED_AGAIN = "The bot restarted before this run had found anything: it starts again."


class Researcher:
    """The research agent: the `Engine` the runs service drives."""

    def __init__(
        self,
        model: ModelPort,
        toolbox: Toolbox,
        compressor: Compressor,
        limits: Limits,
        *,
        earlier: EarlierReports | None = None,
    ) -> None:
        """`earlier`: the workspace's recent reports, a run on the same company starts from,
        and a watch's earlier reports, a watched run starts from and says what changed since."""
        self._model = model
        self._earlier = earlier
        self._toolbox = toolbox
        self._compressor = compressor
        self._limits = limits
        self._steps = Steps(model, toolbox, compressor)
        # The fast model that compresses tool output also checks reports (claims, finish guard).
        fast, timeout_s = compressor.model, limits.model_timeout_s
        self._guard = FinishGuard(
            model, fast_model=fast, max_turns=limits.max_turns, timeout_s=timeout_s
        )
        claims = ClaimChecker(
            model, fast_model=fast, timeout_s=timeout_s, max_cost_usd=limits.max_cost_usd
        )
        changes = WatchChanges(earlier, claims) if earlier is not None else None
        self._writeup = WriteUp(model, limits=limits, claims=claims, changes=changes)

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
        """Finish a run from its stored events: `interrupted` (the process stopped) or `error`
        (its task failed). Cancel is honoured; summarize changes nothing (it is writing up)."""

        def work(emit: Callable[[Event], None]) -> Coroutine[Any, Any, None]:
            run = RunState.from_history(request, history, emit, self._deadline(), run_id)
            run.texts = ReadTexts.of(history)
            run.tools = self._toolbox.schemas(request.origin.scope)
            if why == "interrupted" and run.prior_report is None and not run.evidence:
                # Nothing was lost but the request, which is stored: start it again ourselves.
                emit(Notice(message=STARTED_AGAIN))
                return self._work(run_id, request, control, emit)
            return self._writeup.recover(run, control, why)

        return drain(work)

    def _brief(self, request: Request) -> Brief:
        limits = self._limits
        return for_stage(
            request.mode, request.identity, Effort(limits.max_turns, limits.deadline_s / 60)
        )

    def _deadline(self) -> float:
        return time.monotonic() + self._limits.deadline_s

    async def _work(
        self, run_id: str, request: Request, control: Control, emit: Callable[[Event], None]
    ) -> None:
        run = RunState.start(
            request,
            emit,
            self._deadline(),
            system=system_prompt(self._brief(request)),
            task=task(request.mode, request.topic, request.language),
            run_id=run_id,
        )
        run.texts = ReadTexts()  # which pages it reads afresh: what changed since a watch's last
        run.tools = self._toolbox.schemas(request.origin.scope)
        emit(RunStarted(topic=request.topic, mode=request.mode.value))
        try:
            await start_from_earlier(run, self._earlier)
            text = await self._turns(run, control)
        except Stop as stop:
            await self._writeup.end(run, control, stop)
        except Exception:
            # The engine's one owner of what nobody expected (a bug, an escaped transport error).
            log.exception("run %s: research failed unexpectedly", run_id)
            await self._writeup.end(run, control, Stop("error", _unexpected(run_id)))
        else:
            await self._writeup.completed(run, control, text)

    async def _turns(self, run: RunState, control: Control) -> str:
        budget = CostLimit(self._limits.max_cost_usd, run.run_id)
        written = Written()
        while run.turn < self._limits.max_turns:
            # Before each call, so the tools of the last turn (and their evidence) are in.
            if budget.reached(run.usage):
                raise Stop("budget")
            compact_if_full(run, self._limits.context_window_tokens)
            run.turn += 1
            run.emit(TurnStarted(turn=run.turn))
            reply = await self._steps.ask(run, control, model_call(run, run.tools, self._limits))
            if reply.stop_reason in ("end_turn", "stop_sequence"):
                text = written.whole(reply)
                if not text:
                    raise Stop("llm_error", "The model ended without writing a report.")
                if await self._guard.accepts(run, control, reply, text):
                    return text
                written = Written()
                continue  # the finish guard sent it back with feedback
            written.note(reply)
            if await self._steps.carry_on(run, control, reply):
                continue
            if reply.stop_reason == "refusal":
                raise Stop("refused", "The model declined to continue this research.")
            elif reply.stop_reason == "model_context_window_exceeded":
                raise Stop("context")
            else:
                raise Stop(
                    "llm_error", f"The model stopped for an unknown reason ({reply.stop_reason})."
                )
        raise Stop("max_turns")


def _unexpected(run_id: str) -> str:
    return f"Something went wrong inside the bot (logged with run id {run_id})."


async def drain(
    work: Callable[[Callable[[Event], None]], Coroutine[Any, Any, None]],
) -> AsyncIterator[Event]:
    """Run `work` in its own task and yield the events it emits, as they come."""
    queue: asyncio.Queue[Event | None] = asyncio.Queue()
    task = asyncio.create_task(work(queue.put_nowait))
    task.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        while (event := await queue.get()) is not None:
            yield event
        task.result()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
