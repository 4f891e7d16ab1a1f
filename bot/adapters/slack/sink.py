"""The Slack `ChatSink`: a run's parent message in its channel, edited in place, replies in its
thread, and the report uploaded there. The last edit of the status outlasts Slack's rate limits:
until it lands, the message says the run is still researching."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.adapters.chat.sink import ChatError, StatusView
from bot.adapters.slack.choice import identity_blocks
from bot.adapters.slack.client import (
    SlackBudget,
    post_message,
    post_text,
    slack_errors,
    upload_file,
)
from bot.adapters.slack.render import (
    footer,
    markdown_blocks,
    message_text,
    status_blocks,
    status_text,
)
from bot.domain import RunRecord
from bot.store.runs import Store

log = logging.getLogger(__name__)

Unreachable = Callable[[RunRecord, ChatError], Awaitable[None]]
"""Told when the parent message cannot be posted (the bot is not in a private channel …)."""

LAST_EDIT_PATIENCE_S = 600.0
"""How long a run's last status edit is tried again, after each 429's Retry-After, once the
SDK's own retries (`RATE_LIMIT_RETRIES`) are spent."""
STATUS_POSTS = 3
"""Tries of a status message in a thread whose answers are lost, each after reading the thread."""
THREAD_READ = 100
"""Messages of a thread read to find a status message whose post went unanswered."""


class SlackSink:
    """One run's parent message and thread in a channel."""

    show_command = "`/research show {run_id}`"

    def __init__(
        self,
        client: AsyncWebClient,
        store: Store,
        budget: SlackBudget,
        *,
        team: str,
        channel: str,
        parents: dict[tuple[str, str], str],
        thread: str = "",
        resumed: bool = False,
        on_unreachable: Unreachable | None = None,
    ) -> None:
        self._client = client
        self._store = store
        self._budget = budget
        self._team = team
        self._channel = channel
        self._ts = thread
        self._parents = parents
        self._resumed = resumed
        """Finished after a restart: its buttons would reach no control, so none are shown."""
        self._on_unreachable = on_unreachable

    @property
    def thread(self) -> str:
        return self._ts

    @property
    def resumed(self) -> bool:
        """Finished by this process for an earlier one (recovered, or delivered again)."""
        return self._resumed

    async def post_status(self, run: RunRecord, view: StatusView) -> None:
        view.run_id = view.run_id or run.run_id
        if self._ts:
            # A recovered run keeps its parent message and thread.
            async with self._budget.updates(self._team):
                await self.edit_status(run, view)
            return
        try:
            with slack_errors():
                self._ts = await post_message(
                    self._client,
                    self._budget,
                    self._channel,
                    text=status_text(view),
                    blocks=_blocks(view, run.run_id, buttons=not self._resumed),
                )
        except ChatError as error:
            log.warning("run %s: cannot post in %s: %s", run.run_id, self._channel, error)
            if self._on_unreachable is not None:
                await self._on_unreachable(run, error)
            return
        if not self._resumed:
            self._parents[(self._channel, self._ts)] = run.run_id
        await self._store.set_location(run.run_id, channel=self._channel, thread=self._ts)

    async def edit_status(self, run: RunRecord, view: StatusView) -> None:
        if not self._ts:
            return
        if view.finished:
            self._parents.pop((self._channel, self._ts), None)
        await self._edit(run, view, self._ts)

    async def _edit(self, run: RunRecord, view: StatusView, ts: str) -> None:
        """Edit the status message at `ts`; an intermediate edit that meets a 429 is left to the
        next one, the last one waits and tries again."""
        buttons = not view.finished and not self._resumed
        loop = asyncio.get_running_loop()
        give_up = loop.time() + (LAST_EDIT_PATIENCE_S if view.finished else 0.0)
        while True:
            try:
                with slack_errors():
                    await self._client.chat_update(
                        channel=self._channel,
                        ts=ts,
                        text=status_text(view),
                        blocks=_blocks(view, run.run_id, buttons=buttons),
                    )
                return
            except ChatError as error:
                wait = _retry_after(error.__cause__)
                if wait is None or loop.time() + wait > give_up:
                    raise
            log.info("run %s: its last edit is rate-limited: again in %.0f s", run.run_id, wait)
            await asyncio.sleep(wait)

    async def post_once(self, run: RunRecord, *, text: str, blocks: list[dict[str, Any]]) -> str:
        """The run's status message as a reply in its thread, posted once; its ts. When
        Slack's answer is lost (the connection dropped or timed out), Slack may have posted it:
        the thread is read, and only a message not found there is posted again. So the message
        with the buttons is the one known here: its final edit lands, and no copy keeps them."""
        for _ in range(STATUS_POSTS):
            try:
                return await self._post_status(text, blocks)
            except ChatError as error:
                if isinstance(error.__cause__, SlackApiError):
                    raise  # Slack answered: it did not post it
                lost = error
            log.info("run %s: its status message went unanswered (%s)", run.run_id, lost.reason)
            found = await self._status_in_thread(run)
            if found:
                return found
        raise lost

    async def _post_status(self, text: str, blocks: list[dict[str, Any]]) -> str:
        with slack_errors():
            return await post_message(
                without_resends(self._client),
                self._budget,
                self._channel,
                text=text,
                blocks=blocks,
                thread_ts=self._ts,
            )

    async def _status_in_thread(self, run: RunRecord) -> str:
        """The ts of the run's status message if the thread has it, else ""."""
        try:
            with slack_errors():
                answer = await self._client.conversations_replies(
                    channel=self._channel, ts=self._ts, limit=THREAD_READ
                )
        except ChatError as error:
            log.warning("run %s: its thread cannot be read: %s", run.run_id, error.reason)
            return ""
        line = footer(run.run_id)
        for message in answer.get("messages") or []:
            if any(_says(block, line) for block in message.get("blocks") or []):
                return str(message["ts"])
        return ""

    async def reply(self, run: RunRecord, text: str) -> None:
        if self._ts:
            with slack_errors():
                await self._post(message_text(text), blocks=markdown_blocks(text))

    async def upload_report(
        self, run: RunRecord, filename: str, markdown: str, comment: str
    ) -> None:
        if self._ts:
            with slack_errors():
                await upload_file(
                    self._client, self._channel, self._ts, filename, markdown, comment
                )

    async def post_report_text(self, run: RunRecord, note: str, markdown: str) -> None:
        if self._ts:
            with slack_errors():
                await self._post(message_text(note))
                await post_text(self._client, self._budget, self._channel, self._ts, markdown)

    async def _post(self, text: str, blocks: list[dict[str, Any]] | None = None) -> None:
        await post_message(
            self._client, self._budget, self._channel, text=text, blocks=blocks, thread_ts=self._ts
        )


def _blocks(view: StatusView, run_id: str, *, buttons: bool) -> list[dict[str, Any]]:
    choice = identity_blocks(view, run_id, buttons=buttons)
    return status_blocks(view, run_id, buttons=buttons, choice=choice)


def _says(block: dict[str, Any], line: str) -> bool:
    """A context block with exactly `line`: only an app's message has one."""
    elements = block.get("elements") or [] if block.get("type") == "context" else []
    return any(element.get("text") == line for element in elements)


def _retry_after(error: BaseException | None) -> float | None:
    """Seconds Slack asked us to wait when it answered 429 (1 if it did not say); else None."""
    if not isinstance(error, SlackApiError) or not isinstance(error.response, AsyncSlackResponse):
        return None
    if error.response.status_code != 429:
        return None
    value = error.response.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else 1.0
    except (TypeError, ValueError):
        return 1.0


def without_resends(client: AsyncWebClient) -> AsyncWebClient:
    """`client` for a post that must not be made twice: when the connection drops before
    Slack's answer, slack_sdk would send it again, but Slack may have carried it out."""
    return AsyncWebClient(
        token=client.token,
        base_url=client.base_url,
        session=client.session,
        timeout=client.timeout,
        retry_handlers=[
            handler
            for handler in client.retry_handlers
            if not isinstance(handler, AsyncConnectionErrorRetryHandler)
        ],
    )
