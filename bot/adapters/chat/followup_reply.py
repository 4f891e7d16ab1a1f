"""A follow-up question answered in its run's thread, on any chat platform: `FollowUpReply` is the
`RunListener` of the follow-up's own run (bot/runs/followups.py), built on the platform's sink.

It says briefly when the follow-up starts researching (its first search; later steps at most
once per `interval_s`, never a message per event), then posts the answer (cut under the
platform's limit; the sink defuses mentions, the answer being the model's text), and, when the
question asked for the report to change, the new version's file ("Report v2"). Without an
answer it says what happened and what to do. Like `ChatProgress`, it raises `DeliveryFailed`
when nothing reached the thread, so that the runs service delivers it again at the next start.
Unlike `ChatProgress` it stores no mark of what it posted: its last post is its last call (no
status edit follows), and the delivery is recorded right after it, so a mark would close no gap.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from bot.adapters.chat.sink import (
    ChatError,
    DeliveryFailed,
    describe_call,
    ending_label,
    split_text,
)
from bot.agent.events import Ending, Event, Notice, RunQueued, ToolCalled
from bot.agent.report.model import format_cost
from bot.domain import RunRecord
from bot.runs.manager import Outcome

log = logging.getLogger(__name__)

RESEARCHING = "Looking beyond the report: {step}"
STILL = "Still looking: {steps}"
REDELIVERED = "_Posted after a restart: it could not be delivered when it was answered._"
HOW = {
    Ending.ANSWERED: "answered from the run's sources",
    Ending.COMPLETED: "researched further",
}
"""The answer's closing line for the usual endings; others say their ending's label."""


class ThreadReplies(Protocol):
    """What a follow-up needs of a platform's `ChatSink`: a reply in the thread of the run it
    asked about (the follow-up's own record carries that thread) and a file there."""

    show_command: str

    async def reply(self, run: RunRecord, text: str) -> None: ...

    async def upload_report(
        self, run: RunRecord, filename: str, markdown: str, comment: str
    ) -> None: ...


class FollowUpReply:
    """Answers one follow-up in its thread; see the module's docstring."""

    def __init__(
        self,
        sink: ThreadReplies,
        *,
        limit: int,
        interval_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`limit`: the platform's message length (the answer is cut at line ends under it)."""
        self._sink = sink
        self._limit = limit
        self._interval = interval_s
        self._clock = clock
        self._said_at: float | None = None
        self._steps: list[str] = []
        self._failures: set[str] = set()

    async def on_event(self, run: RunRecord, event: Event) -> None:
        """Never fails for the platform's sake: a refusal is logged once per reason."""
        if isinstance(event, ToolCalled):
            self._steps.append(describe_call(event))
            if self._said_at is None:
                await self._say(run, RESEARCHING.format(step=self._steps.pop()))
            elif self._clock() - self._said_at >= self._interval:
                await self._say(run, STILL.format(steps="; ".join(self._steps)))
        elif isinstance(event, Notice):
            await self._quietly(run, self._sink.reply(run, event.message))
        elif isinstance(event, RunQueued):
            await self._quietly(
                run, self._sink.reply(run, f"Queued (#{event.position}): busy with other runs.")
            )

    async def on_finished(self, run: RunRecord, outcome: Outcome) -> None:
        said = False
        if outcome.redelivery:
            await self._quietly(run, self._sink.reply(run, REDELIVERED))
        text = _answer(outcome) if outcome.answer else self._failure(run, outcome)
        for piece in split_text(text, self._limit):
            said = await self._quietly(run, self._sink.reply(run, piece)) or said
        filed = False
        if outcome.version and outcome.markdown and outcome.filename:
            comment = f"Report v{outcome.version}"
            filed = await self._quietly(
                run, self._sink.upload_report(run, outcome.filename, outcome.markdown, comment)
            )
            if not filed:
                show = self._sink.show_command.format(run_id=run.parent_run_id or run.run_id)
                note = f"I couldn't attach report v{outcome.version}: {show} posts it."
                said = await self._quietly(run, self._sink.reply(run, note)) or said
        if not (said or filed):
            raise DeliveryFailed(
                f"follow-up {run.run_id}: its answer reached no one in the thread "
                f"({', '.join(sorted(self._failures)) or 'no reason given'})"
            )

    def _failure(self, run: RunRecord, outcome: Outcome) -> str:
        """What happened to a follow-up without an answer, and what to do."""
        if outcome.ending is Ending.CANCELLED:
            return "The question was cancelled; mention me again to ask it."
        why = (outcome.error or ending_label(outcome.ending, has_report=False)).rstrip(". ")
        return f"I couldn't answer that. {why}. Mention me with the question to ask it again."

    async def _say(self, run: RunRecord, text: str) -> None:
        self._steps.clear()
        self._said_at = self._clock()
        await self._quietly(run, self._sink.reply(run, text))

    async def _quietly(self, run: RunRecord, call: Awaitable[None]) -> bool:
        """Await one platform call; False (logged once per reason) when it was refused."""
        try:
            await call
        except ChatError as error:
            if error.reason not in self._failures:
                self._failures.add(error.reason)
                log.warning("follow-up %s: not shown in the thread: %s", run.run_id, error.reason)
            return False
        return True


def _answer(outcome: Outcome) -> str:
    """The answer, then one line: how it was found, and what it cost."""
    how = HOW.get(outcome.ending) or ending_label(outcome.ending).lower()
    footer = f"_{how[:1].upper()}{how[1:]} · {format_cost(outcome.usage.cost_usd)}_"
    return f"{(outcome.answer or '').rstrip()}\n\n{footer}"
