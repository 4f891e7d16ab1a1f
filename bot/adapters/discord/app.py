"""The Discord front end: the discord.py client, its `/research` handlers, buttons and reaction,
follow-up questions in run threads, start-up (with recovery of interrupted runs) and command sync.

Handlers acknowledge first (`defer`, or an ephemeral answer) and hand the run to the runs
service; everything a run shows goes through `DiscordSink` with the bot token, except a run of
a user install where the bot may not post: it lives in the command's reply (`InteractionSink`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import Any

import discord
from aiolimiter import AsyncLimiter
from discord import app_commands

from bot.adapters.chat.commands import DISCORD_USAGE, research_command, usage_command
from bot.adapters.chat.progress import ChatProgress
from bot.adapters.chat.service import CommandService, Refused, Reply
from bot.adapters.chat.sink import ChatSink, StatusView
from bot.adapters.chat.watches import WatchCommands
from bot.adapters.discord.choice import ChoiceButton
from bot.adapters.discord.export import DiscordExports
from bot.adapters.discord.followup import ThreadQuestions, follow_up_reply
from bot.adapters.discord.gateway import gateway_lock_name, hold_gateway
from bot.adapters.discord.interaction import InteractionSink, lives_in_interaction
from bot.adapters.discord.search import answer_search
from bot.adapters.discord.service import (
    PLATFORM,
    answer_watch,
    caller_of,
    post_notice,
    reaction_caller,
    reply_text,
    same_emoji,
    share_report,
)
from bot.adapters.discord.setup import Wanted, discord_token, login, point_at_api, research_commands
from bot.adapters.discord.setup import sync_commands as sync_commands
from bot.adapters.discord.sink import CommandFollow, DiscordSink, tell
from bot.adapters.discord.views import Action, ExportSelect, RunButton, reaction_emoji
from bot.config import Settings
from bot.domain import Depth, Mode, Origin, RunRecord
from bot.errors import RequestError
from bot.runs.followups import FollowUps
from bot.runs.manager import RunListener, RunManager
from bot.store.locks import SessionLock, session_lock
from bot.store.runs import Store

log = logging.getLogger(__name__)
LockOf = Callable[[str], AbstractAsyncContextManager[SessionLock]]
"""Opens the session lock of a name (bot/store/locks.py `session_lock`, on some database)."""

POST_TIMEOUT_S = 30.0
"""How long a command waits for its run's message before answering without the thread."""
NO_POST = (
    "I could not post the run in this channel ({error}). The bot needs View Channel, "
    "Send Messages, Attach Files, Create Public Threads and Send Messages in Threads "
    "here. The run was cancelled."
)


class ResearchClient(discord.AutoShardedClient):
    """The bot. Auto-sharded so that it asks `GET /gateway/bot` for its gateway and shard count."""

    def __init__(
        self,
        runs: RunManager,
        store: Store,
        *,
        emoji: str,
        font_dir: Path | None = None,
        followups: FollowUps | None = None,
        max_watches: int = 20,
    ) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        intents.guild_reactions = True
        # Messages in run threads: the content of those that mention the bot comes without
        # the privileged message_content intent.
        intents.guild_messages = True
        # No message cache: with guild_messages it would keep every channel's last 1,000
        # messages, and nothing here reads them again.
        super().__init__(
            intents=intents, allowed_mentions=discord.AllowedMentions.none(), max_messages=None
        )
        self.runs = runs
        self.store = store
        self.emoji = emoji
        self.sink = DiscordSink(self, store)
        self.service = CommandService(
            runs, store, platform=PLATFORM, place="server", usage=DISCORD_USAGE, font_dir=font_dir
        )
        self._exports = DiscordExports(self, self.service)
        self.watches = WatchCommands(runs, store, platform=PLATFORM, limit=max_watches)
        self.questions = ThreadQuestions(self, store, followups or FollowUps(store, runs))
        self.tree = app_commands.CommandTree(self)
        self.tree.add_command(research_commands())
        self.tree.error(self._on_command_error)
        self._limiters: dict[str, AsyncLimiter] = {}

    async def setup_hook(self) -> None:
        self.add_dynamic_items(RunButton, ExportSelect, ChoiceButton)

    def progress(self, run: RunRecord, sink: ChatSink | None = None) -> ChatProgress:
        """The renderer of one run (in its thread, unless another `sink` shows it); edits share
        a budget per guild (Discord limits edits per channel to about 5 in 5 seconds)."""
        view = StatusView(
            run_id=run.run_id, topic=run.topic, mode=run.mode.value, requester=run.origin.user
        )
        limiter = self._limiters.setdefault(run.origin.workspace, AsyncLimiter(4, 5))
        return ChatProgress(sink or self.sink, view, store=self.store, limiter=limiter)

    def listener_for(self, run: RunRecord) -> RunListener | None:
        """For `RunManager.recover`: Discord's runs, shown again in their thread; a follow-up
        answered in its run's thread; a user install's run (its command's reply is gone) with
        the report sent to the person by DM."""
        if run.origin.platform != PLATFORM:
            return None
        if run.parent_run_id is not None:
            return follow_up_reply(self)
        if run.origin.workspace.startswith("user:") and run.origin.user.isdigit():
            return self.progress(run, InteractionSink(self, int(run.origin.user), None))
        return self.progress(run)

    async def post_notice(self, origin: Origin, text: str) -> None:
        await post_notice(self, origin, text)

    async def on_watch(self, interaction: discord.Interaction[Any], wanted: Wanted) -> None:
        await answer_watch(self.watches, interaction, wanted)

    async def on_message(self, message: discord.Message) -> None:
        await self.questions.on_message(message)

    async def start_research(
        self, interaction: discord.Interaction[Any], text: str, mode: Mode, depth: Depth
    ) -> None:
        if lives_in_interaction(interaction):
            await self._start_in_reply(interaction, text, mode, depth)
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            command = research_command(text, mode, depth, usage=DISCORD_USAGE)
        except RequestError as error:
            await tell(interaction, reply_text(Reply.of(error)))
            return
        if not isinstance(interaction.channel, discord.TextChannel):
            await tell(
                interaction, "Start research from a text channel: each run gets a thread there."
            )
            return
        follow = CommandFollow(self.progress)
        try:
            record = await self.service.start(caller_of(interaction), command, follow)
        except RequestError as error:  # a daily budget or hourly limit said no
            await tell(interaction, reply_text(Reply.of(error)))
            return
        await self._report_start(interaction, record, follow)

    async def _start_in_reply(
        self, interaction: discord.Interaction[Any], text: str, mode: Mode, depth: Depth
    ) -> None:
        """A run where the bot may not post (a user install): the command's public reply
        becomes the run's card, so no "Started run" answer follows."""
        await interaction.response.defer(thinking=True)
        sink = InteractionSink.of(interaction)
        follow = CommandFollow(lambda run: self.progress(run, sink))
        try:
            command = research_command(text, mode, depth, usage=DISCORD_USAGE)
            await self.service.start(caller_of(interaction), command, follow)
        except RequestError as error:
            await interaction.delete_original_response()
            await tell(interaction, reply_text(Reply.of(error)))

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
        found = await self.service.history(caller_of(interaction))
        await tell(interaction, reply_text(found))

    async def show_search(self, interaction: discord.Interaction[Any], words: str) -> None:
        await answer_search(self.service, interaction, words)

    async def show_usage(self, interaction: discord.Interaction[Any], days: int) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            wanted = usage_command(days)
        except RequestError as error:
            await tell(interaction, reply_text(Reply.of(error)))
            return
        reply = await self.service.usage(caller_of(interaction), wanted.days)
        await tell(interaction, reply_text(reply))

    async def show_report(self, interaction: discord.Interaction[Any], run_id: str) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            shared = await self.service.show(caller_of(interaction), run_id)
        except RequestError as error:
            await tell(interaction, reply_text(Reply.of(error)))
            return
        channel = interaction.channel
        if not isinstance(channel, discord.abc.Messageable):
            await tell(interaction, "I can't post the report here: ask in a channel of the server.")
            return
        await share_report(channel, shared)
        await tell(interaction, f"Posted the report of run `{shared.run.run_id}` here.")

    async def export_report(
        self, interaction: discord.Interaction[Any], run_id: str, fmt: str, *, in_thread: bool
    ) -> None:
        await self._exports.export(interaction, run_id, fmt, in_thread=in_thread)

    async def on_run_button(
        self, interaction: discord.Interaction[Any], action: Action, run_id: str
    ) -> None:
        try:
            reply = await self.service.press(caller_of(interaction), action, run_id)
        except Refused as refused:
            reply = refused.reply
        await interaction.response.send_message(reply_text(reply), ephemeral=True)

    async def on_identity_choice(
        self, interaction: discord.Interaction[Any], run_id: str, choice: int | None
    ) -> None:
        """A company button: acknowledged at once (the card shows the choice), then answered
        privately."""
        await interaction.response.defer()
        try:
            reply = await self.service.choose(caller_of(interaction), run_id, choice)
        except Refused as refused:
            reply = refused.reply
        await tell(interaction, reply_text(reply))

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        """The summarize reaction on a run's message; raw, so no privileged intent is needed."""
        if self.user is not None and payload.user_id == self.user.id:
            return
        if not same_emoji(payload.emoji, self.emoji):
            return
        run_id = await self._run_reacted_to(payload)
        if run_id is None:
            return
        try:
            await self.service.press(reaction_caller(payload), "summarize", run_id)
        except Refused as refused:
            # A reaction has nowhere to answer: a finished run's message just stays as it is.
            log.info("run %s: summarize reaction not taken: %s", run_id, refused)

    async def _run_reacted_to(self, payload: discord.RawReactionActionEvent) -> str | None:
        """The run whose status message this is: one this process shows, or else one in the
        store (a run's thread is opened from its message, so they share an id). The store
        finds the runs of other replicas and of earlier processes; only in a guild."""
        run_id = self.sink.run_for_message(payload.message_id)
        if run_id is not None or payload.guild_id is None:
            return run_id
        run = await self.store.run_in_thread(
            str(payload.message_id), platform=PLATFORM, workspace=str(payload.guild_id)
        )
        return run.run_id if run is not None else None

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


def build_discord_client(
    settings: Settings, runs: RunManager, store: Store, followups: FollowUps | None = None
) -> ResearchClient:
    """The client, not yet logged in. Points discord.py at `DISCORD_API_URL` when it is set."""
    point_at_api(settings)
    return ResearchClient(
        runs,
        store,
        emoji=reaction_emoji(settings.summarize_emoji),
        font_dir=settings.export_fonts,
        followups=followups,
        max_watches=settings.max_watches,
    )


async def serve_discord(
    settings: Settings,
    runs: RunManager,
    store: Store,
    followups: FollowUps | None = None,
    *,
    lock_of: LockOf | None = None,
) -> None:
    """Run the bot until cancelled: log in, finish Discord runs a previous process left, and
    hold the gateway whenever this replica holds its lock (bot/adapters/discord/gateway.py).

    Cancelling closes the client cleanly and lets the CancelledError through. Runs still going
    are the caller's to stop (`RunManager.shutdown`), which leaves them to be recovered.
    `lock_of` defaults to the lock in the bot's database (`RESEARCH_BOT_DATABASE_URL`).
    """
    token = discord_token(settings)
    client = build_discord_client(settings, runs, store, followups)
    lock_of = lock_of or partial(session_lock, settings.database)
    async with client:
        await login(client, token)
        recovered = await runs.recover(client.listener_for, PLATFORM)
        runs.front_ends.attach(PLATFORM, client.listener_for, client.post_notice)
        if recovered:
            log.info(
                "recovering %d interrupted Discord run(s): %s", len(recovered), ", ".join(recovered)
            )
        async with lock_of(gateway_lock_name(client)) as lock:
            await hold_gateway(client, lock)
