"""A run's events as seed 001's trajectory: turns with the model that served them, their tool
calls, synthesis and final flags; for a deep run also its plan, each researcher's own turns and
finding, and the draft."""

from __future__ import annotations

from typing import Any

from bot.agent.events import (
    CoverageChecked,
    DraftReady,
    Event,
    FindingReady,
    FinishReviewed,
    ModelText,
    PlanReady,
    ReportReady,
    ResearcherStarted,
    RunFinished,
    ToolCalled,
    ToolFinished,
    TurnStarted,
    UsageRecorded,
)


class _Steps:
    """One agent's turns (the run's own, or one researcher's), each with its tool calls."""

    def __init__(self) -> None:
        self.turns: dict[int, dict[str, Any]] = {}
        self._calls: dict[str, dict[str, Any]] = {}

    def turn(self, n: int) -> dict[str, Any]:
        return self.turns.setdefault(n, {"turn": n, "content": "", "tool_calls": []})

    def fold(self, event: Event) -> None:
        if isinstance(event, TurnStarted):
            self.turn(event.turn)
        elif isinstance(event, ModelText):
            self.turn(event.turn)["content"] = event.text
        elif isinstance(event, ToolCalled):
            call = {"id": event.call_id, "name": event.name, "input": event.input}
            self._calls[event.call_id] = call
            self.turn(event.turn)["tool_calls"].append(call)
        elif isinstance(event, ToolFinished) and event.call_id in self._calls:
            self._calls[event.call_id].update(
                is_error=event.is_error, result=event.content, compressed=event.compressed
            )
            if event.reused:
                self._calls[event.call_id]["reused"] = True
        elif isinstance(event, ReportReady):
            self.turn(event.turn).update(
                content=event.report.tldr,
                final=True,
                synthesis=event.synthesis,
                from_evidence_only=event.from_evidence_only,
            )
        elif isinstance(event, UsageRecorded):
            # The turn's own call is recorded first; compression and checks come after it.
            self.turn(event.turn).setdefault("model", event.model)
        elif isinstance(event, FinishReviewed):
            self.turn(event.turn)["finish_review"] = event.model_dump(
                mode="json", include={"ready", "missing", "unsupported", "feedback"}
            )

    def listed(self) -> list[dict[str, Any]]:
        return [self.turns[n] for n in sorted(self.turns)]


def trajectory(run_id: str, events: list[Event]) -> dict[str, Any]:
    """The run's own turns at the top (all of a quick run); a deep run's researchers nested."""
    steps: dict[int, _Steps] = {}
    researchers: dict[int, dict[str, Any]] = {}
    deep: dict[str, Any] = {}
    ending: str | None = None

    def researcher(agent: int) -> dict[str, Any]:
        return researchers.setdefault(
            agent,
            {
                "agent": agent,
                "question": "",
                "round": 1,
                "finding": None,
                "from_evidence": False,
                "ending": None,
            },
        )

    for event in events:
        steps.setdefault(event.agent, _Steps()).fold(event)
        if event.agent:
            researcher(event.agent)
        if isinstance(event, PlanReady):
            deep["plan"] = event.model_dump(mode="json", include={"questions", "fallback"})
        elif isinstance(event, ResearcherStarted):
            researcher(event.agent).update(question=event.question, round=event.round)
        elif isinstance(event, FindingReady):
            researcher(event.agent).update(
                finding=event.finding.model_dump(mode="json"),
                from_evidence=event.from_evidence,
                ending=event.ending,
            )
        elif isinstance(event, DraftReady | CoverageChecked):
            # A second round's replaces the first: the later one is what the report used.
            deep.update(_supervised(event))
        elif isinstance(event, RunFinished):
            ending = event.ending.value
    run = steps.get(0, _Steps())
    result: dict[str, Any] = {
        "run_id": run_id,
        "turns": run.listed(),
        "termination_reason": ending,
        "total_turns": max(run.turns, default=0),
    }
    if "plan" in deep:
        result["plan"] = deep["plan"]
    if researchers:
        result["researchers"] = [
            {
                **researchers[n],
                "turns": steps[n].listed(),
                "total_turns": max(steps[n].turns, default=0),
            }
            for n in sorted(researchers)
        ]
    result.update((key, deep[key]) for key in ("draft", "coverage") if key in deep)
    return result


def _supervised(event: DraftReady | CoverageChecked) -> dict[str, Any]:
    """The supervisor's step: its coverage check, or the draft a run stored before had."""
    if isinstance(event, CoverageChecked):
        return {"coverage": {**event.check.model_dump(mode="json"), "round": event.round}}
    return {"draft": {"text": event.draft, "gaps": event.gaps, "round": event.round}}
