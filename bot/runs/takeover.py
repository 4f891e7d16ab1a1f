"""Taking runs over: at start, the runs a previous life of this process left; with replicas,
the runs of a replica whose leases lapsed; and `resume` from the terminal. Each is claimed by
compare-and-swap on its owner, so two processes never both take one, then finished from its
stored evidence (or its stored outcome delivered) in its own thread. A part of `RunManager`."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from bot.domain import Request, RunRecord, RunStatus
from bot.errors import RequestError
from bot.runs.active import ActiveRun, request_of, resumes
from bot.runs.mailbox import RunListener
from bot.runs.outcome import stored_outcome
from bot.runs.owner import owner_gone, owner_pid
from bot.runs.shared import ListenerFor, SharedQueue
from bot.store.runs import Store

REDELIVER_WITHIN = timedelta(days=1)
"""Undelivered outcomes older than this are not pushed into a thread at start any more."""


class Takeover:
    owner: str
    _store: Store
    _shared: SharedQueue | None
    _active: dict[str, ActiveRun]

    def _lease(self) -> datetime:
        raise NotImplementedError

    def _start(
        self, record: RunRecord, listener: RunListener, request: Request, *, resume: bool
    ) -> None:
        raise NotImplementedError

    async def recover(self, listener_for: ListenerFor, platform: str | None = None) -> list[str]:
        """At start: take over the runs whose process is gone (queued ones queue again, in
        order; the others are finished from their evidence), and deliver every outcome that
        never reached its front end. `listener_for` gives the front end that should hear about
        a run (None: another front end's run, left for it). Returns the ids taken. With
        `shared`, the front end of `platform` also starts taking runs from the shared queue,
        and the replica keeps taking over runs of replicas that die."""
        if self._shared is not None and platform is not None:
            await self._shared.attach(platform, listener_for)
            return await self.take_orphans()
        return await self._take_orphans(listener_for)

    async def take_orphans(self) -> list[str]:
        if self._shared is None:
            return []
        return await self._take_orphans(self._shared.listener_for)

    async def _take_orphans(self, listener_for: ListenerFor) -> list[str]:
        taken = []
        unfinished = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)
        for record in await self._store.runs_with_status(*unfinished):
            if self._shared is not None and record.owner is None:
                continue  # waiting in the shared queue: claimed in turn, not taken over
            listener = self._listener_if_free(record, listener_for)
            if listener is None or not await self._claim(record):
                continue
            if self._shared is not None and record.status is RunStatus.QUEUED:
                await self._store.leave_run(record.run_id, RunStatus.QUEUED)  # back in line
                self._shared.wake()
                continue
            self._start(record, listener, request_of(record), resume=resumes(record))
            taken.append(record.run_id)
        since = self._store.now() - REDELIVER_WITHIN
        for record in await self._store.undelivered_runs(since=since):
            listener = self._listener_if_free(record, listener_for)
            if listener is not None and await self._claim(record):
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

    def _orphan(self, record: RunRecord) -> bool:
        """Nobody runs it any more (its process is gone), so this process may take it."""
        return owner_gone(record.owner, record.lease_until, now=self._store.now(), me=self.owner)

    def _listener_if_free(self, record: RunRecord, listener_for: ListenerFor) -> RunListener | None:
        if record.run_id in self._active or not self._orphan(record):
            return None
        return listener_for(record)

    async def _claim(self, record: RunRecord) -> bool:
        return await self._store.claim_run(
            record.run_id, seen_owner=record.owner, owner=self.owner, lease_until=self._lease()
        )

    def _redeliver(self, record: RunRecord, listener: RunListener) -> None:
        active = ActiveRun(record, listener, self._store)
        active.persisted = True
        self._active[record.run_id] = active
        active.task = asyncio.create_task(
            self._deliver_stored(active), name=f"deliver-{record.run_id}"
        )

    async def _deliver_stored(self, active: ActiveRun) -> None:
        try:
            await active.deliver(await stored_outcome(self._store, active.record))
        finally:
            active.mailbox.close()
            self._active.pop(active.record.run_id, None)
            active.finished.set()
