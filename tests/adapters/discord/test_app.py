"""The Discord front end end to end: the real discord.py client, started by `serve_discord`,
against a fake Discord REST API and gateway; a scripted engine; a real store."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.agent.events import Usage, UsageRecorded
from bot.compose import Services
from bot.domain import Depth, Mode, Origin, Request, RunStatus
from bot.runs.quota import QuotaLimits
from tests.adapters.discord.world import (
    DiscordBot,
    ScriptedEngine,
    card_files,
    card_text,
    custom_ids,
    interrupted_run,
    is_card,
    message_payloads,
    status_message,
    thread_posts,
)
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.discord_api import FakeDiscord

REPORT = "# Acme Robotics\n\n## TL;DR\n- Builds robots [1].\n\n## Overview\nFounded 2015 [1].\n"


@pytest.fixture
async def bot(fake: FakeDiscord, tmp_path: Path) -> AsyncIterator[DiscordBot]:
    running = await DiscordBot.start(fake, tmp_path / "db.sqlite3")
    yield running
    await running.stop()


def _components(message: dict[str, object]) -> list[str]:
    return custom_ids(message)


async def test_a_run_from_command_to_report_in_its_thread(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    run_id, message = await bot.research("Acme Robotics")

    defer = fake.find("POST", r"/interactions/\d+/.+/callback")[0]
    assert defer.body == {"type": 5, "data": {"flags": 64}}
    assert defer.query == {"with_response": "1"}
    post = fake.find("POST", rf"/channels/{world.channel_id}/messages")[0]
    assert post.authorization == f"Bot {fake.token}"
    assert _components(message) == [f"rb:summarize:{run_id}", f"rb:cancel:{run_id}"]
    assert is_card(post.body)
    assert "Company research: Acme Robotics" in card_text(post.body)
    assert f"<@{world.alice['id']}>" in card_text(post.body)
    thread = fake.find("POST", rf"/channels/{world.channel_id}/messages/{message['id']}/threads")
    assert thread[0].body["name"] == "Acme Robotics"
    stored = await bot.store.get_run(run_id, platform="discord", workspace=world.guild_id)
    assert (stored.origin.channel, stored.origin.thread) == (world.channel_id, message["id"])
    assert stored.origin.user == world.alice["id"]
    followup = fake.find("POST", r"/webhooks/\d+/.+")[-1]
    assert followup.body["flags"] == 64
    assert f"<#{message['id']}>" in followup.body["content"]

    assert bot.engine is not None
    await bot.engine.parked(run_id).wait()
    assert await bot.press(world.bob, message, "summarize", run_id) == "Writing up the report now."
    await bot.runs.wait(run_id)

    posts = thread_posts(fake, message["id"])
    assert all(p.authorization == f"Bot {fake.token}" for p in posts)
    texts = [p.body["content"] for p in posts]
    milestones = texts.index(
        "• Searched: Acme Robotics funding\n• Reading: news.example/acme\n"
        "• Searched: Acme Robotics customers"
    )
    assert texts[milestones + 1] == "Summarize requested: writing the report from what I have."
    summary = next(t for t in texts if t.startswith("Done (summarized on request)"))
    assert "TL;DR: Acme Robotics builds warehouse robots [1]." in summary
    upload = posts[-1]
    ((filename, data),) = upload.files.items()
    assert filename == f"acme-robotics-{run_id}.md"
    assert upload.body["content"] == ("Report: Acme Robotics")
    assert "## TL;DR" in data.decode()
    assert "Acme Robotics builds warehouse robots" in data.decode()
    edits = fake.find("PATCH", rf"/channels/{world.channel_id}/messages/{message['id']}")
    assert edits
    # The buttons gave way to the format menu (tests/adapters/test_export_chat.py).
    assert _components(edits[-1].body) == [f"rb:export:{run_id}"]
    assert "Done (summarized on request)" in card_text(edits[-1].body)
    # The finished card carries the report file too.
    assert card_files(edits[-1].body) == [f"attachment://acme-robotics-{run_id}.md"]
    assert list(edits[-1].files) == [f"acme-robotics-{run_id}.md"]
    assert all(is_card(e.body) for e in edits)
    assert (await bot.store.get_run(run_id)).status == RunStatus.DONE
    # Nothing of the run went through the interaction token (it dies after 15 minutes).
    assert all(c.body.get("flags") == 64 for c in fake.find("POST", r"/webhooks/.+"))


async def test_a_long_tldr_is_split_under_the_limit(fake: FakeDiscord, tmp_path: Path) -> None:
    tldr = " ".join(f"Finding {n}: Acme ships robots to a new market." for n in range(120))
    bot = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=ScriptedEngine(tldr=tldr))
    try:
        run_id, message = await bot.research("Acme Robotics")
        assert bot.engine is not None
        bot.engine.release.set()
        await bot.runs.wait(run_id)
    finally:
        await bot.stop()
    texts = [p.body["content"] for p in thread_posts(fake, message["id"])]
    assert len(tldr) > 4000
    assert all(0 < len(t) <= 2000 for t in texts)
    start = next(i for i, t in enumerate(texts) if t.startswith("Done ·"))
    assert f"TL;DR: {tldr}" in " ".join(texts[start : start + 4]).replace("\n", " ")


async def test_nothing_sent_can_ping_anyone(fake: FakeDiscord, tmp_path: Path) -> None:
    engine = ScriptedEngine(tldr="Ask @everyone and @here, or <@123456789012345678>.")
    bot = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=engine)
    try:
        run_id, _message = await bot.research("Acme @everyone Robotics")
        engine.release.set()
        await bot.runs.wait(run_id)
        assert "No runs" not in await bot.command(fake.guild.bob, "history")
    finally:
        await bot.stop()
    payloads = message_payloads(fake)
    assert len(payloads) >= 8
    assert all(p["allowed_mentions"] == {"parse": []} for p in payloads)
    summary = next(p["content"] for p in payloads if "TL;DR" in (p.get("content") or ""))
    assert "@everyone" not in summary
    assert "@here" not in summary
    assert "<@123456789012345678>" not in summary
    assert "@everyone" not in card_text(fake.find("POST", r"/channels/\d+/messages")[0].body)


async def test_only_the_requester_may_cancel(bot: DiscordBot, fake: FakeDiscord) -> None:
    world = fake.guild
    run_id, message = await bot.research("Acme Robotics")
    assert bot.engine is not None
    await bot.engine.parked(run_id).wait()

    answer = await bot.press(world.bob, message, "cancel", run_id)
    assert answer == f"Only <@{world.alice['id']}> can cancel this run."
    assert bot.runs.get_active(run_id) is not None

    assert await bot.press(world.alice, message, "cancel", run_id) == "Cancelling the run."
    await bot.runs.wait(run_id)
    assert (await bot.store.get_run(run_id)).status == RunStatus.CANCELLED
    assert await bot.press(world.alice, message, "cancel", run_id) == "That run has finished."
    last_edit = fake.find("PATCH", rf"/channels/\d+/messages/{message['id']}")[-1]
    assert _components(last_edit.body) == []
    assert "Cancelled" in card_text(last_edit.body)


async def test_a_button_pressed_from_another_guild_finds_the_run_finished(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    run_id, message = await bot.research("Acme Robotics")
    assert bot.engine is not None
    await bot.engine.parked(run_id).wait()
    control = bot.engine.controls[run_id]

    for action in ("summarize", "cancel"):
        # The requester's own id and a custom id naming the run, but sent from another guild.
        payload = world.button(world.alice, message, f"rb:{action}:{run_id}")
        payload["guild_id"] = payload["authorizing_integration_owners"]["0"] = "424242424242424242"
        payload["channel"] = {**payload["channel"], "guild_id": payload["guild_id"]}
        await fake.dispatch("INTERACTION_CREATE", payload)
        call = await fake.wait_for_call("POST", rf"/interactions/{payload['id']}/.+")
        assert call.body["data"]["content"] == "That run has finished."
        assert call.body["data"]["flags"] == 64

    assert not control.summarize_requested.is_set()
    assert not control.cancel_requested.is_set()
    assert bot.runs.get_active(run_id) is not None
    assert await bot.press(world.bob, message, "summarize", run_id) == "Writing up the report now."
    await bot.runs.wait(run_id)


async def test_the_summarize_reaction_writes_up(bot: DiscordBot, fake: FakeDiscord) -> None:
    world = fake.guild
    run_id, message = await bot.research("Acme Robotics")
    assert bot.engine is not None
    await bot.engine.parked(run_id).wait()
    control = bot.engine.controls[run_id]

    await fake.dispatch("MESSAGE_REACTION_ADD", world.reaction(world.bob, message["id"], "👍"))
    await fake.dispatch("MESSAGE_REACTION_ADD", world.reaction(world.bot, message["id"], "📝"))
    # Gateway events are handled in order: once this press is answered, both were seen.
    await bot.press(world.bob, message, "cancel", run_id)
    assert not control.summarize_requested.is_set()

    await fake.dispatch("MESSAGE_REACTION_ADD", world.reaction(world.bob, message["id"], "📝"))
    await bot.runs.wait(run_id)
    record = await bot.store.get_run(run_id)
    assert (record.status, record.termination_reason) == (RunStatus.DONE, "forced_synthesized")


async def test_the_summarize_reaction_reaches_a_run_this_process_has_not_shown(
    fake: FakeDiscord,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The run's message is known from the store, as on a replica that holds the gateway while
    another runs the run: here the bot restarted and the recovered run has not shown itself yet."""
    world = fake.guild
    run_id, message = await interrupted_run(fake, tmp_path / "db.sqlite3")
    engine = ScriptedEngine(hold_recovery=True)
    before = len(fake.calls)
    second = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=engine)
    try:
        await engine.parked(run_id).wait()  # recovered, and waiting before its first event
        assert not [c for c in fake.calls[before:] if message["id"] in c.path]
        unrelated = "1111111111111111111"  # a person's message in the channel, not a run's
        await fake.dispatch("MESSAGE_REACTION_ADD", world.reaction(world.bob, unrelated, "📝"))
        await fake.dispatch("MESSAGE_REACTION_ADD", world.reaction(world.bob, message["id"], "📝"))
        # Only Summarize lets the held recovery go on: the reaction made it write up.
        await second.runs.wait(run_id)
        record = await second.store.get_run(run_id)
    finally:
        await second.stop()
    assert (record.status, record.termination_reason) == (RunStatus.DONE, "interrupted_synthesized")
    assert not engine.recover_gate.is_set()
    # The reaction on a message that is no run's touched nothing.
    assert not [c for c in fake.calls if unrelated in c.path]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert thread_posts(fake, message["id"])[-1].files


async def test_buttons_work_after_a_restart(fake: FakeDiscord, tmp_path: Path) -> None:
    world = fake.guild
    first = await DiscordBot.start(fake, tmp_path / "db.sqlite3")
    run_id, message = await first.research("Acme Robotics")
    assert first.engine is not None
    await first.engine.parked(run_id).wait()
    await first.stop(close_store=False)
    assert (await first.store.get_run(run_id)).status == RunStatus.INTERRUPTED
    await first.store.close()

    engine = ScriptedEngine(hold_recovery=True)
    second = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=engine)
    try:
        await engine.parked(run_id).wait()
        answer = await second.press(world.bob, message, "cancel", run_id)
        assert answer == f"Only <@{world.alice['id']}> can cancel this run."
        answer = await second.press(world.bob, message, "summarize", run_id)
        assert answer == "Writing up the report now."
        engine.recover_gate.set()
        await second.runs.wait(run_id)
        answer = await second.press(world.bob, message, "summarize", run_id)
        assert answer == "That run has finished."
        record = await second.store.get_run(run_id)
    finally:
        await second.stop()
    assert (record.status, record.termination_reason) == (RunStatus.DONE, "interrupted_synthesized")
    texts = [p.body["content"] for p in thread_posts(fake, message["id"])]
    assert any(t.startswith("The bot restarted while this run was in progress") for t in texts)
    assert any("interrupted by a restart" in t for t in texts)
    assert thread_posts(fake, message["id"])[-1].files
    # Still one status message and one thread: the restart reused them.
    assert len(fake.find("POST", rf"/channels/{world.channel_id}/messages")) == 1


async def test_a_rate_limited_post_is_retried_after_retry_after(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    channel = fake.guild.channel_id
    fake.rate_limit_next("POST", rf"/channels/{channel}/messages", retry_after=0.01)
    run_id, message = await bot.research("Acme Robotics")
    posts = fake.find("POST", rf"/channels/{channel}/messages")
    assert [p.status for p in posts] == [429, 200]
    assert posts[0].body == posts[1].body
    assert status_message(fake, run_id)["id"] == message["id"]


async def test_history_and_show_stay_in_their_guild(bot: DiscordBot, fake: FakeDiscord) -> None:
    world = fake.guild
    run_id, _message = await bot.research("Acme Robotics")
    assert bot.engine is not None
    bot.engine.release.set()
    await bot.runs.wait(run_id)

    history = await bot.command(world.bob, "history")
    assert f"`{run_id}`" in history
    assert "Acme Robotics" in history
    assert "completed" in history

    answer = await bot.command(world.bob, "show", run=run_id.upper())
    assert answer == f"Posted the report of run `{run_id}` here."
    shared = fake.find("POST", rf"/channels/{world.channel_id}/messages")[-1]
    assert shared.files
    assert "TL;DR: Acme Robotics builds warehouse robots" in shared.body["content"]
    assert shared.authorization == f"Bot {fake.token}"

    other = await bot.store.create_run(_request_elsewhere())
    assert await bot.command(world.bob, "show", run=other.run_id) == (
        f"No run `{other.run_id}` in this server. `/research history` lists them."
    )
    assert other.run_id not in await bot.command(world.bob, "history")


async def test_usage_shows_this_servers_spend_per_day_and_per_person(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    run_id, _message = await bot.research("Acme Robotics")  # its first turn costs $0.01
    assert bot.engine is not None
    bot.engine.release.set()
    await bot.runs.wait(run_id)
    other = await bot.store.create_run(_request_elsewhere())
    used = UsageRecorded(turn=1, model="m", usage=Usage(cost_usd=5.0))
    await bot.store.append_event(other.run_id, used)

    answer = (await bot.command(world.bob, "usage")).splitlines()

    today = bot.store.now().date()
    assert answer[0] == "**Research spend in this server**"
    assert answer[1].startswith("Total for the last 7 days (UTC, since ")
    assert answer[1].endswith("): $0.01 · 1 run")
    assert answer[2:] == [
        "By day:",
        f"• {today} · $0.01 · 1 run",
        "By person:",
        "• Alice · $0.01 · 1 run",
    ]
    webhook = fake.find("POST", r"/webhooks/.+")[-1]
    assert webhook.body["flags"] == 64
    answer = (await bot.command(world.bob, "usage", days=30)).splitlines()
    assert answer[1].startswith("Total for the last 30 days")


async def test_a_spent_daily_budget_is_told_privately_and_the_run_going_finishes(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    bot = await DiscordBot.start(
        fake, tmp_path / "db.sqlite3", quota=QuotaLimits(daily_budget_usd=0.01)
    )
    try:
        world = fake.guild
        run_id, _message = await bot.research("Acme Robotics")
        assert bot.engine is not None
        await bot.engine.parked(run_id).wait()  # its first turn cost $0.01

        answer = await bot.command(world.bob, "company", name="Initech")

        assert answer.startswith("Today's research budget here ($0.01) is spent: $0.01 so far.")
        assert "It resets at midnight UTC (in " in answer
        assert fake.find("POST", r"/webhooks/.+")[-1].body["flags"] == 64
        assert len(fake.find("POST", rf"/channels/{world.channel_id}/messages")) == 1
        assert [r.run_id for r in await bot.store.list_runs()] == [run_id]
        bot.engine.release.set()
        await bot.runs.wait(run_id)
        assert (await bot.store.get_run(run_id)).status is RunStatus.DONE
    finally:
        await bot.stop()


@pytest.mark.parametrize(
    ("sub", "options", "mode", "depth"),
    [
        ("company", {"name": "Acme Robotics", "depth": "deep"}, Mode.COMPANY, Depth.DEEP),
        ("contracts", {"filters": "roads, Ireland", "depth": "deep"}, Mode.CONTRACTS, Depth.DEEP),
        ("contracts", {"filters": "roads, Ireland", "depth": "quick"}, Mode.CONTRACTS, Depth.QUICK),
        ("company", {"name": "Acme Robotics"}, Mode.COMPANY, Depth.QUICK),
    ],
)
async def test_the_depth_choice_reaches_the_runs_service(
    bot: DiscordBot, fake: FakeDiscord, sub: str, options: dict[str, str], mode: Mode, depth: Depth
) -> None:
    answer = await bot.command(fake.guild.alice, sub, **options)

    found = re.search(r"run `(\w+)`", answer)
    assert found, answer
    run = await bot.store.get_run(found[1])
    assert (run.mode, run.depth) == (mode, depth)
    assert run.topic in (options.get("name"), options.get("filters"))
    assert bot.engine is not None
    bot.engine.release.set()
    await bot.runs.wait(run.run_id)


async def test_history_marks_deep_runs(bot: DiscordBot, fake: FakeDiscord) -> None:
    origin = Origin(
        platform="discord", workspace=fake.guild.guild_id, channel="1", user="2", private=False
    )
    await bot.store.create_run(Request(topic="Acme", origin=origin))
    await bot.store.create_run(Request(topic="Globex", origin=origin, depth=Depth.DEEP))

    lines = (await bot.command(fake.guild.bob, "history")).splitlines()

    assert "company (deep)" in next(line for line in lines if "Globex" in line)
    assert "deep" not in next(line for line in lines if "Acme" in line)


async def test_usage_errors_are_ephemeral_and_start_nothing(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    answer = await bot.command(fake.guild.alice, "company", name="   ")
    assert answer.startswith("Tell me what to research")
    assert "Usage" in answer
    answer = await bot.command(fake.guild.alice, "show", run="not a run!")
    assert answer.startswith("Which run?")
    assert not fake.find("POST", r"/channels/\d+/messages")
    assert all(c.body.get("flags") == 64 for c in fake.find("POST", r"/webhooks/.+"))


def _request_elsewhere() -> Request:
    return Request(
        topic="Globex", origin=Origin(platform="discord", workspace="999", channel="1", user="2")
    )


async def test_a_run_without_a_thread_is_cancelled_and_the_person_told(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    fake.fail_next("POST", r"/channels/\d+/messages/\d+/threads", 403)
    answer = await bot.command(fake.guild.alice, "company", name="Acme Robotics")
    assert "could not post the run" in answer
    assert "Create Public Threads" in answer
    assert "was cancelled" in answer
    run_id = (await bot.store.list_runs(platform="discord"))[0].run_id
    await bot.runs.wait(run_id)
    assert (await bot.store.get_run(run_id)).status == RunStatus.CANCELLED
    # The orphan message (buttons leading nowhere) was taken down again.
    posted = fake.find("POST", rf"/channels/{fake.guild.channel_id}/messages")
    assert len(posted) == 1
    assert len(fake.find("DELETE", r"/channels/\d+/messages/\d+")) == 1


async def test_research_from_inside_a_thread_is_refused(bot: DiscordBot, fake: FakeDiscord) -> None:
    world = fake.guild
    payload = world.command(world.alice, "company", name="Acme Robotics")
    payload["channel"] = world.thread(world.channel_id, "1234567890123456789", "old run")
    payload["channel_id"] = payload["channel"]["id"]
    answer = await bot.interact(payload)
    assert answer.startswith("Start research from a text channel")
    assert not fake.find("POST", r"/channels/\d+/messages")


async def test_the_real_engine_end_to_end(
    world: Services, fake: FakeDiscord, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics"})]), reply_text(REPORT)
    )
    bot = await DiscordBot.serve(fake, world.store, world.runs)
    try:
        run_id, message = await bot.research("Acme Robotics")
        await bot.runs.wait(run_id)
    finally:
        await bot.stop(close_store=False)
    posts = thread_posts(fake, message["id"])
    texts = [p.body["content"] for p in posts]
    assert "• Searched: Acme Robotics" in texts
    summary = next(t for t in texts if t.startswith("Done · 2 turns"))
    assert "TL;DR: - Builds robots [1]." in summary
    (data,) = posts[-1].files.values()
    assert "## TL;DR" in data.decode()
    assert "ending: completed" in data.decode()
    last_edit = fake.find("PATCH", rf"/channels/\d+/messages/{message['id']}")[-1]
    assert _components(last_edit.body) == [f"rb:export:{run_id}"]
    assert all(p["allowed_mentions"] == {"parse": []} for p in message_payloads(fake))


async def test_a_queued_run_shows_its_place_then_starts(fake: FakeDiscord, tmp_path: Path) -> None:
    bot = await DiscordBot.start(fake, tmp_path / "db.sqlite3", max_concurrent=1)
    assert bot.engine is not None
    try:
        first, first_message = await bot.research("Acme Robotics")
        await bot.engine.parked(first).wait()
        second, second_message = await bot.research("Globex")
        assert "Queued (#1)" in card_text(second_message)

        await bot.press(fake.guild.alice, first_message, "summarize", first)
        await bot.engine.parked(second).wait()
        edit = await fake.wait_for_call("PATCH", rf"/channels/\d+/messages/{second_message['id']}")
        assert "Researching" in card_text(edit.body)
        bot.engine.release.set()
        await bot.runs.wait(second)
    finally:
        await bot.stop()
