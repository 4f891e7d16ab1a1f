"""Getting the bot onto Discord: its token, logging in, pointing discord.py at another API (a
local fake), and `/research` whole (the run commands of bot/adapters/discord/views.py and the
watch commands here), registered by `research-bot discord sync`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import discord
from discord import app_commands

from bot.adapters.chat.commands import Command, change_command, research_command
from bot.adapters.discord.views import DEPTH_HELP, DEPTHS, Topic, research_group
from bot.config import Settings
from bot.domain import Depth, Mode
from bot.errors import ConfigError
from bot.watches.cadence import Cadence
from bot.watches.zones import known_zone, zones_like

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
    tree.add_command(research_commands())
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


Wanted = Callable[[], Command]
"""Parses what the person gave a watch command; raises RequestError with what to tell them."""
CADENCES = [app_commands.Choice(name=c.value, value=c.value) for c in Cadence]
MODES = [app_commands.Choice(name=m.value, value=m.value) for m in Mode]
WATCH_ID = "The watch's id, as in /research watches"


@runtime_checkable
class WatchHandlers(Protocol):
    async def on_watch(self, interaction: discord.Interaction[Any], wanted: Wanted) -> None: ...


def _handler(interaction: discord.Interaction[Any]) -> WatchHandlers:
    client = interaction.client
    if not isinstance(client, WatchHandlers):
        raise TypeError(f"{type(client).__name__} does not handle /research watch")
    return client


def research_commands() -> app_commands.Group:
    """`/research` with its watch commands: `watch`, `watches`, `watch-pause`, `watch-resume`
    and `unwatch` (a subcommand cannot also be a group, so pause and resume are their own)."""
    group = research_group()

    @group.command(name="watch", description="Research a topic again each period, in this channel")
    @app_commands.describe(
        topic="The company, or tender filters with mode:contracts",
        every="How often (weekly unless you say), at this hour",
        depth=DEPTH_HELP,
        mode="company (default) or contracts",
        timezone="Whose hour: Europe/Berlin, America/New_York … (UTC unless you say)",
    )
    @app_commands.choices(every=CADENCES, depth=DEPTHS, mode=MODES)
    async def watch(
        interaction: discord.Interaction[Any],
        topic: Topic,
        every: str = Cadence.WEEKLY.value,
        depth: str = Depth.QUICK.value,
        mode: str = Mode.COMPANY.value,
        timezone: app_commands.Range[str, 1, 60] | None = None,
    ) -> None:
        def wanted() -> Command:
            run = research_command(topic, Mode(mode), Depth(depth), usage="")
            tz = None if timezone is None else known_zone(timezone)
            return run.model_copy(update={"kind": "watch", "cadence": Cadence(every), "tz": tz})

        await _handler(interaction).on_watch(interaction, wanted)

    @watch.autocomplete("timezone")
    async def zones(
        interaction: discord.Interaction[Any], typed: str
    ) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=zone, value=zone) for zone in zones_like(typed)]

    @group.command(name="watches", description="This channel's watches (only you see it)")
    async def watches(interaction: discord.Interaction[Any]) -> None:
        await _handler(interaction).on_watch(interaction, lambda: Command(kind="watches"))

    @group.command(name="watch-pause", description="Pause a watch of this channel")
    @app_commands.describe(watch=WATCH_ID)
    async def pause(interaction: discord.Interaction[Any], watch: str) -> None:
        await _handler(interaction).on_watch(interaction, lambda: change_command("pause", watch))

    @group.command(name="watch-resume", description="Resume a paused watch of this channel")
    @app_commands.describe(watch=WATCH_ID)
    async def resume(interaction: discord.Interaction[Any], watch: str) -> None:
        await _handler(interaction).on_watch(interaction, lambda: change_command("resume", watch))

    @group.command(name="unwatch", description="End a watch of this channel")
    @app_commands.describe(watch=WATCH_ID)
    async def unwatch(interaction: discord.Interaction[Any], watch: str) -> None:
        await _handler(interaction).on_watch(interaction, lambda: change_command("unwatch", watch))

    return group
