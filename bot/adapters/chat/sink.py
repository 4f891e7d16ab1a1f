"""What every chat platform shares: the `ChatSink` it implements, the errors it raises, the
status it shows (with a deep run's researchers as rows), and the words of its messages
(endings, a deep run's milestones, the closing summary; a tool call's line is in `calls`).

Platforms turn their SDK's failures into `ChatError`; `DeliveryFailed` says an outcome could
not reach its thread in any form (the runs service then delivers it again at the next start).
"""

from __future__ import annotations

import re
from typing import Protocol

from pydantic import BaseModel, Field

from bot.adapters.chat.calls import counted as counted
from bot.adapters.chat.calls import describe_call as describe_call
from bot.adapters.chat.calls import sources_label as sources_label
from bot.agent.events import (
    CoverageChecked,
    Event,
    FindingReady,
    PlanReady,
    ResearcherStarted,
    ToolCalled,
    ToolFinished,
)
from bot.agent.language import frame
from bot.agent.report.model import format_cost
from bot.domain import Company, RunRecord
from bot.errors import BotError
from bot.runs.manager import Outcome

FILE_REFUSED = "I couldn't attach the report file ({reason}): here it is as messages."
"""Said in the thread before a report posted as messages, when the platform refused the file."""

ENDING_LABELS = {
    "completed": "Done",
    "max_turns_synthesized": "Done (turn limit reached, written up)",
    "deadline_synthesized": "Done (time limit reached, written up)",
    "forced_synthesized": "Done (summarized on request)",
    "interrupted_synthesized": "Done (recovered after a restart)",
    "context_full_synthesized": "Done (the conversation outgrew the model, written up)",
    "error_synthesized": "Done (something failed; written up from what was found)",
    "budget_synthesized": "Done (cost limit reached, written up)",
    "cancelled": "Cancelled",
    "refused": "Declined by the model",
    "llm_error": "Failed: the model could not be reached",
}


class ChatError(BotError):
    """The chat platform refused a call or could not be reached; `reason` is its own word for it
    (`missing_scope`, `403 Forbidden …`). Sinks raise it, never their SDK's errors."""

    def __init__(self, reason: str, *, auth: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.auth = auth
        """The platform no longer accepts our token: every later call fails the same way."""


class DeliveryFailed(BotError):
    """A run's outcome reached its thread in no form; the runs service delivers it again later."""


FAILED_WRITE_UPS = {
    "context_full_synthesis_failed": "the model's context was full",
}
"""Why the write-up failed, for the endings whose cause is known; others say `write-up failed`."""


def ending_label(ending: str, *, has_report: bool = True, failure_told: bool = False) -> str:
    """`failure_told`: what failed is said right after (the TL;DR of a report built from the
    sources says it), so a failed write-up's label does not say `write-up failed` again."""
    if ending.endswith("_synthesis_failed"):
        if not has_report:
            return "Failed: nothing could be written up"
        why = FAILED_WRITE_UPS.get(ending)
        if why is None and failure_told:
            return "Done (report built from the sources found)"
        return f"Done ({why or 'write-up failed'}: report built from the sources found)"
    return ENDING_LABELS.get(ending, ending)


RESEARCHER_ENDINGS = {
    "max_turns": "turn limit reached",
    "deadline": "time limit reached",
    "forced": "summarized on request",
    "budget": "cost limit reached",
    "error": "failed",
    "cancelled": "cancelled",
}
"""How a finding's `ending` reads in its milestone; `completed` says nothing."""


class ResearcherRow(BaseModel):
    """One researcher of a deep run, as its row in the status shows it."""

    agent: int
    """Its number (1..n, across rounds)."""
    question: str
    """Its sub-question: the model's text, escaped and shortened by each renderer."""
    action: str = ""
    """What it is doing now (`describe_call`), empty once done."""
    sources: int = 0
    """Distinct URLs its searches and reads returned."""
    done: bool = False


class StepRow(BaseModel):
    """One tool call of a quick run, as its row in the status shows it."""

    number: int
    """1, 2 … in the order the run made its calls."""
    call_id: str
    action: str
    """`describe_call`: untrusted text, escaped by each renderer."""
    sources: int = 0
    done: bool = False
    failed: bool = False


MAX_STEPS = 8
"""Steps a status shows; earlier ones are only counted (`StatusView.earlier_steps`)."""


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
    cost_usd: float | None = 0.0
    """None: a model without a known price took part (shown as `cost unknown`)."""
    finished: bool = False
    """When true the buttons are gone."""
    has_report: bool = False
    """Finished with a stored report: the message offers it as a file in each format."""
    researchers: list[ResearcherRow] = Field(default_factory=list)
    """A deep run's researchers in the order they started; empty for a quick run."""
    steps: list[StepRow] = Field(default_factory=list)
    """A quick run's latest tool calls, oldest first (at most MAX_STEPS)."""
    earlier_steps: int = 0
    """Tool calls before those in `steps`."""
    candidates: list[Company] = Field(default_factory=list)
    """The companies a company run's name fits, most likely first, while it waits for a person
    to choose one (bot/adapters/chat/choice.py): the message offers each as a button."""
    choose_within_s: float = 0.0
    """How long the run waits for that choice before it takes the first."""
    identity: str = ""
    """Once settled, which company the run researches: one line for people (the core's note)."""


class ResearcherRows:
    """Folds a deep run's researcher events into the view's rows (shared by every front end)."""

    def __init__(self, view: StatusView) -> None:
        self._view = view
        self._urls: dict[int, set[str]] = {}

    def apply(self, event: Event) -> bool:
        """True when a row changed. Events of the run itself (agent 0) change no row."""
        row = self._row(event.agent)
        if isinstance(event, ResearcherStarted) and row is None:
            self._view.researchers.append(ResearcherRow(agent=event.agent, question=event.question))
        elif isinstance(event, ResearcherStarted) and row is not None:
            # A number is never given twice: a start seen again (a replay) reuses its row.
            row.question, row.done = event.question, False
        elif row is None:
            return False
        elif isinstance(event, ToolCalled):
            row.action = describe_call(event)
        elif isinstance(event, ToolFinished):
            urls = self._urls.setdefault(event.agent, set())
            urls.update(s.url for s in event.sources)
            row.sources = len(urls)
        elif isinstance(event, FindingReady):
            row.done, row.action = True, ""
        else:
            return False
        return True

    def _row(self, agent: int) -> ResearcherRow | None:
        if agent == 0:
            return None
        return next((r for r in self._view.researchers if r.agent == agent), None)


class StepRows:
    """Folds a quick run's tool calls (agent 0) into the view's step rows."""

    def __init__(self, view: StatusView) -> None:
        self._view = view

    def apply(self, event: Event) -> bool:
        """True when a row changed."""
        steps = self._view.steps
        if isinstance(event, ToolCalled) and not event.agent:
            if any(step.call_id == event.call_id for step in steps):
                return False  # a replayed event
            number = self._view.earlier_steps + len(steps) + 1
            steps.append(StepRow(number=number, call_id=event.call_id, action=describe_call(event)))
            if len(steps) > MAX_STEPS:
                del steps[0]
                self._view.earlier_steps += 1
            return True
        if isinstance(event, ToolFinished) and not event.agent:
            step = next((s for s in steps if s.call_id == event.call_id), None)
            if step is None:
                return False
            step.done, step.failed = True, event.is_error
            step.sources = len({source.url for source in event.sources})
            return True
        return False


class ChatSink(Protocol):
    """One platform's way to show a run. Every text it is given may hold untrusted text:
    the sink neutralises mentions and markup on its side before sending. A call the platform
    refuses raises `ChatError`; without a thread to write to, a call does nothing."""

    show_command: str
    """How a person asks for a run's report again here, with `{run_id}` to fill in."""

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

    async def post_report_text(self, run: RunRecord, note: str, markdown: str) -> None:
        """`note`, then the whole report as thread messages, each within the platform's limit."""
        ...


_BROADCAST = re.compile(r"@(everyone|here|channel)\b", re.IGNORECASE)


def defuse_broadcasts(text: str) -> str:
    """Bare `@everyone`/`@here`/`@channel` in untrusted text: a zero-width joiner stops the ping."""
    return _BROADCAST.sub("@\u2060\\1", text)


def split_text(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters, cut at line ends, else at a space, else anywhere."""
    pieces: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        if current and len(current) + len(line) > limit:
            pieces.append(current)
            current = ""
        while len(line) > limit:
            cut = line.rfind(" ", limit // 2, limit) + 1 or limit
            pieces.append(line[:cut])
            line = line[cut:]
        current += line
    pieces.append(current)
    return [piece.rstrip() for piece in pieces if piece.strip()]


def deep_milestone(event: Event) -> str | None:
    """The thread line for a deep run's plan, a researcher's finding or the coverage check, else
    None. Questions and topics are the model's: each sink escapes them."""
    if isinstance(event, PlanReady):
        fixed = " (the fixed plan: the model's could not be used)" if event.fallback else ""
        lines = [f"Plan: {counted(len(event.questions), 'researcher')}{fixed}"]
        lines += [f"{n}. {q.question}" for n, q in enumerate(event.questions, start=1)]
        return "\n".join(lines)
    if isinstance(event, FindingReady):
        finding = event.finding
        found = len(set(finding.read) | set(finding.seen))
        detail = f"{sources_label(found)}, {finding.confidence} confidence"
        if event.ending in RESEARCHER_ENDINGS:
            detail += f", {RESEARCHER_ENDINGS[event.ending]}"
        if event.from_evidence:
            detail += ", written from its sources"
        return f"Finding {event.agent} done: {finding.topic} ({detail})"
    if isinstance(event, CoverageChecked):
        checked = f"Coverage checked: {event.check.tally()}"
        if not event.gaps:
            return checked
        gaps = "\n".join(f"- {gap}" for gap in event.gaps)
        return f"{checked}; researching its gaps:\n{gaps}"
    return None


def outcome_summary(outcome: Outcome) -> str:
    """The closing thread reply: what happened, the TL;DR, turns, time and cost. What failed
    is said once: a report written from evidence says it in its TL;DR, and then neither the
    label nor the error line says it again."""
    tldr = outcome.report.tldr if outcome.report is not None else ""
    told = bool(outcome.error and outcome.error in tldr)
    label = ending_label(outcome.ending, has_report=outcome.report is not None, failure_told=told)
    lines = [
        f"{label} · {counted(outcome.turns, 'turn')} · {outcome.duration_s:.0f}s · "
        f"{format_cost(outcome.usage.cost_usd)}"
    ]
    if outcome.redelivery:
        lines.append("Posted after a restart: it could not be delivered when the run ended.")
    elif outcome.recovered:
        lines.append("This run was interrupted by a restart and finished from what it had found.")
    if outcome.report is not None:
        lines.append(f"{frame(outcome.report.language).tldr}: {tldr}")
    if outcome.error and not told:
        lines.append(outcome.error)
    return "\n".join(lines)
