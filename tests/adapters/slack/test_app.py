"""A run from Slack, end to end: the real bolt app over signed HTTP, the runs service and store,
a scripted engine, and the calls that reach a fake Slack Web API."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.domain import RunStatus
from tests.adapters.slack.world import EDITED, ScriptedEngine, SlackWorld, button_value
from tests.fakes.slack_api import FakeSlack


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def bot(slack: FakeSlack, tmp_path: Path) -> AsyncIterator[SlackWorld]:
    """One bot process with the scripted engine (the `world` fixture is the real engine's)."""
    bot = await SlackWorld.start(slack, tmp_path / "db.sqlite3", **EDITED)
    yield bot
    await bot.stop()


def _text(call_args: dict[str, object]) -> str:
    return json.dumps(call_args.get("blocks", []), ensure_ascii=False)


async def test_a_run_from_command_to_report_in_the_thread(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    run_id, ts = await bot.research("Acme Robotics")

    parent = slack.calls_to("chat.postMessage")[0].args
    assert parent["channel"] == "C1"
    assert "Acme Robotics" in _text(parent)
    assert "<@U1>" in _text(parent)
    assert button_value(parent["blocks"], "research_cancel") == run_id
    await bot.engine.parked(run_id).wait()
    stored = await bot.store.get_run(run_id, platform="slack", workspace="T1")
    assert (stored.origin.channel, stored.origin.thread) == ("C1", ts)

    await slack.wait_for("chat.update")
    assert await bot.sender.action("research_summarize", run_id, user="U2", message_ts=ts) == (
        200,
        "",
    )
    await bot.runs.wait(run_id)

    thread = slack.thread("C1", ts)
    milestones = [text for text in thread if text.startswith("•")]
    assert milestones == [
        "• Searched: Acme Robotics funding\n• Reading: news.example/acme\n"
        "• Searched: Acme Robotics customers"
    ]
    assert any("Summarize requested" in text for text in thread)
    assert "TL;DR: Acme Robotics builds warehouse robots [1]." in thread[-1]
    assert "Done (summarized on request)" in thread[-1]

    url, upload, complete = (
        slack.calls_to(m)
        for m in ("files.getUploadURLExternal", "upload", "files.completeUploadExternal")
    )
    assert len(url) == len(upload) == len(complete) == 1
    assert (complete[0].args["channel_id"], complete[0].args["thread_ts"]) == ("C1", ts)
    shared = next(iter(slack.files.values()))
    assert shared.filename == f"acme-robotics-{run_id}.md"
    assert shared.content.decode().startswith("# Acme Robotics")

    # Throttled: many events, one edit while it ran and the final one.
    updates = slack.calls_to("chat.update")
    assert len(updates) == 2
    final = updates[-1].args
    assert final["ts"] == ts
    assert "Done (summarized on request)" in _text(final)
    assert button_value(final["blocks"], "research_summarize") == ""
    assert (await bot.store.get_run(run_id)).status == RunStatus.DONE
    assert all(
        c.args["unfurl_links"] is False and c.args["unfurl_media"] is False
        for c in slack.calls_to("chat.postMessage")
    )


async def test_the_summarize_reaction_acts_once_per_event(slack: FakeSlack, tmp_path: Path) -> None:
    bot = await SlackWorld.start(
        slack, tmp_path / "db.sqlite3", engine=ScriptedEngine(count_presses=True), **EDITED
    )
    try:
        run_id, ts = await bot.research("Acme Robotics")
        await bot.engine.parked(run_id).wait()

        assert await bot.sender.reaction("memo", channel="C1", ts=ts, event_id="Ev1") == (200, "")
        await slack.wait_for("chat.postMessage", where=lambda c: c.args["text"] == "press 1")
        # Slack's retry of the same event, then a reaction on another message, then another name.
        await bot.sender.reaction("memo", channel="C1", ts=ts, event_id="Ev1", retry_num=1)
        await bot.sender.reaction("memo", channel="C1", ts="1.000", event_id="Ev2")
        await bot.sender.reaction("thumbsup", channel="C1", ts=ts, event_id="Ev3")
        await bot.sender.reaction("memo", channel="C1", ts=ts, event_id="Ev4")
        await slack.wait_for("chat.postMessage", where=lambda c: c.args["text"] == "press 2")

        await bot.sender.action("research_cancel", run_id, user="U1", message_ts=ts)
        await bot.runs.wait(run_id)
    finally:
        await bot.stop()
    presses = [t for t in slack.thread("C1", ts) if t.startswith("press")]
    assert presses == ["press 1", "press 2"]


async def test_only_the_requester_may_cancel(bot: SlackWorld, slack: FakeSlack) -> None:
    run_id, ts = await bot.research("Acme Robotics", user="U1")
    await bot.engine.parked(run_id).wait()

    await bot.sender.action("research_cancel", run_id, user="U2", message_ts=ts)
    refused = await slack.wait_for("chat.postEphemeral")
    assert refused[0].args["user"] == "U2"
    assert refused[0].args["text"] == "Only <@U1> can cancel this run."
    assert bot.runs.get_active(run_id) is not None

    await bot.sender.action("research_cancel", run_id, user="U1", message_ts=ts)
    # A second press is harmless: it lands on the running run, or says it has finished.
    await bot.sender.action("research_cancel", run_id, user="U1", message_ts=ts)
    await bot.runs.wait(run_id)
    await bot.sender.action("research_summarize", run_id, user="U3", message_ts=ts)
    await slack.wait_for("chat.postEphemeral", where=lambda c: c.args["user"] == "U3")
    late = slack.calls_to("chat.postEphemeral")[1:]
    assert {c.args["text"] for c in late} == {"That run has finished."}

    final = slack.calls_to("chat.update")[-1].args
    assert "Cancelled" in _text(final)
    assert button_value(final["blocks"], "research_cancel") == ""
    assert slack.calls_to("files.completeUploadExternal") == []
    assert (await bot.store.get_run(run_id)).status == RunStatus.CANCELLED


async def test_a_queued_run_shows_its_place_then_starts(slack: FakeSlack, tmp_path: Path) -> None:
    bot = await SlackWorld.start(slack, tmp_path / "db.sqlite3", max_concurrent=1, **EDITED)
    try:
        first, _ = await bot.research("Acme Robotics")
        await bot.engine.parked(first).wait()
        second, second_ts = await bot.research("Globex", channel="C2")
        parent = slack.calls_to("chat.postMessage")[-1].args
        assert "Queued (#1)" in _text(parent)

        await bot.sender.action("research_summarize", first, user="U1")
        await bot.runs.wait(first)
        await bot.engine.parked(second).wait()
        started = await slack.wait_for("chat.update", where=lambda c: c.args["ts"] == second_ts)
        assert "Researching" in _text(started[0].args)
        bot.engine.release.set()
        await bot.runs.wait(second)
        assert (await bot.store.get_run(second)).status == RunStatus.DONE
    finally:
        await bot.stop()


async def test_untrusted_text_never_pings_anyone(slack: FakeSlack, tmp_path: Path) -> None:
    hostile = "<!channel> @here <@U123> <#C999> <!subteam^S1> <!everyone> AT&T <https://x.test|y>"
    engine = ScriptedEngine(
        calls=[("web_search", {"query": hostile})], tldr=f"Ping {hostile} @channel and @everyone."
    )
    bot = await SlackWorld.start(slack, tmp_path / "db.sqlite3", engine=engine, **EDITED)
    try:
        run_id, _ = await bot.research("Acme <!here> & Sons")
        bot.engine.release.set()
        await bot.runs.wait(run_id)
    finally:
        await bot.stop()

    sent = " ".join(c.dump() for c in slack.calls)
    for ping in (
        "<!channel>",
        "<!here>",
        "<!everyone>",
        "<@U123>",
        "<#C999>",
        "<!subteam",
        "<https://x.test",
        "@here",
        "@channel",
        "@everyone",
    ):
        assert ping not in sent, ping
    assert "&lt;!channel&gt;" in sent
    assert "AT&amp;T" in sent
    assert "Acme &lt;!here&gt; &amp; Sons" in sent
    assert "@\u2060here" in sent
    assert set(re.findall(r"<[@#!][^>]*>", sent)) == {"<@U1>"}


async def test_a_rate_limited_edit_is_retried_after_retry_after(
    bot: SlackWorld, slack: FakeSlack
) -> None:
    slack.rate_limit("chat.update", retry_after=0)
    run_id, _ = await bot.research("Acme Robotics")
    await bot.engine.parked(run_id).wait()
    await slack.wait_for("chat.update")

    attempts = slack.calls_to("chat.update", ok_only=False)
    assert [c.status for c in attempts] == [429, 200]
    assert attempts[0].args == attempts[1].args
