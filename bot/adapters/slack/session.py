"""What a run's Slack thread shows while the run works, besides its messages: the loading status
(`assistant.threads.setStatus`, rotating messages until the first step shows), and the run's
agent session (`agents.sessions.setStatus`). The session is `processing` while the run works,
which is when Slack shows its native stop button in the thread (a press arrives as
`agent_session_stopped`: Summarize now), then `active` once the run has ended, so the thread
stays open for follow-up questions and the stop button goes. Slack never moves a session out of
`processing` by itself: the run's end does, with `chat.stopStream`'s `session_status` when its
stream closes, else with `setStatus`.

An app must be declared an agent for sessions; a workspace that refuses them is not asked again
(until the process restarts). A refusal of either status never holds the run back.
"""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.sink import ChatError
from bot.adapters.slack.client import UNAVAILABLE, SlackBudget, slack_errors
from bot.adapters.slack.render import safe_plain
from bot.domain import Origin, RunRecord

log = logging.getLogger(__name__)

PROCESSING = "processing"
DONE = "active"
"""After a run: the thread is still a conversation (follow-up questions), not `closed`."""
TITLE_CHARS = 200
"""Slack's limit for a session's title."""
NOT_SUBSCRIBED = "missing_agent_session_stopped_event_subscription"
"""Slack's warning when the app does not receive stop presses: it then shows a loading
indicator without a stop button."""
LOADING_STATUS = "is researching…"
LOADING_MESSAGES = ["Planning the search…", "Searching the web…", "Reading the first sources…"]


class ThreadStatus:
    """One run's loading status and agent session, in the thread `begin` names."""

    def __init__(
        self,
        client: AsyncWebClient,
        budget: SlackBudget,
        origin: Origin,
        *,
        title: str,
        inherited: bool = False,
    ) -> None:
        self._client = client
        self._budget = budget
        self._origin = origin
        self._title = safe_plain(title, TITLE_CHARS)
        self._thread = ""
        self._loading = self._no_loading = False
        self._processing = False
        self._inherited = inherited
        """A run an earlier process left: its thread may still show `processing`, so the end
        sets `active` even if this process never set `processing`."""

    @property
    def closing_status(self) -> str | None:
        """What `chat.stopStream`'s `session_status` should say: None when no session is open."""
        if self._origin.workspace in self._budget.sessionless:
            return None
        return DONE if self._processing or self._inherited else None

    async def begin(self, run: RunRecord, thread: str) -> None:
        """The run works in `thread`: the loading status, and Slack's stop button."""
        self._thread = thread
        await self.loading(run, True)
        if not self._processing and self._origin.workspace not in self._budget.sessionless:
            self._processing = await self._set(run, PROCESSING, first=True)

    def ended_by_stream(self) -> None:
        self._processing = self._inherited = False

    async def end(self, run: RunRecord, thread: str) -> None:
        """Out of `processing`, unless the stream's stop already did it."""
        self._thread = self._thread or thread
        if self.closing_status is not None and self._thread:
            self._processing = self._inherited = False
            await self._set(run, DONE)

    async def loading(self, run: RunRecord, on: bool) -> None:
        """Slack's loading status in the thread; a refusal is logged once and never retried."""
        if self._no_loading or on == self._loading or not self._thread:
            return
        try:
            with slack_errors():
                await self._client.assistant_threads_setStatus(
                    channel_id=self._origin.channel,
                    thread_ts=self._thread,
                    status=LOADING_STATUS if on else "",
                    loading_messages=LOADING_MESSAGES if on else None,
                )
        except ChatError as error:
            self._no_loading = True
            log.warning("run %s: no loading status in Slack: %s", run.run_id, error.reason)
            return
        self._loading = on

    async def _set(self, run: RunRecord, status: str, *, first: bool = False) -> bool:
        # Title and initiator only count when Slack creates the session.
        extra = {"title": self._title, "initiator_user_id": self._origin.user} if first else {}
        try:
            with slack_errors():
                answer = await self._client.agents_sessions_setStatus(
                    channel_id=self._origin.channel, thread_ts=self._thread, status=status, **extra
                )
        except ChatError as error:
            if error.reason.split(":", 1)[0] in UNAVAILABLE:
                self._budget.sessionless.add(self._origin.workspace)
            log.warning("run %s: no agent session in Slack: %s", run.run_id, error.reason)
            return False
        if answer.get("warning") == NOT_SUBSCRIBED and self._budget.warn_once(NOT_SUBSCRIBED):
            log.warning(
                "slack: the app is not subscribed to agent_session_stopped, so Slack shows no "
                "stop button: update the app from slack-manifest.yaml and reinstall it"
            )
        return True


async def settle(client: AsyncWebClient, channel: str, thread: str) -> None:
    """Move a thread's session out of `processing` when no run of this process works there (a
    stop pressed after its run ended, or under a run an earlier process left): otherwise its stop
    button would stay. A refusal is logged: nobody is waiting for it."""
    try:
        with slack_errors():
            await client.agents_sessions_setStatus(
                channel_id=channel, thread_ts=thread, status=DONE
            )
    except ChatError as error:
        log.info("slack: the session in %s/%s stays as it is: %s", channel, thread, error.reason)
