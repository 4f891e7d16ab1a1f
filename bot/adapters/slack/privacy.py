"""Whether a Slack conversation is private (a private channel, a group DM, a DM): what a run
asked for there is found only from there. First as Slack's own payload says it (an event's
`channel_type`, a slash command's or a button's `channel_name`, a DM's or an old private
channel's id), else as `conversations.info` answers, asked after the ack and kept a while; when
neither says, private."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.sink import ChatError
from bot.adapters.slack.client import slack_errors

log = logging.getLogger(__name__)

CHANNEL_TYPES = {"channel": False, "group": True, "im": True, "mpim": True, "app_home": True}
"""An event's `channel_type`: `channel` is a public channel, `group` a private one, `im` a DM,
`mpim` a group DM (`app_home`: the app's own DM, its Home tab's Messages)."""
PRIVATE_NAMES = ("directmessage", "privategroup")
"""What a slash command's (or a button's) `channel_name` is in a DM and a private channel; a
group DM's is its `mpdm-…` name."""
PRIVATE_PREFIXES = ("D", "G")
"""A DM's id starts with D; G was a private channel's or a group DM's (channels made since are
all C, public or not, so C says nothing)."""
KEPT_S = 600.0
"""How long an answer of `conversations.info` is kept: a public channel can be made private."""


def said_private(channel: str, *, name: str = "", kind: str = "") -> bool | None:
    """What the payload says of the conversation `channel` (its `channel_name` `name`, its
    `channel_type` `kind`): True private, False public, None it does not say."""
    if kind in CHANNEL_TYPES:
        return CHANNEL_TYPES[kind]
    if name in PRIVATE_NAMES or name.startswith("mpdm-"):
        return True
    if channel.startswith(PRIVATE_PREFIXES):
        return True
    return None


class Conversations:
    """`conversations.info` per channel, for conversations the payload did not say of."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        wait_s: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.wait_s = wait_s
        """A run's start waits at most this for Slack's answer, then takes it as private."""
        self._clock = clock
        self._known: dict[str, tuple[float, bool]] = {}

    async def private(self, channel: str) -> bool:
        """True unless Slack says the channel is public; a refusal (no `channels:read`, a
        channel the app cannot see) or a slow answer is private, and asked again next time."""
        kept = self._known.get(channel)
        if kept is not None and self._clock() - kept[0] < KEPT_S:
            return kept[1]
        try:
            async with asyncio.timeout(self.wait_s):
                with slack_errors():
                    answer = await self._client.conversations_info(channel=channel)
        except TimeoutError:
            log.warning("slack: %s taken as private: conversations.info took too long", channel)
            return True
        except ChatError as error:
            log.warning("slack: %s taken as private: %s", channel, error)
            return True
        found = answer.get("channel") or {}
        flags = ("is_im", "is_mpim", "is_group")
        private = found.get("is_private") is not False or any(found.get(f) for f in flags)
        self._known[channel] = (self._clock(), private)
        return private
