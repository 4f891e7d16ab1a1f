"""`/research search` on Slack: the command service's hits, answered to the person alone, each
with its thread's permalink (`chat.getPermalink`, one call per hit, side by side, kept once
known); a thread Slack will not link in time names `/research show <run id>` instead."""

from __future__ import annotations

import asyncio
import logging

from slack_bolt.async_app import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.service import Caller, CommandService
from bot.adapters.chat.sink import ChatError
from bot.adapters.slack.client import slack_errors
from bot.adapters.slack.service import reply_text
from bot.store.search import ReportHit

log = logging.getLogger(__name__)

PERMALINK_WAIT_S = 2.0
"""How long the answer waits for Slack's permalinks: the hits are worth more than the links."""
KEPT_LINKS = 1000


class SlackSearch:
    """Answers `/research search` with the hits this conversation may see."""

    def __init__(
        self, client: AsyncWebClient, service: CommandService, *, wait_s: float = PERMALINK_WAIT_S
    ) -> None:
        self._client = client
        self._service = service
        self._wait_s = wait_s
        self._links: dict[tuple[str, str], str] = {}
        """(channel, thread ts) -> its permalink: a message's link never changes."""

    async def answer(self, caller: Caller, words: str, respond: AsyncRespond) -> None:
        reply = await self._service.search(caller, words, link=self.permalink)
        await respond(text=reply_text(reply), response_type="ephemeral")

    async def permalink(self, hit: ReportHit) -> str | None:
        """The link of the hit's thread, or None (no thread yet, or Slack said no in time)."""
        if not hit.channel or not hit.thread:
            return None
        key = (hit.channel, hit.thread)
        if key in self._links:
            return self._links[key]
        try:
            async with asyncio.timeout(self._wait_s):
                with slack_errors():
                    found = await self._client.chat_getPermalink(
                        channel=hit.channel, message_ts=hit.thread
                    )
        except (ChatError, TimeoutError) as error:
            log.info("slack: no permalink for run %s: %s", hit.run_id, error or "timed out")
            return None
        link = str(found.get("permalink") or "")
        if not link.startswith("https://"):
            return None
        if len(self._links) >= KEPT_LINKS:
            self._links.clear()
        self._links[key] = link
        return link
