"""Slack's other ways in, seen from the fake Slack: a mention in a channel starts a run (its plan
streamed in the thread) or, in a run's thread, asks a follow-up; a message to the app in its DM
outside any thread starts a run there; the agent view's prompts, runs and follow-ups in a DM
thread; a person pressing Slack's stop button; retried events acting once; and the fall back to
the edited status message where streaming is unavailable. Follow-up answers come from the real
follow-up engine against the fake Messages API; the rest from a scripted engine."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.slack.assistant import STARTING, SUGGESTED_PROMPTS
from bot.adapters.slack.client import SlackBudget
from bot.adapters.slack.front import SlackFrontEnd
from bot.compose import Services
from bot.domain import RunStatus
from tests.adapters.scripted_engine import ScriptedEngine
from tests.adapters.slack.world import SlackWorld, button_value, serve, slack_settings
from tests.fakes.anthropic_api import FakeAnthropic, reply, reply_text, reply_tools, tool_use
from tests.fakes.slack_api import FakeSlack
from tests.fakes.web import ARTICLE_PATH, FakeWeb

REPORT = (
    "# Acme Robotics\n\n## TL;DR\n- Acme raised $40 million [4].\n\n"
    "## Overview\nFounded in 2019 [4]. Listed in search results [1].\n"
)
REVISED = (
    "# Acme Robotics\n\n## TL;DR\n- Acme raised $40 million [1].\n- It sells to grocers [2].\n\n"
    "## Overview\nFounded in 2019 [1].\n\n## Customers and market\nGrocers [2].\n"
)
THREAD = "1700000100.000100"
"""The agent-view thread the person opened in their DM with the app (D1)."""


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def bot(slack: FakeSlack, tmp_path: Path) -> AsyncIterator[SlackWorld]:
    """One bot process with the scripted engine, streaming left at its default (auto)."""
    running = await SlackWorld.start(slack, tmp_path / "db.sqlite3")
    yield running
    await running.stop()


def _in(channel: str, thread: str) -> Any:
    return lambda c: c.args.get("channel") == channel and c.args.get("thread_ts") == thread


async def _only_run(bot: SlackWorld) -> str:
    (run,) = await bot.store.list_runs(platform="slack", workspace="T1", limit=10)
    return run.run_id


# -- Mentions -------------------------------------------------------------------------------


async def test_a_mention_starts_a_run_there_with_its_plan_streamed(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    assert await bot.sender.mention("research deep Acme &amp; Sons", event_id="Ev1") == (200, "")
    parent = (await slack.wait_for("chat.postMessage"))[0]
    run_id = button_value(parent.args["blocks"], "research_summarize")
    await bot.engine.parked(run_id).wait()
    started = (await slack.wait_for("chat.startStream"))[0]

    assert parent.args["channel"] == "C1" and "thread_ts" not in parent.args
    assert started.args["thread_ts"] == parent.response["ts"]
    stored = await bot.store.get_run(run_id)
    assert (stored.topic, stored.depth.value, stored.origin.user) == ("Acme & Sons", "deep", "U1")
    bot.engine.release.set()
    await bot.runs.wait(run_id)
    assert next(iter(slack.streams.values())).state == "stopped"


async def test_a_mention_with_nothing_to_research_is_answered_privately(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    await bot.sender.mention("", event_id="Ev1")
    (refusal,) = await slack.wait_for("chat.postEphemeral")

    assert (refusal.args["channel"], refusal.args["user"]) == ("C1", "U1")
    assert "research" in refusal.args["text"].lower()
    assert slack.calls_to("chat.postMessage") == []
    assert await bot.store.list_runs(platform="slack", workspace="T1", limit=10) == []


async def test_a_retried_mention_starts_one_run(bot: SlackWorld, slack: FakeSlack) -> None:
    await bot.sender.mention("Acme Robotics", event_id="Ev1")
    await bot.sender.mention("Acme Robotics", event_id="Ev1", retry_num=1)
    run_id = button_value(
        (await slack.wait_for("chat.postMessage"))[0].args["blocks"], "research_summarize"
    )
    await bot.engine.parked(run_id).wait()

    assert await _only_run(bot) == run_id
    parents = [c for c in slack.calls_to("chat.postMessage") if "thread_ts" not in c.args]
    assert len(parents) == 1


async def test_a_mention_while_the_run_researches_is_refused_in_its_thread(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    run_id, ts = await bot.research("Acme Robotics")
    await bot.engine.parked(run_id).wait()

    await bot.sender.mention("Who are their customers?", event_id="Ev1", thread_ts=ts)
    (refusal,) = await slack.wait_for("chat.postEphemeral")

    assert refusal.args["thread_ts"] == ts
    assert (
        refusal.args["text"]
        == f"Run {run_id} is still researching: ask again once its report is in."
    )
    assert await bot.store.follow_ups(run_id) == []


# -- A person stopping the stream, and no streaming at all --------------------------------


async def test_a_person_pressing_stop_summarizes_the_run(bot: SlackWorld, slack: FakeSlack) -> None:
    run_id, ts = await bot.research("Acme Robotics")
    await bot.engine.parked(run_id).wait()
    started = (await slack.wait_for("chat.startStream"))[0]
    await slack.wait_for("agents.sessions.setStatus")

    stopped = slack.stop_by_user("C1", ts, user="U2")
    assert stopped["streaming_message_ts"] == [started.response["ts"]]
    assert await bot.sender.event(stopped, event_id="EvStop") == (200, "")
    await bot.sender.event(stopped, event_id="EvStop", retry_num=1)
    await bot.runs.wait(run_id)

    stored = await bot.store.get_run(run_id)
    assert (stored.status, stored.termination_reason) == (RunStatus.DONE, "forced_synthesized")
    # The stream Slack stopped stays as it is; the write-up and the TL;DR close in a new one.
    stopped_stream, last = slack.streams.values()
    assert (stopped_stream.state, last.state) == ("stopped_by_user", "stopped")
    assert "Done (summarized on request)" in last.text()
    assert (await slack.wait_for("files.completeUploadExternal"))[0].args["thread_ts"] == ts
    # Slack leaves the session processing after a stop: the run's end moves it on, once.
    assert slack.sessions[("C1", ts)].history == ["processing", "active"]


async def test_stop_pressed_where_no_run_works_takes_the_button_away(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    # A thread an earlier process left processing.
    await bot.front.client.agents_sessions_setStatus(
        channel_id="C1", thread_ts="1700000000.999999", status="processing"
    )
    stopped = slack.stop_by_user("C1", "1700000000.999999")

    assert await bot.sender.event(stopped, event_id="EvStop") == (200, "")
    await slack.wait_for("agents.sessions.setStatus", 2)
    assert slack.sessions[("C1", "1700000000.999999")].history == ["processing", "active"]
    assert await bot.store.list_runs(platform="slack", workspace="T1", limit=10) == []


async def test_where_streaming_is_unavailable_the_status_message_is_edited(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    slack.fail("chat.startStream", "not_allowed")
    run_id, ts = await bot.research("Acme Robotics")
    await bot.engine.parked(run_id).wait()
    bot.engine.release.set()
    await bot.runs.wait(run_id)

    assert slack.streams == {}
    assert "T1" in bot.front.budget.unstreamable
    final = slack.calls_to("chat.update")[-1]
    assert final.args["ts"] == ts and "Done" in final.dump()
    assert any(t.startswith("Done · ") for t in slack.thread("C1", ts))
    # The next run in this workspace does not ask again.
    second, _ = await bot.research("Globex")
    await bot.engine.parked(second).wait()
    assert len(slack.calls_to("chat.startStream", ok_only=False)) == 1


# -- The app's DM, outside the agent view's threads -----------------------------------------


async def test_a_message_to_the_app_outside_a_thread_starts_a_run_in_its_dm(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    assert await bot.sender.direct_message("deep Acme Robotics", event_id="Ev1") == (200, "")
    await bot.sender.direct_message("deep Acme Robotics", event_id="Ev1", retry_num=1)
    status = (await slack.wait_for("chat.postMessage"))[0]
    run_id = button_value(status.args["blocks"], "research_cancel")
    await bot.engine.parked(run_id).wait()
    started = (await slack.wait_for("chat.startStream"))[0]

    # The run lives in the thread of the person's message, as in the agent view.
    thread = status.args["thread_ts"]
    assert status.args["channel"] == "D1" and thread
    assert (started.args["channel"], started.args["thread_ts"]) == ("D1", thread)
    stored = await bot.store.get_run(run_id)
    assert (stored.topic, stored.depth.value) == ("Acme Robotics", "deep")
    assert (stored.origin.channel, stored.origin.thread) == ("D1", thread)
    assert await _only_run(bot) == run_id
    # A second message in that thread is about this run.
    await bot.sender.direct_message("Who funds them?", event_id="Ev2", thread_ts=thread)
    refused = await slack.wait_for("chat.postMessage", 2, where=_in("D1", thread))
    assert refused[-1].args["text"] == (
        f"Run {run_id} is still researching: ask again once its report is in."
    )


async def test_a_dm_with_nothing_to_research_says_how_to_ask(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    assert await bot.sender.direct_message("contracts", event_id="Ev1") == (200, "")
    (said,) = await slack.wait_for("chat.postMessage")

    assert said.args["channel"] == "D1" and said.args.get("thread_ts")
    assert "contracts" in said.args["text"].lower()
    assert await bot.store.list_runs(platform="slack", workspace="T1", limit=10) == []


# -- The agent view -------------------------------------------------------------------------


async def test_a_new_agent_view_thread_suggests_prompts(bot: SlackWorld, slack: FakeSlack) -> None:
    assert await bot.sender.thread_started(event_id="Ev1", thread_ts=THREAD) == (200, "")
    (call,) = await slack.wait_for("assistant.threads.setSuggestedPrompts")

    (shown,) = slack.suggested_prompts
    assert (shown["channel_id"], shown["thread_ts"]) == ("D1", THREAD)
    assert [p["title"] for p in shown["prompts"]] == [
        "Research Acme Robotics",
        "Deep research Acme Robotics",
        "Find contracts: road maintenance, Ireland",
    ]
    assert shown["prompts"] == SUGGESTED_PROMPTS
    assert call.ok


async def test_a_message_in_the_agent_view_starts_a_run_in_that_thread(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    await bot.sender.direct_message("Acme Robotics", event_id="Ev1", thread_ts=THREAD)
    (title,) = await slack.wait_for("assistant.threads.setTitle")
    run_id = await _only_run(bot)
    await bot.engine.parked(run_id).wait()
    started = (await slack.wait_for("chat.startStream"))[0]

    assert (title.args["channel_id"], title.args["thread_ts"], title.args["title"]) == (
        "D1",
        THREAD,
        "Acme Robotics",
    )
    assert slack.statuses[0]["status"] == STARTING
    # No parent message: the status (with its buttons) and the plan are replies in the thread.
    (status,) = slack.calls_to("chat.postMessage")
    assert (status.args["channel"], status.args["thread_ts"]) == ("D1", THREAD)
    assert button_value(status.args["blocks"], "research_cancel") == run_id
    assert (started.args["channel"], started.args["thread_ts"]) == ("D1", THREAD)
    stored = await bot.store.get_run(run_id)
    assert (stored.origin.channel, stored.origin.thread) == ("D1", THREAD)

    # A second message there is about this run: asked while it researches, it is refused.
    await bot.sender.direct_message("Who are their customers?", event_id="Ev2", thread_ts=THREAD)
    refused = await slack.wait_for("chat.postMessage", 2, where=_in("D1", THREAD))
    assert refused[-1].args["text"] == (
        f"Run {run_id} is still researching: ask again once its report is in."
    )
    assert await _only_run(bot) == run_id

    bot.engine.release.set()
    await bot.runs.wait(run_id)
    final = slack.calls_to("chat.update")[-1]
    assert final.args["ts"] == status.response["ts"]
    assert button_value(final.args["blocks"], "research_cancel") == ""


async def test_a_retried_agent_view_message_starts_one_run(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    await bot.sender.direct_message("Acme Robotics", event_id="Ev1", thread_ts=THREAD)
    await bot.sender.direct_message("Acme Robotics", event_id="Ev1", thread_ts=THREAD, retry_num=1)
    await slack.wait_for("assistant.threads.setTitle")
    await bot.engine.parked(await _only_run(bot)).wait()

    assert len(slack.calls_to("assistant.threads.setTitle")) == 1


async def test_a_bad_agent_view_request_is_answered_in_the_thread(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    await bot.sender.direct_message("contracts", event_id="Ev1", thread_ts=THREAD)
    (said,) = await slack.wait_for("chat.postMessage", where=_in("D1", THREAD))

    assert "contracts" in said.args["text"].lower()
    assert await bot.store.list_runs(platform="slack", workspace="T1", limit=10) == []
    assert slack.calls_to("assistant.threads.setTitle") == []


# -- Follow-ups with the real engine --------------------------------------------------------


def answer(text: str, **more: Any) -> Any:
    """A model turn that calls the follow-up's `answer` tool."""
    return reply([tool_use("answer", {"answer": text, **more})], "tool_use")


@pytest.fixture
async def done(
    world: Services, slack: FakeSlack, anthropic_api: FakeAnthropic, web: FakeWeb
) -> AsyncIterator[SlackWorld]:
    """The real bot with one finished run, started by `/research Acme Robotics` in C1."""
    anthropic_api.script(
        reply_tools(
            [
                ("web_search", {"query": "Acme Robotics"}),
                ("read_page", {"url": web.url + ARTICLE_PATH}),
            ]
        ),
        reply_text(REPORT),
    )
    front = SlackFrontEnd(
        slack_settings(slack),
        world.runs,
        world.store,
        budget=SlackBudget(post_burst=100),
        edit_interval_s=0.0,
        followups=world.followups,
    )
    runner, sender = await serve(front, slack)
    # The engine is the real one (world.runs): the scripted one is only a placeholder here.
    bot = SlackWorld(slack, world.store, ScriptedEngine(), world.runs, front, sender, runner)
    try:
        run_id, _ = await bot.research("Acme Robotics")
        await world.runs.wait(run_id)
        assert (await world.store.get_run(run_id)).status is RunStatus.DONE
        yield bot
    finally:
        await runner.cleanup()


async def _child(bot: SlackWorld, run_id: str) -> str:
    (child,) = await bot.store.follow_ups(run_id)
    await bot.runs.wait(child.run_id)
    return child.run_id


async def test_a_mention_in_a_run_thread_is_answered_there_from_its_evidence(
    done: SlackWorld, slack: FakeSlack, anthropic_api: FakeAnthropic
) -> None:
    (run,) = await done.store.list_runs(platform="slack", workspace="T1", limit=10)
    ts = run.origin.thread
    anthropic_api.script(answer("Acme raised $40 million in a Series B [1]."))

    await done.sender.mention("How much did they raise?", event_id="Ev1", thread_ts=ts)
    (posted,) = await slack.wait_for(
        "chat.postMessage", where=lambda c: "Series B" in c.args.get("text", "")
    )
    child = await _child(done, run.run_id)

    assert posted.args["thread_ts"] == ts and posted.args["channel"] == "C1"
    shown = posted.args["blocks"][0]
    assert shown["type"] == "markdown"
    assert shown["text"].startswith("Acme raised $40 million in a Series B [1].")
    assert ARTICLE_PATH in shown["text"]
    assert "Answered from the run's sources · $" in shown["text"]
    stored = await done.store.get_run(child)
    assert (stored.parent_run_id, stored.termination_reason) == (run.run_id, "answered")
    assert (stored.origin.channel, stored.origin.thread) == ("C1", ts)
    question = str(anthropic_api.requests[-1]["messages"][0]["content"])
    assert "How much did they raise?" in question and "<@UBOT>" not in question


async def test_update_the_report_uploads_v2_in_the_thread_and_show_posts_it(
    done: SlackWorld, slack: FakeSlack, anthropic_api: FakeAnthropic
) -> None:
    (run,) = await done.store.list_runs(platform="slack", workspace="T1", limit=10)
    ts = run.origin.thread
    anthropic_api.script(
        answer("Updated: customers added [2].", update_report=True, updated_report=REVISED)
    )

    await done.sender.mention(
        "Please update the report with their customers", event_id="Ev1", thread_ts=ts
    )
    uploads = await slack.wait_for("files.completeUploadExternal", 2)
    await _child(done, run.run_id)

    v2 = next(f for f in slack.files.values() if f.filename.endswith("-v2.md"))
    assert v2.filename == f"acme-robotics-{run.run_id}-v2.md"
    assert (v2.channel, v2.thread_ts, v2.initial_comment) == ("C1", ts, "Report v2")
    assert "## Customers and market" in v2.content.decode()
    assert uploads[-1].args["thread_ts"] == ts

    before = len(slack.files)
    assert await done.sender.command(f"show {run.run_id}") == (200, "")
    await slack.wait_for("files.completeUploadExternal", 3)
    shown = list(slack.files.values())[before]
    assert (shown.filename, shown.content) == (v2.filename, v2.content)


async def test_a_second_agent_view_message_is_a_follow_up_answered_in_the_thread(
    done: SlackWorld, slack: FakeSlack, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    anthropic_api.script(
        reply_tools([("read_page", {"url": web.url + ARTICLE_PATH})]),
        reply_text(REPORT),
    )
    await done.sender.direct_message("Acme Robotics", event_id="Ev1", thread_ts=THREAD)
    await slack.wait_for("assistant.threads.setTitle")
    runs = await done.store.list_runs(platform="slack", workspace="T1", limit=10)
    dm = next(r for r in runs if r.origin.channel == "D1")
    await done.runs.wait(dm.run_id)
    anthropic_api.script(answer("In 2019 [1]."))

    await done.sender.direct_message("When was it founded?", event_id="Ev2", thread_ts=THREAD)
    (posted,) = await slack.wait_for(
        "chat.postMessage", where=lambda c: "In 2019" in c.args.get("text", "")
    )
    child = await _child(done, dm.run_id)

    assert (posted.args["channel"], posted.args["thread_ts"]) == ("D1", THREAD)
    assert (await done.store.get_run(child)).parent_run_id == dm.run_id
