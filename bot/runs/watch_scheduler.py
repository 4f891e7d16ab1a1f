"""The watches' clock under `serve`: every tick, the watches due on the platforms served are
claimed (one query, each by one replica) and each starts one run through the runs service, as
any run does: the budget, the hourly limit and the queue apply. A refused run is recorded on its
watch once (and told once) and tried again the next period. A watched run of a chat platform is
shown by that platform's front end (`WatchedRun`), as a new run in a new thread of its channel."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection

from bot.agent.events import Event, Notice
from bot.domain import Origin, Request, RunRecord, RunStatus
from bot.errors import BotError, RequestError, StoreError
from bot.runs.front_ends import FrontEnds
from bot.runs.mailbox import LetGo, RunListener
from bot.runs.outcome import Outcome
from bot.store.runs import Store
from bot.watches.model import DueWatch, Watch

log = logging.getLogger(__name__)
Submit = Callable[[Request, RunListener], Awaitable[RunRecord]]
ListenerFor = Callable[[Watch, int], RunListener]
"""The front end that follows a watch's run (and how many periods it covers)."""
Refused = Callable[[Watch, str], Awaitable[None]]
"""Tells the watch's conversation, once, that its run was refused and why."""
Resolve = Callable[[RunRecord], RunListener | None]
"""The front end's listener for a run it did not receive (`FrontEnds.listener_for`)."""


def missed_line(missed: int) -> str:
    return f"This report covers {missed} periods that fell due while the bot was away."


class Unattended:
    """Follows a watched run nobody is looking at (a terminal watch under `serve`): its report
    is kept in the store, for `show` and the watch's next run; its end is logged."""

    def __init__(self, watch: Watch) -> None:
        self._watch_id = watch.id

    async def on_event(self, run: RunRecord, event: Event) -> None:
        return None

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        log.info("watch %s: run %s ended (%s)", self._watch_id, run.run_id, run.status.value)


class WatchedRun:
    """Follows a watched run in its chat. The front end's listener is chosen at the run's first
    event, when the record has its id; it is shown as a new run (a new thread, with its buttons),
    and one that covers periods missed says how many, in one line, first thing."""

    def __init__(self, resolve: Resolve, missed: int = 1) -> None:
        self._resolve = resolve
        self._missed = missed
        self._listener: RunListener | None = None
        self._resolved = False

    async def on_event(self, run: RunRecord, event: Event) -> None:
        if self._resolved:
            if self._listener is not None:
                await self._listener.on_event(run, event)
            return
        self._resolved = True
        # Queued: new to its front end, which shows a run it never showed with its buttons
        # (a run that had started elsewhere is only finished there, without them).
        self._listener = self._resolve(run.model_copy(update={"status": RunStatus.QUEUED}))
        if self._listener is None:
            log.warning(
                "run %s: no front end of %s here to show it", run.run_id, run.origin.platform
            )
            return
        await self._listener.on_event(run, event)
        if self._missed > 1:
            await self._listener.on_event(run, Notice(message=missed_line(self._missed)))

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        if self._listener is None:
            # Left undelivered: the platform's front end delivers it when it starts again.
            raise BotError(f"no front end of {run.origin.platform} here to deliver it")
        await self._listener.on_finished(run, outcome)

    async def let_go(self, run: RunRecord) -> None:
        if isinstance(self._listener, LetGo):
            await self._listener.let_go(run)


def request_for(watch: Watch) -> Request:
    origin = Origin(
        platform=watch.platform,
        workspace=watch.workspace,
        channel=watch.channel,
        user=watch.created_by,
        user_name=watch.created_by_name,
        # Whether the watch's channel is private is not kept: unsaid is private, so its reports
        # are found only from that channel.
        private=True,
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
        front_ends: FrontEnds | None = None,
    ) -> None:
        """`platforms`: served whatever attaches (the terminal's, under `serve`); with
        `front_ends`, also each chat platform attached there at the time of the tick, and a
        watch made or resumed (`FrontEnds.wake`) ticks at once."""
        self._store = store
        self._submit = submit
        self._listener_for = listener_for
        self._platforms = set(platforms)
        self._refused = refused
        self._front_ends = front_ends
        self._task: asyncio.Task[None] | None = None

    async def tick(self) -> list[str]:
        """Start the runs of the watches due now; returns the ids of the runs started."""
        started: list[str] = []
        platforms = self._platforms | (self._front_ends.platforms if self._front_ends else set())
        if not platforms:
            return started
        for due in await self._store.claim_due_watches(sorted(platforms)):
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
        due = self._front_ends.due if self._front_ends is not None else asyncio.Event()
        while True:
            due.clear()  # before the tick: a wake during it ticks again at once
            try:
                await self.tick()
            except StoreError as error:  # a lost database must not end the clock
                log.warning("watches: %s", error)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(due.wait(), timeout=tick_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
