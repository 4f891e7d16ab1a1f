"""Summarize now without the button, on Slack: the summarize reaction (:memo:) on a run's
message, and a person pressing stop on its streamed reply (`agent_session_stopped`). Both go
through the command service's rules for the button; neither has anywhere to answer, so a
refusal is only logged. Slack retries events: each acts once, even across restarts."""

from __future__ import annotations

import logging
from typing import Any

from bot.adapters.chat.service import CommandService, Refused
from bot.adapters.slack.service import event_caller, first_delivery
from bot.store.runs import Store

log = logging.getLogger(__name__)


class SummarizeEvents:
    """The `reaction_added` and `agent_session_stopped` listeners."""

    def __init__(
        self,
        service: CommandService,
        store: Store,
        parents: dict[tuple[str, str], str],
        *,
        emoji: str,
    ) -> None:
        self._service = service
        self._store = store
        self._parents = parents
        """(channel, parent ts) -> run id of this process's running runs (the front end's)."""
        self._emoji = emoji.strip(":")

    async def on_reaction(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        item = event.get("item") or {}
        if event.get("reaction") != self._emoji or item.get("type") != "message":
            return
        await self._summarize(body, str(item.get("channel")), str(item.get("ts")), event)

    async def on_stream_stopped(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        """Stop pressed on a streamed reply: `thread_ts` is the thread of the run streaming."""
        channel = str(event.get("channel", ""))
        await self._summarize(body, channel, str(event.get("thread_ts", "")), event)

    async def _summarize(
        self, body: dict[str, Any], channel: str, parent: str, event: dict[str, Any]
    ) -> None:
        run_id = self._parents.get((channel, parent))
        if run_id is None or not await first_delivery(self._store, body):
            return
        caller = event_caller(body, user=str(event.get("user", "")), channel=channel)
        try:
            await self._service.press(caller, "summarize", run_id)
        except Refused as refused:
            # A finished run's message just stays as it is.
            log.info("slack: %s on %s not taken: %s", event.get("type"), run_id, refused)
