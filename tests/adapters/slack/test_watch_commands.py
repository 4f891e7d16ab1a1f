"""`/research watch`, `watches`, `unwatch` and `watch pause|resume` in Slack: a watch made in a
channel with the asker's time zone from `users.info`, listed there, changed only by the person
who made it or an admin, unknown from anywhere else; and the front end's plain notice."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.chat.sink import ChatError
from bot.domain import Depth, Mode, Origin
from bot.watches.cadence import Cadence
from bot.watches.model import WatchStatus
from tests.adapters.slack.world import SlackWorld
from tests.fakes.slack_api import FakeSlack


class Colleagues(FakeSlack):
    """Slack whose `users.info` also says each person's time zone and whether they are an
    admin, as Slack does."""

    def __init__(self) -> None:
        super().__init__()
        self.zones: dict[str, str] = {"U1": "Europe/Berlin"}
        self.admins: set[str] = set()

    def _users_info(self, args: dict[str, Any]) -> dict[str, Any]:
        answer = super()._users_info(args)
        user = answer["user"]
        user.update(
            tz=self.zones.get(user["id"], "America/New_York"),
            is_admin=user["id"] in self.admins,
            is_owner=False,
        )
        return answer


@pytest.fixture
async def slack() -> AsyncIterator[Colleagues]:
    async with Colleagues() as fake:
        yield fake


@pytest.fixture
async def bot(slack: Colleagues, tmp_path: Path) -> AsyncIterator[SlackWorld]:
    bot = await SlackWorld.start(slack, tmp_path / "db.sqlite3", RESEARCH_BOT_MAX_WATCHES="2")
    yield bot
    await bot.stop()


async def _say(bot: SlackWorld, text: str, **where: str) -> str:
    """`/research text`; the private answer that follows the ack."""
    before = len(bot.slack.calls_to("response_url"))
    assert await bot.sender.command(text, **where) == (200, "")
    answer = (await bot.slack.wait_for("response_url", before + 1))[before].args
    assert answer["response_type"] == "ephemeral"
    return str(answer["text"])


async def _made(bot: SlackWorld, text: str, **where: str) -> str:
    answer = await _say(bot, text, **where)
    found = re.search(r"Watch `(w[0-9a-f]{6})` made", answer)
    assert found, answer
    return found[1]


async def test_a_watch_is_the_channels_with_the_askers_time_zone_and_wakes_the_clock(
    bot: SlackWorld, slack: Colleagues
) -> None:
    assert not bot.runs.front_ends.due.is_set()

    answer = await _say(bot, "watch Acme Robotics daily deep")

    (watch,) = await bot.store.list_watches("slack", "T1")
    assert (watch.topic, watch.cadence, watch.depth, watch.mode) == (
        "Acme Robotics",
        Cadence.DAILY,
        Depth.DEEP,
        Mode.COMPANY,
    )
    assert (watch.channel, watch.created_by, watch.created_by_name) == ("C1", "U1", "ada")
    assert watch.tz == "Europe/Berlin"
    at = f"{watch.hour:02d}:{watch.minute:02d} (Europe/Berlin)"
    assert answer.splitlines()[0] == (
        f"Watch `{watch.id}` made: its first report comes in this channel shortly, "
        f"then one every day at {at}."
    )
    assert f"`{watch.id}` · Acme Robotics · daily, deep · next " in answer.splitlines()[1]
    assert bot.runs.front_ends.due.is_set()
    assert slack.calls_to("chat.postMessage") == []  # the first report is the clock's to start

    # `users.info` is asked once per person: the second watch and a run use what it said.
    await _made(bot, "watch contracts road maintenance, Ireland weekly")
    await bot.research("Initech")
    assert len(slack.calls_to("users.info")) == 1
    (contracts,) = [w for w in await bot.store.list_watches("slack", "T1") if w.id != watch.id]
    assert (contracts.topic, contracts.mode, contracts.cadence) == (
        "road maintenance, Ireland",
        Mode.CONTRACTS,
        Cadence.WEEKLY,
    )
    bot.engine.release.set()


async def test_without_an_answer_from_users_info_a_watch_keeps_utc(
    bot: SlackWorld, slack: Colleagues
) -> None:
    slack.fail("users.info", "missing_scope", needed="users:read")

    await _made(bot, "watch Weekly Inc")

    (watch,) = await bot.store.list_watches("slack", "T1")
    assert (watch.topic, watch.cadence, watch.tz) == ("Weekly Inc", Cadence.WEEKLY, "UTC")


async def test_the_channels_watches_are_listed_to_anyone_in_it(bot: SlackWorld) -> None:
    acme = await _made(bot, "watch Acme Robotics")
    await _made(bot, "watch Initech monthly", channel="C2")

    listed = await _say(bot, "watches", user="U2", user_name="bob")
    elsewhere = await _say(bot, "watches", channel="C3")

    lines = listed.splitlines()
    assert lines[0] == "*Watches in this channel*"
    assert len(lines) == 2 and lines[1].startswith(f"`{acme}` · Acme Robotics · weekly · next ")
    assert "(Europe/Berlin)" in lines[1]
    assert elsewhere.startswith("No watches in this channel yet.")


async def test_only_the_maker_or_an_admin_changes_a_watch(
    bot: SlackWorld, slack: Colleagues
) -> None:
    watch_id = await _made(bot, "watch Acme Robotics")
    bot.runs.front_ends.due.clear()

    refused = await _say(bot, f"watch pause {watch_id}", user="U2", user_name="bob")
    assert refused == f"Only <@U1> (who made it) or an admin can pause watch `{watch_id}`."
    assert (await bot.store.get_watch(watch_id, "slack", "T1")).status is WatchStatus.ACTIVE

    paused = await _say(bot, f"watch pause `{watch_id}`")
    watch = await bot.store.get_watch(watch_id, "slack", "T1")
    assert (watch.status, watch.paused_reason) == (WatchStatus.PAUSED, "paused by ada")
    assert paused.startswith(f"Watch `{watch_id}` paused")
    assert "paused (paused by ada)" in (await _say(bot, "watches"))
    assert not bot.runs.front_ends.due.is_set()

    resumed = await _say(bot, f"watch resume {watch_id}")
    assert resumed.startswith(f"Watch `{watch_id}` resumed: its next report comes ")
    assert (await bot.store.get_watch(watch_id, "slack", "T1")).status is WatchStatus.ACTIVE
    assert bot.runs.front_ends.due.is_set()

    slack.admins.add("U3")
    ended = await _say(bot, f"unwatch {watch_id}", user="U3", user_name="carol")
    assert ended == (
        f"Watch `{watch_id}` ended: Acme Robotics. Its reports stay in `/research history`."
    )
    assert await bot.store.list_watches("slack", "T1") == []


async def test_a_watch_of_another_channel_or_workspace_is_unknown_and_unchanged(
    bot: SlackWorld,
) -> None:
    watch_id = await _made(bot, "watch Acme Robotics")
    unknown = await _say(bot, "unwatch w000000")

    assert unknown == "No watch `w000000` in this channel. `/research watches` lists them."
    for where in ({"channel": "C2"}, {"team": "T2"}):
        for how in ("unwatch", "watch pause", "watch resume"):
            answer = await _say(bot, f"{how} {watch_id}", **where)
            assert answer == unknown.replace("w000000", watch_id)
    watch = await bot.store.get_watch(watch_id, "slack", "T1")
    assert (watch.status, watch.channel) == (WatchStatus.ACTIVE, "C1")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("watch", "Watch what? `/research watch &lt;company&gt;"),
        ("watch weekly deep", "Watch what?"),
        ("watch Acme hourly", "Unknown cadence 'hourly': use one of daily, weekdays, weekly"),
        ("watch " + "x" * 301, "That is 301 characters; keep the topic under 300."),
        ("unwatch", "Which watch? `/research unwatch &lt;id&gt;`"),
        ("watch pause", "Which watch? `/research watch pause &lt;id&gt;`"),
    ],
)
async def test_bad_watch_input_gets_one_private_line(
    bot: SlackWorld, slack: Colleagues, text: str, says: str
) -> None:
    status, body = await bot.sender.command(text)

    answer = json.loads(body)
    assert (status, answer["response_type"]) == (200, "ephemeral")
    assert answer["text"].startswith(says) and "\n" not in answer["text"]
    assert await bot.store.list_watches("slack", "T1") == []
    assert slack.calls_to("response_url", "chat.postMessage") == []


async def test_a_workspace_keeps_at_most_its_limit_of_watches(bot: SlackWorld) -> None:
    await _made(bot, "watch Acme Robotics")
    await _made(bot, "watch Initech", channel="C2")

    answer = await _say(bot, "watch Globex")

    assert answer == "No more watches here: 2 is the most (RESEARCH_BOT_MAX_WATCHES). End one first."
    kept = await bot.store.list_watches("slack", "T1")
    assert sorted(w.topic for w in kept) == ["Acme Robotics", "Initech"]
    assert await _made(bot, "watch Globex", team="T2")  # another workspace has its own limit


async def test_a_notice_is_one_plain_message_and_a_gone_channel_raises(
    bot: SlackWorld, slack: Colleagues
) -> None:
    await bot.front.recover()  # attaches the front end to the runs service
    assert "slack" in bot.runs.front_ends.platforms

    await bot.runs.front_ends.notice(
        Origin(platform="slack", workspace="T1", channel="C1"), "No run today <!channel> & <b>"
    )

    (post,) = slack.calls_to("chat.postMessage")
    assert post.args["channel"] == "C1"
    assert post.args["text"] == "No run today &lt;!channel&gt; &amp; &lt;b&gt;"
    assert post.args["unfurl_links"] in (False, "false", "0")
    assert "blocks" not in post.args

    slack.private_channels.add("C9")
    with pytest.raises(ChatError) as gone:
        await bot.front.post_notice(Origin(platform="slack", channel="C9"), "hello")
    assert gone.value.reason == "channel_not_found"

    slack.outside_channels.add("C8")
    with pytest.raises(ChatError) as removed:
        await bot.front.post_notice(Origin(platform="slack", channel="C8"), "hello")
    assert removed.value.reason == "not_in_channel"
    assert slack.calls_to("conversations.join") == []  # a channel that removed the bot stays so
