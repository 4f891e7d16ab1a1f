"""Which Slack conversations count as private (a private channel, a group DM, a DM: what is
asked there is found only from there). Real Slack bodies are replayed through the front end's
parsers to see what each payload says by itself; then runs started over the wire store what
Slack said, asking `conversations.info` (after the ack, once per channel) only where the payload
did not say, and taking a refusal as private.

The bodies are `payloads.jsonl` beside this file and, where it sits beside the repository, the
shared collection it was drawn from (see test_payloads.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
import pytest_asyncio

from bot.adapters.chat.service import Caller
from bot.adapters.slack.service import action_caller, command_caller, event_caller
from tests.adapters.slack.world import SlackWorld
from tests.fakes.slack_api import FakeSlack

HERE = Path(__file__).parent
SHAPES = HERE / "payloads.jsonl"
COLLECTED = HERE.parents[2].parent / "shared" / "slack-payloads" / "payloads.jsonl"
PRIVATE_TYPES = {"group", "im", "mpim", "app_home"}
PRIVATE_NAMES = {"directmessage", "privategroup"}

module_loop = pytest.mark.asyncio(loop_scope="module")
"""The wire tests share one bot (and its event loop): each uses channels of its own."""


def _entries() -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in (SHAPES, COLLECTED):
        if path.exists():
            for line in path.read_text().splitlines():
                entry = json.loads(line)
                found.setdefault(entry["id"], entry)
    return list(found.values())


def _caller(entry: dict[str, Any]) -> tuple[Caller, str, str] | None:
    """The caller the front end makes of a payload that names a conversation, with the
    payload's own `channel_name` and `channel_type`; None for one that names none."""
    if "form" in entry:
        form = dict(parse_qsl(entry["form"]))
        if "payload" in form:
            return _caller({"body": json.loads(form["payload"]), "kind": "interactive"})
        if not form.get("channel_id"):
            return None
        return command_caller(form), form.get("channel_name", ""), ""
    body = entry["body"]
    if "actions" in body or body.get("type") in ("block_actions", "message_action"):
        where = body.get("channel") or {}
        return (action_caller(body), where.get("name", ""), "") if where.get("id") else None
    event = body.get("event", body)
    channel = event.get("channel")
    if not isinstance(channel, str) or not channel:
        return None
    kind = str(event.get("channel_type") or "")
    caller = event_caller(body, user=str(event.get("user", "")), channel=channel, kind=kind)
    return caller, "", kind


def test_every_real_payload_is_read_as_private_unless_slack_says_it_is_public() -> None:
    verdicts: dict[bool | None, list[str]] = {True: [], False: [], None: []}
    for entry in _entries():
        read = _caller(entry)
        if read is None:
            continue
        caller, name, kind = read
        said_private = (
            kind in PRIVATE_TYPES
            or name in PRIVATE_NAMES
            or name.startswith("mpdm-")
            or caller.channel.startswith(("D", "G"))
        )
        expected = True if said_private else (False if kind == "channel" else None)
        assert caller.private is expected, (entry["id"], caller.channel, name, kind)
        # Unsaid is private until Slack is asked: only `channel_type: channel` is public.
        assert caller.origin().private is (caller.private is not False)
        verdicts[caller.private].append(entry["id"])
    # The bodies cover each verdict: a DM's and a private channel's, a public channel event's,
    # and slash commands from channels Slack must be asked about.
    assert all(verdicts.values()), {k: len(v) for k, v in verdicts.items()}


def test_what_real_payloads_of_each_conversation_say() -> None:
    form = "team_id=T1&channel_id=G01LAS5F405&channel_name=privategroup&user_id=U1&text=x"
    assert command_caller(dict(parse_qsl(form))).private is True
    dm = {"team": {"id": "T1"}, "user": {"id": "U1"}, "channel": {"id": "D01ACC2E8S3"}}
    assert action_caller({**dm, "channel": {"id": "D01", "name": "directmessage"}}).private
    group_dm = {"channel_id": "C0MPIM", "channel_name": "mpdm-ada--bob-1", "team_id": "T1"}
    assert command_caller(group_dm).private is True
    # Channels made since 2021 are all C, private or not: the name alone does not say.
    assert command_caller({"channel_id": "C111", "channel_name": "random"}).private is None
    body = {"team_id": "T1"}
    assert event_caller(body, user="U1", channel="C1", kind="channel").private is False
    assert event_caller(body, user="U1", channel="C1", kind="group").private is True
    assert event_caller(body, user="U1", channel="C1").private is None


# -- over the wire -------------------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def bot(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SlackWorld]:
    """One bot for the module: each test uses channels of its own."""
    async with FakeSlack() as slack:
        running = await SlackWorld.start(slack, tmp_path_factory.mktemp("privacy") / "db.sqlite3")
        running.engine.release.set()
        yield running
        await running.stop()


async def _private(bot: SlackWorld, channel: str, **payload: str) -> bool:
    run_id, _ = await bot.research("Acme Robotics", channel=channel, **payload)
    return (await bot.store.get_run(run_id)).origin.private


def _asked(bot: SlackWorld, channel: str) -> int:
    calls = bot.slack.calls_to("conversations.info", ok_only=False)
    return sum(1 for call in calls if call.args.get("channel") == channel)


@module_loop
async def test_a_private_channel_named_by_the_command_is_private_without_asking(
    bot: SlackWorld,
) -> None:
    assert await _private(bot, "G7", channel_name="privategroup")
    assert await _private(bot, "C7", channel_name="privategroup")
    assert await _private(bot, "C8", channel_name="mpdm-ada--bob-1")
    assert _asked(bot, "G7") + _asked(bot, "C7") + _asked(bot, "C8") == 0


@module_loop
async def test_a_channel_slack_calls_public_is_public_and_asked_about_once(
    bot: SlackWorld,
) -> None:
    assert not await _private(bot, "C20")
    assert not await _private(bot, "C20")
    assert _asked(bot, "C20") == 1


@module_loop
async def test_a_channel_slack_calls_private_is_private(bot: SlackWorld) -> None:
    bot.slack.kinds["C30"] = "private"
    assert await _private(bot, "C30")


@module_loop
async def test_a_channel_slack_will_not_describe_is_private_and_asked_again(
    bot: SlackWorld,
) -> None:
    bot.slack.fail("conversations.info", "missing_scope", needed="channels:read")
    assert await _private(bot, "C40")
    assert not await _private(bot, "C40")  # answered this time: public
    assert _asked(bot, "C40") == 2


@module_loop
async def test_a_message_to_the_app_in_its_dm_is_private(bot: SlackWorld) -> None:
    before = len(await bot.store.list_runs(limit=100))
    await bot.sender.direct_message("Acme Robotics", event_id="EvPrivDM", channel="D50")
    await bot.slack.wait_for("chat.postMessage", where=lambda c: c.args["channel"] == "D50")
    runs = await bot.store.list_runs(limit=100)
    assert len(runs) == before + 1
    (run,) = [r for r in runs if r.origin.channel == "D50"]
    assert run.origin.private
    assert _asked(bot, "D50") == 0


@module_loop
async def test_a_mention_in_a_channel_asks_slack_whether_it_is_public(bot: SlackWorld) -> None:
    bot.slack.kinds["C61"] = "private"
    for n, channel in enumerate(("C60", "C61")):
        await bot.sender.mention("Acme Robotics", event_id=f"EvPrivMention{n}", channel=channel)
        await bot.slack.wait_for(
            "chat.postMessage", where=lambda c, ch=channel: c.args["channel"] == ch
        )
    runs = {r.origin.channel: r for r in await bot.store.list_runs(limit=100)}
    assert (runs["C60"].origin.private, runs["C61"].origin.private) == (False, True)
    assert _asked(bot, "C60") == _asked(bot, "C61") == 1
