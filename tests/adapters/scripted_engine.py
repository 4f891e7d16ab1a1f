"""A scripted research engine for the chat front-end tests: no model, no sleeps.

One turn of tool calls, then it parks until Summarize, Cancel or `release` (asyncio events),
and writes its report. The real engine is covered end to end in tests/agent and by each
platform's e2e test; this one lets a test press buttons while a run is known to be waiting.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Sequence
from typing import Any

from bot.agent.control import Control
from bot.agent.events import (
    Ending,
    Event,
    Notice,
    ReportReady,
    RunFinished,
    RunStarted,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    Usage,
    UsageRecorded,
)
from bot.agent.report.model import Report, Section, Source
from bot.domain import Request

TLDR = "Acme Robotics builds warehouse robots [1]."
CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("web_search", {"query": "Acme Robotics funding"}),
    ("read_page", {"url": "https://news.example/acme"}),
    ("web_search", {"query": "Acme Robotics customers"}),
)


class ScriptedEngine:
    def __init__(
        self,
        *,
        calls: Sequence[tuple[str, dict[str, Any]]] = CALLS,
        sources_per_call: int = 1,
        tldr: str = TLDR,
        count_presses: bool = False,
        hold_recovery: bool = False,
    ) -> None:
        self.calls = calls
        self.sources_per_call = sources_per_call
        self.tldr = tldr
        self.count_presses = count_presses
        """Instead of writing up on Summarize: say "press N" each time, until Cancel."""
        self.release = asyncio.Event()
        """Lets every parked run finish as `completed`."""
        self.recover_gate = asyncio.Event()
        """With `hold_recovery`, a recovering run waits for this (or for Summarize)."""
        if not hold_recovery:
            self.recover_gate.set()
        self.controls: dict[str, Control] = {}
        self._parked: dict[str, asyncio.Event] = {}

    def parked(self, run_id: str) -> asyncio.Event:
        """Set once the run has made its tool calls and waits (or, recovering, waits the gate)."""
        return self._parked.setdefault(run_id, asyncio.Event())

    async def research(
        self, run_id: str, request: Request, control: Control
    ) -> AsyncIterator[Event]:
        self.controls[run_id] = control
        yield RunStarted(topic=request.topic, mode=request.mode.value)
        yield TurnStarted(turn=1)
        numbers = itertools.count(1)
        for n, (name, args) in enumerate(self.calls, start=1):
            yield ToolCalled(turn=1, call_id=f"call{n}", name=name, input=args)
            sources = [_source(next(numbers)) for _ in range(self.sources_per_call)]
            yield ToolFinished(
                turn=1,
                call_id=f"call{n}",
                name=name,
                is_error=False,
                content="...",
                sources=sources,
            )
        yield UsageRecorded(turn=1, model="claude-test", usage=_usage())
        self.parked(run_id).set()
        if self.count_presses:
            async for event in self._count_presses(control):
                yield event
            return
        await _first(control.summarize_requested, control.cancel_requested, self.release)
        if control.cancel_requested.is_set():
            yield RunFinished(ending=Ending.CANCELLED, turns=1, usage=_usage())
            return
        forced = control.summarize_requested.is_set()
        if forced:
            yield Notice(message="Summarize requested: writing the report from what I have.")
        ending = Ending.FORCED_SYNTHESIZED if forced else Ending.COMPLETED
        async for event in self._write_up(ending, len(self.calls) * self.sources_per_call):
            yield event

    async def recover(
        self,
        run_id: str,
        request: Request,
        history: list[Event],
        control: Control,
        *,
        why: str = "interrupted",
    ) -> AsyncIterator[Event]:
        self.parked(run_id).set()
        await _first(self.recover_gate, control.summarize_requested)
        found = sum(len(e.sources) for e in history if isinstance(e, ToolFinished))
        async for event in self._write_up(Ending.INTERRUPTED_SYNTHESIZED, found):
            yield event

    async def _count_presses(self, control: Control) -> AsyncIterator[Event]:
        presses = itertools.count(1)
        while True:
            await _first(control.summarize_requested, control.cancel_requested)
            if control.cancel_requested.is_set():
                yield RunFinished(ending=Ending.CANCELLED, turns=1, usage=_usage())
                return
            control.rearm_summarize()
            yield Notice(message=f"press {next(presses)}")

    async def _write_up(self, ending: Ending, sources: int) -> AsyncIterator[Event]:
        yield SynthesisStarted(turn=2, reason=ending.value)
        report = Report(
            title="Acme Robotics",
            tldr=self.tldr,
            sections=[Section(heading="Overview", body="Robots [1].")],
            sources=[_source(n) for n in range(1, sources + 1)],
        )
        yield ReportReady(turn=2, report=report, synthesis=ending != Ending.COMPLETED)
        yield RunFinished(ending=ending, turns=2, usage=_usage() + _usage())


def _source(n: int) -> Source:
    return Source(url=f"https://news.example/{n}", title=f"Page {n}", snippet="...")


def _usage() -> Usage:
    return Usage(input_tokens=1_000, output_tokens=200, cost_usd=0.01)


async def _first(*events: asyncio.Event) -> None:
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
