"""Summarize now without the button, on Slack: the summarize reaction (:memo:) on a run's
message, and a person pressing Slack's stop button in a run's thread (`agent_session_stopped`,
shown while the run's agent session is `processing`). Both go through the command service's
rules for the button; neither has anywhere to answer, so a refusal is only logged. A stop in a
thread where no run of this process works moves its session out of `processing`, so the button
goes. Slack retries events: each acts once, even across restarts."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.service import CommandService, Refused
from bot.adapters.slack.service import event_caller, first_delivery
from bot.adapters.slack.session import settle
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
        channel, ts = str(item.get("channel")), str(item.get("ts"))
        run_id = self._parents.get((channel, ts)) or await self._run_elsewhere(body, channel, ts)
        if run_id is not None and await first_delivery(self._store, body):
            await self._summarize(body, channel, run_id, event)

    async def on_stop(
        self, event: dict[str, Any], body: dict[str, Any], client: AsyncWebClient
    ) -> None:
        """Stop pressed in a thread: `thread_ts` is the run's thread (its parent message, or the
        person's agent-view thread)."""
        channel, thread = str(event.get("channel", "")), str(event.get("thread_ts", ""))
        if not channel or not thread or not await first_delivery(self._store, body):
            return
        run_id = self._parents.get((channel, thread)) or await self._run_elsewhere(
            body, channel, thread
        )
        if run_id is None:
            log.info("slack: stop pressed in %s/%s, where nothing of ours runs", channel, thread)
            await settle(client, channel, thread)
            return
        await self._summarize(body, channel, run_id, event)

    async def _run_elsewhere(self, body: dict[str, Any], channel: str, thread: str) -> str | None:
        """A run another replica runs in this thread (its parent message is `thread`)."""
        team = str(body.get("team_id") or "")
        found = await self._store.run_in_thread(
            thread, platform="slack", workspace=team, channel=channel
        )
        return found.run_id if found is not None and found.status.value == "running" else None

    async def _summarize(
        self, body: dict[str, Any], channel: str, run_id: str, event: dict[str, Any]
    ) -> None:
        caller = event_caller(body, user=str(event.get("user", "")), channel=channel)
        try:
            await self._service.press(caller, "summarize", run_id)
        except Refused as refused:
            # A finished run's message just stays as it is.
            log.info("slack: %s on %s not taken: %s", event.get("type"), run_id, refused)
