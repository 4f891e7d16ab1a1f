"""A run followed from this MCP server: its listener keeps the current step, the sources and the
cost so far, so `research_status` answers from memory and `research` can send each step as an
MCP progress notification."""

from __future__ import annotations

import asyncio

from bot.adapters.chat.sink import deep_milestone, describe_call
from bot.agent.events import (
    Event,
    RunQueued,
    RunStarted,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    UsageRecorded,
    add_costs,
)
from bot.domain import RunRecord, strip_controls
from bot.runs.outcome import Outcome

MAX_STEP_CHARS = 300


class LiveRun:
    """The `RunListener` of a run started over MCP."""

    def __init__(self) -> None:
        self.record: RunRecord | None = None
        self.step = "queued"
        self.steps = 0
        """Steps so far: the `progress` figure of the notifications."""
        self.urls: set[str] = set()
        self.cost_usd: float | None = 0.0
        self.queue_position: int | None = None
        self.outcome: Outcome | None = None
        self.finished = asyncio.Event()
        self.changed = asyncio.Event()

    async def on_event(self, run: RunRecord, event: Event) -> None:
        self.record = run
        step = self._fold(event)
        if step is not None:
            # Model and web text (a search's words): one plain line, as data.
            self.step = " ".join(strip_controls(step).split())[:MAX_STEP_CHARS]
            self.steps += 1
            self.changed.set()

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        self.record, self.outcome, self.queue_position = run, outcome, None
        self.finished.set()
        self.changed.set()

    def _fold(self, event: Event) -> str | None:
        if isinstance(event, RunQueued):
            self.queue_position = event.position
            return f"queued (#{event.position})"
        if isinstance(event, RunStarted | TurnStarted) and (
            self.queue_position is not None or self.step == "queued"  # started without a wait
        ):
            self.queue_position = None
            return "researching"
        if isinstance(event, ToolCalled):
            return describe_call(event)
        if isinstance(event, ToolFinished):
            self.urls.update(source.url for source in event.sources)
            return None
        if isinstance(event, UsageRecorded):
            self.cost_usd = add_costs(self.cost_usd, event.usage.cost_usd)
            return None
        if isinstance(event, SynthesisStarted):
            return "Writing the report"
        return deep_milestone(event)
