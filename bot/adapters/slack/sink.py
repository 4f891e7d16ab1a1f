"""The Slack `ChatSink`: a run's parent message in its channel, edited in place, replies in its
thread, and the report uploaded there."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.sink import ChatError, StatusView
from bot.adapters.slack.client import (
    SlackBudget,
    Unreachable,
    post_message,
    post_text,
    slack_errors,
    upload_file,
)
from bot.adapters.slack.render import (
    markdown_blocks,
    message_text,
    status_blocks,
    status_text,
)
from bot.domain import RunRecord
from bot.store.runs import Store

log = logging.getLogger(__name__)


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
                    blocks=status_blocks(view, run.run_id, buttons=not self._resumed),
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
        buttons = not view.finished and not self._resumed
        with slack_errors():
            await self._client.chat_update(
                channel=self._channel,
                ts=self._ts,
                text=status_text(view),
                blocks=status_blocks(view, run.run_id, buttons=buttons),
            )

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
