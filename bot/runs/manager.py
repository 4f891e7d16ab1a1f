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
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Protocol

from bot.agent.control import CHOOSE, Control, choice_action, parse_choice
from bot.agent.events import (
    Ending,
    Event,
    RunFinished,
    RunQueued,
    Usage,
)
from bot.domain import Request, RunRecord, RunStatus
from bot.errors import StoreError
from bot.runs.active import ActiveRun, request_of
from bot.runs.admission import Admission
from bot.runs.front_ends import FrontEnds
from bot.runs.mailbox import RunListener
from bot.runs.outcome import Outcome
from bot.runs.owner import new_owner
from bot.runs.queue import RunQueue
from bot.runs.quota import Quota
from bot.runs.shared import SharedQueue
from bot.runs.takeover import Takeover
from bot.store.runs import Store
from bot.store.signals import Signals

__all__ = ["Engine", "Outcome", "RunListener", "RunManager"]

log = logging.getLogger(__name__)
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


class RunManager(Takeover):
    """Owns every run of this process."""

    def __init__(
        self,
        store: Store,
        engine: Engine,
        *,
        max_concurrent: int = 4,
        lease_s: float = 60.0,
        quota: Quota | None = None,
        shared: Signals | None = None,
    ) -> None:
        """`shared`: this process is one replica of several on one database (PostgreSQL): runs
        wait in the database's queue for any replica, and control reaches them anywhere."""
        self._store = store
        self._engine = engine
        self._quota = quota
        self._admission = Admission(limited=quota is not None)
        self._queue = RunQueue(max_concurrent)
        self._active: dict[str, ActiveRun] = {}
        self.owner = new_owner()
        self._lease_s = lease_s
        self._heartbeat: asyncio.Task[None] | None = None
        self._max_concurrent = max_concurrent
        self._shared = SharedQueue(store, shared, self, lease_s=lease_s) if shared else None
        self.front_ends = FrontEnds()

    async def submit(self, request: Request, listener: RunListener) -> RunRecord:
        """Store the run and schedule it; returns at once with its record (status queued).
        Raises `QuotaError` (storing nothing) when the budget or the hourly limit refuses it."""
        asked_at = self._store.now()
        async with self._admission.in_order() as turn:
            async with self._admission.one_per_person(request.origin):
                if self._quota is not None:
                    await self._quota.check(request.origin)
                # Owned from the start: with replicas, no other one claims the run before this
                # one has shown it in its thread (`SharedQueue.hold`).
                record = await self._store.create_run(
                    request, owner=self.owner, lease_until=self._lease(), asked_at=asked_at
                )
            # Into its line after every run asked before it: here, or the shared one (where a
            # run still held by this replica would be passed over by the claims).
            await turn()
            if self._shared is not None:
                await self._shared.hold(record, listener)
            else:
                self._start(record, listener, request, resume=False)
        return record

    async def control(self, run_id: str, action: str) -> RunRecord | None:
        """Summarize or cancel a run wherever it runs (or waits): the run, or None when it has
        ended (or, with one process, is not running here)."""
        active = self._active.get(run_id)
        if active is not None:
            _apply(active, action)
            return active.record
        if self._shared is None:
            return None
        record = await self._store.request_control(run_id, action)
        if record is None:
            return None
        await self._shared.signal_control(run_id)
        if action == "cancel" and record.owner is None:
            # Still waiting for any replica: this one ends it now, in the run's own thread.
            listener = self._shared.release(run_id) or self._shared.listener_for(record)
            if listener is not None and await self._claim(record):
                self.start_claimed(record.model_copy(update={"control": action}), listener)
        return record

    async def choose(
        self, run_id: str, choice: int | None, *, alone: bool = False
    ) -> RunRecord | None:
        """A person's choice of company (a candidate's index; None: "none of these") for a run
        that waits for one, wherever it runs: the run, or None when it is not waiting.
        `alone`: a front end with nobody to ask takes `choice` (here, not across replicas)."""
        active = self._active.get(run_id)
        if active is not None:
            control = active.control
            waiting = control.awaiting_choice and control.choose(choice, alone=alone)
            return active.record if waiting else None
        if self._shared is None:
            return None
        record = await self._store.request_choice(run_id, choice_action(choice))
        if record is not None:
            await self._shared.signal_control(run_id)
        return record

    def replicas_alive(self) -> int:
        """How many replicas share the work now (1 without `shared`): Slack's rate limits are
        divided between them."""
        return self._shared.alive if self._shared is not None else 1

    def has_free_slot(self) -> bool:
        researching = sum(1 for active in self._active.values() if not active.persisted)
        return researching < self._max_concurrent

    def start_claimed(self, record: RunRecord, listener: RunListener) -> None:
        """Start a run this replica just claimed from the shared queue."""
        self._start(record, listener, request_of(record), resume=False)
        if record.control is not None:
            _apply(self._active[record.run_id], record.control)

    async def control_here(self, run_id: str) -> None:
        """Control pressed on another replica: applied if the run is running here."""
        active = self._active.get(run_id)
        if active is not None:
            action = await self._store.pending_control(run_id)
            if action is not None:
                _apply(active, action)

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

    async def shutdown(self, *, delivery_grace_s: float = 10.0) -> None:
        """Stop every run now: running ones are left interrupted, queued ones stay queued, all
        for the next start. A run already stored but still delivering gets a short grace
        (call this before closing the chat clients); undelivered, it is delivered next start."""
        if self._shared is not None:
            await self._shared.close()
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
        try:
            if not await self._queue.turn(run_id, active.control.cancel_requested, self._announce):
                await active.emit(RunFinished(ending=Ending.CANCELLED, turns=0, usage=Usage()))
                return await active.persist(Outcome(ending=Ending.CANCELLED))
            active.record = await self._store.mark_running(run_id)
            history = await self._store.events(run_id) if resume else None
            await self._queue.take(run_id)  # runs given slots at once start in line order
            if history is not None:
                events = self._engine.recover(run_id, request, history, active.control)
            else:
                events = self._engine.research(run_id, request, active.control)
            return await active.consume(events, recovered=resume)
        finally:
            self._queue.leave(run_id)
            if self._shared is not None:
                self._shared.wake()  # a slot is free: the shared line's next run, now

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
        queued = active.record.status is RunStatus.QUEUED  # the engine never had it
        status, error = (RunStatus.QUEUED, None) if queued else (RunStatus.INTERRUPTED, STOPPED)
        try:
            await self._store.leave_run(run_id, status, error=error)
        except StoreError as store_error:
            log.error("run %s: could not mark it %s: %s", run_id, status.value, store_error)

    async def _announce(self, run_id: str, position: int) -> None:
        waiting = self._active.get(run_id)
        if waiting is not None:
            await waiting.emit(RunQueued(position=position))


def _apply(active: ActiveRun, action: str) -> None:
    if action.startswith(CHOOSE):
        try:
            active.control.choose(parse_choice(action))
        except ValueError:  # not ours: the column holds only what `choice_action` wrote
            log.warning("run %s: a choice that is no choice: %r", active.record.run_id, action)
    elif action == "cancel":
        active.control.cancel()
    else:
        active.control.summarize()
