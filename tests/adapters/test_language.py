"""The asker's language from each chat platform: a German request gets a German report end to
end (the real engine, SDKs and bolt app or discord.py client against the fakes), and where
the language comes from when the platform does not say."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.compose import Services
from tests.adapters.discord.world import DiscordBot, status_message, thread_posts
from tests.adapters.slack.world import EDITED, SlackWorld, front_end, serve
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tools
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack

GERMAN_REPORT = (
    "# Acme Robotics GmbH\n\n## Kurzfassung\n- Acme baut Lagerroboter [1].\n\n"
    "## Überblick\nGegründet 2015 [1].\n"
)


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def discord_api() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as server:
        yield server


def _script_german_run(anthropic_api: FakeAnthropic) -> None:
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics"})]), reply_text(GERMAN_REPORT)
    )


def _assert_asked_in_german(anthropic_api: FakeAnthropic) -> None:
    task = json.dumps(anthropic_api.requests[0]["messages"][0], ensure_ascii=False)
    assert "Write the report in German (Deutsch)" in task
    assert "## Kurzfassung" in task


def _assert_german_frame(markdown: str) -> None:
    assert markdown.startswith("# Acme Robotics GmbH\n\n*Unternehmensrecherche · ")
    assert "## Kurzfassung\n\n- Acme baut Lagerroboter [1]." in markdown
    assert "## Quellen\n\n1. [" in markdown
    assert "\nLauf `" in markdown and " Runden · Ende: completed · " in markdown
    assert "## TL;DR" not in markdown and "## Sources" not in markdown


async def test_a_german_slack_user_gets_a_german_report(
    world: Services, anthropic_api: FakeAnthropic, slack: FakeSlack
) -> None:
    slack.locales["U1"] = "de-DE"
    _script_german_run(anthropic_api)
    runner, sender = await serve(front_end(slack, world.runs, world.store, **EDITED), slack)
    try:
        assert await sender.command("Acme Robotics", user="U1") == (200, "")
        parent = (await slack.wait_for("chat.postMessage"))[0]
        await slack.wait_for("files.completeUploadExternal")
        (run,) = await world.store.list_runs(platform="slack")
        await world.runs.wait(run.run_id)
    finally:
        await runner.cleanup()

    (info,) = slack.calls_to("users.info")
    assert info.args["user"] == "U1" and info.args["include_locale"] in ("1", "true")
    assert run.language == "de"
    _assert_asked_in_german(anthropic_api)
    _assert_german_frame(next(iter(slack.files.values())).content.decode())
    summary = slack.thread("C1", parent.response["ts"])[-1]
    assert "Kurzfassung: - Acme baut Lagerroboter [1]." in summary


async def test_a_german_discord_user_gets_a_german_report(
    world: Services, anthropic_api: FakeAnthropic, discord_api: FakeDiscord
) -> None:
    _script_german_run(anthropic_api)
    guild = discord_api.guild
    bot = await DiscordBot.serve(discord_api, world.store, world.runs)
    try:
        payload = guild.command(guild.alice, "company", locale="de", name="Acme Robotics")
        found = re.search(r"run `(\w+)`", await bot.interact(payload))
        assert found
        run_id = found[1]
        message = status_message(discord_api, run_id)
        await bot.runs.wait(run_id)
    finally:
        await bot.stop(close_store=False)

    assert (await world.store.get_run(run_id)).language == "de"
    _assert_asked_in_german(anthropic_api)
    posts = thread_posts(discord_api, message["id"])
    ((_, data),) = posts[-1].files.items()
    _assert_german_frame(data.decode())
    texts = [p.body["content"] for p in posts]
    assert any("Kurzfassung: - Acme baut Lagerroboter [1]." in t for t in texts)


async def test_slack_asks_each_user_once_for_their_locale(slack: FakeSlack, tmp_path: Path) -> None:
    slack.locales.update({"U1": "ja-JP", "U2": "pt-BR"})
    bot = await SlackWorld.start(slack, tmp_path / "db.sqlite3")
    try:
        first, _ = await bot.research("Acme Robotics", user="U1")
        second, _ = await bot.research("Globex", user="U1")
        third, _ = await bot.research("Initech", user="U2")
        languages = [(await bot.store.get_run(r)).language for r in (first, second, third)]
    finally:
        await bot.stop()

    assert languages == ["ja", "ja", "pt"]
    assert [c.args["user"] for c in slack.calls_to("users.info")] == ["U1", "U2"]


async def test_without_users_read_slack_goes_by_the_topic(slack: FakeSlack, tmp_path: Path) -> None:
    # An install from before the scope was added: Slack refuses users.info.
    slack.fail("users.info", "missing_scope", times=2, needed="users:read")
    bot = await SlackWorld.start(slack, tmp_path / "db.sqlite3")
    try:
        german, _ = await bot.research("contracts Straßenbau Ausschreibungen in Bayern über 1 Mio")
        named, _ = await bot.research("Deutsche Bahn")
        stored = [await bot.store.get_run(r) for r in (german, named)]
    finally:
        await bot.stop()

    assert [r.language for r in stored] == ["de", "en"]


async def test_an_unknown_discord_locale_falls_back_to_english(
    discord_api: FakeDiscord, tmp_path: Path
) -> None:
    guild = discord_api.guild
    bot = await DiscordBot.start(discord_api, tmp_path / "db.sqlite3")
    try:
        payload = guild.command(guild.alice, "company", locale="ko", name="Samsung")
        found = re.search(r"run `(\w+)`", await bot.interact(payload))
        assert found
        stored = await bot.store.get_run(found[1])
        brazil = guild.command(guild.bob, "company", locale="pt-BR", name="Petrobras")
        found = re.search(r"run `(\w+)`", await bot.interact(brazil))
        assert found
        portuguese = await bot.store.get_run(found[1])
    finally:
        await bot.stop()

    assert (stored.language, portuguese.language) == ("en", "pt")


async def test_a_slow_users_info_does_not_hold_the_run_back(
    slack: FakeSlack, tmp_path: Path
) -> None:
    slack.locales["U1"] = "ja-JP"
    stuck = slack.hold("users.info")
    bot = await SlackWorld.start(slack, tmp_path / "db.sqlite3")
    bot.front.locales.wait_s = 0.05
    try:
        # The run starts without the locale (the topic's language), and the next asks again.
        first, _ = await bot.research("Acme Robotics", user="U1")
        stuck.release()
        second, _ = await bot.research("Globex", user="U1")
        languages = [(await bot.store.get_run(r)).language for r in (first, second)]
    finally:
        await bot.stop()

    assert stuck.arrived.is_set()
    assert languages == ["en", "ja"]
