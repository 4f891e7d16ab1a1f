"""Slack's agent view (the app's Messages tab and split pane), on bolt's `AsyncAssistant`: a new
thread shows suggested prompts; a message in a thread without a run is a research request in
the `/research` language (the run shows in that thread, titled with its topic); a message in a
thread that has a run is a follow-up question about it.

`AssistantSink` is a run's `SlackSink` in such a thread: the thread is the person's own, so the
run's status message (with its buttons) is a reply in it rather than a new parent message.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from slack_bolt.async_app import AsyncBoltContext
from slack_bolt.context.set_status.async_set_status import AsyncSetStatus
from slack_bolt.context.set_suggested_prompts.async_set_suggested_prompts import (
    AsyncSetSuggestedPrompts,
)
from slack_bolt.context.set_title.async_set_title import AsyncSetTitle
from slack_bolt.middleware.assistant.async_assistant import AsyncAssistant

from bot.adapters.chat.service import Reply
from bot.adapters.chat.sink import ChatError, StatusView
from bot.adapters.slack.client import slack_errors
from bot.adapters.slack.followup import SlackThreads
from bot.adapters.slack.mentions import StartsResearch
from bot.adapters.slack.render import PLAIN_CHARS, status_blocks, status_text
from bot.adapters.slack.service import (
    event_caller,
    first_delivery,
    message_text_to_bot,
    reply_text,
    research_request,
)
from bot.adapters.slack.sink import SlackSink
from bot.domain import RunRecord
from bot.errors import NotFoundError, RequestError
from bot.store.runs import Store

log = logging.getLogger(__name__)

SUGGESTED_PROMPTS = [
    {"title": "Research Acme Robotics", "message": "Acme Robotics"},
    {"title": "Deep research Acme Robotics", "message": "deep Acme Robotics"},
    {
        "title": "Find contracts: road maintenance, Ireland",
        "message": "contracts road maintenance, Ireland",
    },
]
"""Shown in a new thread; each `message` is what the person sends: the `/research` language."""
PROMPTS_TITLE = "Name a company, or ask for public contracts:"
STARTING = "is starting the research…"


class AssistantSink(SlackSink):
    """One run in an agent-view thread: its status message is a reply in the person's thread;
    its replies, stream and report follow in the same thread."""

    _status_ts = ""

    async def post_status(self, run: RunRecord, view: StatusView) -> None:
        view.run_id = view.run_id or run.run_id
        try:
            self._status_ts = await self.post_once(
                run,
                text=status_text(view),
                blocks=status_blocks(view, run.run_id, buttons=not self._resumed),
            )
        except ChatError as error:
            # The thread still gets the run's replies; only its status message is missing.
            log.warning("run %s: no status message in %s: %s", run.run_id, self._channel, error)
        await self._store.set_location(run.run_id, channel=self._channel, thread=self.thread)

    async def edit_status(self, run: RunRecord, view: StatusView) -> None:
        if view.finished:
            self._parents.pop((self._channel, self.thread), None)
        if self._status_ts:
            await self._edit(run, view, self._status_ts)


class SlackAssistant:
    """The agent view's listeners, registered on the app with `app.assistant(...)`."""

    def __init__(self, runs: StartsResearch, threads: SlackThreads, store: Store) -> None:
        self._runs = runs
        self._threads = threads
        self._store = store
        self.assistant = AsyncAssistant()
        self.assistant.thread_started(self._on_thread_started)
        self.assistant.user_message(self._on_message)
        # Neither is used: registered so that bolt neither stores the thread's channel context
        # (API calls on every switch of channel) nor logs our own replies as unhandled.
        self.assistant.thread_context_changed(_ignore)
        self.assistant.bot_message(_ignore)

    async def _on_thread_started(self, set_suggested_prompts: AsyncSetSuggestedPrompts) -> None:
        await _quietly("suggested prompts", set_suggested_prompts(SUGGESTED_PROMPTS, PROMPTS_TITLE))

    async def _on_message(
        self,
        payload: dict[str, Any],
        body: dict[str, Any],
        context: AsyncBoltContext,
        set_status: AsyncSetStatus,
        set_title: AsyncSetTitle,
    ) -> None:
        if not await first_delivery(self._store, body):
            return
        caller = event_caller(
            body,
            user=str(payload.get("user", "")),
            channel=str(payload.get("channel", "")),
            kind=str(payload.get("channel_type", "")),
        )
        thread = str(payload["thread_ts"])
        text = message_text_to_bot(str(payload.get("text", "")), context.bot_user_id)
        loading = False
        try:
            run_id = await self._threads.run_in(caller.workspace, caller.channel, thread)
            if run_id is not None:
                await self._threads.ask(caller, run_id, thread, text)
                return
            loading = True
            await _quietly("status", set_status(STARTING))
            record = await self._runs.research(caller, research_request(text), thread=thread)
            await _quietly("title", set_title(record.topic[:PLAIN_CHARS]))
        except (RequestError, NotFoundError) as error:
            # A DM thread: only this person reads it, so the refusal is an ordinary reply.
            reply = Reply.of(error) if isinstance(error, RequestError) else Reply(text=str(error))
            if loading:
                await _quietly("status", set_status(""))
            await self._threads.tell(caller, thread, reply_text(reply), privately=False)


async def _ignore() -> None:
    return None


async def _quietly(what: str, call: Awaitable[Any]) -> None:
    """An agent-view nicety (prompts, title, status): a refusal is logged, the work goes on."""
    try:
        with slack_errors():
            await call
    except ChatError as error:
        log.warning("slack: agent view %s refused: %s", what, error.reason)
