"""Watched runs in Slack, as `serve` wires them (bot/cli/serve.py `watch_clock`): the real Slack
front end and runs service against the fake Slack, the clock ticked by the test on a clock it
moves. Each period's run opens a new parent message in the watch's channel with its report in
the thread; a deleted channel pauses the watch after one failed delivery; a budget refusal is
told in the channel once; missed periods are said in one line; `usage` counts the creator."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from bot.adapters.slack.front import SlackFrontEnd
from bot.cli.serve import watch_clock
from bot.domain import RunStatus
from bot.runs.manager import RunManager
from bot.runs.quota import Quota, QuotaLimits
from bot.runs.watch_scheduler import WatchScheduler, missed_line
from bot.store.runs import Store
from bot.watches.cadence import Cadence
from bot.watches.model import NewWatch, Watch, WatchStatus
from tests.adapters.scripted_engine import ScriptedEngine
from tests.adapters.slack.world import EDITED, button_value, front_end, serve
from tests.fakes.slack_api import Call, FakeSlack, SlackSender
from tests.watches.clock import MONDAY_9, Clock

ACME = NewWatch(
    topic="Acme Robotics",
    platform="slack",
    workspace="T1",
    channel="C1",
    created_by="U1",
    created_by_name="alice",
    cadence=Cadence.DAILY,
)


@dataclass
class World:
    slack: FakeSlack
    clock: Clock
    store: Store
    runs: RunManager
    front: SlackFrontEnd
    sender: SlackSender
    watches: WatchScheduler

    async def add(self) -> Watch:
        return await self.store.add_watch(ACME, limit=20)

    async def tick(self) -> list[str]:
        """One tick of the clock; returns once each run it started has ended and been told."""
        started = await self.watches.tick()
        for run_id in started:
            await self.runs.wait(run_id)
        return started


@pytest.fixture
async def world(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[World]:
    clock = Clock()
    async with FakeSlack() as slack:
        store = await Store.open(tmp_path / "runs.sqlite3", clock=clock)
        engine = ScriptedEngine()
        engine.release.set()  # each run goes straight through to its report
        runs = RunManager(
            store, engine, quota=Quota(store, getattr(request, "param", QuotaLimits()))
        )
        front = front_end(slack, runs, store, **EDITED)
        runner, sender = await serve(front, slack)

        runs.front_ends.attach("slack", front.listener_for, front.post_notice)
        yield World(
            slack, clock, store, runs, front, sender, watch_clock(store, runs, terminal=False)
        )
        await runs.shutdown()
        await runner.cleanup()
        await store.close()


def parents(slack: FakeSlack) -> list[Call]:
    """The runs' parent messages in C1: not in a thread, with a run's buttons."""
    return [
        c
        for c in slack.calls_to("chat.postMessage")
        if c.args.get("channel") == "C1"
        and not c.args.get("thread_ts")
        and button_value(c.args.get("blocks", []), "research_cancel")
    ]


def channel_lines(slack: FakeSlack) -> list[str]:
    """Plain lines in C1 outside any thread (the watches' notices)."""
    return [
        c.args["text"]
        for c in slack.calls_to("chat.postMessage")
        if c.args.get("channel") == "C1"
        and not c.args.get("thread_ts")
        and not c.args.get("blocks")
    ]


async def test_each_period_opens_a_new_thread_with_its_report_and_usage_counts_the_creator(
    world: World,
) -> None:
    watch = await world.add()
    [first] = await world.tick()
    world.clock.now = MONDAY_9 + timedelta(days=1)
    [second] = await world.tick()

    posted = parents(world.slack)
    assert [button_value(p.args["blocks"], "research_cancel") for p in posted] == [first, second]
    one, two = (p.response["ts"] for p in posted)
    assert one != two
    uploads = world.slack.calls_to("files.completeUploadExternal")
    assert [(u.args["channel_id"], u.args["thread_ts"]) for u in uploads] == [
        ("C1", one),
        ("C1", two),
    ]
    assert "Acme Robotics" in str(posted[0].args["blocks"])
    assert missed_line(1) not in world.slack.thread("C1", one)
    for run_id, ts in ((first, one), (second, two)):
        run = await world.store.get_run(run_id)
        assert (run.status, run.origin.thread, run.watch_id) == (RunStatus.DONE, ts, watch.id)

    assert await world.sender.command("usage", team="T1", user="U2") == (200, "")
    answer = (await world.slack.wait_for("response_url"))[0].args["text"]
    assert [line for line in answer.splitlines() if line.startswith("• alice")] == [
        "• alice · $0.02 · 2 runs"
    ]


async def test_a_deleted_channel_pauses_the_watch_after_one_failed_delivery(
    world: World,
) -> None:
    watch = await world.add()
    world.slack.private_channels.add("C1")  # answers channel_not_found, as a deleted one does
    [run_id] = await world.tick()

    [paused] = await world.store.list_watches("slack", "T1")
    assert paused.status is WatchStatus.PAUSED
    assert paused.paused_reason is not None and "channel_not_found" in paused.paused_reason
    assert (await world.store.get_run(run_id)).status is RunStatus.CANCELLED
    tried = len(world.slack.calls_to("chat.postMessage", ok_only=False))
    assert tried == 2  # the run's status message, then the one line that would say so

    world.clock.now = MONDAY_9 + timedelta(days=1)
    assert await world.tick() == []
    assert len(world.slack.calls_to("chat.postMessage", ok_only=False)) == tried
    assert watch.id == paused.id


async def test_a_run_that_could_not_post_but_whose_channel_is_there_is_said_once(
    world: World,
) -> None:
    await world.add()
    world.slack.fail("chat.postMessage", "internal_error")  # the status message only
    [run_id] = await world.tick()

    [line] = channel_lines(world.slack)
    assert "could not be posted here" in line and "next one comes" in line
    [still] = await world.store.list_watches("slack", "T1")
    assert still.status is WatchStatus.ACTIVE
    assert (await world.store.get_run(run_id)).status is RunStatus.CANCELLED


@pytest.mark.parametrize("world", [QuotaLimits(daily_budget_usd=0.0)], indirect=True)
async def test_a_budget_refusal_is_told_in_the_channel_once(world: World) -> None:
    await world.add()
    assert await world.tick() == []
    world.clock.now = MONDAY_9 + timedelta(days=1)
    assert await world.tick() == []

    [line] = channel_lines(world.slack)
    assert "budget" in line and "tried again next period" in line
    assert parents(world.slack) == []


async def test_a_run_covering_missed_periods_says_how_many_in_its_thread(world: World) -> None:
    await world.add()
    world.clock.now = MONDAY_9 + timedelta(days=2, hours=1)  # Monday's, Tuesday's, Wednesday's
    [run_id] = await world.tick()

    [parent] = parents(world.slack)
    thread = world.slack.thread("C1", parent.response["ts"])
    assert thread.count(missed_line(3)) == 1
    assert (await world.store.get_run(run_id)).status is RunStatus.DONE


@pytest.mark.parametrize("world", [QuotaLimits(daily_budget_usd=0.0)], indirect=True)
async def test_a_refusal_that_cannot_be_told_because_the_channel_is_gone_pauses_the_watch(
    world: World,
) -> None:
    await world.add()
    world.slack.private_channels.add("C1")
    assert await world.tick() == []

    [paused] = await world.store.list_watches("slack", "T1")
    assert paused.status is WatchStatus.PAUSED
    assert paused.paused_reason is not None and "channel_not_found" in paused.paused_reason
