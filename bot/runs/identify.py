"""Settling which company a company run researches, before its engine researches it: an identity
an earlier run of the same name in the workspace settled, else the identity step (asking the
person when the name fits namesakes); follow-ups take their run's. The engine it wraps is
handed the request with its identity and knows nothing of this."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Literal

from bot.agent.control import Choice, Control
from bot.agent.events import (
    Ending,
    Event,
    IdentityOffered,
    IdentitySettled,
    Notice,
    PlanReady,
    ReportReady,
    ReportRevised,
    RunFinished,
    ToolCalled,
    TurnStarted,
    Usage,
    UsageRecorded,
)
from bot.agent.identity import Found, IdentityStep
from bot.domain import Company, Identity, Mode, Request
from bot.runs.manager import Engine
from bot.store.runs import Store

log = logging.getLogger(__name__)
REUSED = ("search", "person", "earlier")
"""How an identity was settled for a later run of the same name to take it: not a guess nobody
confirmed (`timeout`, `alone`)."""
REFINE = (
    "None of those companies was the one meant: start again with a more specific name, e.g. "
    "adding its website or its country."
)


def identity_key(topic: str) -> str:
    """What makes two runs' names the same name: case and spacing aside."""
    return " ".join(topic.casefold().split())


def settled_note(identity: Identity, timeout_s: float, *, summarized: bool = False) -> str:
    """The one line people see about the company researched, and how it was settled."""
    said = f"Researching {identity.company.line()}"
    if summarized:
        return (
            f"{said}: Summarize was pressed before anyone chose, so the most likely one was taken."
        )
    how = {
        "earlier": ", as an earlier run here settled.",
        "timeout": f": nobody chose within {duration(timeout_s)}, so the most likely one was taken.",
        "alone": ": the name fits more than one company and nobody could be asked, so the most "
        "likely one was taken.",
    }
    return said + how.get(identity.settled_by, ".")


@dataclass
class Settling:
    """What settling found: the identity (None: research the name as given), whether the run
    already ended, and what the step cost."""

    identity: Identity | None = None
    summarized: bool = False
    """Summarize was pressed instead of a choice (the most likely one was taken)."""
    ended: bool = False
    usage: Usage = field(default_factory=Usage)

    def end(self, error: str | None = None) -> RunFinished:
        """The run ends before its research (cancelled, or none of the candidates was it)."""
        self.ended = True
        return RunFinished(ending=Ending.CANCELLED, turns=0, usage=self.usage, error=error)


class Identifying:
    """An engine that settles a company run's identity, then lets `inner` research it."""

    def __init__(
        self, inner: Engine, step: IdentityStep | None, store: Store, *, timeout_s: float
    ) -> None:
        """`step` None: the identity step is off; follow-ups still take their run's identity."""
        self._inner = inner
        self._step = step
        self._store = store
        self._timeout_s = timeout_s

    def research(self, run_id: str, request: Request, control: Control) -> AsyncIterator[Event]:
        return self._research(run_id, request, control, history=None, why="")

    def recover(
        self,
        run_id: str,
        request: Request,
        history: list[Event],
        control: Control,
        *,
        why: str = "interrupted",
    ) -> AsyncIterator[Event]:
        return self._research(run_id, request, control, history=history, why=why)

    async def _research(
        self,
        run_id: str,
        request: Request,
        control: Control,
        *,
        history: list[Event] | None,
        why: str,
    ) -> AsyncIterator[Event]:
        settling = Settling()
        if request.parent_run_id is not None and request.identity is None:
            settling.identity = await self._store.identity_of(request.parent_run_id)
        elif request.mode is Mode.COMPANY and request.identity is None:
            settle = self._settle(run_id, request, control, history, why, settling)
            async for event in _relayed(settle):
                yield event
            if settling.ended:
                return
        if settling.identity is not None:
            request = request.model_copy(update={"identity": settling.identity})
        if history is None:
            events = self._inner.research(run_id, request, control)
        else:
            events = self._inner.recover(run_id, request, history, control, why=why)
        async for event in _relayed(events, settling):
            yield event

    async def _settle(
        self,
        run_id: str,
        request: Request,
        control: Control,
        history: list[Event] | None,
        why: str,
        settling: Settling,
    ) -> AsyncIterator[Event]:
        """Yields the identity's events (stored, then told, like the engine's) and fills in
        `settling`; a cancel or a refine ends the run here, with its `RunFinished`."""
        before = _from_history(history or [])
        if before is not None or (history is not None and _past_settling(history, why)):
            settling.identity = before  # settled before the restart: never asked again
            return
        if self._step is None:
            return  # the step is off: no search, and no identity of an earlier run either
        key = identity_key(request.topic)
        place = request.origin
        earlier = await self._store.earlier_identity(
            platform=place.platform, workspace=place.workspace, key=key
        )
        if earlier is not None:
            settling.identity = earlier.model_copy(update={"settled_by": "earlier"})
        else:
            async for event in _relayed(self._ask(run_id, request, control, history, settling)):
                yield event
        identity = settling.identity
        if identity is None:
            return
        note = settled_note(identity, self._timeout_s, summarized=settling.summarized)
        yield IdentitySettled(identity=identity, note=note)
        kept = key if identity.settled_by in REUSED else None
        await self._store.save_identity(run_id, identity, key=kept)

    async def _ask(
        self,
        run_id: str,
        request: Request,
        control: Control,
        history: list[Event] | None,
        settling: Settling,
    ) -> AsyncIterator[Event]:
        """The step, then the person when the name fits namesakes: into `settling`."""
        found = await self._found(run_id, request, control, history or [])
        for event in found.events:
            if isinstance(event, UsageRecorded):
                settling.usage += event.usage
            yield event
        if control.cancel_requested.is_set():
            yield settling.end()
        elif not found.candidates:
            yield Notice(message=_unsettled(request.topic, found.problem))
        elif len(found.candidates) == 1:
            settling.identity = Identity(company=found.candidates[0], namesakes=found.others)
        else:
            # Stored before the wait: after a restart the same candidates are offered again.
            yield IdentityOffered(candidates=found.candidates, timeout_s=self._timeout_s)
            choice = await control.wait_choice(len(found.candidates), self._timeout_s)
            if choice.how in ("cancel", "refine"):
                yield settling.end(REFINE if choice.how == "refine" else None)
            else:
                settling.identity = _identity(found, choice)
                settling.summarized = choice.how == "summarize"

    async def _found(
        self, run_id: str, request: Request, control: Control, history: list[Event]
    ) -> Found:
        """The candidates offered before a restart, else the step's."""
        offered = _offer(history)
        if offered is not None:
            return Found(candidates=offered)
        assert self._step is not None  # `_settle` asks only with the step on
        return await self._step.find(run_id, request, control)


def _identity(found: Found, choice: Choice) -> Identity:
    """The candidate taken; the others are its namesakes. Summarize counts as no choice."""
    taken = found.candidates[choice.index]
    others = [c for i, c in enumerate(found.candidates) if i != choice.index] + found.others
    how: Literal["person", "alone", "timeout"] = "timeout"
    if choice.how in ("person", "alone"):
        how = "person" if choice.how == "person" else "alone"
    return Identity(company=taken, namesakes=others, settled_by=how)


def _from_history(history: list[Event]) -> Identity | None:
    settled = [e.identity for e in history if isinstance(e, IdentitySettled)]
    return settled[-1] if settled else None


def _offer(history: list[Event]) -> list[Company] | None:
    """The candidates a run offered before a restart, still waiting for a choice."""
    offers = [e.candidates for e in history if isinstance(e, IdentityOffered)]
    return offers[-1] if offers else None


def _past_settling(history: list[Event], why: str) -> bool:
    """A run to finish without settling now: its research had begun (without an identity), or
    its own task failed (settling again could fail the same way)."""
    begun = any(isinstance(e, TurnStarted | ToolCalled | PlanReady) for e in history)
    return begun or why == "error"


def _unsettled(topic: str, problem: str) -> str:
    return f"Could not tell which company {topic} is ({problem}): researching the name as given."


def duration(seconds: float) -> str:
    """`2 minutes`, `90 seconds`: how long, the way a person says it."""
    whole = max(round(seconds), 0)
    if whole >= 60 and whole % 60 == 0:
        minutes = whole // 60
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{whole} second{'s' if whole != 1 else ''}"


async def _relayed(
    events: AsyncIterator[Event], settling: Settling | None = None
) -> AsyncIterator[Event]:
    """`events`, closed when ours is; with `settling`, the report names its company and the
    ending counts what settling spent."""
    try:
        async for event in events:
            if settling is not None:
                event = _with_identity(event, settling)
            yield event
    finally:
        if isinstance(events, AsyncGenerator):
            await events.aclose()


def _with_identity(event: Event, settling: Settling) -> Event:
    if isinstance(event, RunFinished):
        return event.model_copy(update={"usage": event.usage + settling.usage})
    if isinstance(event, ReportReady | ReportRevised) and settling.identity is not None:
        company = settling.identity.company.line()
        report = event.report.model_copy(update={"company": company})
        return event.model_copy(update={"report": report})
    return event
