"""What chat front ends share: the `ChatSink` each platform implements, and the progress renderer.

`ChatProgress` turns a run's events into one status message edited in place (throttled per
run and under a shared per-workspace budget), batched milestone replies in the thread, and
at the end a TL;DR reply plus the report file. Platforms only say how to post, edit, reply
and upload, and how to make untrusted text safe on their side.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Protocol
from urllib.parse import urlsplit

from aiolimiter import AsyncLimiter
from pydantic import BaseModel

from bot.agent.events import (
    Event,
    Notice,
    RunQueued,
    RunStarted,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    UsageRecorded,
)
from bot.domain import RunRecord
from bot.runs import Outcome

log = logging.getLogger(__name__)
BUDGET_RETRY_S = 0.5
"""How long an intermediate edit waits when the workspace's edit budget is spent."""

ENDING_LABELS = {
    "completed": "Done",
    "max_turns_synthesized": "Done (turn limit reached, written up)",
    "deadline_synthesized": "Done (time limit reached, written up)",
    "forced_synthesized": "Done (summarized on request)",
    "interrupted_synthesized": "Done (recovered after a restart)",
    "cancelled": "Cancelled",
    "refused": "Declined by the model",
    "llm_error": "Failed: the model could not be reached",
}


def ending_label(ending: str) -> str:
    if ending.endswith("_synthesis_failed"):
        return "Done (write-up failed: report built from the sources found)"
    return ENDING_LABELS.get(ending, ending)


class StatusView(BaseModel):
    """Everything the run's status message shows; each platform lays it out its own way."""

    run_id: str
    topic: str
    mode: str
    requester: str
    """A platform user id (rendered as a mention by the platform, which is ours, not the model's)."""
    state: str = "Starting"
    turn: int = 0
    action: str = ""
    sources: int = 0
    cost_usd: float = 0.0
    finished: bool = False
    """When true the buttons are gone."""


class ChatSink(Protocol):
    """One platform's way to show a run. Every text it is given may hold untrusted text:
    the sink neutralises mentions and markup on its side before sending."""

    async def post_status(self, run: RunRecord, view: StatusView) -> None:
        """Post the run's parent message (with buttons) and open its thread; store the location."""
        ...

    async def edit_status(self, run: RunRecord, view: StatusView) -> None: ...

    async def reply(self, run: RunRecord, text: str) -> None:
        """A short message in the run's thread."""
        ...

    async def upload_report(
        self, run: RunRecord, filename: str, markdown: str, comment: str
    ) -> None: ...


_BROADCAST = re.compile(r"@(everyone|here|channel)\b", re.IGNORECASE)


def defuse_broadcasts(text: str) -> str:
    """Bare `@everyone`/`@here`/`@channel` in untrusted text: a zero-width joiner stops the ping."""
    return _BROADCAST.sub("@\u2060\\1", text)


def describe_call(event: ToolCalled) -> str:
    """A person-readable line for a tool call (its input is the model's: shown, never obeyed)."""
    if event.name == "web_search":
        return f"Searched: {str(event.input.get('query', ''))[:150]}"
    if event.name == "read_page":
        url = str(event.input.get("url", ""))
        return f"Reading: {urlsplit(url).netloc or url[:80]}"
    return f"{event.name}"


def outcome_summary(outcome: Outcome) -> str:
    """The closing thread reply: what happened, the TL;DR, turns, time and cost."""
    lines = [
        f"{ending_label(outcome.ending)} · {outcome.turns} turns · "
        f"{outcome.duration_s:.0f}s · ${outcome.usage.cost_usd:.2f}"
    ]
    if outcome.recovered:
        lines.append("This run was interrupted by a restart and finished from what it had found.")
    if outcome.report is not None:
        lines.append(f"TL;DR: {outcome.report.tldr}")
    if outcome.error:
        lines.append(outcome.error)
    return "\n".join(lines)


class ChatProgress:
    """Follows one run in a chat: a `RunListener` built on a platform's `ChatSink`."""

    def __init__(
        self,
        sink: ChatSink,
        view: StatusView,
        *,
        limiter: AsyncLimiter,
        min_edit_interval_s: float = 3.0,
    ) -> None:
        self._sink = sink
        self.view = view
        self._limiter = limiter
        self._interval = min_edit_interval_s
        self._posted = False
        self._dirty = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._milestones: list[str] = []
        self._seen_urls: set[str] = set()

    async def on_event(self, run: RunRecord, event: Event) -> None:
        if not self._posted:
            self._posted = True
            self._apply(event)
            await self._sink.post_status(run, self.view)
            return
        # Milestones go out before anything else is said, so the thread reads in order.
        if isinstance(event, TurnStarted | SynthesisStarted | Notice):
            await self._flush_milestones(run)
        if isinstance(event, Notice):
            await self._sink.reply(run, event.message)
        if self._apply(event):
            self._request_edit(run)

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
        await self._flush_milestones(run)
        self.view.finished = True
        self.view.state = ending_label(outcome.ending)
        self.view.action = ""
        self.view.cost_usd = outcome.usage.cost_usd
        await self._sink.reply(run, outcome_summary(outcome))
        if outcome.markdown is not None and outcome.filename is not None:
            await self._sink.upload_report(
                run, outcome.filename, outcome.markdown, comment=f"Report: {self.view.topic}"
            )
        async with self._limiter:
            await self._sink.edit_status(run, self.view)

    def _apply(self, event: Event) -> bool:
        """Fold an event into the view; True when the status message should change."""
        view = self.view
        if isinstance(event, RunQueued):
            view.state = f"Queued (#{event.position})"
        elif isinstance(event, RunStarted):
            view.state = "Researching"
        elif isinstance(event, TurnStarted):
            view.turn = event.turn
        elif isinstance(event, ToolCalled):
            view.action = describe_call(event)
            self._milestones.append(view.action)
        elif isinstance(event, ToolFinished):
            self._seen_urls.update(s.url for s in event.sources)
            view.sources = len(self._seen_urls)
        elif isinstance(event, UsageRecorded):
            view.cost_usd += event.usage.cost_usd
        elif isinstance(event, SynthesisStarted):
            view.state, view.action = "Writing the report", ""
        else:
            return False
        return True

    async def _flush_milestones(self, run: RunRecord) -> None:
        if self._milestones:
            text = "\n".join(f"• {line}" for line in self._milestones)
            self._milestones.clear()
            await self._sink.reply(run, text)

    def _request_edit(self, run: RunRecord) -> None:
        self._dirty.set()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_edits(run))

    async def _flush_edits(self, run: RunRecord) -> None:
        # Coalesce: however many events arrive, at most one edit per interval shows the latest.
        # An intermediate edit never queues for the workspace budget: it waits for the next
        # interval instead, so the final edits of finishing runs are not stuck behind it.
        while self._dirty.is_set():
            if not self._limiter.has_capacity():
                await asyncio.sleep(max(self._interval, BUDGET_RETRY_S))
                continue
            self._dirty.clear()
            async with self._limiter:
                try:
                    await self._sink.edit_status(run, self.view)
                except Exception:
                    log.exception("run %s: status edit failed", run.run_id)
            await asyncio.sleep(self._interval)
