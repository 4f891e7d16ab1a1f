"""One run in this process, start to delivery: its control, its listener's mailbox, and the
one path its events take (stored first, then told), its ending stored, then delivered."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator

from bot.agent.control import Control
from bot.agent.events import Event, ReportReady, ReportRevised, RunFinished
from bot.agent.report.model import Report, render_markdown, report_filename
from bot.domain import Request, RunRecord, RunStatus
from bot.errors import StoreError
from bot.runs.followup_persist import persist_follow_up
from bot.runs.mailbox import Mailbox, RunListener
from bot.runs.outcome import Outcome
from bot.store.runs import Store

log = logging.getLogger(__name__)


class ActiveRun:
    """One run of this process, from its start to its delivery: every event stored, then told."""

    def __init__(self, record: RunRecord, listener: RunListener, store: Store) -> None:
        self.store = store
        self.record = record
        self.mailbox = Mailbox(listener, record.run_id)
        self.control = Control()
        self.task: asyncio.Task[None] | None = None
        self.finished = asyncio.Event()
        self.persisted = False

    async def emit(self, event: Event) -> None:
        await self.store.append_event(self.record.run_id, event)
        self.mailbox.post(self.record, event)

    async def consume(self, events: AsyncIterator[Event], *, recovered: bool) -> Outcome:
        started = time.monotonic()
        report: Report | None = None
        revised: Report | None = None
        try:
            async for event in events:
                await self.emit(event)
                if isinstance(event, ReportReady):
                    report = event.report
                elif isinstance(event, ReportRevised):
                    revised = event.report
                elif isinstance(event, RunFinished):
                    outcome = Outcome(
                        ending=event.ending,
                        report=report,
                        error=event.error,
                        turns=event.turns,
                        usage=event.usage,
                        duration_s=time.monotonic() - started,
                        recovered=recovered,
                    )
                    return await self.persist(outcome, revised)
        finally:
            if isinstance(events, AsyncGenerator):
                await events.aclose()
        raise RuntimeError("the engine stopped without an ending")

    async def persist(self, outcome: Outcome, revised: Report | None = None) -> Outcome:
        """Store the ending and the report's Markdown; from here the run cannot be lost. A
        follow-up stores its answer, and its `revised` report as the next report version."""
        run_id = self.record.run_id
        if self.record.parent_run_id is not None:
            outcome = await persist_follow_up(self.store, run_id, outcome, revised)
            self.record = await self.store.get_run(run_id)
            self.persisted = True
            return outcome
        saved = None
        if outcome.report is not None:
            record = await self.store.get_run(run_id)
            outcome.markdown = render_markdown(outcome.report, record, outcome.ending)
            outcome.filename = report_filename(record)
            saved = (outcome.report, outcome.markdown)
        await self.store.finish_run(
            run_id,
            status=outcome.status,
            ending=outcome.ending.value,
            error=outcome.error,
            report=saved,
        )
        self.record = await self.store.get_run(run_id)
        self.persisted = True
        return outcome

    async def deliver(self, outcome: Outcome) -> None:
        if await self.mailbox.finish(self.record, outcome):
            try:
                await self.store.mark_delivered(self.record.run_id)
            except StoreError as error:
                log.error("run %s: delivered, but not recorded: %s", self.record.run_id, error)


def request_of(record: RunRecord) -> Request:
    return Request(
        topic=record.topic,
        mode=record.mode,
        origin=record.origin,
        depth=record.depth,
        language=record.language,
        parent_run_id=record.parent_run_id,
        watch_id=record.watch_id,
    )


def resumes(record: RunRecord) -> bool:
    """A run that never started begins afresh; one that did is finished from its evidence."""
    return record.status is not RunStatus.QUEUED
