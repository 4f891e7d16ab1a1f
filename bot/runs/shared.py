"""The queue several replicas share through one database, as one replica sees it.

A command is recorded by the replica that received it, owned by it until the run's thread
shows it: it starts the run when it has a free slot, else tells the run's place in the shared
line and lets it go, keeping the run's listener. Any replica with a free slot claims
the oldest unclaimed run of a platform it serves (the store's row lock makes the claim
once-only) and runs it with its own listener for that run, or with the one it holds. Every
replica beats (the replicas table), renews its runs' leases, and takes over the runs of a
replica whose leases lapsed. Signals (NOTIFY) wake everyone at once; a timer covers a lost one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Protocol

from bot.agent.events import RunQueued
from bot.domain import RunRecord
from bot.errors import StoreError
from bot.runs.mailbox import LetGo, RunListener
from bot.store.runs import Store
from bot.store.signals import Signal, Signals

log = logging.getLogger(__name__)
ListenerFor = Callable[[RunRecord], RunListener | None]


class Runner(Protocol):
    """What the dispatcher needs of the runs manager."""

    owner: str

    def has_free_slot(self) -> bool: ...

    def start_claimed(self, record: RunRecord, listener: RunListener) -> None: ...

    async def control_here(self, run_id: str) -> None: ...

    async def take_orphans(self) -> list[str]: ...


class Held:
    """A run this replica recorded and holds the listener of, until some replica claims it."""

    def __init__(self, record: RunRecord, listener: RunListener) -> None:
        self.record = record
        self.listener = listener
        self.position: int | None = None


class SharedQueue:
    def __init__(self, store: Store, signals: Signals, runner: Runner, *, lease_s: float) -> None:
        self._store = store
        self._signals = signals
        self._runner = runner
        self._lease_s = lease_s
        self._listeners: dict[str, ListenerFor] = {}
        self._held: dict[str, Held] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.alive = 1
        """Replicas that beat within a lease (this one included), as of the last beat."""

    @property
    def platforms(self) -> set[str]:
        return set(self._listeners)

    async def attach(self, platform: str, listener_for: ListenerFor) -> None:
        """This replica serves `platform` from now on; its loops start with the first."""
        self._listeners[platform] = listener_for
        if not self._tasks:
            await self._signals.start()
            for loop in (self._dispatch, self._hear, self._beat):
                self._tasks.append(asyncio.create_task(loop(), name=f"shared-{loop.__name__}"))
        await self._store.beat(self._runner.owner, self.platforms, self._store.now())
        self.wake()

    def listener_for(self, record: RunRecord) -> RunListener | None:
        chosen = self._listeners.get(record.origin.platform)
        return chosen(record) if chosen is not None else None

    def wake(self) -> None:
        self._wake.set()

    async def hold(self, record: RunRecord, listener: RunListener) -> None:
        """A run just recorded here, owned by this replica so that no other one shows it in a
        thread first: started here when a slot is free and no run waits ahead of it; else
        shown with its place in line, then let go for whichever replica is free first.
        Follow-ups always wait in line, where one of a run's follow-ups at a time is claimed."""
        position = await self._store.queue_position(
            record.run_id, self.platforms, reserved_by=self._runner.owner
        )
        first = position is None or position == 1  # (None: not a platform of the line)
        if record.parent_run_id is None and first and self._runner.has_free_slot():
            self._runner.start_claimed(record, listener)
            await self._publish("claimed", record.run_id)
            return
        held = self._held[record.run_id] = Held(record, listener)
        if position is not None:
            held.position = position
            await self._tell(held, RunQueued(position=position))
        await self._store.leave_run(record.run_id, record.status)
        self.wake()
        await self._publish("queued", record.run_id)

    def release(self, run_id: str) -> RunListener | None:
        held = self._held.pop(run_id, None)
        return held.listener if held is not None else None

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await self._signals.close()
        with contextlib.suppress(StoreError):
            await self._store.forget_replica(self._runner.owner)

    async def signal_control(self, run_id: str) -> None:
        await self._publish("control", run_id)

    async def _publish(self, kind: str, run_id: str = "") -> None:
        try:
            await self._signals.publish(kind, run_id)
        except StoreError as error:  # the others still look on their timer
            log.warning("could not signal %s %s: %s", kind, run_id, error)

    async def _dispatch(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._lease_s / 3)
            self._wake.clear()
            try:
                await self._claim_while_free()
                await self._tell_positions()
            except StoreError as error:
                log.warning("queue: %s", error)

    async def _claim_while_free(self) -> None:
        while self._listeners and self._runner.has_free_slot():
            lease = self._store.now() + timedelta(seconds=self._lease_s)
            record = await self._store.claim_next(self._runner.owner, lease, self.platforms)
            if record is None:
                return
            listener = self.release(record.run_id) or self.listener_for(record)
            if listener is None:  # a platform attached a moment ago and gone: put it back
                await self._store.leave_run(record.run_id, record.status)
                return
            self._runner.start_claimed(record, listener)
            await self._publish("claimed", record.run_id)

    async def _tell_positions(self) -> None:
        """Each run held here hears its place when it changes; one claimed elsewhere is let go
        (its claimer tells its thread from now on)."""
        for run_id, held in list(self._held.items()):
            position = await self._store.queue_position(
                run_id, self.platforms, reserved_by=self._runner.owner
            )
            if position is None:
                self._held.pop(run_id, None)
                if isinstance(held.listener, LetGo):
                    await held.listener.let_go(held.record)
            elif position != held.position:
                held.position = position
                await self._tell(held, RunQueued(position=position))

    async def _tell(self, held: Held, event: RunQueued) -> None:
        await self._store.append_event(held.record.run_id, event)
        try:
            await held.listener.on_event(held.record, event)
        except Exception:  # a listener's failure is its platform's, never the queue's
            log.exception("run %s: its listener failed on %s", held.record.run_id, event.kind)

    async def _hear(self) -> None:
        async for signal in self._signals.subscribe():
            await self._on_signal(signal)

    async def _on_signal(self, signal: Signal) -> None:
        if signal.kind == "control":
            await _logged(self._runner.control_here(signal.run_id))
        else:  # queued, claimed, resync: the line moved
            self.wake()

    async def _beat(self) -> None:
        """Alive: say so, keep this replica's runs, and take those of replicas that are not."""
        while True:
            await asyncio.sleep(self._lease_s / 3)
            now = self._store.now()
            try:
                await self._store.beat(self._runner.owner, self.platforms, now)
                seen_since = now - timedelta(seconds=self._lease_s)
                self.alive = max(1, len(await self._store.replicas(seen_since=seen_since)))
                await self._store.renew_leases(
                    self._runner.owner, now + timedelta(seconds=self._lease_s)
                )
                if await self._runner.take_orphans():
                    await self._publish("claimed")
            except StoreError as error:
                log.warning("replica heartbeat: %s", error)
            self.wake()


async def _logged(step: Awaitable[None]) -> None:
    try:
        await step
    except StoreError as error:
        log.warning("control: %s", error)
