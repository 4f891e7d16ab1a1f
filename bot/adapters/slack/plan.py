"""A run's events as the tasks of Slack's streamed plan: one task per tool call of a quick run,
one per researcher of a deep run (plus the draft and the write-up), each with its title, status
and the sources it found; `updates()` hands out only what changed since it was last asked."""

from __future__ import annotations

from dataclasses import dataclass, field

from slack_sdk.models.blocks.block_elements import UrlSourceElement
from slack_sdk.models.messages.chunk import Chunk, PlanUpdateChunk, TaskUpdateChunk

from bot.adapters.chat.sink import describe_call, sources_label
from bot.adapters.slack.render import safe_plain
from bot.agent.events import (
    CoverageChecked,
    Event,
    FindingReady,
    PlanReady,
    ProviderSwitched,
    ResearcherStarted,
    RunStarted,
    SynthesisStarted,
    ToolCalled,
    ToolFinished,
)
from bot.agent.report.model import Source
from bot.agent.urls import is_web

SOURCES_PER_TASK = 10
"""A task shows at most this many sources (the first found); the report lists them all."""
WRITE_UP = "write-up"
DRAFT = "draft"


@dataclass
class Task:
    title: str
    status: str = "in_progress"
    """pending | in_progress | complete | error, as Slack names them."""
    details: str = ""
    sources: dict[str, str] = field(default_factory=dict)
    """url -> its title, in the order found."""

    def chunk(self, task_id: str) -> TaskUpdateChunk:
        sources = [
            UrlSourceElement(url=url, text=safe_plain(title or url, 80))
            for url, title in self.sources.items()
        ]
        return TaskUpdateChunk(
            id=task_id,
            title=safe_plain(self.title),
            status=self.status,
            details=safe_plain(self.details) if self.details else None,
            sources=sources or None,
        )


class StreamPlan:
    """The tasks of one run's streamed reply. Every text in them is the model's or the web's:
    `safe_plain` makes each a label that pings nobody."""

    def __init__(self, topic: str) -> None:
        self.title = f"Researching {topic}"
        self.tasks: dict[str, Task] = {}
        self._changed: dict[str, None] = {}
        self._title_changed = True

    @property
    def has_tasks(self) -> bool:
        return bool(self.tasks)

    def apply(self, event: Event) -> bool:
        """Fold one event in; True when a task or the title changed."""
        if isinstance(event, RunStarted):
            self._retitle(f"Researching {event.topic}")
        elif isinstance(event, PlanReady):
            # The first round's researchers are numbered 1..n in the plan's order.
            for n, question in enumerate(event.questions, start=1):
                self._set(_researcher(n), Task(question.question, status="pending"))
        elif isinstance(event, ResearcherStarted):
            self._set(_researcher(event.agent), Task(event.question))
        elif isinstance(event, ToolCalled):
            return self._called(event)
        elif isinstance(event, ToolFinished):
            return self._finished(event)
        elif isinstance(event, FindingReady):
            return self._found(event)
        elif isinstance(event, CoverageChecked):
            gaps = f"; researching {len(event.gaps)} gaps" if event.gaps else ""
            self._set(DRAFT, Task(f"Coverage checked{gaps}", status="complete"))
        elif isinstance(event, SynthesisStarted):
            self._set(WRITE_UP, Task("Writing the report"))
        elif isinstance(event, ProviderSwitched):
            provider = event.model.partition(":")[0]
            self._set(f"provider-{provider}", Task(event.message, status="complete"))
        else:
            return False
        return True

    def finish(self, *, succeeded: bool) -> None:
        """The run ended: what was still going is complete (with a report) or failed."""
        for task_id, task in self.tasks.items():
            if task.status == "in_progress":
                task.status = "complete" if succeeded else "error"
                self._changed[task_id] = None

    def updates(self) -> list[Chunk]:
        """The chunks that bring Slack's copy up to date (the title first), then forgets them."""
        chunks: list[Chunk] = []
        if self._title_changed:
            chunks.append(PlanUpdateChunk(title=safe_plain(self.title)))
            self._title_changed = False
        chunks += [self.tasks[task_id].chunk(task_id) for task_id in self._changed]
        self._changed.clear()
        return chunks

    def resend(self) -> None:
        """The next `updates()` carries the title and every task again: for a new stream that
        takes over from one Slack closed."""
        self._title_changed = True
        self._changed = dict.fromkeys(self.tasks)

    def title_chunk(self) -> PlanUpdateChunk:
        """The plan's title as it stands (a keep-alive that changes nothing on screen)."""
        return PlanUpdateChunk(title=safe_plain(self.title))

    def _called(self, event: ToolCalled) -> bool:
        if event.agent:
            task = self.tasks.get(_researcher(event.agent))
            if task is None:
                return False
            task.details = describe_call(event)
            self._changed[_researcher(event.agent)] = None
        else:
            self._set(_call(event.call_id), Task(describe_call(event)))
        return True

    def _finished(self, event: ToolFinished) -> bool:
        task_id = _researcher(event.agent) if event.agent else _call(event.call_id)
        task = self.tasks.get(task_id)
        if task is None:
            return False
        _add_sources(task, event.sources)
        if not event.agent:
            task.status = "error" if event.is_error else "complete"
            task.details = sources_label(len(event.sources)) if event.sources else ""
        self._changed[task_id] = None
        return True

    def _found(self, event: FindingReady) -> bool:
        task = self.tasks.get(_researcher(event.agent))
        if task is None:
            return False
        finding = event.finding
        task.status = "error" if event.ending == "error" else "complete"
        found = len(set(finding.read) | set(finding.seen))
        task.details = f"{sources_label(found)}, {finding.confidence} confidence"
        self._changed[_researcher(event.agent)] = None
        return True

    def _set(self, task_id: str, task: Task) -> None:
        old = self.tasks.get(task_id)
        if old is not None:
            task.sources = old.sources
        self.tasks[task_id] = task
        self._changed[task_id] = None

    def _retitle(self, title: str) -> None:
        self.title, self._title_changed = title, True


def _researcher(agent: int) -> str:
    return f"researcher-{agent}"


def _call(call_id: str) -> str:
    return f"call-{call_id}"


def _add_sources(task: Task, sources: list[Source]) -> None:
    for source in sources:
        if len(task.sources) >= SOURCES_PER_TASK:
            return
        if is_web(source.url):
            task.sources.setdefault(source.url, source.title)
