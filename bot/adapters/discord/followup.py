"""Follow-up questions on Discord: a message that mentions the bot in a run's thread asks about
that run (bot/runs/followups.py); the answer comes in the same thread (bot/adapters/chat/followup_reply.py).

The thread's run is found in the store (a run's thread is its card's id, stored as the run's
origin), so it works for runs of earlier processes too. A refusal (the run is still
researching, a quota, an empty question) is one short message in the thread; a mention
anywhere else gets a one-line hint. Messages of bots, our own included, and webhooks are
ignored. The content of a message that mentions the bot arrives without the privileged
Message Content intent; the bot needs only `guild_messages`.
"""

from __future__ import annotations

import logging
import re

import discord

from bot.adapters.chat.followup_reply import FollowUpReply
from bot.adapters.chat.sink import ChatError
from bot.adapters.discord.privacy import is_private
from bot.adapters.discord.sink import ThreadPosts, discord_errors, send_text
from bot.adapters.discord.views import MESSAGE_LIMIT, safe_text
from bot.domain import Origin, RunRecord
from bot.errors import NotFoundError, RequestError
from bot.runs.followups import FollowUps
from bot.store.runs import Store

log = logging.getLogger(__name__)

PLATFORM = "discord"
HINT = (
    "Ask me about a run by mentioning me in its thread. "
    "To start research, use `/research company name:<company>`."
)


class ThreadSink(ThreadPosts):
    """Where a follow-up's answer goes: the thread its own record names, with the bot token."""

    def __init__(self, client: discord.Client) -> None:
        self._client = client

    def _thread(self, run: RunRecord) -> discord.PartialMessageable | None:
        origin = run.origin
        if not (origin.workspace.isdigit() and origin.thread.isdigit()):
            log.debug("follow-up %s: no Discord thread to answer in", run.run_id)
            return None
        return self._client.get_partial_messageable(
            int(origin.thread),
            guild_id=int(origin.workspace),
            type=discord.ChannelType.public_thread,
        )


def follow_up_reply(client: discord.Client) -> FollowUpReply:
    """The listener of one follow-up (also for one recovered after a restart)."""
    return FollowUpReply(ThreadSink(client), limit=MESSAGE_LIMIT)


class ThreadQuestions:
    """Turns mentions of the bot in run threads into follow-up questions."""

    def __init__(self, client: discord.Client, store: Store, followups: FollowUps) -> None:
        self._client = client
        self._store = store
        self._followups = followups

    async def on_message(self, message: discord.Message) -> None:
        me = self._client.user
        if message.author.bot or message.webhook_id is not None or me is None:
            return
        if message.guild is None or not any(user.id == me.id for user in message.mentions):
            return  # A DM with the bot, or not meant for us.
        channel = message.channel
        run = await self._run_in(message.guild.id, channel.id)
        if run is None:
            await self._tell(channel, HINT)
            return
        author = message.author
        origin = Origin(
            platform=PLATFORM,
            workspace=str(message.guild.id),
            channel=run.origin.channel,
            thread=str(channel.id),
            user=str(author.id),
            user_name=author.display_name,
            private=is_private(channel),
        )
        question = re.sub(rf"<@!?{me.id}>", " ", message.content)
        try:
            child = await self._followups.ask(
                run.run_id, question, origin, follow_up_reply(self._client)
            )
        except (RequestError, NotFoundError) as error:
            await self._tell(channel, str(error))
            return
        log.info("discord: follow-up %s about run %s by %s", child.run_id, run.run_id, author.id)

    async def _run_in(self, guild_id: int, thread_id: int) -> RunRecord | None:
        """The run whose thread this is (a follow-up's origin names its run's thread too, so
        only runs count)."""
        return await self._store.run_in_thread(
            str(thread_id), platform=PLATFORM, workspace=str(guild_id)
        )

    async def _tell(self, channel: discord.abc.Messageable, text: str) -> None:
        try:
            with discord_errors():
                await send_text(channel, safe_text(text))
        except ChatError as error:
            # No Send Messages here, say: nobody else to tell.
            log.info("discord: could not answer a mention: %s", error.reason)
