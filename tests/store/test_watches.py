"""Watches in the store, on both engines: made and limited per workspace, found only in their
workspace, claimed when due once per watch (also by two replicas at once), a restart after
missed periods starting one run, and a watch with a run still going not claimed again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.agent.report.model import Report
from bot.domain import Origin, Request, RunStatus
from bot.errors import NotFoundError, RequestError
from bot.store.runs import Store
from bot.watches.cadence import Cadence
from bot.watches.model import NewWatch, WatchStatus
from tests.watches.clock import MONDAY_9, Clock


def acme(cadence: Cadence = Cadence.DAILY) -> NewWatch:
    return NewWatch(
        topic="Acme Robotics",
        platform="slack",
        workspace="T1",
        channel="C1",
        created_by="U1",
        cadence=cadence,
    )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(db_target: str | Path, clock: Clock) -> AsyncIterator[Store]:
    async with Store.connect(db_target, clock=clock) as opened:
        yield opened


async def test_a_new_watch_is_due_at_once_and_then_each_period(store: Store, clock: Clock) -> None:
    watch = await store.add_watch(acme(), limit=20)
    assert [due.watch.id for due in await store.claim_due_watches(["slack"])] == [watch.id]
    assert await store.claim_due_watches(["slack"]) == []
    (listed,) = await store.list_watches("slack", "T1")
    assert listed.next_run_at == MONDAY_9 + timedelta(days=1)
    clock.now = MONDAY_9 + timedelta(days=1)
    assert len(await store.claim_due_watches(["slack"])) == 1


async def test_a_restart_after_three_missed_periods_starts_one_run(
    store: Store, clock: Clock
) -> None:
    await store.add_watch(acme(), limit=20)
    await store.claim_due_watches(["slack"])
    clock.now = MONDAY_9 + timedelta(days=3, hours=2)
    (due,) = await store.claim_due_watches(["slack"])
    assert due.missed == 3
    (listed,) = await store.list_watches("slack", "T1")
    assert (listed.next_run_at, listed.last_missed) == (MONDAY_9 + timedelta(days=4), 3)


async def test_a_watch_whose_run_is_still_going_waits(store: Store, clock: Clock) -> None:
    watch = await store.add_watch(acme(), limit=20)
    await store.claim_due_watches(["slack"])
    run = await store.create_run(Request(topic="Acme Robotics", origin=Origin(platform="slack")))
    await store.record_watch_run(watch.id, run.run_id)
    clock.now = MONDAY_9 + timedelta(days=1)
    assert await store.claim_due_watches(["slack"]) == []
    (listed,) = await store.list_watches("slack", "T1")
    assert (listed.last_run_id, listed.last_run_at) == (run.run_id, MONDAY_9)


async def test_paused_watches_are_not_claimed_and_resume_at_their_next_time(
    store: Store, clock: Clock
) -> None:
    watch = await store.add_watch(acme(), limit=20)
    paused = await store.pause_watch(watch.id, "slack", "T1", "channel_not_found")
    assert (paused.status, paused.paused_reason) == (WatchStatus.PAUSED, "channel_not_found")
    assert await store.claim_due_watches(["slack"]) == []
    resumed = await store.resume_watch(watch.id, "slack", "T1")
    assert resumed.next_run_at == MONDAY_9 + timedelta(days=1)


async def test_a_watch_of_another_workspace_is_not_found_and_the_limit_holds(
    store: Store,
) -> None:
    watch = await store.add_watch(acme(), limit=1)
    with pytest.raises(NotFoundError, match=f"No watch {watch.id} here"):
        await store.remove_watch(watch.id, "slack", "T2")
    with pytest.raises(RequestError, match="No more watches here: 1 is the most"):
        await store.add_watch(acme(), limit=1)
    await store.remove_watch(watch.id, "slack", "T1")
    assert await store.list_watches("slack", "T1") == []


async def test_a_refusal_is_told_once(store: Store) -> None:
    watch = await store.add_watch(acme(), limit=20)
    assert await store.record_watch_refused(watch.id, "budget") is True
    assert await store.record_watch_refused(watch.id, "budget") is False


async def test_two_replicas_claim_one_due_watch_once(pg_url: str) -> None:
    stores = [await Store.open(pg_url, clock=Clock()) for _ in range(2)]
    try:
        await stores[0].add_watch(acme(), limit=20)
        claimed = await asyncio.gather(*(s.claim_due_watches(["slack"]) for s in stores))
    finally:
        for store in stores:
            await store.close()
    assert sorted(len(taken) for taken in claimed) == [0, 1]


async def test_a_watched_run_finds_the_reports_of_the_watchs_earlier_runs(
    store: Store, clock: Clock
) -> None:
    watch = await store.add_watch(acme(), limit=20)
    made = []
    for n in range(3):
        clock.now = MONDAY_9 + timedelta(days=n)
        run = await store.create_run(
            Request(topic="Acme Robotics", origin=Origin(platform="slack"))
        )
        await store.record_watch_run(watch.id, run.run_id)
        report = (Report(title=f"Acme {n}", tldr="x"), f"# Acme {n}")
        await store.finish_run(run.run_id, status=RunStatus.DONE, ending="completed", report=report)
        made.append(run.run_id)
    earlier = await store.earlier_watch_reports(watch.id, made[2])
    assert [r.title for r in earlier] == ["Acme 0", "Acme 1"]
    assert await store.earlier_watch_reports(watch.id, made[0]) == []
