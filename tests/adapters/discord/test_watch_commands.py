"""`/research watch`, `watches`, `watch-pause`, `watch-resume` and `unwatch` on Discord, through
the real client started by `serve_discord`: a watch is its channel's (in UTC unless its maker
names a time zone, suggested as it is typed), changed only by the person who made it or someone
who may manage the server, unknown from elsewhere; and the front end's plain notice in a
channel."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.adapters.chat.sink import ChatError
from bot.domain import Depth, Mode, Origin
from bot.watches.cadence import Cadence
from bot.watches.model import WatchStatus
from tests.adapters.discord.world import DiscordBot
from tests.fakes.discord_api import FakeDiscord

MANAGE_GUILD = 1 << 5


@pytest.fixture
async def bot(fake: FakeDiscord, tmp_path: Path) -> AsyncIterator[DiscordBot]:
    running = await DiscordBot.start(fake, tmp_path / "db.sqlite3", RESEARCH_BOT_MAX_WATCHES="1")
    yield running
    await running.stop()


async def _made(bot: DiscordBot, **options: str) -> str:
    answer = await bot.command(bot.fake.guild.alice, "watch", **options)
    found = re.search(r"Watch `(w[0-9a-f]{6})` made", answer)
    assert found, answer
    return found[1]


async def test_a_watch_is_made_listed_and_changed_by_its_maker_only(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    watch_id = await _made(
        bot, topic="road maintenance, Ireland", every="daily", depth="deep", mode="contracts"
    )

    watch = await bot.store.get_watch(watch_id, "discord", world.guild_id)
    assert (watch.topic, watch.mode, watch.depth, watch.cadence, watch.tz) == (
        "road maintenance, Ireland",
        Mode.CONTRACTS,
        Depth.DEEP,
        Cadence.DAILY,
        "UTC",
    )
    assert (watch.channel, watch.created_by) == (world.channel_id, world.alice["id"])
    assert bot.runs.front_ends.due.is_set()

    listed = await bot.command(world.bob, "watches")
    assert listed.splitlines()[0] == "**Watches in this channel**"
    assert f"`{watch_id}` · road maintenance, Ireland · daily, contracts, deep" in listed

    refused = await bot.command(world.bob, "watch-pause", watch=watch_id)
    assert refused == (
        f"Only <@{world.alice['id']}> (who made it) or an admin can pause watch `{watch_id}`."
    )
    watch = await bot.store.get_watch(watch_id, "discord", world.guild_id)
    assert watch.status is WatchStatus.ACTIVE

    paused = await bot.command(world.alice, "watch-pause", watch=watch_id)
    assert paused.startswith(f"Watch `{watch_id}` paused")
    resumed = await bot.command(world.alice, "watch-resume", watch=watch_id)
    assert resumed.startswith(f"Watch `{watch_id}` resumed")
    watch = await bot.store.get_watch(watch_id, "discord", world.guild_id)
    assert watch.status is WatchStatus.ACTIVE


async def test_someone_who_may_manage_the_server_may_end_anyones_watch(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    watch_id = await _made(bot, topic="Acme Robotics")
    payload = world.command(world.bob, "unwatch", watch=watch_id)
    payload["member"]["permissions"] = str(int(payload["member"]["permissions"]) | MANAGE_GUILD)

    answer = await bot.interact(payload)

    assert answer.startswith(f"Watch `{watch_id}` ended: Acme Robotics.")
    assert await bot.store.list_watches("discord", world.guild_id) == []


async def test_another_channels_watch_is_unknown_and_the_limit_holds(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    watch_id = await _made(bot, topic="Acme Robotics")
    payload = world.command(world.alice, "unwatch", watch=watch_id)
    payload.update(channel_id="42", channel={**payload["channel"], "id": "42"})

    answer = await bot.interact(payload)
    too_many = await bot.command(world.alice, "watch", topic="Initech")

    assert answer == f"No watch `{watch_id}` in this channel. `/research watches` lists them."
    assert (
        too_many == "No more watches here: 1 is the most (RESEARCH_BOT_MAX_WATCHES). End one first."
    )
    (kept,) = await bot.store.list_watches("discord", world.guild_id)
    assert kept.id == watch_id


async def test_a_watch_keeps_the_time_zone_its_maker_names_and_an_unknown_one_is_said(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    unknown = await bot.command(world.alice, "watch", topic="Acme Robotics", timezone="Mars/Base")
    assert await bot.store.list_watches("discord", world.guild_id) == []

    answer = await bot.command(
        world.alice, "watch", topic="Acme Robotics", timezone="  america/new york "
    )

    assert unknown == (
        "Unknown time zone 'Mars/Base': give its name in the tz database, such as "
        "Europe/Berlin or America/New_York."
    )
    (watch,) = await bot.store.list_watches("discord", world.guild_id)
    assert watch.tz == "America/New_York"
    assert f"{watch.hour:02d}:{watch.minute:02d} (America/New_York)" in answer


async def test_the_time_zone_is_suggested_as_it_is_typed(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    payload = fake.guild.autocomplete(fake.guild.alice, "watch", "timezone", "berl")
    await fake.dispatch("INTERACTION_CREATE", payload)
    call = await fake.wait_for_call("POST", rf"/interactions/{payload['id']}/.+/callback")

    assert call.body == {
        "type": 8,
        "data": {"choices": [{"name": "Europe/Berlin", "value": "Europe/Berlin"}]},
    }


async def test_a_watch_needs_a_channel_the_bot_may_post_in(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    answer = await bot.interact(fake.guild.dm_command(fake.guild.alice, "watch", topic="Acme"))

    assert answer.startswith("A watch posts its reports in its channel, and I can't post here")
    assert await bot.store.list_watches("discord", f"user:{fake.guild.alice['id']}") == []


async def test_a_notice_is_one_message_that_mentions_nobody_and_a_gone_channel_raises(
    bot: DiscordBot, fake: FakeDiscord
) -> None:
    channel = fake.guild.channel_id
    assert "discord" in bot.runs.front_ends.platforms

    await bot.runs.front_ends.notice(
        Origin(platform="discord", workspace=fake.guild.guild_id, channel=channel),
        "No run this week @everyone",
    )

    (post,) = fake.find("POST", rf"/channels/{channel}/messages")
    assert post.body["allowed_mentions"] == {"parse": []}
    content = post.body["content"]
    assert content.startswith("No run this week @") and "@everyone" not in content

    fake.fail_next("POST", rf"/channels/{channel}/messages", 404)
    with pytest.raises(ChatError) as gone:
        await bot.runs.front_ends.notice(Origin(platform="discord", channel=channel), "hello")
    assert gone.value.reason.startswith("404 Not Found")
