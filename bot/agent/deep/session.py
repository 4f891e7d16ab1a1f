"""A deep run in progress: what its planner, researchers, supervisor and writer share, and how
Summarize, Cancel and a spent cost budget reach every researcher."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from bot.agent.control import Control
from bot.agent.cost import CostLimit
from bot.agent.deep.schema import Coverage, Finding
from bot.agent.events import Event, Notice, TurnStarted, Usage, UsageRecorded
from bot.agent.state import NOTHING_YET, RunState
from bot.domain import Request

# The strongest reason a researcher stopped names the run's ending.
PRECEDENCE = [
    "completed", "error", "context", "max_turns", "deadline", "interrupted", "forced", "budget",
    "cancelled",
]  # fmt: skip


@dataclass(frozen=True)
class DeepLimits:
    researchers: int = 4
    """Researchers of a round at most (the plan's sub-questions): they work at once."""
    max_turns: int = 8
    """Per researcher, at most: the plan may give fewer."""
    deadline_s: float = 1800


@dataclass
class Session:
    """One deep run in progress: what every part of it shares."""

    request: Request
    control: Control
    emit_out: Callable[[Event], None]
    deadline: float
    findings: dict[int, Finding] = field(default_factory=dict)
    finding_texts: dict[int, str] = field(default_factory=dict)
    """Each finding as the supervisor and the writer read it (compressed when long)."""
    coverage: Coverage | None = None
    """The supervisor's latest coverage check, for the writer."""
    dropped: set[int] = field(default_factory=set)
    """Researchers whose finding the supervisor found to be about another entity."""
    endings: list[str] = field(default_factory=list)
    children: list[Control] = field(default_factory=list)
    forced: str | None = None
    """Why every researcher was told to write up: `forced` (Summarize) or `budget`; None: not."""
    agents: int = 0
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    budget: CostLimit = field(default_factory=lambda: CostLimit(None))
    """The whole run's cost limit, over every agent's calls."""

    def checked(self, coverage: Coverage) -> None:
        """Keep the supervisor's check; its findings about another entity leave the report,
        unless that would be every finding (then the check, not the research, is wrong)."""
        self.coverage = coverage
        other = self.dropped | (set(coverage.other_entity) & set(self.findings))
        if other < set(self.findings):
            self.dropped = other

    def kept(self) -> dict[int, Finding]:
        """The findings the report is written from, by researcher."""
        return {a: f for a, f in sorted(self.findings.items()) if a not in self.dropped}

    def emit(self, event: Event) -> None:
        """Every event of the run passes here: turns and usage are summed over all agents."""
        if isinstance(event, TurnStarted):
            self.turns += 1
        elif isinstance(event, UsageRecorded):
            self.usage += event.usage
            if not self.forced and self.budget.reached(self.usage):
                self.endings.append("budget")
                self.write_up_now("budget")
        self.emit_out(event)

    def tagged(self, agent: int) -> Callable[[Event], None]:
        def emit(event: Event) -> None:
            event.agent = agent
            self.emit(event)

        return emit

    @property
    def ending(self) -> str:
        return max(self.endings or ["completed"], key=PRECEDENCE.index)

    @asynccontextmanager
    async def watching(self, main: RunState) -> AsyncIterator[None]:
        """Hand Summarize and Cancel on to every researcher while the block runs."""
        watcher = asyncio.create_task(self._watch(main))
        try:
            yield
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)

    async def _watch(self, main: RunState) -> None:
        while not self.control.cancel_requested.is_set():
            await self.control.wait_any()
            if self.control.cancel_requested.is_set():
                for child in self.children:
                    child.cancel()
                return
            if not main.registry.sources:
                main.emit(Notice(message=NOTHING_YET))
                self.control.rearm_summarize()
                continue
            self.write_up_now("forced")
            await self.control.cancel_requested.wait()

    def write_up_now(self, reason: str) -> None:
        """Stop every researcher, now and later ones: each writes its finding from its evidence."""
        if self.forced:
            return
        self.forced = reason
        for child in self.children:
            child.summarize(reason)

    def child(self) -> Control:
        control = Control()
        if self.forced:
            control.summarize(self.forced)
        if self.control.cancel_requested.is_set():
            control.cancel()
        self.children.append(control)
        return control
