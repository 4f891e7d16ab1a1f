"""Watched runs on Discord, as `serve` wires them (bot/cli/serve.py `watch_clock`): the real
discord.py client logged in to the fake Discord, the runs service and the clock ticked by the
test. Each period's run opens a new card and thread in the watch's channel with its report
there; a deleted channel (404) pauses the watch after one failed delivery."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from bot.adapters.discord.app import build_discord_client
from bot.adapters.discord.setup import discord_token, login
from bot.cli.serve import watch_clock
from bot.domain import RunStatus
from bot.runs.manager import RunManager
from bot.runs.watch_scheduler import WatchScheduler
from bot.store.runs import Store
from bot.watches.cadence import Cadence
from bot.watches.model import NewWatch, Watch, WatchStatus
from tests.adapters.discord.world import discord_settings, thread_posts
from tests.adapters.scripted_engine import ScriptedEngine
from tests.fakes.discord_api import FakeDiscord
from tests.watches.clock import MONDAY_9, Clock


@dataclass
class World:
    fake: FakeDiscord
    clock: Clock
    store: Store
    runs: RunManager
    watches: WatchScheduler

    async def add(self) -> Watch:
        guild = self.fake.guild
        watch = NewWatch(
            topic="Acme Robotics",
            platform="discord",
            workspace=guild.guild_id,
            channel=guild.channel_id,
            created_by=guild.alice["id"],
            created_by_name="alice",
            cadence=Cadence.DAILY,
        )
        return await self.store.add_watch(watch, limit=20)

    async def tick(self) -> list[str]:
        """One tick; returns once each run it started has ended and been told."""
        started = await self.watches.tick()
        for run_id in started:
            await self.runs.wait(run_id)
        return started

    def cards(self) -> list[str]:
        """The ids of the messages posted in the watch's channel (each run's card)."""
        path = rf"/channels/{self.fake.guild.channel_id}/messages/\d+/threads"
        return [call.path.split("/")[4] for call in self.fake.find("POST", path)]


@pytest.fixture
async def world(fake: FakeDiscord, tmp_path: Path) -> AsyncIterator[World]:
    clock = Clock()
    store = await Store.open(tmp_path / "runs.sqlite3", clock=clock)
    engine = ScriptedEngine()
    engine.release.set()  # each run goes straight through to its report
    runs = RunManager(store, engine)
    settings = discord_settings(fake)
    client = build_discord_client(settings, runs, store)
    async with client:
        await login(client, discord_token(settings))

        runs.front_ends.attach("discord", client.listener_for, client.post_notice)
        yield World(fake, clock, store, runs, watch_clock(store, runs, terminal=False))
        await runs.shutdown()
    await store.close()


async def test_each_period_opens_a_new_thread_with_its_report(world: World) -> None:
    watch = await world.add()
    [first] = await world.tick()
    world.clock.now = MONDAY_9 + timedelta(days=1)
    [second] = await world.tick()

    one, two = world.cards()
    assert one != two
    for run_id, thread in ((first, one), (second, two)):
        run = await world.store.get_run(run_id)
        assert (run.status, run.origin.thread, run.watch_id) == (RunStatus.DONE, thread, watch.id)
        files = [name for call in thread_posts(world.fake, thread) for name in call.files]
        assert files == [f"acme-robotics-{run_id}.md"]


async def test_a_deleted_channel_pauses_the_watch_after_one_failed_delivery(
    world: World,
) -> None:
    await world.add()
    channel = world.fake.guild.channel_id
    world.fake.fail_next("POST", rf"/channels/{channel}/messages", 404)
    [run_id] = await world.tick()

    [paused] = await world.store.list_watches("discord", world.fake.guild.guild_id)
    assert paused.status is WatchStatus.PAUSED
    assert paused.paused_reason is not None and "404" in paused.paused_reason
    assert (await world.store.get_run(run_id)).status is RunStatus.CANCELLED
    posts = len(world.fake.find("POST", rf"/channels/{channel}/messages"))
    assert posts == 1

    world.clock.now = MONDAY_9 + timedelta(days=1)
    assert await world.tick() == []
    assert len(world.fake.find("POST", rf"/channels/{channel}/messages")) == posts


async def test_a_status_refused_for_another_reason_stops_the_run_and_says_so_once(
    world: World,
) -> None:
    await world.add()
    channel = world.fake.guild.channel_id
    world.fake.fail_next("POST", rf"/channels/{channel}/messages", 413)
    [run_id] = await world.tick()

    assert (await world.store.get_run(run_id)).status is RunStatus.CANCELLED
    [listed] = await world.store.list_watches("discord", world.fake.guild.guild_id)
    assert listed.status is WatchStatus.ACTIVE
    [refused, line] = world.fake.find("POST", rf"/channels/{channel}/messages")
    assert refused.status == 413
    assert "could not be posted here" in line.body["content"]
