"""The runs service: start, summarize and cancel runs; queue them under a limit; persist; recover.

Every front end (terminal, Slack, Discord) calls this and nothing else to run research, so the
daily budget and the hourly limit per person are checked here, once. It owns every way a run
can end: whatever fails inside a run becomes a stored ending that its front end
hears about; events are stored before anyone hears them; a run's outcome is recorded as
delivered only once its front end took it, and delivered again at the next start otherwise.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from typing import Protocol

from bot.agent.control import Control
from bot.agent.events import (
    Ending,
    Event,
    RunFinished,
    RunQueued,
    Usage,
)
from bot.domain import Request, RunRecord, RunStatus
from bot.errors import RequestError, StoreError
from bot.runs.active import ActiveRun, request_of, resumes
from bot.runs.mailbox import RunListener
from bot.runs.outcome import Outcome, stored_outcome
from bot.runs.owner import new_owner, owner_gone, owner_pid
from bot.runs.queue import RunQueue
from bot.runs.quota import Quota
from bot.store.runs import Store

__all__ = ["Engine", "Outcome", "RunListener", "RunManager"]

log = logging.getLogger(__name__)
REDELIVER_WITHIN = timedelta(days=1)
"""Undelivered outcomes older than this are not pushed into a thread at start any more."""
STOPPED = "The bot stopped while this run was in progress."


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


class RunManager:
    """Owns every run of this process."""

    def __init__(
        self,
        store: Store,
        engine: Engine,
        *,
        max_concurrent: int = 4,
        lease_s: float = 60.0,
        quota: Quota | None = None,
    ) -> None:
        self._store = store
        self._engine = engine
        self._quota = quota
        self._admitting = asyncio.Lock()
        self._queue = RunQueue(max_concurrent)
        self._active: dict[str, ActiveRun] = {}
        self.owner = new_owner()
        self._lease_s = lease_s
        self._heartbeat: asyncio.Task[None] | None = None

    async def submit(self, request: Request, listener: RunListener) -> RunRecord:
        """Store the run and schedule it; returns at once with its record (status queued).
        Raises `QuotaError` (storing nothing) when the budget or the hourly limit refuses it."""
        # One at a time, so two requests at once cannot both take the last place.
        async with self._admitting:
            if self._quota is not None:
                await self._quota.check(request.origin)
            record = await self._store.create_run(
                request, owner=self.owner, lease_until=self._lease()
            )
        self._start(record, listener, request, resume=False)
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
        """At start: take over the runs whose process is gone (queued ones queue again, in
        order; the others are finished from their evidence), and deliver every outcome that
        never reached its front end. `listener_for` gives the front end that should hear about
        a run (None: another front end's run, left for it). Returns the ids taken."""
        taken = []
        unfinished = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)
        for record in await self._store.runs_with_status(*unfinished):
            listener = self._listener_if_free(record, listener_for)
            if listener is not None and await self._claim(record):
                self._start(record, listener, request_of(record), resume=resumes(record))
                taken.append(record.run_id)
        since = self._store.now() - REDELIVER_WITHIN
        for record in await self._store.undelivered_runs(since=since):
            listener = listener_for(record) if record.run_id not in self._active else None
            if listener is not None:
                self._redeliver(record, listener)
                taken.append(record.run_id)
        return taken

    async def resume(self, run_id: str, listener: RunListener) -> RunRecord:
        """Finish one run another process left (the terminal's `resume`), or deliver its
        stored outcome again when it had ended."""
        record = await self._store.get_run(run_id)
        if record.status in (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED):
            self._redeliver(record, listener)
            return record
        if not self._orphan(record) or not await self._claim(record):
            pid = owner_pid(record.owner)
            where = f" (process {pid})" if pid else ""
            raise RequestError(
                f"Run {record.run_id} is still running in another process{where}: "
                "wait for it, or stop that process first."
            )
        self._start(record, listener, request_of(record), resume=resumes(record))
        return record

    async def shutdown(self, *, delivery_grace_s: float = 10.0) -> None:
        """Stop every run now: running ones are left interrupted, queued ones stay queued, all
        for the next start. A run already stored but still delivering gets a short grace
        (call this before closing the chat clients); undelivered, it is delivered next start."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        delivering = [a.task for a in self._active.values() if a.task and a.persisted]
        researching = [a.task for a in self._active.values() if a.task and not a.persisted]
        for task in researching:
            task.cancel()
        if delivering:
            await asyncio.wait(delivering, timeout=delivery_grace_s)
        for task in delivering:
            task.cancel()
        await asyncio.gather(*researching, *delivering, return_exceptions=True)

    def _lease(self) -> datetime:
        return self._store.now() + timedelta(seconds=self._lease_s)

    def _orphan(self, record: RunRecord) -> bool:
        """Nobody runs it any more (its process is gone), so this process may take it."""
        return owner_gone(record.owner, record.lease_until, now=self._store.now(), me=self.owner)

    def _listener_if_free(
        self, record: RunRecord, listener_for: Callable[[RunRecord], RunListener | None]
    ) -> RunListener | None:
        if record.run_id in self._active or not self._orphan(record):
            return None
        return listener_for(record)

    async def _claim(self, record: RunRecord) -> bool:
        return await self._store.claim_run(
            record.run_id, seen_owner=record.owner, owner=self.owner, lease_until=self._lease()
        )

    def _start(
        self, record: RunRecord, listener: RunListener, request: Request, *, resume: bool
    ) -> None:
        active = ActiveRun(record, listener, self._store)
        self._active[record.run_id] = active
        self._queue.join(record.run_id)
        active.task = asyncio.create_task(
            self._run(active, request, resume=resume), name=f"run-{record.run_id}"
        )
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.create_task(self._renew_leases(), name="run-leases")

    def _redeliver(self, record: RunRecord, listener: RunListener) -> None:
        active = ActiveRun(record, listener, self._store)
        active.persisted = True
        self._active[record.run_id] = active
        active.task = asyncio.create_task(
            self._deliver_stored(active), name=f"deliver-{record.run_id}"
        )

    async def _renew_leases(self) -> None:
        """While this process has runs, it keeps saying so; a process that dies stops."""
        while self._active:
            await asyncio.sleep(self._lease_s / 3)
            try:
                await self._store.renew_leases(self.owner, self._lease())
            except StoreError as error:
                log.warning("could not renew run leases: %s", error)

    async def _run(self, active: ActiveRun, request: Request, *, resume: bool) -> None:
        run_id = active.record.run_id
        try:
            try:
                outcome = await self._research(active, request, resume=resume)
            except asyncio.CancelledError:
                await self._leave(active)
                raise
            except Exception as error:
                # The one owner of every failure of a run: it ends, is stored, and is told.
                log.exception("run %s failed unexpectedly", run_id)
                outcome = await self._rescue(active, request, error)
            # Delivered outside the slot: a slow chat platform must not hold up queued runs.
            await active.deliver(outcome)
        finally:
            active.mailbox.close()
            self._active.pop(run_id, None)
            active.finished.set()

    async def _research(self, active: ActiveRun, request: Request, *, resume: bool) -> Outcome:
        run_id = active.record.run_id
        if not await self._queue.turn(run_id, active.control.cancel_requested, self._announce):
            await active.emit(RunFinished(ending=Ending.CANCELLED, turns=0, usage=Usage()))
            return await active.persist(Outcome(ending=Ending.CANCELLED))
        try:
            await self._store.mark_running(run_id)
            active.record = await self._store.get_run(run_id)
            if resume:
                history = await self._store.events(run_id)
                events = self._engine.recover(run_id, request, history, active.control)
            else:
                events = self._engine.research(run_id, request, active.control)
            return await active.consume(events, recovered=resume)
        finally:
            self._queue.release()

    async def _rescue(self, active: ActiveRun, request: Request, error: Exception) -> Outcome:
        """After an unexpected failure: write up from the stored evidence; failing that, end
        the run plainly. Either way it is stored (if the store still works) and told."""
        run_id = active.record.run_id
        if not isinstance(error, StoreError) and not active.persisted:
            try:
                history = await self._store.events(run_id)
                events = self._engine.recover(run_id, request, history, active.control, why="error")
                return await active.consume(events, recovered=False)
            except Exception:
                log.exception("run %s: writing up after the failure failed too", run_id)
        if isinstance(error, StoreError):
            message = f"This run could not be saved: {error}"
        else:
            message = (
                f"Something went wrong inside the bot (logged with run id {run_id}): "
                "start the research again."
            )
        outcome = Outcome(ending=Ending.ERROR_SYNTHESIS_FAILED, error=message)
        if not active.persisted:
            try:
                await active.persist(outcome)
            except StoreError as store_error:
                log.error("run %s: could not store its ending: %s", run_id, store_error)
        return outcome

    async def _leave(self, active: ActiveRun) -> None:
        """The process is stopping: leave the run for the next start (still queued, or
        interrupted), unless it already ended."""
        run_id = active.record.run_id
        if active.persisted:
            return
        queued = self._queue.leave(run_id)
        status, error = (RunStatus.QUEUED, None) if queued else (RunStatus.INTERRUPTED, STOPPED)
        try:
            await self._store.leave_run(run_id, status, error=error)
        except StoreError as store_error:
            log.error("run %s: could not mark it %s: %s", run_id, status.value, store_error)

    async def _announce(self, run_id: str, position: int) -> None:
        waiting = self._active.get(run_id)
        if waiting is not None:
            await waiting.emit(RunQueued(position=position))

    async def _deliver_stored(self, active: ActiveRun) -> None:
        try:
            await active.deliver(await stored_outcome(self._store, active.record))
        finally:
            active.mailbox.close()
            self._active.pop(active.record.run_id, None)
            active.finished.set()
