"""Requests to the bot outside the agent view. A mention in a channel (`app_mention`):
`@research-bot Acme Robotics` starts a run there as `/research Acme Robotics` would; a mention in
a run's thread is a follow-up question about that run, answered in the thread. A message to the
app in its DM outside any thread (`message.im`; threads there are the agent view's) starts a run
in that message's thread, as in the agent view. A refusal is said to the person alone. Slack
retries events: each acts once, even across restarts."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from slack_bolt.async_app import AsyncBoltContext

from bot.adapters.chat.service import Caller, Reply
from bot.adapters.slack.followup import SlackThreads
from bot.adapters.slack.service import (
    event_caller,
    first_delivery,
    message_text_to_bot,
    reply_text,
    research_request,
)
from bot.domain import RunRecord
from bot.errors import NotFoundError, RequestError
from bot.store.runs import Store

log = logging.getLogger(__name__)


class StartsResearch(Protocol):
    async def research(self, caller: Caller, text: str, *, thread: str = "") -> RunRecord:
        """Start the research `text` asks for: a new run message in the caller's channel, or
        in an agent-view `thread`. Raises RequestError with what to tell the person."""
        ...


class SlackMentions:
    """The `app_mention` listener."""

    def __init__(self, runs: StartsResearch, threads: SlackThreads, store: Store) -> None:
        self._runs = runs
        self._threads = threads
        self._store = store

    async def on_mention(
        self, event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        if event.get("bot_id"):
            return  # Another app (or ourselves) naming us: not a person asking.
        if not await first_delivery(self._store, body):
            return
        caller = event_caller(
            body, user=str(event.get("user", "")), channel=str(event.get("channel", ""))
        )
        thread = str(event.get("thread_ts") or "")
        text = message_text_to_bot(str(event.get("text", "")), context.bot_user_id)
        try:
            run_id = thread and await self._threads.run_in(caller.workspace, caller.channel, thread)
            if run_id:
                await self._threads.ask(caller, run_id, thread, text)
            else:
                await self._runs.research(caller, research_request(text))
        except (RequestError, NotFoundError) as error:
            reply = Reply.of(error) if isinstance(error, RequestError) else Reply(text=str(error))
            await self._threads.tell(caller, thread, reply_text(reply), privately=True)

    async def on_message(
        self, event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """Any `message` event bolt's agent view left: only a person's own new message in the
        app's DM is a request; edits, deletions, files, bots and other channels are not."""
        if event.get("channel_type") != "im" or event.get("thread_ts"):
            return
        if event.get("subtype") or event.get("bot_id") or not event.get("user"):
            return
        if not await first_delivery(self._store, body):
            return
        caller = event_caller(
            body, user=str(event["user"]), channel=str(event.get("channel", "")), kind="im"
        )
        text = message_text_to_bot(str(event.get("text", "")), context.bot_user_id)
        # The message's own thread becomes the run's, as an agent-view thread would.
        thread = str(event.get("ts", ""))
        try:
            await self._runs.research(caller, research_request(text), thread=thread)
        except RequestError as error:
            # Only this person reads their DM with the app: the answer is an ordinary message.
            await self._threads.tell(caller, thread, reply_text(Reply.of(error)), privately=False)
