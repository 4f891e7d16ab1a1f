"""Slack's live plan: a run's progress as a streamed reply in its thread (`chat.startStream`,
`appendStream`, `stopStream` with `task_display_mode="plan"`), the thread's loading status and
agent session (bot/adapters/slack/session.py), and the TL;DR and the report's actions when the
stream stops.

The run's parent message (with its buttons) is still posted and edited once at the end by the
`ChatProgress` underneath, kept quiet while the stream shows the progress. Where streaming is
unavailable, or the stream fails, that `ChatProgress` speaks again for the rest of the run: it
has seen every event, so nothing is lost.

Slack also ends a stream by itself (appends paused past an undocumented limit; a person pressed
stop): later calls answer `message_not_in_streaming_state`. That alone never stops the run: the
plan goes on in a new stream in the thread, carrying every task again, at most `MAX_STREAMS` a
run. A person's stop reaches the run only as the `agent_session_stopped` event (Summarize now,
bot/adapters/slack/summarize.py).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Literal

from slack_sdk.models.messages.chunk import Chunk, MarkdownTextChunk
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.chat.progress import ChatProgress
from bot.adapters.chat.sink import ChatError, StatusView, outcome_summary
from bot.adapters.slack.client import UNAVAILABLE, SlackBudget, slack_errors
from bot.adapters.slack.plan import StreamPlan
from bot.adapters.slack.render import MARKDOWN_CHARS, closing_blocks, safe_markdown
from bot.adapters.slack.session import ThreadStatus
from bot.adapters.slack.sink import SlackSink
from bot.agent.events import Event, Notice
from bot.domain import Origin, RunRecord
from bot.runs.manager import Outcome
from bot.store.runs import Store

log = logging.getLogger(__name__)

StreamingMode = Literal["auto", "on", "off"]

CLOSED = "message_not_in_streaming_state"
"""Slack's answer once it no longer takes a stream: it timed out, or a person pressed stop."""
MAX_STREAMS = 4
"""Streams one run may start (the first and the ones that take over from a closed one); past
that, the edited status message shows the rest."""


@dataclass(frozen=True)
class StreamOptions:
    mode: StreamingMode = "auto"
    """`RESEARCH_BOT_SLACK_STREAMING`: auto | on | off."""
    append_interval_s: float = 2.0
    """At most one `chat.appendStream` per run per interval; it carries every change since."""
    keepalive_s: float = 30.0
    """With nothing to show for this long, the plan's title is sent again: Slack keeps the
    stream open, and a stream Slack closed anyway is noticed while the run is busy elsewhere."""


def slack_progress(
    client: AsyncWebClient,
    sink: SlackSink,
    view: StatusView,
    *,
    store: Store,
    budget: SlackBudget,
    origin: Origin,
    options: StreamOptions,
    edit_interval_s: float = 3.0,
) -> ChatProgress | StreamingProgress:
    """The listener for one Slack run: the streamed plan, or (off, or a workspace that has
    refused streaming in auto mode) today's edited status message."""
    edits = ChatProgress(
        sink,
        view,
        store=store,
        limiter=budget.updates(origin.workspace),
        min_edit_interval_s=edit_interval_s,
    )
    if options.mode == "off" or (
        options.mode == "auto" and origin.workspace in budget.unstreamable
    ):
        return edits
    return StreamingProgress(client, sink, edits, budget=budget, origin=origin, options=options)


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
    ) -> None:
        self._client = client
        self._sink = sink
        self._edits = edits
        edits.quiet = True
        self._budget = budget
        self._origin = origin
        self._options = options
        self._plan = StreamPlan(edits.view.topic)
        self._status = ThreadStatus(
            client, budget, origin, title=edits.view.topic, inherited=sink.resumed
        )
        self._notes: list[str] = []
        """Safe Markdown waiting for the stream, in order."""
        self._stream: AsyncChatStream | None = None
        """The stream that takes appends; None before the first and after Slack closed one."""
        self._streams = 0
        self._streaming = True
        """False once it fell back to the status message, for the rest of the run."""
        self._begun = False
        self._dirty = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._sending: asyncio.Future[bool] | None = None

    @property
    def view(self) -> StatusView:
        return self._edits.view

    async def on_event(self, run: RunRecord, event: Event) -> None:
        await self._edits.on_event(run, event)
        if not self._sink.thread:
            return
        if not self._begun:
            self._begun = True
            await self._status.begin(run, self._sink.thread)
        changed = self._plan.apply(event)
        if isinstance(event, Notice):
            self._notes.append(safe_markdown(event.message) + "\n")
            changed = True
        if not changed or not (self._plan.has_tasks or self._notes):
            return
        await self._status.loading(run, False)
        if not self._streaming:
            return
        if self._flusher is None:
            # The first words start the stream at once; the flusher coalesces the rest.
            if await self._send(run, self._pending()):
                self._flusher = asyncio.create_task(self._flush(run), name=f"stream-{run.run_id}")
        else:
            self._dirty.set()

    async def let_go(self, run: RunRecord) -> None:
        await self._stop_flusher()
        await self._edits.let_go(run)

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        await self._stop_flusher()
        await self._status.loading(run, False)
        try:
            # A delivery cut short after the summary and report: the stream said them then.
            if self._streaming and self._sink.thread and not outcome.posted:
                await self._close(run, outcome)
            await self._edits.on_finished(run, outcome)
        finally:
            # Not while this delivery is being cancelled: it is delivered again at the next
            # start, which ends the session then.
            if not _cancelling():
                await self._status.end(run, self._sink.thread)

    async def _send(self, run: RunRecord, chunks: list[Chunk], *, news: bool = True) -> bool:
        """Append `chunks` to the stream, or start a stream with them. False once the status
        message has taken over."""
        if self._stream is None:
            return await self._open(run, chunks)
        try:
            async with self._budget.appends(self._origin.workspace):
                with slack_errors():
                    await self._stream.append(chunks=chunks)
        except ChatError as error:
            if _code(error) != CLOSED:
                self._fall_back(run, "chat.appendStream", error)
                return False
            log.info("run %s: Slack closed its stream: the plan goes on in a new one", run.run_id)
            self._closed(chunks)
            if news:
                self._dirty.set()
        return True

    async def _open(self, run: RunRecord, chunks: list[Chunk]) -> bool:
        limiter = self._budget.stream_ends("chat.startStream", self._origin.workspace)
        if self._streams >= MAX_STREAMS or not limiter.has_capacity():
            # Waiting for the budget would hold back this run's whole thread.
            log.info("run %s: no stream budget or streams left: editing", run.run_id)
            self._streaming = False
            self._edits.speak(run)
            return False
        first = self._streams == 0
        self._streams += 1
        stream = await self._open_stream()
        try:
            async with limiter:
                with slack_errors():
                    await stream.append(chunks=chunks)
        except ChatError as error:
            self._fall_back(run, "chat.startStream", error, starting=first)
            return False
        self._stream = stream
        return True

    def _closed(self, unsent: list[Chunk]) -> None:
        """Slack no longer takes the stream: the next one carries the whole plan again, and the
        text that did not get through."""
        self._stream = None
        self._plan.resend()
        self._notes[:0] = [c.text for c in unsent if isinstance(c, MarkdownTextChunk)]

    async def _close(self, run: RunRecord, outcome: Outcome) -> None:
        """Stop the stream with the last task updates, the TL;DR, the report's actions and the
        session's next status; a stream Slack closed gives way to a new one that says it all."""
        self._plan.finish(succeeded=outcome.report is not None)
        summary = safe_markdown(outcome_summary(outcome))[:MARKDOWN_CHARS]
        has_report = outcome.markdown is not None and outcome.filename is not None
        blocks = closing_blocks(run.run_id, has_report=has_report)
        chunks = [*self._pending(), MarkdownTextChunk(text=summary)]
        team = self._origin.workspace
        for attempt in (1, 2):
            starting = self._stream is None
            stream = self._stream or await self._open_stream()
            try:
                if starting:  # stop() starts it first
                    await self._budget.stream_ends("chat.startStream", team).acquire()
                async with self._budget.stream_ends("chat.stopStream", team):
                    with slack_errors():
                        await stream.stop(
                            chunks=chunks,
                            blocks=blocks,
                            session_status=self._status.closing_status,
                        )
            except ChatError as error:
                if attempt == 1 and not starting and _code(error) == CLOSED:
                    log.info("run %s: Slack closed its stream: closing in a new one", run.run_id)
                    self._closed(chunks)
                    chunks = self._pending()
                    continue
                self._fall_back(run, "chat.stopStream", error, starting=starting, ending=True)
                return
            self._status.ended_by_stream()
            return

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
        chunks += [MarkdownTextChunk(text=note) for note in self._notes]
        self._notes.clear()
        return chunks

    async def _flush(self, run: RunRecord) -> None:
        # Coalesce: one append per interval carries every change since the last one.
        while self._streaming:
            news = await self._news()
            if not news and self._stream is None:
                continue  # nothing to keep alive: a new stream starts with the next change
            self._dirty.clear()
            pending = self._pending()
            chunks = pending or [self._plan.title_chunk()]
            # Shielded: stopping the flusher must not abort an append mid-request, or Slack
            # might apply it after the stream's last words.
            self._sending = asyncio.ensure_future(self._send(run, chunks, news=bool(pending)))
            await asyncio.shield(self._sending)
            await asyncio.sleep(self._options.append_interval_s)

    async def _news(self) -> bool:
        """Wait for a change; False when the keep-alive is due first."""
        try:
            async with asyncio.timeout(self._options.keepalive_s):
                await self._dirty.wait()
        except TimeoutError:
            return False
        return True

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
        """The status message shows the rest of the run."""
        self._streaming = False
        code = _code(error)
        if starting and code in UNAVAILABLE and self._options.mode == "auto":
            self._budget.unstreamable.add(self._origin.workspace)
            log.info("run %s: streaming unavailable here (%s): editing instead", run.run_id, code)
        else:
            log.warning("run %s: %s failed (%s): editing instead", run.run_id, what, error.reason)
        if ending:
            self._edits.quiet = False  # its closing says the summary and the milestones
        else:
            self._edits.speak(run)


def _code(error: ChatError) -> str:
    """Slack's error code, without the scope it may name."""
    return error.reason.split(":", 1)[0]


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
