"""Whether a Discord conversation is private: what a run asked for there is found only from
there. DMs, group DMs and private threads are; a public thread is as its channel is. A server's
channel is public where @everyone may view it: reckoned from the server's @everyone role and the
channel's permission overwrites (the gateway's cache, else what the interaction carried), or,
without the role (a server the bot has not joined), from an overwrite for @everyone alone.
Whatever does not settle it is private."""

from __future__ import annotations

from typing import Any

import discord

PRIVATE_TYPES = frozenset(
    {discord.ChannelType.private, discord.ChannelType.group, discord.ChannelType.private_thread}
)
"""A DM (1), a group DM (3), a private thread (12)."""


def is_private(channel: Any) -> bool:
    """True unless `channel` (an interaction's or a message's, or None) is a server channel, or
    a public thread in one, that @everyone may view."""
    if getattr(channel, "type", None) in PRIVATE_TYPES:
        return True
    if isinstance(channel, discord.Thread):
        return channel.parent is None or is_private(channel.parent)
    if not isinstance(channel, discord.abc.GuildChannel):
        return True  # a DM, a group DM, or a channel known only by its id
    return everyone_may_view(channel) is not True


def everyone_may_view(channel: discord.abc.GuildChannel) -> bool | None:
    """Whether @everyone may view `channel`; None when neither the role nor an overwrite says."""
    guild = channel.guild
    everyone = guild.get_role(guild.id)
    if everyone is not None:
        return channel.permissions_for(everyone).view_channel
    # The server's roles are unknown: only an overwrite for @everyone (its id is the server's)
    # says anything, and then only if it allows or denies viewing outright.
    allowed: bool | None = channel.overwrites_for(discord.Object(guild.id)).view_channel
    return allowed
