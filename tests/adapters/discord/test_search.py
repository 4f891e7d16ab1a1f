"""`/research search` on Discord, end to end (the real client against the fake Discord): answered
to the person alone, this server only, each hit with its run's thread link and a snippet that
mentions nobody; and which Discord conversations count as private: a channel @everyone may view
is public, one it may not, a private thread or a DM is private."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import discord
import pytest
import pytest_asyncio

from bot.agent.report.model import Report, Section
from bot.domain import Mode, Origin, Request, RunRecord, RunStatus
from tests.adapters.discord.world import DiscordBot
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_payloads import snowflake

VIEW_CHANNEL = 1 << 10
HOSTILE = "Robots for <@{user}> and @everyone and <@&{role}>, see [it](https://evil.example)."

module_loop = pytest.mark.asyncio(loop_scope="module")
"""The tests share one bot (and its event loop): each stores runs of its own."""


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def bot(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DiscordBot]:
    base = discord.http.Route.BASE
    async with FakeDiscord() as fake:
        running = await DiscordBot.start(fake, tmp_path_factory.mktemp("search") / "db.sqlite3")
        yield running
        await running.stop()
    discord.http.Route.BASE = base


async def _report(
    bot: DiscordBot, topic: str, body: str, *, channel: str = "", private: bool = False
) -> RunRecord:
    """A finished run of this server with its report, its thread opened from its message."""
    world = bot.fake.guild
    thread = snowflake()
    origin = Origin(
        platform="discord",
        workspace=world.guild_id,
        channel=channel or world.channel_id,
        thread=thread,
        user=world.alice["id"],
        user_name="Alice",
        private=private,
    )
    run = await bot.store.create_run(Request(topic=topic, mode=Mode.COMPANY, origin=origin))
    await bot.store.set_location(run.run_id, channel=origin.channel, thread=thread)
    report = Report(title=topic, tldr=body, sections=[Section(heading="Overview", body=body)])
    await bot.store.finish_run(
        run.run_id, status=RunStatus.DONE, ending="completed", report=(report, f"# {topic}\n{body}")
    )
    return await bot.store.get_run(run.run_id)


@module_loop
async def test_a_search_answers_privately_with_each_runs_thread_link(bot: DiscordBot) -> None:
    world = bot.fake.guild
    hostile = HOSTILE.format(user=world.bob["id"], role=world.guild_id)
    run = await _report(bot, "Zephyr Robotics", f"Zephyr builds {hostile}")

    answer = await bot.command(world.bob, "search", words="zephyr")

    defer = bot.fake.find("POST", r"/interactions/\d+/.+/callback")[-1]
    assert defer.body == {"type": 5, "data": {"flags": 64}}  # only the person sees it
    assert f"`{run.run_id}`" in answer and "Zephyr Robotics" in answer
    assert "asked by Alice" in answer
    link = f"https://discord.com/channels/{world.guild_id}/{world.channel_id}/{run.origin.thread}"
    assert f"open: {link}" in answer
    assert f"<@{world.bob['id']}>" not in answer and f"<@&{world.guild_id}>" not in answer
    assert "@everyone" not in answer
    assert "[it](" not in answer  # a stored masked link shows as text, not as a link


@module_loop
async def test_a_private_conversations_report_is_found_only_there(bot: DiscordBot) -> None:
    world = bot.fake.guild
    secret_thread = snowflake()
    run = await _report(bot, "Quasar Merger", "Quasar robots.", channel=secret_thread, private=True)

    assert run.run_id not in await bot.command(world.bob, "search", words="quasar")
    payload = world.command(world.bob, "search", words="quasar")
    private_thread = {**world.thread(world.channel_id, secret_thread, "secret"), "type": 12}
    payload.update(channel=private_thread, channel_id=secret_thread)
    assert f"`{run.run_id}`" in await bot.interact(payload)


@module_loop
async def test_empty_words_get_the_usage_and_no_hit_says_so(bot: DiscordBot) -> None:
    world = bot.fake.guild
    assert "Search for what?" in await bot.command(world.bob, "search", words="   ")
    nothing = await bot.command(world.bob, "search", words="xylophonic")
    assert nothing.startswith("No report of this server")


@module_loop
async def test_a_run_in_a_channel_everyone_may_view_is_public_and_else_private(
    bot: DiscordBot,
) -> None:
    world, fake = bot.fake.guild, bot.fake
    assert bot.engine is not None
    bot.engine.release.set()
    open_run, _ = await bot.research("Acme Robotics")
    assert not (await bot.store.get_run(open_run)).origin.private

    hidden = [{"id": world.guild_id, "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)}]
    await fake.dispatch("CHANNEL_UPDATE", {**world.text_channel(), "permission_overwrites": hidden})
    try:
        closed_run, _ = await bot.research("Acme Robotics")
    finally:
        await fake.dispatch("CHANNEL_UPDATE", world.text_channel())
    assert (await bot.store.get_run(closed_run)).origin.private


@module_loop
async def test_a_public_channels_report_is_found_server_wide_and_no_other_servers(
    bot: DiscordBot,
) -> None:
    world = bot.fake.guild
    here = await _report(bot, "Umbra Robotics", "Umbra robots.", channel=snowflake())
    other = await _report(bot, "Umbra Abroad", "Umbra robots abroad.")
    await bot.store.create_run(
        Request(
            topic="Umbra Elsewhere",
            origin=other.origin.model_copy(update={"workspace": snowflake()}),
        )
    )

    answer = await bot.command(world.bob, "search", words="umbra")  # from another channel
    assert f"`{here.run_id}`" in answer and f"`{other.run_id}`" in answer
    assert "Umbra Elsewhere" not in answer


@module_loop
async def test_history_lists_a_private_threads_runs_only_there(bot: DiscordBot) -> None:
    world = bot.fake.guild
    secret_thread = snowflake()
    run = await _report(bot, "Vortex Deal", "Vortex.", channel=secret_thread, private=True)

    assert run.run_id not in await bot.command(world.bob, "history")
    payload = world.command(world.bob, "history")
    private_thread = {**world.thread(world.channel_id, secret_thread, "secret"), "type": 12}
    payload.update(channel=private_thread, channel_id=secret_thread)
    assert f"`{run.run_id}`" in await bot.interact(payload)


@pytest.mark.parametrize(
    ("overwrites", "private"),
    [
        ([], True),  # the server's roles are not known here: unknown is private
        ([{"id": "{guild}", "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)}], True),
        ([{"id": "{guild}", "type": 0, "allow": str(VIEW_CHANNEL), "deny": "0"}], False),
    ],
)
@module_loop
async def test_in_a_server_the_bot_has_not_joined_the_payloads_overwrites_decide(
    bot: DiscordBot, overwrites: list[dict[str, str | int]], private: bool
) -> None:
    world = bot.fake.guild
    payload = world.user_install_command(world.bob, "company", name="Acme Robotics")
    guild = payload["guild_id"]
    filled = [{**o, "id": str(o["id"]).format(guild=guild)} for o in overwrites]
    payload["channel"] = {**payload["channel"], "permission_overwrites": filled}
    await bot.fake.dispatch("INTERACTION_CREATE", payload)
    token = re.escape(payload["token"])
    card = await bot.fake.wait_for_call("PATCH", rf"/webhooks/\d+/{token}/messages/@original")
    found = re.search(r"run `(\w+)`", json.dumps(card.body))
    assert found, card.body
    assert (await bot.store.get_run(found[1])).origin.private is private
