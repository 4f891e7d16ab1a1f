"""Discord set-up and the pieces the adapter is made of: command sync, missing settings, the
summarize emoji, message splitting and safe text."""

from __future__ import annotations

import pytest

from bot.adapters.chat.sink import split_text
from bot.adapters.discord.app import serve_discord, sync_commands
from bot.adapters.discord.views import MESSAGE_LIMIT, reaction_emoji, safe_text
from bot.config import Settings
from bot.errors import ConfigError
from tests.adapters.discord.world import discord_settings
from tests.fakes.discord_api import FakeDiscord


async def test_sync_registers_one_research_command_globally(fake: FakeDiscord) -> None:
    await sync_commands(discord_settings(fake), None)

    (call,) = fake.find("PUT", r"/applications/\d+/commands")
    assert call.path == f"/applications/{fake.guild.app_id}/commands"
    (command,) = call.body
    assert command["name"] == "research"
    # Installable to a server and to a person; usable in servers, DMs and group DMs.
    assert (command["contexts"], command["integration_types"]) == ([0, 1, 2], [0, 1])
    options = {o["name"]: o for o in command["options"]}
    assert list(options) == [
        "company",
        "contracts",
        "history",
        "search",
        "usage",
        "show",
        "export",
        "watch",
        "watches",
        "watch-pause",
        "watch-resume",
        "unwatch",
    ]
    topic, every, _, mode, timezone = options["watch"]["options"]
    assert (topic["name"], topic["required"], topic["max_length"]) == ("topic", True, 300)
    assert [c["value"] for c in every["choices"]] == ["daily", "weekdays", "weekly", "monthly"]
    assert (every["required"], [c["value"] for c in mode["choices"]]) == (
        False,
        ["company", "contracts"],
    )
    assert (timezone["name"], timezone["required"], timezone["autocomplete"]) == (
        "timezone",
        False,
        True,
    )
    assert [o["name"] for o in options["unwatch"]["options"]] == ["watch"]
    (words,) = options["search"]["options"]
    assert (words["name"], words["type"], words["required"]) == ("words", 3, True)
    days = options["usage"]["options"][0]
    assert (days["name"], days["type"], days["required"]) == ("days", 4, False)
    assert (days["min_value"], days["max_value"]) == (1, 366)
    name, _ = options["company"]["options"]
    assert (name["name"], name["required"], name["max_length"]) == ("name", True, 300)
    assert options["contracts"]["options"][0]["name"] == "filters"
    for sub in ("company", "contracts"):
        depth = options[sub]["options"][1]
        assert (depth["name"], depth["type"], depth["required"]) == ("depth", 3, False)
        assert [(c["name"], c["value"]) for c in depth["choices"]] == [
            ("quick", "quick"),
            ("deep", "deep"),
        ]
    assert options["show"]["options"][0]["name"] == "run"
    run, fmt = options["export"]["options"]
    assert (run["name"], run["required"], fmt["name"], fmt["required"]) == (
        "run",
        True,
        "format",
        True,
    )
    assert [c["value"] for c in fmt["choices"]] == ["md", "html", "pdf", "docx"]
    assert not fake.find("GET", r"/gateway.*")


async def test_sync_to_one_guild(fake: FakeDiscord) -> None:
    await sync_commands(discord_settings(fake), int(fake.guild.guild_id))
    (call,) = fake.find("PUT", r"/applications/\d+/guilds/\d+/commands")
    assert call.path == f"/applications/{fake.guild.app_id}/guilds/{fake.guild.guild_id}/commands"
    assert [c["name"] for c in call.body] == ["research"]
    assert not fake.find("PUT", r"/applications/\d+/commands")


async def test_a_missing_token_is_one_clear_sentence() -> None:
    settings = Settings.from_mapping({})
    with pytest.raises(ConfigError, match=r"^DISCORD_TOKEN is not set"):
        await serve_discord(settings, runs=None, store=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^DISCORD_TOKEN is not set"):
        await sync_commands(settings, None)


@pytest.mark.parametrize(
    ("setting", "emoji"), [("memo", "📝"), (":memo:", "📝"), ("rocket", "🚀"), ("🔥", "🔥")]
)
def test_the_summarize_emoji_from_its_slack_name(setting: str, emoji: str) -> None:
    assert reaction_emoji(setting) == emoji


def test_an_unknown_emoji_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="RESEARCH_BOT_SUMMARIZE_EMOJI"):
        reaction_emoji("no_such_emoji")


def test_split_text_cuts_at_lines_then_spaces_then_anywhere() -> None:
    assert split_text("", 10) == []
    assert split_text("one\ntwo", 10) == ["one\ntwo"]
    assert split_text("aaaa\nbbbb\ncccc", 10) == ["aaaa\nbbbb", "cccc"]
    assert split_text("word " * 5, 12) == ["word word", "word word", "word"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    text = "\n".join(f"line {n} " + "y" * (n * 37 % 400) for n in range(200))
    pieces = split_text(text, MESSAGE_LIMIT)
    assert all(len(p) <= 2000 for p in pieces)
    assert "".join(pieces).count("line") == 200


def test_safe_text_defuses_every_ping() -> None:
    text = safe_text("@everyone @here <@123456789012345678> <@&123456789012345678> hi")
    assert "@everyone" not in text
    assert "@here" not in text
    assert "<@1" not in text
    assert "<@&1" not in text
    assert text.endswith(" hi")


async def test_a_refused_token_is_one_clear_sentence(fake: FakeDiscord) -> None:
    settings = discord_settings(fake, DISCORD_TOKEN="not-the-token")
    with pytest.raises(ConfigError, match=r"^Discord refused DISCORD_TOKEN"):
        await serve_discord(settings, runs=None, store=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^Discord refused DISCORD_TOKEN"):
        await sync_commands(settings, None)
    assert [c.status for c in fake.calls] == [401, 401]
