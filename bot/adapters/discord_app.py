"""The Discord front end: the discord.py client, its `/research` handlers, buttons and reaction,
start-up (with recovery of interrupted runs) and command sync.

Handlers acknowledge first (`defer`, or an ephemeral answer) and hand the run to the runs
service; everything a run shows goes through `DiscordSink` with the bot token.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import discord
from aiolimiter import AsyncLimiter
from discord import app_commands

from bot.adapters.base import ChatProgress
from bot.adapters.chat import FILE_REFUSED, StatusView
from bot.adapters.commands import (
    DISCORD_USAGE,
    history_lines,
    research_command,
    show_command,
    usage_command,
)
from bot.adapters.discord_export import DiscordExports
from bot.adapters.discord_sink import CommandFollow, DiscordSink, send_report, send_text, tell
from bot.adapters.discord_views import (
    Action,
    ExportSelect,
    RunButton,
    reaction_emoji,
    research_group,
    safe_text,
)
from bot.adapters.exports import Exporter
from bot.agent.i18n import language_for
from bot.agent.report import report_filename
from bot.config import Settings
from bot.domain import Depth, Mode, Origin, Request, RunRecord
from bot.errors import ConfigError, NotFoundError, RequestError
from bot.runs import RunListener, RunManager
from bot.store import Store
from bot.usage import one_workspace, period_start, usage_lines

log = logging.getLogger(__name__)

PLATFORM = "discord"
HISTORY_LIMIT = 15
POST_TIMEOUT_S = 30.0
"""How long a command waits for its run's message before answering without the thread."""
NO_POST = (
    "I could not post the run in this channel ({error}). The bot needs View Channel, "
    "Send Messages, Embed Links, Attach Files, Create Public Threads and Send Messages "
    "in Threads here. The run was cancelled."
)


def discord_token(settings: Settings) -> str:
    token = settings.discord_token.get_secret_value().strip() if settings.discord_token else ""
    if not token:
        raise ConfigError(
            "DISCORD_TOKEN is not set: copy the bot token from the Discord "
            "developer portal (Bot → Reset Token), see docs/discord.md."
        )
    return token


async def _login(client: discord.Client, token: str) -> None:
    try:
        await client.login(token)
    except discord.LoginFailure:
        raise ConfigError(
            "Discord refused DISCORD_TOKEN: reset the bot token in the developer portal "
            "(Bot → Reset Token) and set the new one."
        ) from None


def _point_at_api(settings: Settings) -> None:
    # discord.py has no per-client base URL: every REST call, interaction callbacks and
    # webhooks included, is built from the class attribute `Route.BASE`. This is the one place
    # it is set; the gateway URL then comes from `GET /gateway/bot` on that base.
    if settings.discord_api_url:
        discord.http.Route.BASE = settings.discord_api_url.rstrip("/")


class ResearchClient(discord.AutoShardedClient):
    """The bot. Auto-sharded so that it asks `GET /gateway/bot` for its gateway and shard count."""

    def __init__(
        self, runs: RunManager, store: Store, *, emoji: str, font_dir: Path | None = None
    ) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        intents.guild_reactions = True
        super().__init__(intents=intents, allowed_mentions=discord.AllowedMentions.none())
        self.runs = runs
        self.store = store
        self.emoji = emoji
        self.sink = DiscordSink(self, store)
        exporter = Exporter(store, platform=PLATFORM, place="server", font_dir=font_dir)
        self._exports = DiscordExports(self, exporter)
        self.tree = app_commands.CommandTree(self)
        self.tree.add_command(research_group())
        self.tree.error(self._on_command_error)
        self._limiters: dict[str, AsyncLimiter] = {}

    async def setup_hook(self) -> None:
        self.add_dynamic_items(RunButton, ExportSelect)

    def progress(self, run: RunRecord) -> ChatProgress:
        """The renderer of one run; edits share a budget per guild (Discord limits edits per
        channel to about 5 in 5 seconds)."""
        view = StatusView(
            run_id=run.run_id, topic=run.topic, mode=run.mode.value, requester=run.origin.user
        )
        limiter = self._limiters.setdefault(run.origin.workspace, AsyncLimiter(4, 5))
        return ChatProgress(self.sink, view, limiter=limiter)

    def listener_for(self, run: RunRecord) -> RunListener | None:
        """For `RunManager.recover`: Discord's runs, shown again in their thread."""
        return self.progress(run) if run.origin.platform == PLATFORM else None

    async def start_research(
        self, interaction: discord.Interaction[Any], text: str, mode: Mode, depth: Depth
    ) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            command = research_command(text, mode, depth, usage=DISCORD_USAGE)
        except RequestError as error:
            await tell(interaction, str(error))
            return
        channel = interaction.channel
        if not isinstance(channel, discord.TextChannel):
            await tell(
                interaction, "Start research from a text channel: each run gets a thread there."
            )
            return
        user = interaction.user
        origin = Origin(
            platform=PLATFORM,
            workspace=str(channel.guild.id),
            channel=str(channel.id),
            user=str(user.id),
            user_name=user.display_name,
        )
        follow = CommandFollow(self.progress)
        request = Request(
            topic=command.topic,
            mode=command.mode,
            origin=origin,
            depth=command.depth,
            language=language_for(interaction.locale.value, command.topic),
        )
        try:
            record = await self.runs.submit(request, follow)
        except RequestError as error:  # a daily budget or hourly limit said no
            await tell(interaction, str(error))
            return
        await self._report_start(interaction, record, follow)

    async def _report_start(
        self, interaction: discord.Interaction[Any], record: RunRecord, follow: CommandFollow
    ) -> None:
        run_id = record.run_id
        try:
            error = await asyncio.wait_for(asyncio.shield(follow.posted), POST_TIMEOUT_S)
        except TimeoutError:
            await tell(interaction, f"Run `{run_id}` is starting; its thread will appear here.")
            return
        if error is not None:
            log.warning(
                "run %s: could not post in channel %s: %s", run_id, record.origin.channel, error
            )
            self.runs.cancel(run_id)
            await tell(interaction, NO_POST.format(error=error))
            return
        thread = self.sink.thread_of(run_id)
        where = f"<#{thread}>" if thread else "its thread"
        await tell(interaction, f"Started run `{run_id}`: follow it in {where}.")

    async def show_history(self, interaction: discord.Interaction[Any]) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        runs = await self.store.list_runs(
            platform=PLATFORM, workspace=str(interaction.guild_id), limit=HISTORY_LIMIT
        )
        await tell(interaction, safe_text("\n".join(history_lines(runs))))

    async def show_usage(self, interaction: discord.Interaction[Any], days: int) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            wanted = usage_command(days)
        except RequestError as error:
            await tell(interaction, str(error))
            return
        since = period_start(self.store.now(), wanted.days)
        rows = await self.store.usage(
            since=since, platform=PLATFORM, workspace=str(interaction.guild_id)
        )
        found = one_workspace(rows, since=since.date(), days=wanted.days)
        lines = usage_lines(found, days=wanted.days)
        await tell(interaction, safe_text("\n".join(["**Research spend in this server**", *lines])))

    async def show_report(self, interaction: discord.Interaction[Any], run_id: str) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            wanted = show_command(run_id).run_id
            record = await self.store.get_run(
                wanted, platform=PLATFORM, workspace=str(interaction.guild_id)
            )
        except (RequestError, NotFoundError) as error:
            await tell(interaction, str(error))
            return
        found = await self.store.report(record.run_id)
        channel = interaction.channel
        if found is None or not isinstance(channel, discord.abc.Messageable):
            await tell(
                interaction, f"Run `{record.run_id}` has no report to show ({record.status.value})."
            )
            return
        report, markdown = found
        text = (
            f"Report `{record.run_id}`, shared by <@{interaction.user.id}>: "
            f"{safe_text(record.topic)}\nTL;DR: {safe_text(report.tldr)}"
        )
        try:
            await send_report(channel, text, report_filename(record), markdown)
        except discord.HTTPException as error:
            # No Attach Files here, or the file is too large: the report as messages instead.
            log.warning("run %s: report file refused: %s", record.run_id, error)
            await send_text(channel, f"{text}\n{safe_text(FILE_REFUSED.format(reason=error))}")
            await send_text(channel, safe_text(markdown))
        await tell(interaction, f"Posted the report of run `{record.run_id}` here.")

    async def export_report(
        self, interaction: discord.Interaction[Any], run_id: str, fmt: str, *, in_thread: bool
    ) -> None:
        await self._exports.export(interaction, run_id, fmt, in_thread=in_thread)

    async def on_run_button(
        self, interaction: discord.Interaction[Any], action: Action, run_id: str
    ) -> None:
        record = self.runs.get_active(run_id)
        if record is None:
            answer = "That run has finished."
        elif action == "cancel" and str(interaction.user.id) != record.origin.user:
            answer = f"Only <@{record.origin.user}> can cancel this run."
        elif action == "cancel":
            self.runs.cancel(run_id)
            answer = "Cancelling the run."
        else:
            self.runs.summarize(run_id)
            answer = "Writing up the report now."
        await interaction.response.send_message(answer, ephemeral=True)

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        """The summarize reaction on a run's message; raw, so no privileged intent is needed."""
        if self.user is not None and payload.user_id == self.user.id:
            return
        if not _same_emoji(payload.emoji, self.emoji):
            return
        run_id = self.sink.run_for_message(payload.message_id)
        if run_id is not None:
            self.runs.summarize(run_id)

    async def _on_command_error(
        self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError
    ) -> None:
        log.error("/research failed", exc_info=error)
        try:
            await tell(
                interaction, "Something went wrong on my side; it is logged. Try again in a minute."
            )
        except discord.HTTPException:
            log.warning("could not tell the user about the failure")


def _same_emoji(emoji: discord.PartialEmoji, wanted: str) -> bool:
    if emoji.is_custom_emoji():
        return False
    # Discord sends some emoji with and some without the variation selector.
    return (emoji.name or "").replace("\ufe0f", "") == wanted.replace("\ufe0f", "")


def build_discord_client(settings: Settings, runs: RunManager, store: Store) -> ResearchClient:
    """The client, not yet logged in. Points discord.py at `DISCORD_API_URL` when it is set."""
    _point_at_api(settings)
    return ResearchClient(
        runs,
        store,
        emoji=reaction_emoji(settings.summarize_emoji),
        font_dir=settings.export_fonts,
    )


async def serve_discord(settings: Settings, runs: RunManager, store: Store) -> None:
    """Run the bot until cancelled: log in, finish Discord runs a previous process left, connect.

    Cancelling closes the client cleanly and lets the CancelledError through. Runs still going
    are the caller's to stop (`RunManager.shutdown`), which leaves them to be recovered.
    """
    token = discord_token(settings)
    client = build_discord_client(settings, runs, store)
    async with client:
        await _login(client, token)
        recovered = await runs.recover(client.listener_for)
        if recovered:
            log.info(
                "recovering %d interrupted Discord run(s): %s", len(recovered), ", ".join(recovered)
            )
        await client.connect()


async def sync_commands(settings: Settings, guild_id: int | None) -> None:
    """Register `/research` globally, or in one guild (instant; global changes take a while)."""
    token = discord_token(settings)
    _point_at_api(settings)
    client = discord.Client(intents=discord.Intents(guilds=True))
    tree = app_commands.CommandTree(client)
    tree.add_command(research_group())
    async with client:
        await _login(client, token)
        guild = discord.Object(id=guild_id) if guild_id is not None else None
        if guild is not None:
            tree.copy_global_to(guild=guild)
        synced = await tree.sync(guild=guild)
        log.info(
            "synced %s to %s",
            ", ".join(f"/{c.name}" for c in synced),
            f"guild {guild_id}" if guild_id else "every guild (global)",
        )
