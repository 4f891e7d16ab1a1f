"""The watches' clock under `serve`: every tick, the watches due on the platforms served are
claimed (one query, each by one replica) and each starts one run through the runs service, as
any run does: the budget, the hourly limit and the queue apply. A refused run is recorded on its
watch once (and told once) and tried again the next period."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection

from bot.agent.events import Event
from bot.domain import Origin, Request, RunRecord
from bot.errors import RequestError, StoreError
from bot.runs.mailbox import RunListener
from bot.runs.outcome import Outcome
from bot.store.runs import Store
from bot.watches.model import DueWatch, Watch

log = logging.getLogger(__name__)
Submit = Callable[[Request, RunListener], Awaitable[RunRecord]]
ListenerFor = Callable[[Watch, int], RunListener]
"""The front end that follows a watch's run (and how many periods it covers)."""
Refused = Callable[[Watch, str], Awaitable[None]]
"""Tells the watch's conversation, once, that its run was refused and why."""


class Unattended:
    """Follows a watched run nobody is looking at (a terminal watch under `serve`): its report
    is kept in the store, for `show` and the watch's next run; its end is logged."""

    def __init__(self, watch: Watch) -> None:
        self._watch_id = watch.id

    async def on_event(self, run: RunRecord, event: Event) -> None:
        return None

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        log.info("watch %s: run %s ended (%s)", self._watch_id, run.run_id, run.status.value)


def request_for(watch: Watch) -> Request:
    origin = Origin(
        platform=watch.platform,
        workspace=watch.workspace,
        channel=watch.channel,
        user=watch.created_by,
        user_name=watch.created_by_name,
        private=False,
    )
    return Request(
        topic=watch.topic, mode=watch.mode, depth=watch.depth, origin=origin, watch_id=watch.id
    )


class WatchScheduler:
    def __init__(
        self,
        store: Store,
        submit: Submit,
        listener_for: ListenerFor,
        platforms: Collection[str],
        *,
        refused: Refused | None = None,
    ) -> None:
        self._store = store
        self._submit = submit
        self._listener_for = listener_for
        self._platforms = sorted(platforms)
        self._refused = refused
        self._task: asyncio.Task[None] | None = None

    async def tick(self) -> list[str]:
        """Start the runs of the watches due now; returns the ids of the runs started."""
        started = []
        for due in await self._store.claim_due_watches(self._platforms):
            run_id = await self._start(due)
            if run_id is not None:
                started.append(run_id)
        return started

    async def _start(self, due: DueWatch) -> str | None:
        watch = due.watch
        try:
            record = await self._submit(request_for(watch), self._listener_for(watch, due.missed))
        except RequestError as error:  # the budget or the hourly limit: next period
            log.info("watch %s: run refused: %s", watch.id, error)
            if await self._store.record_watch_refused(watch.id, str(error)) and self._refused:
                await self._refused(watch, str(error))
            return None
        await self._store.record_watch_run(watch.id, record.run_id)
        log.info("watch %s: run %s started (%d periods due)", watch.id, record.run_id, due.missed)
        return record.run_id

    def start(self, tick_s: float) -> None:
        self._task = asyncio.create_task(self._loop(tick_s), name="watch-scheduler")

    async def _loop(self, tick_s: float) -> None:
        while True:
            try:
                await self.tick()
            except StoreError as error:  # a lost database must not end the clock
                log.warning("watches: %s", error)
            await asyncio.sleep(tick_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
