"""Two replicas on one real PostgreSQL, each with the watches' clock as `serve` wires it
(bot/cli/serve.py `watch_clock`) and a Slack front end attached: a due watch, both ticking at
once, starts exactly one run, shown once, by the replica that claimed it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from bot.cli.serve import watch_clock
from bot.domain import Origin, RunRecord, RunStatus
from bot.runs.manager import RunManager
from bot.store.runs import Store
from bot.store.signals import PostgresSignals
from bot.watches.cadence import Cadence
from bot.watches.model import NewWatch
from tests.adapters.scripted_engine import ScriptedEngine
from tests.conftest import Recorder

ACME = NewWatch(
    topic="Acme Robotics",
    platform="slack",
    workspace="T1",
    channel="C1",
    created_by="U1",
    cadence=Cadence.DAILY,
)


@contextlib.asynccontextmanager
async def replica(pg_url: str, shown: list[Recorder]) -> AsyncIterator[tuple[Store, RunManager]]:
    async with Store.connect(pg_url) as store:
        engine = ScriptedEngine()
        engine.release.set()
        runs = RunManager(
            store, engine, lease_s=600, shared=PostgresSignals(store.database, pg_url)
        )

        def front_end(record: RunRecord) -> Recorder:
            shown.append(Recorder())
            return shown[-1]

        async def notice(origin: Origin, text: str) -> None:
            raise AssertionError(f"nothing to tell: {text}")

        await runs.recover(front_end, platform="slack")
        runs.front_ends.attach("slack", front_end, notice)
        try:
            yield store, runs
        finally:
            await runs.shutdown()


async def test_two_replicas_ticking_at_once_start_one_run_of_a_due_watch(pg_url: str) -> None:
    shown: list[Recorder] = []
    async with replica(pg_url, shown) as first, replica(pg_url, shown) as second:
        (store, one), (_, two) = first, second
        await store.add_watch(ACME, limit=20)
        clocks = [watch_clock(*each, terminal=False) for each in (first, second)]
        started = await asyncio.gather(*(clock.tick() for clock in clocks))
        [run_id] = [run for runs in started for run in runs]
        async with asyncio.timeout(20):
            await one.wait(run_id)
            await two.wait(run_id)
        [listener] = shown
        assert listener.finished.is_set()
        assert (await store.get_run(run_id)).status is RunStatus.DONE
        [listed] = await store.list_watches("slack", "T1")
        assert listed.last_run_id == run_id
