"""Discord's side of exporting a report: the finished message's format select (the file is posted
in the run's thread) and `/research export` (the file is posted in the current channel). Which
run may be exported, and how, is the command service's rule; this module only says where and
how."""

from __future__ import annotations

import contextlib
import io
import logging
from typing import Any

import discord

from bot.adapters.chat.commands import export_command
from bot.adapters.chat.exports import FORMAT_LABELS, ChatExport
from bot.adapters.chat.service import CommandService, Reply
from bot.adapters.discord.service import caller_of, mention, reply_text
from bot.adapters.discord.sink import place_of, tell
from bot.adapters.discord.views import safe_text
from bot.errors import RequestError

log = logging.getLogger(__name__)

TITLE_CHARS = 300
"""The report's title beside the file is cut to this (before escaping), well under the limit."""


class DiscordExports:
    """Posts exported reports for the Discord client, with the bot token."""

    def __init__(self, client: discord.Client, service: CommandService) -> None:
        self._client = client
        self._service = service

    async def export(
        self, interaction: discord.Interaction[Any], run_id: str, fmt: str, *, in_thread: bool
    ) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            await self._export(interaction, run_id, fmt, in_thread=in_thread)
        except Exception:
            # The adapter's edge (a select has no command tree to catch for it): log, then tell.
            log.exception("discord: export of run %s as %s failed", run_id, fmt)
            with contextlib.suppress(discord.HTTPException):
                await tell(interaction, "Something went wrong on my side; it is logged.")

    async def _export(
        self, interaction: discord.Interaction[Any], run_id: str, fmt: str, *, in_thread: bool
    ) -> None:
        caller = caller_of(interaction)
        try:
            wanted = export_command(run_id, fmt)
            done = await self._service.export(caller, wanted.run_id, wanted.fmt)
        except RequestError as error:
            await tell(interaction, reply_text(Reply.of(error)))
            return
        target = self._thread(done) if in_thread else interaction.channel
        if not isinstance(target, discord.abc.Messageable):
            await tell(
                interaction,
                f"Run `{done.run.run_id}` has no thread to post in: `/research export` posts "
                "the file in a channel.",
            )
            return
        label = FORMAT_LABELS[wanted.fmt]
        title = discord.utils.escape_markdown(safe_text(done.title[:TITLE_CHARS]))
        text = f"{mention(caller.user)} shared report `{done.run.run_id}` as {label}: {title}"
        file = discord.File(io.BytesIO(done.file.data), filename=done.file.filename)
        try:
            await target.send(text, file=file, suppress_embeds=True)
        except discord.HTTPException as error:
            # No Attach Files here, or the file is over the server's upload limit.
            log.warning("run %s: export file refused: %s", done.run.run_id, error)
            await tell(interaction, f"I couldn't post the file ({safe_text(str(error))}).")
            return
        where = "in its thread" if in_thread else "here"
        await tell(interaction, f"Posted the report of run `{done.run.run_id}` as {label} {where}.")

    def _thread(self, done: ChatExport) -> discord.PartialMessageable | None:
        place = place_of(done.run)
        if place is None:
            return None
        return self._client.get_partial_messageable(
            place.thread, guild_id=place.guild, type=discord.ChannelType.public_thread
        )
