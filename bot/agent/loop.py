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

from bot.agent.calls import Limits, model_call
from bot.agent.claims import ClaimChecker
from bot.agent.compress import Compressor, compact_form, compact_if_full
from bot.agent.control import Control
from bot.agent.events import (
    Event,
    ModelText,
    Notice,
    RunStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    UsageRecorded,
)
from bot.agent.guard import FinishGuard
from bot.agent.models import ModelCall, ModelPort, ModelReply, ToolUse
from bot.agent.prompts import continue_after_max_tokens, system_prompt, task
from bot.agent.state import RunState, Stop, fence, guarded
from bot.agent.tools import Toolbox, ToolContext
from bot.agent.writeup import WriteUp
from bot.domain import Request
from bot.errors import ContextOverflow, ModelError

log = logging.getLogger(__name__)


STARTED_AGAIN = "The bot restarted before this run had found anything: it starts again."


class Researcher:
    """The research agent: the `Engine` the runs service drives."""

    def __init__(
        self, model: ModelPort, toolbox: Toolbox, compressor: Compressor, limits: Limits
    ) -> None:
        self._model = model
        self._toolbox = toolbox
        self._compressor = compressor
        self._limits = limits
        self._tools = toolbox.schemas()
        # The fast model that compresses tool output also checks reports (claims, finish guard).
        fast, timeout_s = compressor.model, limits.model_timeout_s
        self._guard = FinishGuard(
            model, fast_model=fast, max_turns=limits.max_turns, timeout_s=timeout_s
        )
        claims = ClaimChecker(model, fast_model=fast, timeout_s=timeout_s)
        self._writeup = WriteUp(model, limits=limits, tools=self._tools, claims=claims)

    def research(self, run_id: str, request: Request, control: Control) -> AsyncIterator[Event]:
        return _drain(lambda emit: self._work(run_id, request, control, emit))

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
            if why == "interrupted" and run.prior_report is None and not run.evidence:
                # Nothing was lost but the request, which is stored: start it again ourselves.
                emit(Notice(message=STARTED_AGAIN))
                return self._work(run_id, request, control, emit)
            return self._writeup.recover(run, control, why)

        return _drain(work)

    def _deadline(self) -> float:
        return time.monotonic() + self._limits.deadline_s

    async def _work(
        self, run_id: str, request: Request, control: Control, emit: Callable[[Event], None]
    ) -> None:
        run = RunState.start(
            request,
            emit,
            self._deadline(),
            system=system_prompt(request.mode),
            task=task(request.mode, request.topic, request.language),
            run_id=run_id,
        )
        emit(RunStarted(topic=request.topic, mode=request.mode.value))
        try:
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
        while run.turn < self._limits.max_turns:
            compact_if_full(run, self._limits.context_window_tokens)
            run.turn += 1
            run.emit(TurnStarted(turn=run.turn))
            reply = await self._ask(run, control, model_call(run, self._tools, self._limits))
            if reply.stop_reason in ("end_turn", "stop_sequence"):
                if not reply.text:
                    raise Stop("llm_error", "The model ended without writing a report.")
                if await self._guard.accepts(run, control, reply):
                    return reply.text
                continue  # the finish guard sent it back with feedback
            if reply.stop_reason == "tool_use":
                run.messages.append({"role": "assistant", "content": reply.content})
                if reply.text:
                    run.emit(ModelText(turn=run.turn, text=reply.text))
                await self._run_tools(run, control, reply.tool_uses)
            elif reply.stop_reason == "max_tokens":
                # A cut-off tool_use has partial input: drop it, keep the words, ask to go on.
                kept = [b for b in reply.content if b.get("type") != "tool_use"]
                if kept:
                    run.messages.append({"role": "assistant", "content": kept})
                run.messages.append({"role": "user", "content": continue_after_max_tokens()})
            elif reply.stop_reason == "pause_turn":
                run.messages.append({"role": "assistant", "content": reply.content})
            elif reply.stop_reason == "refusal":
                raise Stop("refused", "The model declined to continue this research.")
            elif reply.stop_reason == "model_context_window_exceeded":
                raise Stop("context")
            else:
                raise Stop(
                    "llm_error", f"The model stopped for an unknown reason ({reply.stop_reason})."
                )
        raise Stop("max_turns")

    async def _ask(self, run: RunState, control: Control, call: ModelCall) -> ModelReply:
        try:
            reply = await guarded(
                run, control, self._model.complete(call), until=run.deadline, allow_summarize=True
            )
        except ContextOverflow as error:
            raise Stop("context") from error
        except ModelError as error:
            # With evidence, the write-up may still work (a 529 now may pass a moment later).
            raise Stop("error" if run.has_evidence else "llm_error", str(error)) from error
        run.record(UsageRecorded(turn=run.turn, model=reply.model, usage=reply.usage))
        used = reply.usage
        # The whole request (cached or not) plus the reply: what the next turn starts from.
        run.context_tokens = (
            used.input_tokens
            + used.cache_read_tokens
            + used.cache_write_tokens
            + used.output_tokens
        )
        return reply

    async def _run_tools(self, run: RunState, control: Control, uses: list[ToolUse]) -> None:
        for use in uses:
            run.emit(ToolCalled(turn=run.turn, call_id=use.id, name=use.name, input=use.input))
        results: dict[str, dict[str, Any]] = {}

        async def all_tools() -> None:
            # A TaskGroup: when the turn is interrupted, no tool is left running behind it.
            async with asyncio.TaskGroup() as group:
                for use in uses:
                    group.create_task(self._one_tool(run, use, results))

        try:
            await guarded(run, control, all_tools(), until=run.deadline, allow_summarize=True)
        finally:
            # Whatever ended the turn, every tool_use gets its tool_result: finished tools keep
            # theirs, the rest say they were stopped, so synthesis sees a valid conversation.
            blocks = [results.get(use.id) or _stopped(use) for use in uses]
            run.messages.append({"role": "user", "content": blocks})

    async def _one_tool(
        self, run: RunState, use: ToolUse, results: dict[str, dict[str, Any]]
    ) -> None:
        result = await self._toolbox.call(
            ToolContext(run.registry, run.run_id), use.name, use.input
        )
        out, compressed = result.output, False
        body = out.body
        if body and not result.is_error:
            body, compressed, usage = await self._compressor.compress(
                body, goal=run.task, tool=use.name
            )
            if compressed:
                run.record(UsageRecorded(turn=run.turn, model=self._compressor.model, usage=usage))
        content = out.heading + (f"\n{fence(body)}" if body else "")
        numbers = [run.registry.number(s.url) or 0 for s in out.sources]
        cited = list(zip(numbers, out.sources, strict=True))
        if body and len(short := compact_form(out.heading, cited, body)) < len(content):
            run.compact_forms[use.id] = short
        run.record(
            ToolFinished(
                turn=run.turn,
                call_id=use.id,
                name=use.name,
                is_error=result.is_error,
                content=content,
                sources=out.sources,
                numbers=numbers,
                compressed=compressed,
                duration_s=result.duration_s,
            )
        )
        results[use.id] = {
            "type": "tool_result",
            "tool_use_id": use.id,
            "content": content,
            "is_error": result.is_error,
        }


def _stopped(use: ToolUse) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": use.id,
        "is_error": True,
        "content": f"{use.name} was stopped before it finished.",
    }


def _unexpected(run_id: str) -> str:
    return f"Something went wrong inside the bot (logged with run id {run_id})."


async def _drain(
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
