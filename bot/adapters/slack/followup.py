"""Follow-up questions on Slack: which run a thread belongs to, a question asked there (a mention
in a run's channel thread, any message in an agent-view thread) sent to bot/runs/followups.py, and the
answer posted in that same thread (bot/adapters/chat/followup_reply.py on a `SlackSink`).

A thread's run is found among this process's running runs first, then in the store (a run's
thread is stored as its origin once its message is up), so threads of earlier processes work
too.
"""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.followup_reply import FollowUpReply
from bot.adapters.chat.service import Caller
from bot.adapters.chat.sink import ChatError
from bot.adapters.slack.client import REPORT_PIECE_CHARS, SlackBudget, slack_errors
from bot.adapters.slack.privacy import Conversations
from bot.adapters.slack.service import PLATFORM
from bot.adapters.slack.sink import SlackSink
from bot.domain import Origin, RunRecord
from bot.runs.followups import FollowUps
from bot.store.runs import Store

log = logging.getLogger(__name__)


class SlackThreads:
    """The runs behind Slack threads, and the follow-up questions asked in them."""

    def __init__(
        self,
        client: AsyncWebClient,
        store: Store,
        budget: SlackBudget,
        followups: FollowUps,
        parents: dict[tuple[str, str], str],
        conversations: Conversations,
    ) -> None:
        self._client = client
        self._store = store
        self._budget = budget
        self._followups = followups
        self._parents = parents
        """(channel, thread ts) -> run id of this process's running runs (the front end's)."""
        self._conversations = conversations

    async def run_in(self, workspace: str, channel: str, thread: str) -> str | None:
        """The id of the run whose thread this is, or None."""
        running = self._parents.get((channel, thread))
        if running is not None:
            return running
        run = await self._store.run_in_thread(
            thread, platform=PLATFORM, workspace=workspace, channel=channel
        )
        return run.run_id if run is not None else None

    async def ask(self, caller: Caller, run_id: str, thread: str, question: str) -> RunRecord:
        """Ask `question` about `run_id` for `caller`, answered in `thread`. Raises RequestError
        or NotFoundError with what to tell the person."""
        private = caller.private
        if private is None:
            private = await self._conversations.private(caller.channel)
        origin = caller.origin().model_copy(update={"thread": thread, "private": private})
        child = await self._followups.ask(run_id, question, origin, self.listener(origin))
        log.info("slack: follow-up %s about run %s by %s", child.run_id, run_id, caller.user)
        return child

    def listener(self, origin: Origin) -> FollowUpReply:
        """The listener of one follow-up (also of one recovered after a restart)."""
        sink = SlackSink(
            self._client,
            self._store,
            self._budget,
            team=origin.workspace,
            channel=origin.channel,
            thread=origin.thread,
            parents=self._parents,
        )
        return FollowUpReply(sink, limit=REPORT_PIECE_CHARS)

    async def tell(self, caller: Caller, thread: str, safe: str, *, privately: bool) -> None:
        """A short note of ours in the thread (`safe`: already escaped), only for the person
        when `privately`; a refusal is logged: there is nobody else to tell."""
        try:
            with slack_errors():
                if privately:
                    await self._client.chat_postEphemeral(
                        channel=caller.channel,
                        user=caller.user,
                        text=safe,
                        thread_ts=thread or None,
                    )
                else:
                    await self._client.chat_postMessage(
                        channel=caller.channel, text=safe, thread_ts=thread or None
                    )
        except ChatError as error:
            log.info("slack: could not answer %s in %s: %s", caller.user, caller.channel, error)
