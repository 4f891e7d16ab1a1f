"""Exporting a report from chat: the finished run's format menu uploads the file into the run's
thread, `/research export` posts it in the current channel, and neither reaches another
workspace's (or server's) runs. The real bolt app and discord.py client against the fakes."""

from __future__ import annotations

import json
import logging
import sys
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.domain import Origin, Request
from tests.adapters.discord.world import DiscordBot, thread_posts
from tests.adapters.slack.world import SlackWorld
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_components import walk
from tests.fakes.slack_api import FakeSlack, SharedFile

Json = Any
EXPORT = "research_export"
LOOKS_LIKE = {
    "md": b"# Acme Robotics",
    "html": b"<!DOCTYPE html>",
    "pdf": b"%PDF-",
    "docx": b"PK\x03\x04",  # a zip, as every Word file is
}


@pytest.fixture
def no_pango(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine as one without Pango: loading the PDF renderer fails as WeasyPrint does."""

    def refuse(name: str) -> Any:
        raise OSError("cannot load library 'libpango-1.0-0'")

    broken = types.ModuleType("bot.export.pdf_doc")
    broken.__getattr__ = refuse  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "bot.export.pdf_doc", broken)


# -- Slack ---------------------------------------------------------------------------------------


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def sbot(slack: FakeSlack, tmp_path: Path) -> AsyncIterator[SlackWorld]:
    bot = await SlackWorld.start(slack, tmp_path / "db.sqlite3")
    yield bot
    await bot.stop()


async def _finished_slack_run(bot: SlackWorld) -> tuple[str, str]:
    run_id, ts = await bot.research("Acme Robotics")
    bot.engine.release.set()
    await bot.runs.wait(run_id)
    return run_id, ts


def _export_options(blocks: list[Json]) -> dict[str, Json]:
    """The format menu's options by extension, as a person sees them on the message."""
    menus = [
        element
        for block in blocks
        if block["type"] == "actions"
        for element in block["elements"]
        if element.get("action_id") == EXPORT
    ]
    if not menus:
        return {}
    (menu,) = menus
    assert menu["type"] == "static_select"
    return {o["text"]["text"].rsplit(".", 1)[1].rstrip(")"): o for o in menu["options"]}


async def _exported(slack: FakeSlack, count: int) -> SharedFile:
    """The `count`-th file shared (the run's own report is the first)."""
    done = await slack.wait_for("files.completeUploadExternal", count)
    (entry,) = json.loads(done[count - 1].args["files"])
    return slack.files[entry["id"]]


@pytest.mark.parametrize("fmt", ["html", "docx", "pdf", "md"])
async def test_slack_menu_uploads_the_chosen_file_into_the_runs_thread(
    sbot: SlackWorld, slack: FakeSlack, fmt: str
) -> None:
    run_id, ts = await _finished_slack_run(sbot)
    options = _export_options(slack.messages[("C1", ts)]["blocks"])
    assert list(options) == ["md", "html", "pdf", "docx"]

    status = await sbot.sender.select(EXPORT, options[fmt], user="U2", message_ts=ts)

    assert status == (200, "")
    shared = await _exported(slack, 2)
    assert shared.filename == f"acme-robotics-{run_id}.{fmt}"
    assert (shared.channel, shared.thread_ts) == ("C1", ts)
    assert shared.content.startswith(LOOKS_LIKE[fmt])
    assert shared.initial_comment.startswith("<@U2> asked for the report as ")
    if fmt == "html":
        assert "<title>Acme Robotics" in shared.content.decode()
        assert "Acme Robotics builds warehouse robots" in shared.content.decode()
    assert not slack.calls_to("chat.postEphemeral")


async def test_slack_export_command_posts_in_the_channel_it_came_from(
    sbot: SlackWorld, slack: FakeSlack
) -> None:
    run_id, _ = await _finished_slack_run(sbot)

    assert await sbot.sender.command(f"export {run_id.upper()} HTML", channel="C7") == (200, "")

    shared = await _exported(slack, 2)
    assert shared.filename == f"acme-robotics-{run_id}.html"
    assert (shared.channel, shared.thread_ts) == ("C7", "")
    assert "Acme Robotics builds warehouse robots" in shared.content.decode()
    assert shared.initial_comment == (f"<@U1> shared report `{run_id}` as HTML: *Acme Robotics*")
    assert not slack.calls_to("response_url")


async def test_slack_export_joins_a_public_channel_and_explains_a_private_one(
    sbot: SlackWorld, slack: FakeSlack
) -> None:
    run_id, _ = await _finished_slack_run(sbot)
    slack.outside_channels.add("C8")
    slack.private_channels.add("G1")

    await sbot.sender.command(f"export {run_id} md", channel="C8")
    shared = await _exported(slack, 2)
    assert (shared.channel, shared.filename) == ("C8", f"acme-robotics-{run_id}.md")
    assert slack.calls_to("conversations.join")[0].args["channel"] == "C8"

    await sbot.sender.command(f"export {run_id} md", channel="G1")
    refused = (await slack.wait_for("response_url"))[0].args
    assert refused["text"] == "I couldn't upload the file here (channel_not_found)."
    assert refused["response_type"] == "ephemeral"


async def test_slack_export_of_another_workspaces_run_is_refused(
    sbot: SlackWorld, slack: FakeSlack
) -> None:
    run_id, ts = await _finished_slack_run(sbot)
    option = _export_options(slack.messages[("C1", ts)]["blocks"])["html"]

    await sbot.sender.command(f"export {run_id} html", team="T2", channel="C9")
    refused = (await slack.wait_for("response_url"))[0].args
    assert refused["response_type"] == "ephemeral"
    assert refused["text"] == (
        f"No run `{run_id}` in this workspace. `/research history` lists them."
    )

    # A select from another team carrying this run (Slack would never send one; still refused).
    await sbot.sender.select(EXPORT, option, team="T2", channel="C9", message_ts=ts)
    (ephemeral,) = await slack.wait_for("chat.postEphemeral")
    assert (ephemeral.args["channel"], ephemeral.args["user"]) == ("C9", "U1")
    assert ephemeral.args["text"].startswith(f"No run `{run_id}` in this workspace.")
    assert len(slack.calls_to("files.completeUploadExternal")) == 1  # the run's own report


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("export", "Which run, in which format?"),
        ("export abc123", "Which run, in which format?"),
        ("export abc123 xls", "md|html|pdf|docx` (see `/research history`)"),
        ("export abc!23 pdf", "Which run, in which format?"),
    ],
)
async def test_slack_bad_export_input_gets_a_short_private_answer(
    sbot: SlackWorld, slack: FakeSlack, text: str, says: str
) -> None:
    status, body = await sbot.sender.command(text)

    assert status == 200
    assert says in body
    assert '"response_type":"ephemeral"' in body.replace(" ", "")
    assert not slack.calls_to("files.getUploadURLExternal")


async def test_slack_run_without_report_offers_no_menu_and_cannot_be_exported(
    sbot: SlackWorld, slack: FakeSlack
) -> None:
    run_id, ts = await sbot.research("Acme Robotics")
    await sbot.engine.parked(run_id).wait()
    await sbot.sender.action("research_cancel", run_id, message_ts=ts)
    await sbot.runs.wait(run_id)
    assert _export_options(slack.messages[("C1", ts)]["blocks"]) == {}

    await sbot.sender.command(f"export {run_id} pdf")

    answer = (await slack.wait_for("response_url"))[0].args
    assert answer["text"] == f"Run `{run_id}` has no report (cancelled)."
    assert not slack.calls_to("files.getUploadURLExternal")


@pytest.mark.usefixtures("no_pango")
async def test_slack_pdf_without_pango_tells_the_person_and_logs_it(
    sbot: SlackWorld, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    _, ts = await _finished_slack_run(sbot)
    option = _export_options(slack.messages[("C1", ts)]["blocks"])["pdf"]

    with caplog.at_level(logging.WARNING, logger="bot.adapters.slack.export"):
        await sbot.sender.select(EXPORT, option, user="U2", message_ts=ts)
        (ephemeral,) = await slack.wait_for("chat.postEphemeral")

    assert ephemeral.args["user"] == "U2"
    assert ephemeral.args["text"].startswith("PDF export needs the Pango library")
    assert "libpango-1.0-0" in caplog.text
    assert len(slack.calls_to("files.completeUploadExternal")) == 1


# -- Discord -------------------------------------------------------------------------------------


@pytest.fixture
async def dbot(fake: FakeDiscord, tmp_path: Path) -> AsyncIterator[DiscordBot]:
    running = await DiscordBot.start(fake, tmp_path / "db.sqlite3")
    yield running
    await running.stop()


async def _finished_discord_run(bot: DiscordBot) -> tuple[str, Json]:
    """A run that finished with its report; returns its id and its message as it is now."""
    run_id, message = await bot.research("Acme Robotics")
    assert bot.engine is not None
    bot.engine.release.set()
    await bot.runs.wait(run_id)
    return run_id, bot.fake.messages[message["id"]]


def _select(message: Json) -> Json:
    (select,) = [c for c in walk(message["components"]) if c["type"] == 3]
    return select


async def test_discord_select_posts_the_chosen_file_in_the_runs_thread(
    dbot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    run_id, message = await _finished_discord_run(dbot)
    select = _select(message)
    assert select["custom_id"] == f"rb:export:{run_id}"
    assert [o["value"] for o in select["options"]] == ["md", "html", "pdf", "docx"]
    before = len(thread_posts(fake, message["id"]))

    answer = await dbot.interact(world.select(world.bob, message, select["custom_id"], ["html"]))

    assert answer == f"Posted the report of run `{run_id}` as HTML in its thread."
    posts = thread_posts(fake, message["id"])
    assert len(posts) == before + 1
    ((filename, data),) = posts[-1].files.items()
    assert filename == f"acme-robotics-{run_id}.html"
    assert "<title>Acme Robotics" in data.decode()
    assert posts[-1].body["content"].startswith(f"<@{world.bob['id']}> shared report `{run_id}`")
    assert posts[-1].authorization == f"Bot {fake.token}"


async def test_discord_export_command_posts_in_the_current_channel(
    dbot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    run_id, _ = await _finished_discord_run(dbot)

    answer = await dbot.command(world.bob, "export", run=run_id.upper(), format="docx")

    assert answer == f"Posted the report of run `{run_id}` as Word here."
    post = fake.find("POST", rf"/channels/{world.channel_id}/messages")[-1]
    ((filename, data),) = post.files.items()
    assert filename == f"acme-robotics-{run_id}.docx"
    assert data.startswith(LOOKS_LIKE["docx"])


async def test_discord_export_of_another_servers_run_is_refused(
    dbot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    _, message = await _finished_discord_run(dbot)
    other = await dbot.store.create_run(
        Request(
            topic="Initech",
            origin=Origin(platform="discord", workspace="42", channel="43", user="44"),
        )
    )
    refusal = f"No run `{other.run_id}` in this server. `/research history` lists them."
    uploads = len([c for c in fake.calls if c.files])

    assert await dbot.command(world.bob, "export", run=other.run_id, format="pdf") == refusal
    # A select naming the other server's run (Discord would never send one; still refused).
    custom_id = f"rb:export:{other.run_id}"
    forged = {**message, "components": [{"type": 1, "components": [{**_select(message)}]}]}
    forged["components"][0]["components"][0]["custom_id"] = custom_id
    assert await dbot.interact(world.select(world.bob, forged, custom_id, ["pdf"])) == refusal
    assert len([c for c in fake.calls if c.files]) == uploads


async def test_discord_bad_or_unready_exports_are_answered_privately(
    dbot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    queued = await dbot.store.create_run(
        Request(
            topic="Acme",
            origin=Origin(
                platform="discord", workspace=world.guild_id, channel="1", user="2", private=False
            ),
        )
    )

    answer = await dbot.command(world.bob, "export", run=queued.run_id, format="html")
    assert answer == f"Run `{queued.run_id}` has no report (queued)."
    answer = await dbot.command(world.bob, "export", run="not a run!", format="html")
    assert answer.startswith("Which run, in which format?")
    assert not [c for c in fake.calls if c.files]


@pytest.mark.usefixtures("no_pango")
async def test_discord_pdf_without_pango_tells_the_person(
    dbot: DiscordBot, fake: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    run_id, _ = await _finished_discord_run(dbot)
    uploads = len([c for c in fake.calls if c.files])

    with caplog.at_level(logging.WARNING, logger="bot.adapters.discord.export"):
        answer = await dbot.command(fake.guild.bob, "export", run=run_id, format="pdf")

    assert answer.startswith("PDF export needs the Pango library")
    assert "libpango-1.0-0" in caplog.text
    assert len([c for c in fake.calls if c.files]) == uploads


async def test_discord_refused_file_is_explained_privately(
    dbot: DiscordBot, fake: FakeDiscord
) -> None:
    world = fake.guild
    run_id, message = await _finished_discord_run(dbot)
    fake.fail_next(
        "POST", rf"/channels/{message['id']}/messages", 403, where=lambda c: bool(c.files)
    )

    answer = await dbot.interact(world.select(world.bob, message, f"rb:export:{run_id}", ["md"]))

    assert answer == (
        "I couldn't post the file (403 Forbidden (error code: 50013): Missing Permissions)."
    )
