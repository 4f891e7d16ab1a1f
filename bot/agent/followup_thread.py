"""What a follow-up starts from: its run's latest report, the numbered list of sources (the
report's, then what earlier follow-ups added), what was read of each, and earlier answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from bot.agent.events import Event, ToolFinished
from bot.agent.evidence import SourceTexts
from bot.agent.report import Report, SourceRegistry
from bot.domain import RunRecord, RunStatus
from bot.errors import RequestError


class ThreadStore(Protocol):
    """What a follow-up reads of the store."""

    async def get_run(self, run_id: str) -> RunRecord: ...

    async def latest_report(self, run_id: str) -> tuple[int, Report, str] | None: ...

    async def report(self, run_id: str) -> tuple[Report, str] | None: ...

    async def events(self, run_id: str) -> list[Event]: ...

    async def follow_ups(self, run_id: str) -> list[RunRecord]: ...


@dataclass
class Thread:
    run: RunRecord
    """The run asked about."""
    version: int
    report: Report
    markdown: str
    registry: SourceRegistry
    """Numbered as the thread knows them: the report's sources, then earlier follow-ups' new ones."""
    texts: SourceTexts = field(default_factory=SourceTexts)
    earlier: list[tuple[str, str]] = field(default_factory=list)
    """(question, answer) of the thread's finished follow-ups, oldest first."""

    def evidence(self) -> list[tuple[int, str]]:
        """Each numbered source with what was read of it (its snippet when nothing was)."""
        out = []
        for number, source in enumerate(self.registry.sources, start=1):
            text = self.texts.text(number) or f"{source.title}\n{source.url}\n\n{source.snippet}"
            out.append((number, f"{source.title}\n{source.url}\n\n{text}"))
        return out


async def load_thread(store: ThreadStore, run_id: str, *, asking: str) -> Thread:
    """The thread of `run_id` as the follow-up `asking` finds it."""
    run = await store.get_run(run_id)
    latest = await store.latest_report(run.run_id)
    if latest is None:
        raise RequestError(f"Run {run.run_id} has no report to ask about.")
    version, report, markdown = latest
    registry = SourceRegistry()
    for number, source in enumerate(report.sources, start=1):
        registry.restore(number, source)
    thread = Thread(run, version, report, markdown, registry)
    finished = [
        child
        for child in await store.follow_ups(run.run_id)
        if child.run_id != asking and child.status is RunStatus.DONE
    ]
    for child in finished:
        saved = await store.report(child.run_id)
        if saved is not None:
            for source in saved[0].sources:
                registry.add(source)  # a source the list has keeps its number
            thread.earlier.append((child.topic, saved[0].tldr))
    for run_with_evidence in [run, *finished]:
        for event in await store.events(run_with_evidence.run_id):
            if isinstance(event, ToolFinished) and not event.is_error:
                _add_texts(thread, event)
    return thread


def _add_texts(thread: Thread, event: ToolFinished) -> None:
    """What a run saw of each source, under the thread's number (runs number their own way)."""
    whole = len(event.sources) == 1
    for source in event.sources:
        number = thread.registry.number(source.url)
        if number:
            content = event.content if whole else f"{source.title}\n{source.snippet}"
            one = event.model_copy(update={"sources": [source], "numbers": [number]})
            thread.texts.add(one.model_copy(update={"content": content}))
