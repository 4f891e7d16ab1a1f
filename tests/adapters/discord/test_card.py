"""A run as one Components V2 card on Discord, through the real discord.py client and the fake
Discord (which refuses what Discord refuses: over 40 components, over 4,000 characters of text),
and a run that lives in its command's reply when a person installed the app to their account."""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord

from bot.adapters.chat.sink import MAX_STEPS, StatusView, StepRows
from bot.adapters.discord.card import CardParts, run_card
from bot.agent.control import Control
from bot.agent.deep.schema import Finding
from bot.agent.events import (
    Event,
    FindingReady,
    ResearcherStarted,
    ToolCalled,
    ToolFinished,
)
from bot.agent.report.model import Source
from bot.domain import Request, RunStatus
from bot.runs.manager import RunManager
from bot.store.runs import Store
from tests.adapters.discord.world import (
    DiscordBot,
    ScriptedEngine,
    card_files,
    card_text,
    custom_ids,
    interrupted_run,
    is_card,
)
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_components import MAX_COMPONENTS, walk

Json = Any


def _types(message: Json) -> list[int]:
    """The card's component types, depth first (accessories after their section's text)."""
    return [c["type"] for c in walk(message["components"])]


async def test_a_quick_run_is_one_card_that_ends_with_its_report_file(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    bot = await DiscordBot.start(fake, tmp_path / "db.sqlite3")
    try:
        run_id, message = await bot.research("Acme Robotics")
        assert bot.engine is not None
        bot.engine.release.set()
        await bot.runs.wait(run_id)
    finally:
        await bot.stop()

    post = fake.find("POST", rf"/channels/{fake.guild.channel_id}/messages")[0]
    assert is_card(post.body) and post.status == 200
    # Container: status text, separator, separator, the row of Summarize now and Cancel.
    assert _types(post.body) == [17, 10, 14, 14, 1, 2, 2]
    assert custom_ids(post.body) == [f"rb:summarize:{run_id}", f"rb:cancel:{run_id}"]
    edits = fake.find("PATCH", rf"/channels/\d+/messages/{message['id']}")
    assert edits and all(e.status == 200 and is_card(e.body) for e in edits)
    final = fake.messages[message["id"]]
    # Status, a section per step (its text and badge), then the file and the export menu.
    steps = [c for c in walk(final["components"]) if c["type"] == 9]
    assert steps and _types(final) == [17, 10, 14, *[9, 10, 2] * len(steps), 14, 13, 1, 3]
    assert all(s["accessory"]["label"].startswith("✓") for s in steps)
    assert card_files(final) == [f"attachment://acme-robotics-{run_id}.md"]
    assert [a["filename"] for a in final["attachments"]] == [f"acme-robotics-{run_id}.md"]
    assert custom_ids(final) == [f"rb:export:{run_id}"]
    assert final["components"][0]["accent_color"] == discord.Colour.green().value
    assert "**Status:** Done" in card_text(final)
    assert all(e.body["allowed_mentions"] == {"parse": []} for e in edits)


def test_a_quick_run_shows_its_latest_steps_as_sections() -> None:
    view = StatusView(run_id="r1", topic="Acme", mode="company", requester="1", turn=2)
    rows = StepRows(view)
    for n in range(1, 11):
        query = {"query": f"<@123456789012345678> Acme {n}"}
        rows.apply(ToolCalled(turn=n, call_id=f"c{n}", name="web_search", input=query))
    source = Source(url="https://news.example/a", title="A")
    rows.apply(
        ToolFinished(
            turn=9,
            call_id="c9",
            name="web_search",
            is_error=False,
            content="",
            sources=[source, source],
        )
    )
    rows.apply(ToolFinished(turn=10, call_id="c10", name="web_search", is_error=True, content=""))

    card = run_card(view, CardParts(buttons=True)).to_components()

    steps = [c for c in walk(card) if c["type"] == 9]
    assert len(steps) == MAX_STEPS  # the latest; the two before are counted in the status
    assert "· 10 steps (the latest 8 below)" in card_text({"components": card})
    first = steps[0]["components"][0]["content"]
    assert first.startswith("**3.** Searched: <@\u200b123")  # no ping
    assert [s["accessory"]["label"] for s in steps[-3:]] == ["working", "✓ 1 source", "failed"]
    assert len({s["accessory"]["custom_id"] for s in steps}) == MAX_STEPS


class ManyResearchers(ScriptedEngine):
    """A deep run of 25 researchers with long, hostile sub-questions; parks until `release`."""

    COUNT = 25

    async def research(
        self, run_id: str, request: Request, control: Control
    ) -> AsyncIterator[Event]:
        question = "Does <@123456789012345678> @everyone know " + "much " * 40 + "?"
        for agent in range(1, self.COUNT + 1):
            yield ResearcherStarted(agent=agent, question=f"{agent} {question}")
            yield ToolCalled(
                agent=agent, turn=1, call_id="a", name="web_search", input={"query": "x" * 200}
            )
        self.parked(run_id).set()
        await self.release.wait()
        for agent in range(1, self.COUNT + 1):
            url = f"https://news.example/{agent}"
            yield ToolFinished(
                agent=agent,
                turn=1,
                call_id="a",
                name="web_search",
                is_error=False,
                content="...",
                sources=[Source(url=url, title="Page", snippet="...")],
                numbers=[agent],
            )
            finding = Finding(topic=question, summary="x [1].", confidence="low", read=[agent])
            yield FindingReady(agent=agent, finding=finding)
        async for event in super().research(run_id, request, control):
            yield event


async def test_a_deep_run_bigger_than_a_card_is_summed_up_within_the_limits(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    engine = ManyResearchers()
    engine.release.set()
    bot = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=engine)
    try:
        answer = await bot.command(fake.guild.alice, "company", name="Acme", depth="deep")
        found = re.search(r"run `(\w+)`", answer)
        assert found, answer
        run_id = found[1]
        await bot.runs.wait(run_id)
    finally:
        await bot.stop()

    writes = fake.find("POST", r"/channels/\d+/messages") + fake.find(
        "PATCH", r"/channels/\d+/messages/\d+"
    )
    cards = [c for c in writes if is_card(c.body)]
    # The fake refuses what Discord refuses: every card it was sent, it accepted.
    assert cards and all(c.status == 200 for c in cards)
    final = next(m for m in fake.messages.values() if card_files(m))
    sections = [c for c in walk(final["components"]) if c["type"] == 9]
    assert 5 <= len(sections) < ManyResearchers.COUNT
    assert len(list(walk(final["components"]))) <= MAX_COMPONENTS
    hidden = ManyResearchers.COUNT - len(sections)
    assert f"…and {hidden} more researchers ({hidden} done)" in card_text(final)
    assert all(s["accessory"]["label"] == "✓ 1 source" for s in sections)
    assert "<@123456789012345678>" not in card_text(final)
    assert "@everyone" not in card_text(final)


async def test_the_fake_refuses_a_card_over_discords_limits(fake: FakeDiscord) -> None:
    text = {"type": 10, "content": "x" * 100}
    too_many = {"flags": 1 << 15, "components": [{"type": 17, "components": [text] * 40}]}
    too_long = {"flags": 1 << 15, "components": [{**text, "content": "x" * 4001}]}
    with_content = {"flags": 1 << 15, "content": "hi", "components": [text]}
    headers = {"Authorization": f"Bot {fake.token}"}
    url = f"{fake.api_url}/channels/{fake.guild.channel_id}/messages"
    async with aiohttp.ClientSession(headers=headers) as http:
        for body in (too_many, too_long, with_content):
            async with http.post(url, json=body) as response:
                assert response.status == 400
                assert (await response.json())["code"] == 50035
        async with http.post(url, json={"flags": 1 << 15, "components": [text]}) as response:
            assert response.status == 200


async def test_a_card_from_before_an_upgrade_becomes_a_card_and_its_buttons_work(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    world = fake.guild
    run_id, message = await interrupted_run(fake, tmp_path / "db.sqlite3")
    # As an older version left it: an embed and a row of buttons, no V2 flag.
    legacy_row = {
        "type": 1,
        "components": [
            {"type": 2, "style": 1, "label": "Summarize now", "custom_id": f"rb:summarize:{run_id}"}
        ],
    }
    fake.messages[message["id"]].update(
        flags=0, embeds=[{"title": "Company research: Acme Robotics"}], components=[legacy_row]
    )

    engine = ScriptedEngine(hold_recovery=True)
    before = len(fake.calls)
    second = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=engine)
    try:
        await engine.parked(run_id).wait()
        # The new process knows the button by its custom id alone (a dynamic item).
        legacy = fake.messages[message["id"]]
        answer = await second.press(world.bob, legacy, "summarize", run_id)
        assert answer == "Writing up the report now."
        engine.recover_gate.set()
        await second.runs.wait(run_id)
    finally:
        await second.stop()
    recovered = fake.find("PATCH", rf"/channels/\d+/messages/{message['id']}")
    recovered = [c for c in recovered if fake.calls.index(c) >= before]
    assert recovered[0].body["embeds"] == [] and is_card(recovered[0].body)
    assert all(c.status == 200 for c in recovered)
    final = fake.messages[message["id"]]
    assert is_card(final) and card_files(final)
    assert (await _status(tmp_path)) == RunStatus.DONE


async def _status(tmp_path: Path) -> RunStatus:
    store = await Store.open(tmp_path / "db.sqlite3")
    try:
        (record,) = await store.list_runs()
        return record.status
    finally:
        await store.close()


# -- A user install: the run lives in the command's reply --------------------------------------


@contextlib.asynccontextmanager
async def user_install_bot(
    fake: FakeDiscord, db: Path, engine: ScriptedEngine
) -> AsyncIterator[tuple[RunManager, Store]]:
    """The real bot, as `serve_discord` starts it."""
    bot = await DiscordBot.start(fake, db, engine=engine)
    try:
        yield bot.runs, bot.store
    finally:
        await bot.stop()


async def _run_by_interaction(
    fake: FakeDiscord, runs: RunManager, engine: ScriptedEngine, payload: Json
) -> str:
    """Send the command; once its card is up, returns the run's id (the run is parked)."""
    await fake.dispatch("INTERACTION_CREATE", payload)
    token = re.escape(payload["token"])
    card = await fake.wait_for_call("PATCH", rf"/webhooks/\d+/{token}/messages/@original")
    found = re.search(r"run `(\w+)`", card_text(card.body))
    assert found, card.body
    await engine.parked(found[1]).wait()
    return found[1]


async def test_in_a_dm_the_run_is_the_commands_reply_and_the_report_a_followup(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    engine = ScriptedEngine()
    payload = fake.guild.dm_command(fake.guild.alice, "company", name="Acme Robotics")
    async with user_install_bot(fake, tmp_path / "db.sqlite3", engine) as (runs, store):
        run_id = await _run_by_interaction(fake, runs, engine, payload)
        engine.release.set()
        await runs.wait(run_id)
        record = await store.get_run(run_id)

    token = payload["token"]
    assert (record.status, record.origin.workspace) == (
        RunStatus.DONE,
        f"user:{fake.guild.alice['id']}",
    )
    defer = fake.find("POST", r"/interactions/\d+/.+/callback")[0]
    assert defer.body == {"type": 5}  # public: the card is for everyone in the conversation
    # The bot's token posted nothing, opened no thread.
    assert not fake.find("POST", r"/channels/.+")
    (followup,) = fake.find("POST", rf"/webhooks/\d+/{re.escape(token)}")
    assert list(followup.files) == [f"acme-robotics-{run_id}.md"]
    assert followup.body["content"] == "Report: Acme Robotics"
    card = fake.interactions.original(token)
    assert is_card(card)
    assert card_files(card) == [f"attachment://acme-robotics-{run_id}.md"]
    assert custom_ids(card) == []  # no buttons left; no export select (no thread to post in)
    shown = card_text(card)
    assert "**Status:** Done" in shown
    assert "TL;DR: Acme Robotics builds warehouse robots" in shown
    edits = fake.find("PATCH", rf"/webhooks/\d+/{re.escape(token)}/messages/@original")
    assert all(e.status == 200 and e.body["allowed_mentions"] == {"parse": []} for e in edits)


async def test_after_the_token_expires_the_report_goes_by_dm(
    fake: FakeDiscord, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = ScriptedEngine()
    world = fake.guild
    payload = world.user_install_command(world.bob, "company", name="Acme Robotics")
    async with user_install_bot(fake, tmp_path / "db.sqlite3", engine) as (runs, store):
        run_id = await _run_by_interaction(fake, runs, engine, payload)
        fake.expire_interaction(payload["token"])
        with caplog.at_level(logging.INFO, logger="bot.adapters.discord.interaction"):
            engine.release.set()
            await runs.wait(run_id)
        record = await store.get_run(run_id)

    assert record.status == RunStatus.DONE
    (opened,) = fake.find("POST", r"/users/@me/channels")
    assert str(opened.body["recipient_id"]) == world.bob["id"]
    (sent,) = fake.find("POST", r"/channels/\d+/messages")
    assert sent.authorization == f"Bot {fake.token}"
    assert list(sent.files) == [f"acme-robotics-{run_id}.md"]
    assert sent.body["content"].startswith("Report: Acme Robotics")
    assert f"/research show run:{run_id}" in sent.body["content"]
    assert "report sent by DM" in caplog.text


async def test_a_refused_command_in_a_dm_takes_its_card_down_and_answers_privately(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    payload = fake.guild.dm_command(fake.guild.alice, "company", name="   ")
    async with user_install_bot(fake, tmp_path / "db.sqlite3", ScriptedEngine()) as (_, store):
        await fake.dispatch("INTERACTION_CREATE", payload)
        token = re.escape(payload["token"])
        answer = await fake.wait_for_call("POST", rf"/webhooks/\d+/{token}")
        assert await store.list_runs() == []

    # The public "thinking…" reply is deleted before the private answer: no empty card stays.
    deleted = fake.find("DELETE", rf"/webhooks/\d+/{token}/messages/@original")
    assert len(deleted) == 1 and fake.calls.index(deleted[0]) < fake.calls.index(answer)
    assert answer.body["flags"] == 64
    assert answer.body["content"].startswith("Tell me what to research")
    assert payload["token"] not in fake.interactions.originals


async def test_a_user_install_run_is_in_its_persons_history_and_recovers_by_dm(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    world = fake.guild
    payload = world.dm_command(world.bob, "company", name="Acme Robotics")
    first = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=ScriptedEngine())
    assert first.engine is not None
    run_id = await _run_by_interaction(fake, first.runs, first.engine, payload)
    elsewhere = await first.interact(world.dm_command(world.bob, "history"))
    assert run_id not in elsewhere  # another DM: a DM's runs are listed only in it
    asked = world.dm_command(world.bob, "history")
    asked.update(channel=payload["channel"], channel_id=payload["channel_id"])
    history = await first.interact(asked)
    assert f"`{run_id}`" in history
    await first.stop()

    before = len(fake.calls)
    second = await DiscordBot.start(fake, tmp_path / "db.sqlite3", engine=ScriptedEngine())
    try:
        await second.runs.wait(run_id)
        record = await second.store.get_run(run_id)
    finally:
        await second.stop()

    assert record.status == RunStatus.DONE
    # The command's reply is gone with the old process: the report comes by DM, bot token.
    (opened,) = fake.find("POST", r"/users/@me/channels")
    assert str(opened.body["recipient_id"]) == world.bob["id"]
    (sent,) = fake.find("POST", r"/channels/\d+/messages")
    assert sent.authorization == f"Bot {fake.token}"
    assert list(sent.files) == [f"acme-robotics-{run_id}.md"]
    assert not [c for c in fake.calls[before:] if c.path.startswith("/webhooks/")]
