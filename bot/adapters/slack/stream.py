"""Slack's live plan: a run's progress as one streamed reply in its thread (`chat.startStream`,
`appendStream`, `stopStream` with `task_display_mode="plan"`), a loading status until the first
step shows, and the TL;DR and the report's actions when the stream stops.

The run's parent message (with its buttons) is still posted and edited once at the end by the
`ChatProgress` underneath, kept quiet while the stream shows the progress. Where streaming is
unavailable, or the stream fails, that `ChatProgress` speaks again for the rest of the run: it
has seen every event, so nothing is lost. A stream Slack no longer accepts
(`message_not_in_streaming_state`: a person pressed stop) means Summarize now.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from slack_sdk.models.messages.chunk import Chunk, MarkdownTextChunk
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.progress import ChatProgress
from bot.adapters.chat.sink import ChatError, StatusView, outcome_summary
from bot.adapters.slack.client import SlackBudget, slack_errors
from bot.adapters.slack.plan import StreamPlan
from bot.adapters.slack.render import MARKDOWN_CHARS, closing_blocks, safe_markdown
from bot.adapters.slack.sink import SlackSink
from bot.agent.events import Event, Notice
from bot.domain import Origin, RunRecord
from bot.runs.manager import Outcome

log = logging.getLogger(__name__)

StreamingMode = Literal["auto", "on", "off"]
OnStop = Callable[[RunRecord], object]
"""Told when a person stopped the run's stream in Slack: the front end asks for Summarize now."""

STOPPED = "message_not_in_streaming_state"
UNAVAILABLE = frozenset(
    {
        "not_allowed",
        "not_allowed_token_type",
        "method_deprecated",
        "unknown_method",
        "invalid_arguments",
        "missing_scope",
        "feature_not_enabled",
        "HTTP 404",
    }
)
"""Slack's answers to `chat.startStream` that say this app or workspace cannot stream."""
LOADING_STATUS = "is researching…"
LOADING_MESSAGES = ["Planning the search…", "Searching the web…", "Reading the first sources…"]


@dataclass(frozen=True)
class StreamOptions:
    mode: StreamingMode = "auto"
    """`RESEARCH_BOT_SLACK_STREAMING`: auto | on | off."""
    append_interval_s: float = 2.0
    """At most one `chat.appendStream` per run per interval; it carries every change since."""
    keepalive_s: float = 30.0
    """With nothing to show for this long, the plan's title is sent again: Slack keeps the
    stream open, and a stream a person stopped is noticed while the run is busy elsewhere."""


def slack_progress(
    client: AsyncWebClient,
    sink: SlackSink,
    view: StatusView,
    *,
    budget: SlackBudget,
    origin: Origin,
    options: StreamOptions,
    on_stop: OnStop,
    edit_interval_s: float = 3.0,
) -> ChatProgress | StreamingProgress:
    """The listener for one Slack run: the streamed plan, or (off, or a workspace that has
    refused streaming in auto mode) today's edited status message."""
    edits = ChatProgress(
        sink, view, limiter=budget.updates(origin.workspace), min_edit_interval_s=edit_interval_s
    )
    if options.mode == "off" or (
        options.mode == "auto" and origin.workspace in budget.unstreamable
    ):
        return edits
    return StreamingProgress(
        client, sink, edits, budget=budget, origin=origin, options=options, on_stop=on_stop
    )


class StreamingProgress:
    """Follows one run as a streamed plan in its thread: a `RunListener`."""

    def __init__(
        self,
        client: AsyncWebClient,
        sink: SlackSink,
        edits: ChatProgress,
        *,
        budget: SlackBudget,
        origin: Origin,
        options: StreamOptions,
        on_stop: OnStop,
    ) -> None:
        self._client = client
        self._sink = sink
        self._edits = edits
        edits.quiet = True
        self._budget = budget
        self._origin = origin
        self._options = options
        self._on_stop = on_stop
        self._plan = StreamPlan(edits.view.topic)
        self._notes: list[str] = []
        self._stream: AsyncChatStream | None = None
        self._streaming = True
        """False once it fell back to the status message, for the rest of the run."""
        self._begun = False
        self._loading = False
        self._no_status = False
        self._dirty = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._sending: asyncio.Future[None] | None = None

    @property
    def view(self) -> StatusView:
        return self._edits.view

    async def on_event(self, run: RunRecord, event: Event) -> None:
        await self._edits.on_event(run, event)
        if not self._sink.thread:
            return
        if not self._begun:
            self._begun = True
            await self._set_loading(run, True)
        changed = self._plan.apply(event)
        if isinstance(event, Notice):
            self._notes.append(event.message)
            changed = True
        if not changed or not (self._plan.has_tasks or self._notes):
            return
        await self._set_loading(run, False)
        if not self._streaming:
            return
        if self._stream is None:
            await self._start(run)
        else:
            self._dirty.set()

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        await self._stop_flusher()
        await self._set_loading(run, False)
        if self._streaming and self._sink.thread:
            await self._close(run, outcome)
        await self._edits.on_finished(run, outcome)

    async def _start(self, run: RunRecord) -> None:
        limiter = self._budget.stream_ends("chat.startStream", self._origin.workspace)
        if not limiter.has_capacity():
            # Waiting would hold back this run's whole thread: it shows as edits instead.
            log.info("run %s: no stream budget left in this workspace: editing", run.run_id)
            self._streaming = False
            self._edits.speak(run)
            return
        self._stream = await self._open_stream()
        try:
            async with limiter:
                with slack_errors():
                    await self._stream.append(chunks=self._pending())
        except ChatError as error:
            self._fall_back(run, "chat.startStream", error, starting=True)
            return
        self._flusher = asyncio.create_task(self._flush(run), name=f"stream-{run.run_id}")

    async def _close(self, run: RunRecord, outcome: Outcome) -> None:
        """Stop the stream with the last task updates, the TL;DR, and the report's actions."""
        self._plan.finish(succeeded=outcome.report is not None)
        summary = safe_markdown(outcome_summary(outcome))[:MARKDOWN_CHARS]
        chunks = [*self._pending(), MarkdownTextChunk(text=summary)]
        has_report = outcome.markdown is not None and outcome.filename is not None
        starting = self._stream is None
        stream = self._stream or await self._open_stream()
        team = self._origin.workspace
        try:
            if starting:  # stop() starts it first
                await self._budget.stream_ends("chat.startStream", team).acquire()
            async with self._budget.stream_ends("chat.stopStream", team):
                with slack_errors():
                    await stream.stop(
                        chunks=chunks, blocks=closing_blocks(run.run_id, has_report=has_report)
                    )
        except ChatError as error:
            self._fall_back(run, "chat.stopStream", error, starting=starting, ending=True)

    async def _open_stream(self) -> AsyncChatStream:
        return await self._client.chat_stream(
            channel=self._origin.channel,
            thread_ts=self._sink.thread,
            recipient_team_id=self._origin.workspace,
            recipient_user_id=self._origin.user,
            task_display_mode="plan",
            buffer_size=MARKDOWN_CHARS,
        )

    def _pending(self) -> list[Chunk]:
        chunks: list[Chunk] = self._plan.updates()
        chunks += [MarkdownTextChunk(text=safe_markdown(note) + "\n") for note in self._notes]
        self._notes.clear()
        return chunks

    async def _flush(self, run: RunRecord) -> None:
        # Coalesce: one append per interval carries every change since the last one.
        assert self._stream is not None
        while self._streaming:
            try:
                async with asyncio.timeout(self._options.keepalive_s):
                    await self._dirty.wait()
            except TimeoutError:
                pass
            self._dirty.clear()
            chunks = self._pending() or [self._plan.title_chunk()]
            # Shielded: stopping the flusher must not abort an append mid-request, or Slack
            # might apply it after the stream's last words.
            self._sending = asyncio.ensure_future(self._append(run, chunks))
            await asyncio.shield(self._sending)
            await asyncio.sleep(self._options.append_interval_s)

    async def _append(self, run: RunRecord, chunks: list[Chunk]) -> None:
        assert self._stream is not None
        try:
            async with self._budget.appends(self._origin.workspace):
                with slack_errors():
                    await self._stream.append(chunks=chunks)
        except ChatError as error:
            self._fall_back(run, "chat.appendStream", error)

    async def _stop_flusher(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            await asyncio.wait([self._flusher])
        if self._sending is not None and not self._sending.done():
            await asyncio.wait([self._sending])

    def _fall_back(
        self,
        run: RunRecord,
        what: str,
        error: ChatError,
        *,
        starting: bool = False,
        ending: bool = False,
    ) -> None:
        """The status message shows the rest of the run; a stopped stream means Summarize now."""
        self._streaming = False
        code = error.reason.split(":", 1)[0]
        if code == STOPPED and not ending:
            log.info("run %s: its stream was stopped in Slack: summarizing", run.run_id)
            self._on_stop(run)
        elif starting and code in UNAVAILABLE and self._options.mode == "auto":
            self._budget.unstreamable.add(self._origin.workspace)
            log.info("run %s: streaming unavailable here (%s): editing instead", run.run_id, code)
        else:
            log.warning("run %s: %s failed (%s): editing instead", run.run_id, what, error.reason)
        if ending:
            self._edits.quiet = False  # its closing says the summary and the milestones
        else:
            self._edits.speak(run)

    async def _set_loading(self, run: RunRecord, on: bool) -> None:
        """Slack's loading status in the thread; a refusal is logged once and never retried."""
        if self._no_status or on == self._loading:
            return
        try:
            with slack_errors():
                await self._client.assistant_threads_setStatus(
                    channel_id=self._origin.channel,
                    thread_ts=self._sink.thread,
                    status=LOADING_STATUS if on else "",
                    loading_messages=LOADING_MESSAGES if on else None,
                )
        except ChatError as error:
            self._no_status = True
            log.warning("run %s: no loading status in Slack: %s", run.run_id, error.reason)
            return
        self._loading = on
