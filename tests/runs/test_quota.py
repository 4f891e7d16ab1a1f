"""The daily budget per workspace and the hourly limit per person, as the runs service applies
them when a run is submitted: a real store on a clock the test moves, a scripted engine."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.domain import Origin, Request, RunStatus
from bot.runs.manager import RunManager
from bot.runs.quota import Quota, QuotaError, QuotaLimits
from bot.store.runs import Store
from tests.adapters.scripted_engine import ScriptedEngine
from tests.conftest import Recorder

EVENING = datetime(2025, 6, 1, 20, 30, tzinfo=UTC)


@dataclass
class Clock:
    now: datetime = EVENING

    def __call__(self) -> datetime:
        return self.now


@dataclass
class World:
    clock: Clock
    store: Store
    engine: ScriptedEngine
    runs: RunManager

    async def submit(self, workspace: str = "T1", user: str = "U1") -> Recorder:
        origin = Origin(platform="slack", workspace=workspace, channel="C1", user=user)
        recorder = Recorder()
        recorder.run = await self.runs.submit(Request(topic="Acme", origin=origin), recorder)
        return recorder


@pytest.fixture
async def world(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[World]:
    limits: QuotaLimits = request.param
    clock = Clock()
    store = await Store.open(tmp_path / "runs.sqlite3", clock=clock)
    engine = ScriptedEngine()
    runs = RunManager(store, engine, quota=Quota(store, limits))
    yield World(clock, store, engine, runs)
    engine.release.set()
    await runs.shutdown()
    await store.close()


# The scripted engine's first turn costs $0.01: one run in progress spends the whole budget.
@pytest.mark.parametrize("world", [QuotaLimits(daily_budget_usd=0.01)], indirect=True)
async def test_a_spent_daily_budget_refuses_new_runs_until_midnight_and_lets_runs_finish(
    world: World,
) -> None:
    going = await world.submit(user="U1")
    await world.engine.parked(going.run.run_id).wait()

    with pytest.raises(QuotaError) as refused:
        await world.submit(user="U2")

    message = str(refused.value)
    assert "Today's research budget here ($0.01) is spent: $0.01 so far." in message
    assert "resets at midnight UTC (in 3 h 30 min)" in message
    assert "runs already going will finish" in message
    assert refused.value.retry_at == datetime(2025, 6, 2, tzinfo=UTC)
    assert [r.run_id for r in await world.store.list_runs()] == [going.run.run_id]
    # Another workspace has its own budget.
    elsewhere = await world.submit(workspace="T2")
    # The run in progress finishes as it would have.
    world.engine.release.set()
    await world.runs.wait(going.run.run_id)
    assert (await world.store.get_run(going.run.run_id)).status is RunStatus.DONE
    assert going.outcome.report is not None
    await world.runs.wait(elsewhere.run.run_id)
    # A new day, a new budget.
    world.clock.now = datetime(2025, 6, 2, 0, 0, 1, tzinfo=UTC)
    await world.submit(user="U2")


@pytest.mark.parametrize("world", [QuotaLimits(user_runs_per_hour=10)], indirect=True)
async def test_the_eleventh_run_in_an_hour_is_refused_with_when_to_ask_again(
    world: World,
) -> None:
    world.engine.release.set()
    for _ in range(10):
        await world.submit(user="U1")
        world.clock.now += timedelta(minutes=3)
    # 20:30 was the first; it is now 21:00.

    with pytest.raises(QuotaError) as refused:
        await world.submit(user="U1")

    assert str(refused.value) == (
        "Sorry, you have reached the limit of 10 research runs an hour. You can ask again at "
        "21:30 UTC (in 30 min)."
    )
    assert refused.value.retry_at == EVENING + timedelta(hours=1)
    assert len(await world.store.list_runs(limit=100)) == 10
    # Someone else, and the same person in another workspace, may still start runs.
    await world.submit(user="U2")
    await world.submit(workspace="T2", user="U1")
    # Once the first run has left the hour, there is room for one more.
    world.clock.now = EVENING + timedelta(hours=1)
    await world.submit(user="U1")
    with pytest.raises(QuotaError):
        await world.submit(user="U1")


@pytest.mark.parametrize("world", [QuotaLimits(user_runs_per_hour=1)], indirect=True)
async def test_the_terminal_has_no_hourly_limit(world: World) -> None:
    world.engine.release.set()
    for _ in range(3):
        await world.runs.submit(Request(topic="Acme"), Recorder())
    assert len(await world.store.list_runs()) == 3


@pytest.mark.parametrize("world", [QuotaLimits(user_runs_per_hour=1)], indirect=True)
async def test_one_person_asking_twice_at_once_gets_one_run_and_others_are_not_held_up(
    world: World,
) -> None:
    world.engine.release.set()
    asked = await asyncio.gather(
        world.submit(user="U1"),
        world.submit(user="U1"),
        world.submit(user="U2"),
        return_exceptions=True,
    )

    assert [type(answer) for answer in asked] == [Recorder, QuotaError, Recorder]
    assert len(await world.store.list_runs()) == 2
