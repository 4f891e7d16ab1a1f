"""Slack's live plan, seen from a fake Slack: a run streamed into its thread (tasks, statuses,
sources, the TL;DR, the closing actions), the loading status and the agent session, the fall back
to the edited status message, a stream Slack closed by itself (the run goes on in a new one), and
a rate-limited append."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.progress import ChatProgress
from bot.adapters.chat.sink import StatusView
from bot.adapters.slack.client import SlackBudget, make_client
from bot.adapters.slack.render import markdown_blocks, safe_markdown
from bot.adapters.slack.session import LOADING_STATUS, NOT_SUBSCRIBED
from bot.adapters.slack.sink import SlackSink
from bot.adapters.slack.stream import StreamingProgress, StreamOptions, slack_progress
from bot.agent.events import RunQueued
from bot.config import Settings
from bot.domain import Depth, Origin, Request, RunRecord
from bot.runs.manager import RunManager
from bot.store.runs import Store
from tests.adapters.deep_engine import DeepScriptedEngine
from tests.adapters.scripted_engine import ScriptedEngine
from tests.fakes.slack_api import FakeSlack, Stream
from tests.process import eventually

ORIGIN = Origin(platform="slack", workspace="T1", channel="C1", user="U1", user_name="ada")
PINGS = ("<!here>", "@everyone", "<@123456789012345678>")


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@dataclass
class World:
    slack: FakeSlack
    store: Store
    runs: RunManager
    engine: ScriptedEngine
    client: AsyncWebClient
    budget: SlackBudget

    def listener(self, mode: str = "auto", **options: Any) -> ChatProgress | StreamingProgress:
        sink = SlackSink(self.client, self.store, self.budget, team="T1", channel="C1", parents={})
        view = StatusView(run_id="", topic="Acme Robotics", mode="company", requester="U1")
        return slack_progress(
            self.client,
            sink,
            view,
            store=self.store,
            budget=self.budget,
            origin=ORIGIN,
            options=StreamOptions(mode=mode, **options),  # type: ignore[arg-type]
            edit_interval_s=0.0,
        )

    async def start(self, mode: str = "auto", depth: Depth = Depth.QUICK, **options: Any) -> str:
        listener = self.listener(mode, **options)
        request = Request(topic="Acme Robotics", origin=ORIGIN, depth=depth)
        record = await self.runs.submit(request, listener)
        listener.view.run_id = record.run_id
        await self.engine.parked(record.run_id).wait()
        return record.run_id

    async def finish(self, run_id: str) -> RunRecord:
        self.engine.release.set()
        await self.runs.wait(run_id)
        return await self.store.get_run(run_id)

    def stream(self) -> Stream:
        (stream,) = self.slack.streams.values()
        return stream


async def _world(slack: FakeSlack, tmp_path: Path, engine: ScriptedEngine) -> World:
    store = await Store.open(tmp_path / "db.sqlite3")
    settings = Settings.from_mapping(
        {
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_SIGNING_SECRET": "s",
            "SLACK_API_URL": slack.api_url,
        }
    )
    runs = RunManager(store, engine)
    return World(slack, store, runs, engine, make_client(settings), SlackBudget(post_burst=100))


@pytest.fixture
async def world(slack: FakeSlack, tmp_path: Path) -> AsyncIterator[World]:
    built = await _world(slack, tmp_path, ScriptedEngine())
    yield built
    await built.runs.shutdown()
    await built.store.close()


@pytest.fixture
async def deep(slack: FakeSlack, tmp_path: Path) -> AsyncIterator[World]:
    built = await _world(slack, tmp_path, DeepScriptedEngine())
    yield built
    await built.runs.shutdown()
    await built.store.close()


def _thread_replies(slack: FakeSlack, parent: str) -> list[str]:
    return slack.thread("C1", parent)


async def test_a_quick_run_is_a_streamed_plan_with_its_sources_and_tldr(world: World) -> None:
    slack = world.slack
    run_id = await world.start()
    parent = (await slack.wait_for("chat.postMessage"))[0]
    assert parent.response["ts"] and "research_controls" in parent.dump()

    record = await world.finish(run_id)

    assert record.termination_reason == "completed"
    stream = world.stream()
    assert (stream.thread_ts, stream.task_display_mode, stream.state) == (
        parent.response["ts"],
        "plan",
        "stopped",
    )
    started = slack.calls_to("chat.startStream")[0].args
    assert (started["recipient_team_id"], started["recipient_user_id"]) == ("T1", "U1")
    tasks = stream.tasks()
    assert list(tasks) == ["call-call1", "call-call2", "call-call3", "write-up"]
    assert tasks["call-call1"]["title"] == "Searched: Acme Robotics funding"
    assert tasks["call-call2"]["title"] == "Reading: news.example/acme"
    assert {t["status"] for t in tasks.values()} == {"complete"}
    assert tasks["call-call3"]["sources"] == [
        {"type": "url", "url": "https://news.example/3", "text": "Page 3"}
    ]
    assert "TL;DR: Acme Robotics builds warehouse robots [1]." in stream.text()
    actions = [b for b in stream.blocks if b["type"] == "actions"]
    assert actions[0]["elements"][0]["type"] == "static_select"
    # The plan is the progress: no milestone or summary replies, one final edit of the parent.
    assert _thread_replies(slack, parent.response["ts"]) == []
    (edit,) = slack.calls_to("chat.update")
    assert "research_controls" not in edit.dump()
    assert (await slack.wait_for("files.completeUploadExternal"))[0].args["thread_ts"] == (
        parent.response["ts"]
    )


async def test_the_loading_status_shows_until_the_first_step(world: World) -> None:
    run_id = await world.start()
    started = (await world.slack.wait_for("chat.startStream"))[0]
    first, cleared = world.slack.statuses
    assert (first["status"], first["thread_ts"]) == (LOADING_STATUS, started.args["thread_ts"])
    assert first["loading_messages"]
    assert cleared["status"] == ""
    # Cleared before the plan's first words reached the thread.
    names = [c.method for c in world.slack.calls]
    assert names.index("assistant.threads.setStatus", names.index("chat.postMessage") + 1) < (
        names.index("chat.startStream")
    )
    await world.finish(run_id)
    assert len(world.slack.statuses) == 2


async def test_a_refused_loading_status_is_logged_once_and_ignored(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.slack.fail(
        "assistant.threads.setStatus", "missing_scope", times=5, needed="assistant:write"
    )
    with caplog.at_level(logging.WARNING, logger="bot.adapters.slack.stream"):
        record = await world.finish(await world.start())
    assert record.termination_reason == "completed"
    assert len(world.slack.calls_to("assistant.threads.setStatus", ok_only=False)) == 1
    assert sum("loading status" in r.message for r in caplog.records) == 1
    assert world.stream().state == "stopped"


async def test_a_deep_run_streams_one_task_per_researcher(deep: World) -> None:
    run_id = await deep.start(depth=Depth.DEEP)
    await deep.slack.wait_for("chat.startStream")
    # Both researchers show from the plan on, before either has started.
    planned = deep.slack.calls_to("chat.startStream")[0].args["chunks"]
    assert [c.get("status") for c in planned if c["type"] == "task_update"][:2] == [
        "pending",
        "pending",
    ]

    record = await deep.finish(run_id)

    assert record.termination_reason == "completed"
    tasks = deep.stream().tasks()
    assert list(tasks)[:2] == ["researcher-1", "researcher-2"]
    assert tasks["researcher-1"]["title"] == "Who funds Acme Robotics?"
    assert tasks["researcher-1"]["status"] == tasks["researcher-2"]["status"] == "complete"
    urls = [s["url"] for s in tasks["researcher-2"]["sources"]]
    assert urls == [f"https://news.example/{n}" for n in (2, 3, 4)]
    assert tasks["researcher-2"]["details"] == "3 sources, medium confidence"
    assert {"draft", "write-up"} <= set(tasks)
    # The model's sub-question pings nobody, in the stream or anywhere else.
    for call in deep.slack.calls:
        assert not any(ping in call.dump() for ping in PINGS), call.method


async def test_a_refused_start_falls_back_to_edits_for_the_rest_of_the_run(world: World) -> None:
    world.slack.fail("chat.startStream", "not_allowed")
    run_id = await world.start()
    parent = world.slack.calls_to("chat.postMessage")[0].response["ts"]
    record = await world.finish(run_id)

    assert record.termination_reason == "completed"
    assert world.slack.calls_to("chat.appendStream", "chat.stopStream", ok_only=False) == []
    replies = _thread_replies(world.slack, parent)
    # Every step is still told: the milestones, then the summary with the TL;DR.
    assert "Searched: Acme Robotics funding" in replies[0]
    assert "TL;DR: Acme Robotics builds warehouse robots [1]." in replies[-1]
    assert world.slack.calls_to("chat.update")
    assert "T1" in world.budget.unstreamable
    # Auto mode does not ask again in this workspace.
    assert isinstance(world.listener("auto"), ChatProgress)


async def test_on_mode_falls_back_too_and_keeps_asking(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.slack.fail("chat.startStream", "not_allowed")
    with caplog.at_level(logging.WARNING, logger="bot.adapters.slack.stream"):
        record = await world.finish(await world.start("on"))
    assert record.termination_reason == "completed"
    assert any("chat.startStream failed (not_allowed)" in r.message for r in caplog.records)
    assert world.budget.unstreamable == set()
    assert isinstance(world.listener("on"), StreamingProgress)
    assert isinstance(world.listener("off"), ChatProgress)


async def test_a_stream_slack_closed_goes_on_in_a_new_one_and_the_run_is_not_stopped(
    world: World,
) -> None:
    run_id = await world.start(keepalive_s=0.01, append_interval_s=0.0)
    first = (await world.slack.wait_for("chat.startStream"))[0].response["ts"]
    world.slack.expire("C1", first)
    # The next keep-alive finds the stream closed; the run goes on.
    refused = await world.slack.wait_for(
        "chat.appendStream", where=lambda c: c.error is not None, ok_only=False
    )
    assert refused[0].error == "message_not_in_streaming_state"

    record = await world.finish(run_id)

    assert record.termination_reason == "completed"
    assert not world.engine.controls[run_id].summarize_requested.is_set()
    old, new = world.slack.streams.values()
    assert (old.ts, old.state, new.state) == (first, "expired", "stopped")
    assert new.thread_ts == old.thread_ts
    # The new stream carries the whole plan, not only what changed after the old one closed.
    tasks = new.tasks()
    assert list(tasks) == ["call-call1", "call-call2", "call-call3", "write-up"]
    assert {t["status"] for t in tasks.values()} == {"complete"}
    assert new.titles()[0] == "Researching Acme Robotics"
    assert "TL;DR: Acme Robotics builds warehouse robots [1]." in new.text()
    assert _thread_replies(world.slack, old.thread_ts) == []


async def test_a_stream_slack_closed_before_its_stop_closes_in_a_new_one(world: World) -> None:
    run_id = await world.start(append_interval_s=60.0)
    await world.slack.wait_for("chat.appendStream")
    first = world.stream()
    world.slack.expire("C1", first.ts)

    record = await world.finish(run_id)

    assert record.termination_reason == "completed"
    refused = world.slack.calls_to("chat.stopStream", ok_only=False)[0]
    assert (refused.args["ts"], refused.error) == (first.ts, "message_not_in_streaming_state")
    new = list(world.slack.streams.values())[-1]
    assert (new.state, len(world.slack.streams)) == ("stopped", 2)
    assert list(new.tasks()) == ["call-call1", "call-call2", "call-call3", "write-up"]
    assert "TL;DR: Acme Robotics builds warehouse robots [1]." in new.text()
    assert [b["type"] for b in new.blocks if b["type"] == "actions"] == ["actions"]
    assert _thread_replies(world.slack, first.thread_ts) == []
    # The session ends with the new stream's stop.
    session = world.slack.sessions[("C1", first.thread_ts)]
    assert session.history == ["processing", "active"]


async def test_a_run_is_an_agent_session_while_it_works(world: World) -> None:
    run_id = await world.start()
    parent = (await world.slack.wait_for("chat.postMessage"))[0].response["ts"]
    await world.slack.wait_for("agents.sessions.setStatus")
    session = world.slack.sessions[("C1", parent)]
    # Processing while it works: Slack shows its stop button in the thread.
    assert (session.status, session.title, session.initiator) == (
        "processing",
        "Acme Robotics",
        "U1",
    )

    await world.finish(run_id)

    # Its stream's stop moves it on: the thread stays open for questions, the button goes.
    assert session.history == ["processing", "active"]
    (stop,) = world.slack.calls_to("chat.stopStream")
    assert stop.args["session_status"] == "active"
    assert len(world.slack.calls_to("agents.sessions.setStatus")) == 1


async def test_without_a_stream_the_session_still_ends(world: World) -> None:
    world.slack.fail("chat.startStream", "not_allowed")
    record = await world.finish(await world.start())

    assert record.termination_reason == "completed"
    parent = world.slack.calls_to("chat.postMessage")[0].response["ts"]
    assert world.slack.sessions[("C1", parent)].history == ["processing", "active"]


async def test_a_workspace_without_agent_sessions_is_not_asked_again(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.slack.fail("agents.sessions.setStatus", "not_allowed")
    with caplog.at_level(logging.WARNING, logger="bot.adapters.slack.session"):
        first = await world.finish(await world.start())
        world.engine.release.clear()
        second = await world.finish(await world.start())

    assert first.termination_reason == second.termination_reason == "completed"
    assert len(world.slack.calls_to("agents.sessions.setStatus", ok_only=False)) == 1
    assert "T1" in world.budget.sessionless
    assert world.slack.sessions == {}
    assert all("session_status" not in c.args for c in world.slack.calls_to("chat.stopStream"))
    assert sum("no agent session" in r.message for r in caplog.records) == 1


async def test_an_app_not_subscribed_to_stops_is_told_once(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.slack.subscribed_to_stops = False
    with caplog.at_level(logging.WARNING, logger="bot.adapters.slack.session"):
        await world.finish(await world.start())
        world.engine.release.clear()
        await world.finish(await world.start())

    warned = [r.message for r in caplog.records if "agent_session_stopped" in r.message]
    assert len(warned) == 1 and "slack-manifest.yaml" in warned[0]
    assert NOT_SUBSCRIBED == "missing_agent_session_stopped_event_subscription"


async def test_a_rate_limited_append_is_retried_by_the_sdk(world: World) -> None:
    world.slack.rate_limit("chat.appendStream", retry_after=0)
    run_id = await world.start(append_interval_s=0.0)
    await world.slack.wait_for("chat.appendStream")
    record = await world.finish(run_id)

    assert record.termination_reason == "completed"
    first, second = world.slack.calls_to("chat.appendStream", ok_only=False)[:2]
    assert (first.status, second.ok) == (429, True)
    assert world.stream().state == "stopped"
    assert _thread_replies(world.slack, world.stream().thread_ts) == []


def test_model_markdown_keeps_its_formatting_and_pings_nobody() -> None:
    text = (
        "**Acme** grew [fast](https://news.example/1) <!here> @everyone <@U123> [x](javascript:y)"
    )
    safe = safe_markdown(text)
    assert "**Acme**" in safe and "[fast](https://news.example/1)" in safe
    assert not any(ping in safe for ping in ("<!here>", "@everyone", "<@U123>", "javascript:"))
    (block,) = markdown_blocks("x" * 20_000)
    assert block["type"] == "markdown" and len(block["text"]) == 12_000


async def test_a_reply_reaches_slack_as_a_markdown_block(world: World) -> None:
    world.slack.fail("chat.startStream", "not_allowed")
    run_id = await world.start()
    await world.finish(run_id)
    summary = world.slack.calls_to("chat.postMessage")[-1].args
    blocks = summary["blocks"]
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    assert blocks[0]["type"] == "markdown"
    assert "TL;DR" in blocks[0]["text"]


async def test_a_run_claimed_by_another_replica_gets_no_late_edit_from_its_asker(
    world: World,
) -> None:
    """The asker's replica showed the run's place in line; once another replica claims it, an
    edit still waiting here would land after the claimer's and bring back a stale status."""
    sink = SlackSink(world.client, world.store, world.budget, team="T1", channel="C1", parents={})
    view = StatusView(run_id="", topic="Acme Robotics", mode="company", requester="U1")
    asker = ChatProgress(
        sink, view, store=world.store, limiter=world.budget.updates("T1"), min_edit_interval_s=60
    )
    record = await world.store.create_run(Request(topic="Acme Robotics", origin=ORIGIN))
    for position in (3, 2, 1):  # posted, edited at once, then one edit waiting a minute
        await asker.on_event(record, RunQueued(position=position))

    async def edited() -> bool:
        return len(world.slack.calls_to("chat.update")) == 1

    await eventually(edited)

    await asker.let_go(record)

    waiting = [t for t in asyncio.all_tasks() if "_flush_edits" in repr(t.get_coro())]
    assert waiting == []
    assert len(world.slack.calls_to("chat.update")) == 1
