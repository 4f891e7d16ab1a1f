"""The runs service: start, summarize and cancel runs; queue them under a limit; persist; recover.

Every front end (terminal, Slack, Discord) calls this and nothing else to run research.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from pydantic import BaseModel

from bot.agent.control import Control
from bot.agent.events import (
    Ending,
    Event,
    ReportReady,
    RunFinished,
    RunQueued,
    Usage,
)
from bot.agent.report import Report, render_markdown, report_filename
from bot.domain import Request, RunRecord, RunStatus
from bot.store import Store

log = logging.getLogger(__name__)


class Outcome(BaseModel):
    """How a run ended, for the front end to show."""

    ending: Ending
    report: Report | None = None
    markdown: str | None = None
    filename: str | None = None
    error: str | None = None
    turns: int = 0
    usage: Usage = Usage()
    duration_s: float = 0.0
    recovered: bool = False
    """Finished after a restart from stored evidence."""


class RunListener(Protocol):
    """What a front end implements to follow one run."""

    async def on_event(self, run: RunRecord, event: Event) -> None: ...

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None: ...


class Engine(Protocol):
    """The research agent, as the runs service sees it."""

    def research(self, run_id: str, request: Request, control: Control) -> AsyncIterator[Event]: ...

    def recover(
        self,
        run_id: str,
        request: Request,
        history: list[Event],
        control: Control,
        *,
        why: str = "interrupted",
    ) -> AsyncIterator[Event]:
        """Finish a run from the events it had stored: `interrupted` (the process stopped) or
        `error` (the run's own task failed unexpectedly). Honours `control` (cancel, summarize)."""
        ...


class _Active:
    def __init__(self, record: RunRecord, listener: RunListener) -> None:
        self.record = record
        self.listener = listener
        self.control = Control()
        self.task: asyncio.Task[None] | None = None
        self.finished = asyncio.Event()
        self.persisted = False


class RunManager:
    """Owns every run of this process."""

    def __init__(self, store: Store, engine: Engine, *, max_concurrent: int = 4) -> None:
        self._store = store
        self._engine = engine
        self._slots = asyncio.Semaphore(max_concurrent)
        self._active: dict[str, _Active] = {}
        self._waiting: list[str] = []

    async def submit(self, request: Request, listener: RunListener) -> RunRecord:
        """Store the run and schedule it; returns at once with its record (status queued)."""
        record = await self._store.create_run(request)
        active = _Active(record, listener)
        self._active[record.run_id] = active
        self._waiting.append(record.run_id)
        active.task = asyncio.create_task(self._run(active, request), name=f"run-{record.run_id}")
        return record

    def summarize(self, run_id: str) -> bool:
        """Ask a run to write up now. False if it is not running here."""
        active = self._active.get(run_id)
        if active is None:
            return False
        active.control.summarize()
        return True

    def cancel(self, run_id: str) -> bool:
        active = self._active.get(run_id)
        if active is None:
            return False
        active.control.cancel()
        return True

    def get_active(self, run_id: str) -> RunRecord | None:
        active = self._active.get(run_id)
        return active.record if active else None

    async def wait(self, run_id: str) -> None:
        active = self._active.get(run_id)
        if active is not None:
            await active.finished.wait()

    async def recover(self, listener_for: Callable[[RunRecord], RunListener | None]) -> list[str]:
        """Finish runs a previous process left running or queued. Returns their ids.

        `listener_for` gives the front end that should hear about a run (None: another
        front end's run, left for it).
        """
        found = await self._store.runs_with_status(
            RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.INTERRUPTED
        )
        started = []
        for record in found:
            if record.run_id in self._active:
                continue
            listener = listener_for(record)
            if listener is None:
                continue
            active = _Active(record, listener)
            self._active[record.run_id] = active
            active.task = asyncio.create_task(
                self._recover(active), name=f"recover-{record.run_id}"
            )
            started.append(record.run_id)
        return started

    async def shutdown(self, *, delivery_grace_s: float = 10.0) -> None:
        """Stop every run now and leave it marked interrupted, to be recovered at the next start.

        A run already finished and stored but still posting its report gets a short grace to
        deliver it (call this before closing the chat clients).
        """
        delivering = [a.task for a in self._active.values() if a.task and a.persisted]
        researching = [a.task for a in self._active.values() if a.task and not a.persisted]
        for task in researching:
            task.cancel()
        if delivering:
            await asyncio.wait(delivering, timeout=delivery_grace_s)
        for task in delivering:
            task.cancel()
        await asyncio.gather(*researching, *delivering, return_exceptions=True)

    async def _run(self, active: _Active, request: Request) -> None:
        run_id = active.record.run_id
        try:
            outcome = await self._research(active, request)
            # Delivered outside the slot: a slow chat platform must not hold up queued runs.
            await self._deliver(active, outcome)
        except asyncio.CancelledError:
            if run_id in self._waiting:
                self._waiting.remove(run_id)
            if not active.persisted:
                await self._store.finish_run(
                    run_id,
                    status=RunStatus.INTERRUPTED,
                    ending=None,
                    error="The bot stopped while this run was in progress.",
                )
            raise
        finally:
            self._active.pop(run_id, None)
            active.finished.set()

    async def _research(self, active: _Active, request: Request) -> Outcome | None:
        run_id = active.record.run_id
        await self._queue(active)
        got_slot = await self._slot_or_cancel(active)
        self._waiting.remove(run_id)
        await self._announce_queue()
        if not got_slot:
            await self._emit(active, RunFinished(ending=Ending.CANCELLED, turns=0, usage=Usage()))
            return await self._persist(active, Outcome(ending=Ending.CANCELLED))
        try:
            await self._store.mark_running(run_id)
            active.record = await self._store.get_run(run_id)
            events = self._engine.research(run_id, request, active.control)
            return await self._consume(active, events, recovered=False)
        finally:
            self._slots.release()

    async def _recover(self, active: _Active) -> None:
        run_id = active.record.run_id
        try:
            history = await self._store.events(run_id)
            request = Request(
                topic=active.record.topic, mode=active.record.mode, origin=active.record.origin
            )
            async with self._slots:
                await self._store.mark_running(run_id)
                events = self._engine.recover(run_id, request, history)
                outcome = await self._consume(active, events, recovered=True)
            await self._deliver(active, outcome)
        finally:
            self._active.pop(run_id, None)
            active.finished.set()

    async def _queue(self, active: _Active) -> None:
        """Tell a run its place while it waits; the slot wait itself is the semaphore's."""
        if self._slots.locked():
            position = self._waiting.index(active.record.run_id) + 1
            await self._emit(active, RunQueued(position=position))

    async def _slot_or_cancel(self, active: _Active) -> bool:
        """Wait for a free slot (True, held) unless the run is cancelled while it waits."""
        acquire = asyncio.ensure_future(self._slots.acquire())
        cancelled = asyncio.ensure_future(active.control.cancel_requested.wait())
        try:
            await asyncio.wait({acquire, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
            if not acquire.done():
                acquire.cancel()
        return acquire.done() and not acquire.cancelled()

    async def _announce_queue(self) -> None:
        for position, run_id in enumerate(self._waiting, start=1):
            waiting = self._active.get(run_id)
            if waiting is not None:
                await self._emit(waiting, RunQueued(position=position))

    async def _consume(
        self, active: _Active, events: AsyncIterator[Event], *, recovered: bool
    ) -> Outcome | None:
        started = time.monotonic()
        report: Report | None = None
        outcome: Outcome | None = None
        async for event in events:
            await self._emit(active, event)
            if isinstance(event, ReportReady):
                report = event.report
            elif isinstance(event, RunFinished):
                outcome = await self._persist(
                    active,
                    Outcome(
                        ending=event.ending,
                        report=report,
                        error=event.error,
                        turns=event.turns,
                        usage=event.usage,
                        duration_s=time.monotonic() - started,
                        recovered=recovered,
                    ),
                )
        return outcome

    async def _persist(self, active: _Active, outcome: Outcome) -> Outcome:
        """Store the ending and the report's Markdown; from here the run cannot be lost."""
        run_id = active.record.run_id
        if outcome.report is not None:
            record = await self._store.get_run(run_id)
            outcome.markdown = render_markdown(outcome.report, record, outcome.ending)
            outcome.filename = report_filename(record)
            await self._store.save_report(run_id, outcome.report, outcome.markdown)
        if outcome.ending == Ending.CANCELLED and outcome.report is None:
            status = RunStatus.CANCELLED
        else:
            status = RunStatus.DONE if outcome.report is not None else RunStatus.FAILED
        await self._store.finish_run(
            run_id, status=status, ending=outcome.ending.value, error=outcome.error
        )
        active.record = await self._store.get_run(run_id)
        active.persisted = True
        return outcome

    async def _deliver(self, active: _Active, outcome: Outcome | None) -> None:
        if outcome is None:
            return
        try:
            await active.listener.on_finished(active.record, outcome)
        except Exception:
            log.exception("run %s: listener failed to deliver the outcome", active.record.run_id)

    async def _emit(self, active: _Active, event: Event) -> None:
        await self._store.append_event(active.record.run_id, event)
        try:
            await active.listener.on_event(active.record, event)
        except Exception:
            # A chat platform being down must not end the research: log, and go on.
            log.exception("run %s: listener failed on %s", active.record.run_id, event.kind)
