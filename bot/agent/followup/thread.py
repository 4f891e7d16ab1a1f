"""What a follow-up starts from: its run's latest report, the numbered list of sources (the
report's, then what earlier follow-ups added), what was read of each, and earlier answers; and
the turn each follow-up of a run waits for, so that they start from the thread one by one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from bot.agent.control import Control
from bot.agent.events import Ending, Event, Notice, RunFinished, ToolFinished, Usage
from bot.agent.evidence import SourceTexts
from bot.agent.report.model import Report, SourceRegistry
from bot.domain import RunRecord, RunStatus
from bot.errors import RequestError


class ThreadStore(Protocol):
    """What a follow-up reads of the store."""

    async def get_run(self, run_id: str) -> RunRecord: ...

    async def latest_report(self, run_id: str) -> tuple[int, Report, str] | None: ...

    async def report(self, run_id: str) -> tuple[Report, str] | None: ...

    async def events(self, run_id: str) -> list[Event]: ...

    async def follow_ups(self, run_id: str) -> list[RunRecord]: ...


@dataclass
class Thread:
    run: RunRecord
    """The run asked about."""
    version: int
    report: Report
    markdown: str
    registry: SourceRegistry
    """Numbered as the thread knows them: the report's sources, then earlier follow-ups' new ones."""
    texts: SourceTexts = field(default_factory=SourceTexts)
    earlier: list[tuple[str, str]] = field(default_factory=list)
    """(question, answer) of the thread's finished follow-ups, oldest first."""

    def evidence(self) -> list[tuple[int, str]]:
        """Each numbered source with what was read of it (its snippet when nothing was)."""
        out = []
        for number, source in enumerate(self.registry.sources, start=1):
            text = self.texts.text(number) or f"{source.title}\n{source.url}\n\n{source.snippet}"
            out.append((number, f"{source.title}\n{source.url}\n\n{text}"))
        return out


async def load_thread(store: ThreadStore, run_id: str, *, asking: str) -> Thread:
    """The thread of `run_id` as the follow-up `asking` finds it."""
    run = await store.get_run(run_id)
    latest = await store.latest_report(run.run_id)
    if latest is None:
        raise RequestError(f"Run {run.run_id} has no report to ask about.")
    version, report, markdown = latest
    registry = SourceRegistry()
    for number, source in enumerate(report.sources, start=1):
        registry.restore(number, source)
    thread = Thread(run, version, report, markdown, registry)
    finished = [
        child
        for child in await store.follow_ups(run.run_id)
        if child.run_id != asking and child.status is RunStatus.DONE
    ]
    for child in finished:
        saved = await store.report(child.run_id)
        if saved is not None:
            for source in saved[0].sources:
                registry.add(source)  # a source the list has keeps its number
            thread.earlier.append((child.topic, saved[0].tldr))
    for run_with_evidence in [run, *finished]:
        for event in await store.events(run_with_evidence.run_id):
            if isinstance(event, ToolFinished) and not event.is_error:
                _add_texts(thread, event)
    return thread


def _add_texts(thread: Thread, event: ToolFinished) -> None:
    """What a run saw of each source, under the thread's number (runs number their own way)."""
    whole = len(event.sources) == 1
    for source in event.sources:
        number = thread.registry.number(source.url)
        if number:
            content = event.content if whole else f"{source.title}\n{source.snippet}"
            one = event.model_copy(update={"sources": [source], "numbers": [number]})
            thread.texts.add(one.model_copy(update={"content": content}))


WAITING = "Another question about this run is being answered: this one follows it."


class OneAtATime:
    """Follow-ups of the same run answer one after the other (in this process), each holding its
    turn until its answer is stored: the next one then starts from the thread as the previous
    left it, so a source the thread numbered keeps that number, new sources of two answers never
    share one, and a report version is made from the newest version."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        """Per run asked about: its lock, and how many follow-ups hold it or wait for it."""

    async def events(
        self, parent: str, control: Control, events: AsyncIterator[Event]
    ) -> AsyncIterator[Event]:
        """`events` of one follow-up of `parent`, once its turn came. The turn ends when the
        runs service closes this iterator, which it does after storing the follow-up's ending."""
        lock, users = self._locks.get(parent) or (asyncio.Lock(), 0)
        self._locks[parent] = (lock, users + 1)
        try:
            if lock.locked():
                yield Notice(message=WAITING)
            if not await _turn_or_cancel(lock, control):
                yield RunFinished(ending=Ending.CANCELLED, turns=0, usage=Usage())
                return
            try:
                async for event in events:
                    yield event
            finally:
                try:
                    if isinstance(events, AsyncGenerator):
                        await events.aclose()  # its work stops before the next one starts
                finally:
                    lock.release()
        finally:
            lock, users = self._locks[parent]
            if users > 1:
                self._locks[parent] = (lock, users - 1)
            else:
                del self._locks[parent]


async def _turn_or_cancel(lock: asyncio.Lock, control: Control) -> bool:
    """Take `lock`; False (not holding it) when the follow-up is cancelled first."""
    taking = asyncio.ensure_future(lock.acquire())
    cancelled = asyncio.ensure_future(control.cancel_requested.wait())
    try:
        await asyncio.wait({taking, cancelled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cancelled.cancel()
        if not taking.done():
            taking.cancel()
        await asyncio.gather(taking, cancelled, return_exceptions=True)
    taken = not taking.cancelled() and taking.exception() is None
    if taken and control.cancel_requested.is_set():
        lock.release()
        return False
    return taken
