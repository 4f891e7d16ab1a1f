"""One run's state: the conversation, its numbered sources, counters, and how a run stops."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bot.agent.brief import for_stage
from bot.agent.control import Control
from bot.agent.events import (
    Event,
    Notice,
    ReportReady,
    ToolFinished,
    TurnStarted,
    Usage,
    UsageRecorded,
)
from bot.agent.evidence import SourceTexts
from bot.agent.fence import fence as fence  # re-exported: the loop takes it from here
from bot.agent.prompts import system_prompt, task
from bot.agent.report.model import Report, SourceRegistry
from bot.agent.switches import ProviderWatch
from bot.domain import Request

T = TypeVar("T")
NOTHING_YET = (
    "Nothing has been gathered yet, so there is nothing to summarize. The research "
    "goes on; press again in a moment, or cancel."
)


class Stop(Exception):
    """The research phase is over; `why` names the ending, `message` is for a person."""

    def __init__(self, why: str, message: str | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.message = message


@dataclass
class RunState:
    request: Request
    emit: Callable[[Event], None]
    deadline: float
    """time.monotonic() by which research must stop and write up."""
    system: str
    task: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    registry: SourceRegistry = field(default_factory=SourceRegistry)
    turn: int = 0
    usage: Usage = field(default_factory=Usage)
    evidence: list[str] = field(default_factory=list)
    """What the tools returned (not errors): material for a write-up from evidence."""
    prior_report: Report | None = None
    earlier_findings: str = ""
    """The earlier report this run starts from, fenced, as the model was first given it: a deep
    run's final write-up is given it again (its planner was)."""
    context_tokens: int = 0
    """The last turn's request and reply, in tokens, as the API counted them."""
    compact_forms: dict[str, str] = field(default_factory=dict)
    """By tool_use id: what each tool result shrinks to if the context fills up."""
    run_id: str = ""
    texts: SourceTexts = field(default_factory=SourceTexts)
    """What the model saw of each source, by citation number: what claims are checked against."""
    own_sources: dict[int, None] = field(default_factory=dict)
    """Citation numbers this agent's own tools returned, in order (an ordered set): a deep
    run's researchers share one registry, and each reports only its own."""
    finish_reviewed: bool = False
    """The finish guard has looked at an early report (it does so at most once per run)."""
    providers: ProviderWatch = field(default_factory=ProviderWatch)
    """Which model providers served the run: a switch between them is told as an event."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The tools the model is offered, fixed at the run's start: the built-in ones and its
    workspace's own (MCP servers connected then)."""

    @property
    def has_evidence(self) -> bool:
        """Something was retrieved that a report can cite."""
        return bool(self.registry.sources)

    @classmethod
    def start(
        cls,
        request: Request,
        emit: Callable[[Event], None],
        deadline: float,
        *,
        system: str,
        task: str,
        run_id: str = "",
    ) -> RunState:
        return cls(
            run_id=run_id,
            request=request,
            emit=emit,
            deadline=deadline,
            system=system,
            task=task,
            messages=[{"role": "user", "content": task}],
        )

    @classmethod
    def from_history(
        cls,
        request: Request,
        history: list[Event],
        emit: Callable[[Event], None],
        deadline: float,
        run_id: str = "",
    ) -> RunState:
        """Rebuild what a run had gathered from its stored events (restart recovery)."""
        run = cls(
            run_id=run_id,
            request=request,
            emit=emit,
            deadline=deadline,
            system=system_prompt(for_stage(request.mode, request.identity)),
            task=task(request.mode, request.topic, request.language),
        )
        for event in history:
            if isinstance(event, TurnStarted):
                run.turn = max(run.turn, event.turn)
            elif isinstance(event, UsageRecorded):
                run.usage += event.usage
                run.providers.served(event.model, event.turn)  # told before the restart
            elif isinstance(event, ToolFinished) and not event.is_error:
                run.evidence.append(event.content)
                run.texts.add(event)
                for number, source in zip(event.numbers, event.sources, strict=False):
                    if number:
                        run.registry.restore(number, source)
            elif isinstance(event, ReportReady):
                run.prior_report = event.report
        return run

    def record(self, event: Event) -> None:
        """Emit an event and keep what the run must remember of it."""
        switched = None
        if isinstance(event, UsageRecorded):
            self.usage += event.usage
            switched = self.providers.served(event.model, event.turn)
        elif isinstance(event, ToolFinished) and not event.is_error:
            self.evidence.append(event.content)
            self.texts.add(event)
            self.own_sources.update((n, None) for n in event.numbers if n)
        self.emit(event)
        if switched is not None:
            self.emit(switched)


async def guarded(
    run: RunState,
    control: Control,
    work: Awaitable[T],
    *,
    until: float,
    allow_summarize: bool,
) -> T:
    """Await `work`, but stop it the moment the run is cancelled, summarized or out of time."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            stop = asyncio.ensure_future(_first_set(control, allow_summarize))
            done, _ = await asyncio.wait(
                {task, stop},
                timeout=max(0.0, until - time.monotonic()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            stop.cancel()
            if task in done:
                return task.result()
            if not done:
                raise Stop("deadline")
            if control.cancel_requested.is_set():
                raise Stop("cancelled")
            # A person's Summarize waits for evidence; a spent budget stops with or without.
            if run.registry.sources or control.summarize_reason != "forced":
                raise Stop(control.summarize_reason)
            run.emit(Notice(message=NOTHING_YET))
            control.rearm_summarize()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _first_set(control: Control, allow_summarize: bool) -> None:
    if allow_summarize:
        await control.wait_any()
    else:
        await control.cancel_requested.wait()
