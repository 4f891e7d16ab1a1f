"""What replicas share through the database, against real databases: the queue's claims under
a burst from several replicas, places in line, control pressed anywhere, heartbeats, two
replicas migrating one new database at once, and signals that survive a server restart."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.domain import Origin, Request, RunStatus
from bot.store.migrations import latest
from bot.store.runs import Store
from bot.store.signals import PostgresSignals, Signal
from tests.postgres import PgServer

SLACK = Origin(platform="slack", workspace="T1", channel="C1", user="U1", user_name="ada")
LATER = datetime(2030, 1, 1, tzinfo=UTC)


def request(topic: str, platform: str = "slack") -> Request:
    return Request(topic=topic, origin=SLACK.model_copy(update={"platform": platform}))


@pytest.fixture
async def store(db_target: str | Path) -> AsyncIterator[Store]:
    async with Store.connect(db_target) as opened:
        yield opened


async def test_the_oldest_unclaimed_run_of_a_served_platform_is_claimed_first(store: Store) -> None:
    first = await store.create_run(request("first"))
    await store.create_run(request("a discord run", platform="discord"))
    second = await store.create_run(request("second"))
    owned = await store.create_run(request("owned"), owner="other", lease_until=LATER)

    claimed = await store.claim_next("me", LATER, {"slack"})
    assert claimed is not None and claimed.run_id == first.run_id and claimed.owner == "me"
    assert await store.queue_position(second.run_id, {"slack"}) == 1
    assert await store.queue_position(first.run_id, {"slack"}) is None  # claimed
    assert await store.queue_position(owned.run_id, {"slack"}) is None  # never in the line
    again = await store.claim_next("me", LATER, {"slack"})
    assert again is not None and again.run_id == second.run_id
    assert await store.claim_next("me", LATER, {"slack"}) is None


async def test_follow_ups_of_one_run_are_taken_one_at_a_time(store: Store) -> None:
    run = await store.create_run(request("Acme"))
    await store.finish_run(run.run_id, status=RunStatus.DONE, ending="completed")
    asked = Request(topic="Who are their customers?", origin=SLACK, parent_run_id=run.run_id)
    first = await store.create_run(asked)
    second = await store.create_run(asked.model_copy(update={"topic": "And their rivals?"}))
    other = await store.create_run(request("Globex"))

    taken = await store.claim_next("a", LATER, {"slack"})
    assert taken is not None and taken.run_id == first.run_id
    # The second follow-up waits for the first; the run behind it does not.
    passed = await store.claim_next("b", LATER, {"slack"})
    assert passed is not None and passed.run_id == other.run_id
    assert await store.claim_next("b", LATER, {"slack"}) is None
    await store.finish_run(first.run_id, status=RunStatus.DONE, ending="answered")
    await store.mark_delivered(first.run_id)
    after = await store.claim_next("b", LATER, {"slack"})
    assert after is not None and after.run_id == second.run_id


async def test_places_in_line_follow_the_order_runs_were_made(store: Store) -> None:
    made = [await store.create_run(request(f"topic {n}")) for n in range(3)]
    places = [await store.queue_position(run.run_id, {"slack"}) for run in made]
    assert places == [1, 2, 3]
    await store.claim_next("me", LATER, {"slack"})
    assert [await store.queue_position(run.run_id, {"slack"}) for run in made[1:]] == [1, 2]


async def test_a_run_held_back_by_its_recorder_is_in_line_for_it_and_claimed_by_no_one(
    store: Store,
) -> None:
    waiting = await store.create_run(request("waiting"))
    held = await store.create_run(request("held"), owner="recorder", lease_until=LATER)

    assert await store.queue_position(held.run_id, {"slack"}) is None
    assert await store.queue_position(held.run_id, {"slack"}, reserved_by="other") is None
    assert await store.queue_position(held.run_id, {"slack"}, reserved_by="recorder") == 2
    claimed = await store.claim_next("other", LATER, {"slack"})
    assert claimed is not None and claimed.run_id == waiting.run_id
    assert await store.claim_next("other", LATER, {"slack"}) is None
    await store.leave_run(held.run_id, RunStatus.QUEUED)  # shown in its thread: let go
    again = await store.claim_next("other", LATER, {"slack"})
    assert again is not None and again.run_id == held.run_id


async def test_a_cancel_is_kept_whatever_is_pressed_after_it(store: Store) -> None:
    run = await store.create_run(request("Acme"))
    assert (await store.request_control(run.run_id, "summarize")) is not None
    assert await store.pending_control(run.run_id) == "summarize"
    await store.request_control(run.run_id, "cancel")
    await store.request_control(run.run_id, "summarize")
    assert await store.pending_control(run.run_id) == "cancel"
    await store.finish_run(run.run_id, status=RunStatus.CANCELLED, ending="cancelled")
    assert await store.request_control(run.run_id, "summarize") is None  # it has ended


async def test_heartbeats_tell_which_replicas_are_alive(store: Store) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    await store.beat("a:1:x", {"slack"}, now)
    await store.beat("b:2:y", {"slack", "discord"}, now - timedelta(minutes=5))
    await store.beat("a:1:x", {"slack"}, now + timedelta(seconds=20))
    alive = await store.replicas(seen_since=now - timedelta(minutes=1))
    assert [(r.replica_id, r.platforms) for r in alive] == [("a:1:x", "slack")]
    await store.forget_replica("a:1:x")
    remaining = await store.replicas(seen_since=now - timedelta(hours=1))
    assert [(r.replica_id, r.platforms) for r in remaining] == [("b:2:y", "discord,slack")]


async def test_three_replicas_claim_a_burst_once_each(pg_url: str) -> None:
    stores = [await Store.open(pg_url) for _ in range(3)]
    try:
        made = [await stores[0].create_run(request(f"topic {n}")) for n in range(30)]

        async def drain(store: Store, owner: str) -> list[str]:
            taken = []
            while (record := await store.claim_next(owner, LATER, {"slack"})) is not None:
                taken.append(record.run_id)
            return taken

        claimed = await asyncio.gather(*(drain(s, f"r{n}") for n, s in enumerate(stores)))
    finally:
        for store in stores:
            await store.close()
    every = [run_id for taken in claimed for run_id in taken]
    assert sorted(every) == sorted(run.run_id for run in made)  # all, and none twice


async def test_two_replicas_migrate_one_new_database_at_once(pg_server: PgServer) -> None:
    name = pg_server.empty_database()
    try:
        url = pg_server.url(name)
        opened = await asyncio.gather(Store.open(url), Store.open(url))
        for store in opened:
            await store.close()
        assert pg_server.execute("SELECT version FROM schema_version", name) == [(latest(),)]
        tables = pg_server.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'runs'", name)
        assert tables == [(1,)]
    finally:
        pg_server.drop(name)


async def test_signals_reach_other_replicas_and_come_back_after_a_restart(
    pg_server: PgServer,
) -> None:
    name = pg_server.new_database()
    url = pg_server.url(name)
    sender, hearer = await Store.open(url), await Store.open(url)
    sending = PostgresSignals(sender.database, url)
    hearing = PostgresSignals(hearer.database, url)
    heard: asyncio.Queue[Signal] = asyncio.Queue()

    async def listen() -> None:
        async for signal in hearing.subscribe():
            heard.put_nowait(signal)

    listener = asyncio.create_task(listen())
    try:
        await hearing.start()
        await asyncio.sleep(0)  # the subscription is in place before anything is said
        await sending.publish("control", "run1")
        assert await asyncio.wait_for(heard.get(), 10) == Signal("control", "run1")

        await asyncio.to_thread(pg_server.restart)
        assert await asyncio.wait_for(heard.get(), 30) == Signal("resync")
        await sending.publish("queued", "run2")  # the pool's dead connections are replaced
        assert await asyncio.wait_for(heard.get(), 10) == Signal("queued", "run2")
    finally:
        listener.cancel()
        await hearing.close()
        await sender.close()
        await hearer.close()
        pg_server.drop(name)
