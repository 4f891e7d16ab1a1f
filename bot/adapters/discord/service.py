"""Discord's side of the command service: who asks (a `Caller` from an interaction or a reaction)
and how its answers show: a private reply (inert text, with our own mentions), a watch command's
answer, a plain notice in a channel, and a report shared again (its TL;DR with the file, or as
messages when the file is refused)."""

from __future__ import annotations

import logging
from typing import Any

import discord

from bot.adapters.chat.service import Caller, Markup, Reply, Shared
from bot.adapters.chat.sink import FILE_REFUSED, ChatError
from bot.adapters.chat.watches import WatchCommands
from bot.adapters.discord.interaction import lives_in_interaction, scope_of
from bot.adapters.discord.privacy import is_private
from bot.adapters.discord.setup import Wanted
from bot.adapters.discord.sink import NO_MENTIONS, discord_errors, send_report, send_text, tell
from bot.adapters.discord.views import MESSAGE_LIMIT, cut_inert, safe_text
from bot.domain import Origin
from bot.errors import RequestError

log = logging.getLogger(__name__)

PLATFORM = "discord"


def caller_of(interaction: discord.Interaction[Any]) -> Caller:
    """The person behind a command, a button or a select, in the scope whose runs they see: the
    server that installed the bot, or else their own user install (`user:<id>`, in DMs and in
    servers the bot has not joined)."""
    user = interaction.user
    return Caller(
        platform=PLATFORM,
        workspace=scope_of(interaction),
        channel=str(interaction.channel_id or ""),
        user=str(user.id),
        user_name=user.display_name,
        locale=interaction.locale.value,
        private=is_private(interaction.channel),
    )


def reaction_caller(payload: discord.RawReactionActionEvent) -> Caller:
    """The person behind a reaction, in the guild it was added in (its payload names the
    channel only by id, so whether it is private goes unsaid)."""
    return Caller(
        platform=PLATFORM,
        workspace=str(payload.guild_id or ""),
        channel=str(payload.channel_id),
        user=str(payload.user_id),
    )


def mention(user_id: str) -> str:
    """Our own mention of a person (an id from Discord's payload or a stored run, checked)."""
    return f"<@{user_id}>" if user_id.isdigit() else safe_text(user_id)


DISCORD = Markup(escape=safe_text, mention=mention, bold="**")


def reply_text(reply: Reply) -> str:
    return reply.render(DISCORD)


async def share_report(channel: discord.abc.Messageable, shared: Shared) -> None:
    """Who shared which report and its TL;DR, with the file; the report as messages when
    Discord refuses the file. Raises discord.HTTPException when it takes neither."""
    run = shared.run
    text = (
        f"Report `{run.run_id}`, shared by {mention(shared.by)}: "
        f"{safe_text(run.topic)}\nTL;DR: {safe_text(shared.report.tldr)}"
    )
    try:
        await send_report(channel, text, shared.filename, shared.markdown)
    except discord.HTTPException as error:
        # No Attach Files here, or the file is too large: the report as messages instead.
        log.warning("run %s: report file refused: %s", run.run_id, error)
        await send_text(channel, f"{text}\n{safe_text(FILE_REFUSED.format(reason=error))}")
        await send_text(channel, safe_text(shared.markdown))


NO_WATCH_HERE = (
    "A watch posts its reports in its channel, and I can't post here: "
    "make it in a channel of a server I'm in."
)


async def answer_watch(
    watches: WatchCommands, interaction: discord.Interaction[Any], wanted: Wanted
) -> None:
    """A watch command, answered privately. A watch keeps the time zone its maker named, or
    UTC (Discord does not say a person's); an admin is whoever may manage the server."""
    await interaction.response.defer(ephemeral=True, thinking=True)
    try:
        command = wanted()
    except RequestError as error:
        await tell(interaction, reply_text(Reply.of(error)))
        return
    caller = caller_of(interaction)
    if command.kind == "watch" and lives_in_interaction(interaction):
        reply = Reply(text=NO_WATCH_HERE)
    elif command.kind == "watch":
        reply = await watches.add(caller, command, command.tz or "UTC")
    elif command.kind == "watches":
        reply = await watches.list(caller)
    else:

        async def admin() -> bool:
            return interaction.permissions.manage_guild

        reply = await watches.change(caller, command, admin)
    await tell(interaction, reply_text(reply))


async def post_notice(client: discord.Client, origin: Origin, text: str) -> None:
    """One plain message in the origin's channel, inert and mentioning nobody. Raises ChatError
    when Discord refuses it (404 for a deleted channel, 403 when the bot may not post)."""
    if not origin.channel.isdigit():
        raise ChatError(f"no channel {origin.channel!r} on Discord")
    channel = client.get_partial_messageable(int(origin.channel))
    with discord_errors():
        await channel.send(
            cut_inert(safe_text(text), MESSAGE_LIMIT),
            allowed_mentions=NO_MENTIONS,
            suppress_embeds=True,
        )


def same_emoji(emoji: discord.PartialEmoji, wanted: str) -> bool:
    if emoji.is_custom_emoji():
        return False
    # Discord sends some emoji with and some without the variation selector.
    return (emoji.name or "").replace("\ufe0f", "") == wanted.replace("\ufe0f", "")
