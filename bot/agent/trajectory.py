"""A run's events as seed 001's trajectory: turns with their tool calls, synthesis and final flags."""

from __future__ import annotations

from typing import Any

from bot.agent.events import (
    Event,
    FinishReviewed,
    ModelText,
    ReportReady,
    RunFinished,
    ToolCalled,
    ToolFinished,
    TurnStarted,
)


def trajectory(run_id: str, events: list[Event]) -> dict[str, Any]:
    turns: dict[int, dict[str, Any]] = {}
    calls: dict[str, dict[str, Any]] = {}
    ending: str | None = None

    def turn(n: int) -> dict[str, Any]:
        return turns.setdefault(n, {"turn": n, "content": "", "tool_calls": []})

    for event in events:
        if isinstance(event, TurnStarted):
            turn(event.turn)
        elif isinstance(event, ModelText):
            turn(event.turn)["content"] = event.text
        elif isinstance(event, ToolCalled):
            call = {"id": event.call_id, "name": event.name, "input": event.input}
            calls[event.call_id] = call
            turn(event.turn)["tool_calls"].append(call)
        elif isinstance(event, ToolFinished) and event.call_id in calls:
            calls[event.call_id].update(
                is_error=event.is_error, result=event.content, compressed=event.compressed
            )
        elif isinstance(event, ReportReady):
            final = turn(event.turn)
            final.update(
                content=event.report.tldr,
                final=True,
                synthesis=event.synthesis,
                from_evidence_only=event.from_evidence_only,
            )
        elif isinstance(event, FinishReviewed):
            turn(event.turn)["finish_review"] = event.model_dump(
                mode="json", include={"ready", "missing", "unsupported", "feedback"}
            )
        elif isinstance(event, RunFinished):
            ending = event.ending.value
    return {
        "run_id": run_id,
        "turns": [turns[n] for n in sorted(turns)],
        "termination_reason": ending,
        "total_turns": max(turns, default=0),
    }
