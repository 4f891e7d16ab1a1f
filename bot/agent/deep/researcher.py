"""One researcher of a deep run: today's tool loop on one sub-question, ending in a finding.

It finishes by calling `submit_finding`; if it stops talking instead, or runs out of turns,
one forced call asks for the finding. Stopped, failed or out of time, it still contributes a
finding written from its own evidence, so no researcher's work is lost.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from bot.agent.calls import Limits, model_call
from bot.agent.compress import compact_if_full
from bot.agent.control import Control
from bot.agent.deep.prompts import finding_instruction
from bot.agent.deep.schema import Finding, FindingDraft
from bot.agent.events import TurnStarted
from bot.agent.models.port import ModelPort
from bot.agent.report.model import SourceRegistry
from bot.agent.state import RunState, Stop
from bot.agent.steps import Steps
from bot.agent.structured import ask_for, tool_for
from bot.agent.web.registry import problems

FINISH = "submit_finding"
FINISH_TOOL = tool_for(FINISH, FindingDraft)
STOPPED = {
    "forced": "Stopped early: the person who asked wanted the report now.",
    "deadline": "Stopped at the time limit.",
    "max_turns": "Stopped at the turn limit before writing a finding.",
    "cancelled": "Stopped: the run was cancelled.",
    "budget": "Stopped: the run's cost budget is spent.",
}


@dataclass
class Result:
    finding: Finding
    from_evidence: bool
    ending: str
    """completed | max_turns | deadline | forced | budget | cancelled | error"""


class DeepResearcher:
    def __init__(
        self,
        model: ModelPort,
        steps: Steps,
        tools: list[dict[str, Any]],
        limits: Limits,
    ) -> None:
        self._model = model
        self._steps = steps
        self._tools = [*tools, FINISH_TOOL]
        self._limits = limits

    async def run(self, part: RunState, control: Control, question: str) -> Result:
        ending = "completed"
        try:
            answer = await self._turns(part, control)
        except Stop as stop:
            if stop.why != "max_turns":
                why = "error" if stop.why not in STOPPED else stop.why
                return self._from_evidence(part, question, why, stop.message)
            ending, answer = "max_turns", None
        if isinstance(answer, FindingDraft):
            return Result(self._finding(part, question, answer), False, ending)
        # It stopped talking (or ran out of turns): one forced call for the finding.
        if answer:
            part.messages.append({"role": "assistant", "content": answer})
        part.messages.append(
            {"role": "user", "content": finding_instruction(ending if answer is None else "")}
        )
        until = min(part.deadline, time.monotonic() + self._limits.synthesis_timeout_s)
        try:
            draft = await ask_for(
                self._model, part, control, FindingDraft, FINISH,
                limits=self._limits, until=until, tools=self._tools, allow_summarize=True,
            )  # fmt: skip
        except Stop as stop:
            return self._from_evidence(part, question, stop.why, stop.message)
        if draft is None:
            return self._from_evidence(part, question, ending, None, said=answer)
        return Result(self._finding(part, question, draft), False, ending)

    async def _turns(self, part: RunState, control: Control) -> FindingDraft | str:
        while part.turn < self._limits.max_turns:
            compact_if_full(part, self._limits.context_window_tokens)
            part.turn += 1
            part.emit(TurnStarted(turn=part.turn))
            reply = await self._steps.ask(
                part, control, model_call(part, self._tools, self._limits)
            )
            finish = next((u for u in reply.tool_uses if u.name == FINISH), None)
            if finish is not None:
                try:
                    return FindingDraft.model_validate(finish.input)
                except ValidationError as error:
                    # Sent back once per turn like any tool error: the model corrects it.
                    part.messages.append({"role": "assistant", "content": reply.content})
                    part.messages.append({"role": "user", "content": _answers(reply, error)})
                    continue
            if reply.stop_reason in ("end_turn", "stop_sequence"):
                return reply.text
            if not await self._steps.carry_on(part, control, reply):
                raise Stop("error", f"The model stopped ({reply.stop_reason}).")
        raise Stop("max_turns")

    def _finding(self, part: RunState, question: str, draft: FindingDraft) -> Finding:
        read, seen = sources_of(part.registry, part.own_sources)
        return Finding(topic=question, read=read, seen=seen, **draft.model_dump())

    def _from_evidence(
        self,
        part: RunState,
        question: str,
        why: str,
        message: str | None,
        *,
        said: str | None = None,
    ) -> Result:
        return Result(
            evidence_finding(part.registry, part.own_sources, question, why, message, said=said),
            True,
            why,
        )


def sources_of(registry: SourceRegistry, own: Iterable[int]) -> tuple[list[int], list[int]]:
    """Of a researcher's own citation numbers, those it read and those it only saw in results."""
    read: list[int] = []
    seen: list[int] = []
    for number in own:
        source = registry.get(number)
        (read if source is not None and source.read else seen).append(number)
    return read, seen


def evidence_finding(
    registry: SourceRegistry,
    own: Iterable[int],
    question: str,
    why: str,
    message: str | None,
    *,
    said: str | None = None,
) -> Finding:
    """A finding without the model: what the researcher had said, then its sources' titles and
    snippets (already numbered, each citation after its title: a line that starts with one reads
    as an entry of a sources list), so the supervisor can still use its work."""
    read, seen = sources_of(registry, own)
    lines = []
    for number in read + seen:
        source = registry.get(number)
        if source is not None:
            title = " ".join((source.title or source.url).split())
            snippet = _after_title(source.snippet[:300], title)
            lines.append(f"{title} [{number}]" + (f" — {snippet}" if snippet else ""))
    stopped = STOPPED.get(why, message or "Stopped by a failure.")
    summary = (said or "").strip()[:4000] or stopped
    return Finding(
        topic=question,
        summary=summary,
        key_findings=lines[:15],
        confidence="low",
        notes=[stopped] if summary != stopped else [],
        read=read,
        seen=seen,
    )


def _after_title(snippet: str, title: str) -> str:
    """A snippet on one line, without the title it often starts with (a page's text opens with
    its heading, a README with `# name`): `Title: Title …` says it twice."""
    text = " ".join(snippet.split()).lstrip("# ")
    for head in (title, title.split(" | ")[0], title.split(" - ")[0]):
        if head and text.casefold().startswith(head.casefold()):
            return text[len(head) :].lstrip(" :|-–—")
    return text


def _answers(reply: Any, error: ValidationError) -> list[dict[str, Any]]:
    """A tool_result for every tool_use of the turn: the malformed finish gets the problems,
    any other call is not run (the researcher said it was done)."""
    return [
        {
            "type": "tool_result",
            "tool_use_id": use.id,
            "is_error": True,
            "content": (
                f"Not a valid finding ({problems(error)}); call {FINISH} again, corrected."
                if use.name == FINISH
                else "Not run: finish first."
            ),
        }
        for use in reply.tool_uses
    ]
