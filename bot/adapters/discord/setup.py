"""Getting the bot onto Discord: its token, logging in, pointing discord.py at another API (a
local fake), and registering `/research` (`research-bot discord sync`)."""

from __future__ import annotations

import logging

import discord
from discord import app_commands

from bot.adapters.discord.views import research_group
from bot.config import Settings
from bot.errors import ConfigError

log = logging.getLogger(__name__)


def discord_token(settings: Settings) -> str:
    token = settings.discord_token.get_secret_value().strip() if settings.discord_token else ""
    if not token:
        raise ConfigError(
            "DISCORD_TOKEN is not set: copy the bot token from the Discord "
            "developer portal (Bot → Reset Token), see docs/discord.md."
        )
    return token


async def login(client: discord.Client, token: str) -> None:
    try:
        await client.login(token)
    except discord.LoginFailure:
        raise ConfigError(
            "Discord refused DISCORD_TOKEN: reset the bot token in the developer portal "
            "(Bot → Reset Token) and set the new one."
        ) from None


def point_at_api(settings: Settings) -> None:
    # discord.py has no per-client base URL: every REST call, interaction callbacks and
    # webhooks included, is built from the class attribute `Route.BASE`. This is the one place
    # it is set; the gateway URL then comes from `GET /gateway/bot` on that base.
    if settings.discord_api_url:
        discord.http.Route.BASE = settings.discord_api_url.rstrip("/")


async def sync_commands(settings: Settings, guild_id: int | None) -> None:
    """Register `/research` globally, or in one guild (instant; global changes take a while)."""
    token = discord_token(settings)
    point_at_api(settings)
    client = discord.Client(intents=discord.Intents(guilds=True))
    tree = app_commands.CommandTree(client)
    tree.add_command(research_group())
    async with client:
        await login(client, token)
        guild = discord.Object(id=guild_id) if guild_id is not None else None
        if guild is not None:
            tree.copy_global_to(guild=guild)
        synced = await tree.sync(guild=guild)
        log.info(
            "synced %s to %s",
            ", ".join(f"/{c.name}" for c in synced),
            f"guild {guild_id}" if guild_id else "every guild (global)",
        )
