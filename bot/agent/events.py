"""What a run emits, step by step: pydantic events that are both the live progress and the trajectory."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from bot.agent.deep.schema import Coverage, Finding, SubQuestion
from bot.agent.report.model import Report, Source
from bot.domain import Company, Identity


class Ending(StrEnum):
    """Why a run stopped: its `termination_reason`."""

    COMPLETED = "completed"
    ANSWERED = "answered"
    """A follow-up answered from its run's stored evidence, without researching further (a
    follow-up that did research ends `completed`)."""
    MAX_TURNS_SYNTHESIZED = "max_turns_synthesized"
    MAX_TURNS_SYNTHESIS_FAILED = "max_turns_synthesis_failed"
    DEADLINE_SYNTHESIZED = "deadline_synthesized"
    DEADLINE_SYNTHESIS_FAILED = "deadline_synthesis_failed"
    FORCED_SYNTHESIZED = "forced_synthesized"
    FORCED_SYNTHESIS_FAILED = "forced_synthesis_failed"
    INTERRUPTED_SYNTHESIZED = "interrupted_synthesized"
    INTERRUPTED_SYNTHESIS_FAILED = "interrupted_synthesis_failed"
    CONTEXT_FULL_SYNTHESIZED = "context_full_synthesized"
    CONTEXT_FULL_SYNTHESIS_FAILED = "context_full_synthesis_failed"
    BUDGET_SYNTHESIZED = "budget_synthesized"
    """The run's spend reached RESEARCH_BOT_MAX_RUN_COST_USD: written up from what it had."""
    BUDGET_SYNTHESIS_FAILED = "budget_synthesis_failed"
    ERROR_SYNTHESIZED = "error_synthesized"
    """Something failed mid-run (the model after its retries, a bug); written up from evidence."""
    ERROR_SYNTHESIS_FAILED = "error_synthesis_failed"
    CANCELLED = "cancelled"
    REFUSED = "refused"
    LLM_ERROR = "llm_error"


class Usage(BaseModel):
    """Tokens and cost, per call or summed over a run."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0
    """None: a model with no known price took part, so the total is unknown (never shown as $0)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=add_costs(self.cost_usd, other.cost_usd),
        )


def add_costs(a: float | None, b: float | None) -> float | None:
    """Unknown plus anything stays unknown."""
    return None if a is None or b is None else a + b


def _now() -> datetime:
    return datetime.now(UTC)


class _Event(BaseModel):
    at: datetime = Field(default_factory=_now)
    agent: int = 0
    """Who emitted it: 0 the run itself (a quick run; a deep run's planner and supervisor),
    1..n a deep run's researchers (numbered across rounds). Turns are counted per agent."""


class RunQueued(_Event):
    kind: Literal["run_queued"] = "run_queued"
    position: int
    """1 = next to start."""


class RunStarted(_Event):
    kind: Literal["run_started"] = "run_started"
    topic: str
    mode: str


class TurnStarted(_Event):
    kind: Literal["turn_started"] = "turn_started"
    turn: int


class ModelText(_Event):
    """Text the model wrote in a turn that also called tools (its reasoning out loud)."""

    kind: Literal["model_text"] = "model_text"
    turn: int
    text: str


class ToolCalled(_Event):
    kind: Literal["tool_called"] = "tool_called"
    turn: int
    call_id: str
    name: str
    input: dict[str, Any]


class ToolFinished(_Event):
    kind: Literal["tool_finished"] = "tool_finished"
    turn: int
    call_id: str
    name: str
    is_error: bool
    content: str
    """What the model was given (after compression)."""
    sources: list[Source] = Field(default_factory=list)
    numbers: list[int] = Field(default_factory=list)
    """The run's citation number of each source, in the same order."""
    compressed: bool = False
    duration_s: float = 0.0
    reused: bool = False
    """The page came from what a run of the same workspace read recently, not fetched again."""


class UsageRecorded(_Event):
    kind: Literal["usage"] = "usage"
    turn: int
    model: str
    usage: Usage


class ProviderSwitched(_Event):
    """The provider chain moved the run to another model provider, because the one that served
    it failed (bot/agent/models/fallback.py). Told once per provider a run comes to."""

    kind: Literal["provider_switched"] = "provider_switched"
    turn: int
    previous: str
    """`provider:model` that served the run's calls until then."""
    model: str
    """`provider:model` that took over."""
    message: str
    """One line for a person watching."""


class Notice(_Event):
    """Something a person watching should know (summarize requested, deadline reached …)."""

    kind: Literal["notice"] = "notice"
    message: str


class SynthesisStarted(_Event):
    kind: Literal["synthesis_started"] = "synthesis_started"
    turn: int
    reason: str


class ReportReady(_Event):
    kind: Literal["report_ready"] = "report_ready"
    turn: int
    report: Report
    synthesis: bool
    """True when a write-up was forced (turns, deadline, summarize) rather than chosen."""
    from_evidence_only: bool = False
    """True when the model could not write it and it was assembled from tool results."""


class ReportRevised(_Event):
    """A follow-up rewrote its run's report: the new version, stored with the run it revises."""

    kind: Literal["report_revised"] = "report_revised"
    turn: int
    report: Report


class RunFinished(_Event):
    kind: Literal["run_finished"] = "run_finished"
    ending: Ending
    turns: int
    usage: Usage
    error: str | None = None
    """For a person: what failed and what to do, when something did."""


class FinishReviewed(_Event):
    """The finish guard looked at a report offered early (seed 002), at most once per run."""

    kind: Literal["finish_reviewed"] = "finish_reviewed"
    turn: int
    ready: bool
    """False: the model was given `feedback` and went on researching."""
    missing: list[str] = Field(default_factory=list)
    """Required sections the check found missing or empty."""
    unsupported: int = 0
    """Cited claims the deterministic check did not find in their sources."""
    feedback: str = ""


class IdentityOffered(_Event):
    """The name fits more than one company: the run waits for a person to choose one."""

    kind: Literal["identity_offered"] = "identity_offered"
    candidates: list[Company] = Field(min_length=2, max_length=5)
    """Most likely first; a choice is an index into this list."""
    timeout_s: float
    """Unanswered this long, the run goes on with the first candidate."""


class IdentitySettled(_Event):
    """The company the run researches, settled before the research proper."""

    kind: Literal["identity_settled"] = "identity_settled"
    identity: Identity
    note: str
    """One line for people: which company, and how it was settled when nobody chose."""


class PlanReady(_Event):
    """A deep run's plan: one researcher per sub-question."""

    kind: Literal["plan_ready"] = "plan_ready"
    questions: list[SubQuestion]
    fallback: bool = False
    """True: the model's plan was unusable and the fixed plan for the mode is used."""


class ResearcherStarted(_Event):
    """A deep run's researcher (its number is `agent`) takes up one sub-question."""

    kind: Literal["researcher_started"] = "researcher_started"
    question: str
    round: int = 1
    """1: the plan's researchers; 2: the supervisor's follow-up on gaps."""


class FindingReady(_Event):
    """A researcher is done (`agent`); `from_evidence`: written without the model."""

    kind: Literal["finding_ready"] = "finding_ready"
    finding: Finding
    from_evidence: bool = False
    ending: str = "completed"
    """completed | max_turns | deadline | forced | budget | error | cancelled"""


class DraftReady(_Event):
    """The supervisor's draft from the findings: no longer written (a coverage check is), kept
    so that runs stored before still load."""

    kind: Literal["draft_ready"] = "draft_ready"
    draft: str
    gaps: list[str] = Field(default_factory=list)
    round: int = 1


class CoverageChecked(_Event):
    """The supervisor checked the findings against the report's required sections; its gaps
    (round 1 only) send one more round of researchers."""

    kind: Literal["coverage_checked"] = "coverage_checked"
    check: Coverage
    round: int = 1

    @property
    def gaps(self) -> list[str]:
        return [gap.question for gap in self.check.gaps]


Event = Annotated[
    RunQueued
    | RunStarted
    | TurnStarted
    | ModelText
    | ToolCalled
    | ToolFinished
    | UsageRecorded
    | ProviderSwitched
    | Notice
    | SynthesisStarted
    | ReportReady
    | ReportRevised
    | RunFinished
    | FinishReviewed
    | IdentityOffered
    | IdentitySettled
    | PlanReady
    | ResearcherStarted
    | FindingReady
    | DraftReady
    | CoverageChecked,
    Field(discriminator="kind"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
