"""The watches' clock, ticked by the test on a clock it moves (no sleeps): a due watch starts
one run through the runs service, marked with its watch; a run still going is not doubled; a
run the budget refuses is told once and tried again the next period; started as `serve` starts
it, the clock runs a terminal watch unattended at once, and a chat watch as soon as its front end
attaches, shown by that front end as a new run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, event

from bot.domain import Origin, RunRecord, RunStatus
from bot.runs.manager import RunManager
from bot.runs.quota import Quota, QuotaLimits
from bot.runs.watch_scheduler import Unattended, WatchedRun, WatchScheduler
from bot.store.rows import iso
from bot.store.runs import Store
from bot.store.schema import WATCHES
from bot.watches.cadence import Cadence
from bot.watches.model import NewWatch, Watch
from tests.adapters.scripted_engine import ScriptedEngine
from tests.conftest import Recorder
from tests.process import eventually
from tests.watches.clock import MONDAY_9, Clock

ACME = NewWatch(
    topic="Acme Robotics",
    platform="slack",
    workspace="T1",
    channel="C1",
    created_by="U1",
    cadence=Cadence.DAILY,
)


@dataclass
class World:
    clock: Clock
    store: Store
    engine: ScriptedEngine
    scheduler: WatchScheduler
    listeners: list[Recorder] = field(default_factory=list)
    told: list[str] = field(default_factory=list)


@pytest.fixture
async def world(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[World]:
    clock = Clock()
    store = await Store.open(tmp_path / "runs.sqlite3", clock=clock)
    engine = ScriptedEngine()
    runs = RunManager(store, engine, quota=Quota(store, request.param))
    listeners: list[Recorder] = []
    told: list[str] = []

    def listener_for(watch: Watch, missed: int) -> Recorder:
        listeners.append(Recorder())
        return listeners[-1]

    async def refused(watch: Watch, why: str) -> None:
        told.append(why)

    scheduler = WatchScheduler(store, runs.submit, listener_for, ["slack"], refused=refused)
    yield World(clock, store, engine, scheduler, listeners, told)
    engine.release.set()
    await runs.shutdown()
    await store.close()


@pytest.mark.parametrize("world", [QuotaLimits()], indirect=True)
async def test_a_due_watch_starts_one_run_and_a_run_still_going_is_not_doubled(
    world: World,
) -> None:
    watch = await world.store.add_watch(ACME, limit=20)
    [run_id] = await world.scheduler.tick()
    assert await world.scheduler.tick() == []
    run = await world.store.get_run(run_id)
    assert (run.topic, run.origin.channel) == ("Acme Robotics", "C1")
    [listed] = await world.store.list_watches("slack", "T1")
    assert listed.last_run_id == run_id

    world.clock.now = MONDAY_9 + timedelta(days=1)
    assert await world.scheduler.tick() == []  # the first is still going: the next one waits
    world.engine.release.set()
    await world.listeners[0].finished.wait()
    world.clock.now = MONDAY_9 + timedelta(days=1, minutes=1)
    assert len(await world.scheduler.tick()) == 1
    assert watch.id == listed.id


@pytest.mark.parametrize("world", [QuotaLimits(user_runs_per_hour=1)], indirect=True)
async def test_a_refused_run_is_told_once_and_tried_next_period(world: World) -> None:
    other = ACME.model_copy(update={"topic": "Globex"})
    await world.store.add_watch(ACME, limit=20)
    await world.store.add_watch(other, limit=20)
    assert len(await world.scheduler.tick()) == 1  # one person, one run an hour
    assert len(world.told) == 1
    world.engine.release.set()
    await world.listeners[0].finished.wait()
    world.clock.now = MONDAY_9 + timedelta(days=1)
    started = await world.scheduler.tick()
    assert len(started) == 1 and len(world.told) == 1


@pytest.mark.parametrize("world", [QuotaLimits()], indirect=True)
async def test_the_clock_under_serve_runs_a_terminal_watch_unattended_at_once(
    world: World,
) -> None:
    watch = await world.store.add_watch(NewWatch(topic="Acme Robotics"), limit=20)
    runs = RunManager(world.store, world.engine)
    clock = WatchScheduler(
        world.store, runs.submit, lambda watch, missed: Unattended(watch), ["terminal"]
    )
    world.engine.release.set()
    clock.start(tick_s=3_600)  # its first tick is at once

    async def ended() -> bool:
        [listed] = await world.store.list_watches("terminal", "")
        if listed.last_run_id is None:
            return False
        return (await world.store.get_run(listed.last_run_id)).status is RunStatus.DONE

    try:
        await eventually(ended)
    finally:
        await clock.stop()
        await runs.shutdown()
    assert watch.status.value == "active"


@pytest.mark.parametrize("world", [QuotaLimits()], indirect=True)
async def test_a_chat_watch_starts_when_its_front_end_attaches_and_is_shown_there_as_new(
    world: World,
) -> None:
    runs = RunManager(world.store, world.engine)
    shown: list[tuple[RunRecord, Recorder]] = []

    def front_end(record: RunRecord) -> Recorder:
        shown.append((record, Recorder()))
        return shown[-1][1]

    async def notice(origin: Origin, text: str) -> None:
        raise AssertionError(f"nothing to tell: {text}")

    clock = WatchScheduler(
        world.store,
        runs.submit,
        lambda watch, missed: WatchedRun(runs.front_ends.listener_for, missed),
        [],
        front_ends=runs.front_ends,
    )
    await world.store.add_watch(ACME, limit=20)
    assert await clock.tick() == []  # no Slack here yet: the watch waits for one
    world.engine.release.set()
    runs.front_ends.wake()
    clock.start(tick_s=3_600)  # after its first tick, only a wake ticks again within the hour

    async def first_tick_begun() -> bool:
        return not runs.front_ends.due.is_set()  # cleared just before it

    await eventually(first_tick_begun)
    runs.front_ends.attach("slack", front_end, notice)

    async def finished() -> bool:
        return bool(shown) and shown[0][1].finished.is_set()

    try:
        await eventually(finished)
    finally:
        await clock.stop()
        await runs.shutdown()
    [(record, listener)] = shown
    [listed] = await world.store.list_watches("slack", "T1")
    assert (record.run_id, record.status) == (listed.last_run_id, RunStatus.QUEUED)
    assert listener.outcome.report is not None


@pytest.mark.parametrize("world", [QuotaLimits()], indirect=True)
async def test_an_idle_tick_over_a_thousand_watches_is_one_query(
    world: World, tmp_path: Path
) -> None:
    first = await world.store.add_watch(ACME, limit=20)
    await world.store.resume_watch(first.id, "slack", "T1")  # due tomorrow, not now
    tomorrow = iso(MONDAY_9 + timedelta(days=1))
    row = first.model_dump(mode="json") | {"next_run_at": tomorrow, "created_at": iso(MONDAY_9)}
    engine = create_engine(f"sqlite:///{tmp_path / 'runs.sqlite3'}")
    with engine.begin() as conn:
        conn.execute(WATCHES.insert(), [row | {"id": f"w{n:06x}"} for n in range(1, 1_000)])
    engine.dispose()
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    event.listen(Engine, "before_cursor_execute", count)
    try:
        assert await world.scheduler.tick() == []
    finally:
        event.remove(Engine, "before_cursor_execute", count)
    # The claim's transaction and its one query, however many watches there are.
    assert [s.split()[0] for s in statements] == ["BEGIN", "SELECT"]
