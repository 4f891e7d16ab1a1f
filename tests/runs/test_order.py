"""Runs start in the order they were asked for, however many wait: on either engine, and with
replicas sharing one line; and asking for a run waits for no other request's store writes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from bot.agent.control import Control
from bot.agent.events import Ending, Event, RunFinished, RunQueued, RunStarted, Usage
from bot.domain import Origin, Request
from bot.runs.manager import RunManager
from bot.store.runs import Store
from bot.store.signals import PostgresSignals
from tests.conftest import Recorder


class Scripted:
    """An engine whose runs note that they started (and how many runs were stored when the
    first did), and end at once, or when let go."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.started: list[str] = []
        self.stored_at_first_start = 0
        self.gates: dict[str, asyncio.Event] = {}

    async def research(
        self, run_id: str, request: Request, control: Control
    ) -> AsyncIterator[Event]:
        self.started.append(request.topic)
        if len(self.started) == 1:
            self.stored_at_first_start = len(await self.store.list_runs(limit=100))
        yield RunStarted(topic=request.topic, mode=request.mode.value)
        if request.topic in self.gates:
            await self.gates[request.topic].wait()
        yield RunFinished(ending=Ending.COMPLETED, turns=1, usage=Usage())

    def recover(
        self,
        run_id: str,
        request: Request,
        history: list[Event],
        control: Control,
        *,
        why: str = "",
    ) -> AsyncIterator[Event]:
        raise AssertionError("nothing is recovered here")


async def test_thirty_runs_asked_at_once_start_in_the_order_asked(db_target: str | Path) -> None:
    topics = [f"Company {n}" for n in range(30)]
    listeners = [Recorder() for _ in topics]
    async with Store.connect(db_target) as store:
        engine = Scripted(store)
        runs = RunManager(store, engine, max_concurrent=2)
        records = await asyncio.gather(
            *(
                runs.submit(Request(topic=t), heard)
                for t, heard in zip(topics, listeners, strict=True)
            )
        )
        await asyncio.gather(*(heard.finished.wait() for heard in listeners))
        await runs.shutdown()

    assert engine.started == topics
    assert [record.topic for record in records] == topics
    assert [heard.outcome.ending for heard in listeners] == [Ending.COMPLETED] * 30
    # A run that waited heard its place only go down (a place given a slot at once is not told).
    for heard in listeners:
        places = [e.position for e in heard.events if isinstance(e, RunQueued)]
        assert places == sorted(set(places), reverse=True), places


async def test_runs_given_slots_at_once_start_in_order(db_target: str | Path) -> None:
    topics = [f"Company {n}" for n in range(6)]
    async with Store.connect(db_target) as store:
        engine = Scripted(store)
        engine.gates = {"Held": asyncio.Event()}
        runs = RunManager(store, engine, max_concurrent=4)
        held = Recorder()
        await runs.submit(Request(topic="Held"), held)
        await held.wait_for("run_started")
        listeners = [Recorder() for _ in topics]
        await asyncio.gather(
            *(
                runs.submit(Request(topic=t), heard)
                for t, heard in zip(topics, listeners, strict=True)
            )
        )
        engine.gates["Held"].set()
        await asyncio.gather(*(heard.finished.wait() for heard in [held, *listeners]))
        await runs.shutdown()

    assert engine.started == ["Held", *topics]


async def test_requests_asked_at_once_are_stored_at_once_not_one_after_another(
    db_target: str | Path,
) -> None:
    async with Store.connect(db_target) as store:
        engine = Scripted(store)
        runs = RunManager(store, engine, max_concurrent=1)
        listeners = [Recorder() for _ in range(30)]
        await asyncio.gather(
            *(runs.submit(Request(topic=f"C{n}"), heard) for n, heard in enumerate(listeners))
        )
        await asyncio.gather(*(heard.finished.wait() for heard in listeners))
        await runs.shutdown()

    # None of the thirty waited for the store writes of those asked before it: all were stored
    # before the first one's research began.
    assert engine.stored_at_first_start == 30


async def test_with_replicas_runs_start_in_order_each_as_a_slot_frees_told_to_their_asker(
    pg_url: str,
) -> None:
    topics = [f"Company {n}" for n in range(10)]
    listeners = [Recorder() for _ in topics]
    origin = Origin(platform="slack", workspace="T1", channel="C1", user="U1")
    async with Store.connect(pg_url) as store:
        engine = Scripted(store)
        # Leases of 10 minutes: the replica's own timer would look at the line every 200 s.
        signals = PostgresSignals(store.database, pg_url)
        runs = RunManager(store, engine, max_concurrent=2, lease_s=600, shared=signals)
        await runs.recover(lambda run: Recorder(), platform="slack")
        await asyncio.gather(
            *(
                runs.submit(Request(topic=t, origin=origin), heard)
                for t, heard in zip(topics, listeners, strict=True)
            )
        )
        async with asyncio.timeout(20):  # far below the timer: only a freed slot can do it
            await asyncio.gather(*(heard.finished.wait() for heard in listeners))
        await runs.shutdown()

    assert engine.started == topics
    # Each run's outcome reached the listener of the thread that asked for it.
    assert [heard.outcome.ending for heard in listeners] == [Ending.COMPLETED] * 10
