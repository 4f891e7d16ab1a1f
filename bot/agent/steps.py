"""The two steps every research agent repeats: ask the model, run the tools it called.

Shared by the quick loop, a deep run's researchers and follow-ups, each with its own words for
a reply cut off at the output limit. `Toolbox`-like objects are accepted so a deep run can put
its shared page cache in front of the tools.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from bot.agent.compress import Compressor, compact_form, with_note
from bot.agent.control import Control
from bot.agent.events import ModelText, ToolCalled, ToolFinished, Usage, UsageRecorded
from bot.agent.models.port import ModelCall, ModelPort, ModelReply, ToolUse
from bot.agent.prompts import continue_after_max_tokens
from bot.agent.report.markdown import title_line
from bot.agent.state import RunState, Stop, fence, guarded
from bot.agent.web.registry import ToolContext, ToolResult
from bot.errors import ContextOverflow, ModelError


class Tools(Protocol):
    async def call(self, ctx: ToolContext, name: str, raw_input: dict[str, Any]) -> ToolResult: ...


class Steps:
    def __init__(
        self,
        model: ModelPort,
        toolbox: Tools,
        compressor: Compressor,
        *,
        cut_off: str = continue_after_max_tokens(),
    ) -> None:
        """`cut_off`: what the model is told after a reply cut off at the output limit (how
        this agent finishes: the report, `submit_finding`, `answer`)."""
        self._model = model
        self._toolbox = toolbox
        self._compressor = compressor
        self._cut_off = cut_off

    async def ask(self, run: RunState, control: Control, call: ModelCall) -> ModelReply:
        try:
            reply = await guarded(
                run, control, self._model.complete(call), until=run.deadline, allow_summarize=True
            )
        except ContextOverflow as error:
            raise Stop("context") from error
        except ModelError as error:
            # With evidence, the write-up may still work (a 529 now may pass a moment later).
            raise Stop("error" if run.has_evidence else "llm_error", str(error)) from error
        run.record(UsageRecorded(turn=run.turn, model=reply.model, usage=reply.usage))
        used = reply.usage
        # The whole request (cached or not) plus the reply: what the next turn starts from.
        run.context_tokens = (
            used.input_tokens
            + used.cache_read_tokens
            + used.cache_write_tokens
            + used.output_tokens
        )
        return reply

    async def carry_on(self, run: RunState, control: Control, reply: ModelReply) -> bool:
        """Take the conversation on after a reply that is not an ending: its tools run, a reply
        cut off at the output limit is asked to go on, a paused turn is sent back. False when
        the reply is none of these (the caller decides what its stop reason means)."""
        if reply.stop_reason == "tool_use":
            run.messages.append({"role": "assistant", "content": reply.content})
            if reply.text:
                run.emit(ModelText(turn=run.turn, text=reply.text))
            await self.run_tools(run, control, reply.tool_uses)
        elif reply.stop_reason == "max_tokens":
            # A cut-off tool_use has partial input: drop it, keep the words, ask to go on.
            kept = [b for b in reply.content if b.get("type") != "tool_use"]
            if kept:
                run.messages.append({"role": "assistant", "content": kept})
            run.messages.append({"role": "user", "content": self._cut_off})
        elif reply.stop_reason == "pause_turn":
            run.messages.append({"role": "assistant", "content": reply.content})
        else:
            return False
        return True

    async def run_tools(self, run: RunState, control: Control, uses: list[ToolUse]) -> None:
        for use in uses:
            run.emit(ToolCalled(turn=run.turn, call_id=use.id, name=use.name, input=use.input))
        results: dict[str, dict[str, Any]] = {}

        async def all_tools() -> None:
            # A TaskGroup: when the turn is interrupted, no tool is left running behind it.
            async with asyncio.TaskGroup() as group:
                for use in uses:
                    group.create_task(self._one_tool(run, use, results))

        try:
            await guarded(run, control, all_tools(), until=run.deadline, allow_summarize=True)
        finally:
            # Whatever ended the turn, every tool_use gets its tool_result: finished tools keep
            # theirs, the rest say they were stopped, so synthesis sees a valid conversation.
            blocks = [results.get(use.id) or _stopped(use) for use in uses]
            run.messages.append({"role": "user", "content": blocks})

    async def _one_tool(
        self, run: RunState, use: ToolUse, results: dict[str, dict[str, Any]]
    ) -> None:
        result = await self._toolbox.call(
            ToolContext(
                run.registry,
                run.run_id,
                run.request.origin,
                fresh=run.request.watch_id is not None,
            ),
            use.name,
            use.input,
        )
        out, compressed, note = result.output, False, ""
        body = out.body
        if body and not result.is_error:
            condensed = await self._compressor.condense(
                body, goal=run.task, tool=use.name, scope=run.request.origin.scope
            )
            (body, compressed, usage, served), note = condensed.compressed, condensed.note
            if compressed and usage != Usage():  # a truncation or a kept condensing: no call
                run.record(UsageRecorded(turn=run.turn, model=served, usage=usage))
        content = with_note(out.heading, note) + (f"\n{fence(body)}" if body else "")
        numbers = [run.registry.number(s.url) or 0 for s in out.sources]
        cited = list(zip(numbers, out.sources, strict=True))
        if body and len(short := compact_form(out.heading, cited, body)) < len(content):
            run.compact_forms[use.id] = short
        run.record(
            ToolFinished(
                turn=run.turn,
                call_id=use.id,
                name=use.name,
                is_error=result.is_error,
                content=content,
                sources=out.sources,
                numbers=numbers,
                compressed=compressed,
                duration_s=result.duration_s,
                reused=out.reused,
            )
        )
        results[use.id] = {
            "type": "tool_result",
            "tool_use_id": use.id,
            "content": content,
            "is_error": result.is_error,
        }


class Written:
    """The text of replies cut off at the output limit while writing (no tool call in them):
    the reply that ends the writing is joined to them, so a report cut off is delivered whole,
    from its title, not as its last part."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    def note(self, reply: ModelReply) -> None:
        """Keep a reply cut off while writing; forget the parts once the model calls tools
        instead (what was cut off was not its answer)."""
        if reply.stop_reason == "max_tokens" and not reply.tool_uses:
            self._parts.append(_raw_text(reply))
        elif reply.tool_uses:
            self._parts.clear()

    def whole(self, reply: ModelReply) -> str:
        """The text the reply ends: the parts written before it, then its own, from the last
        part that starts again at a `# ` title (a model that started over)."""
        if not self._parts:
            return reply.text
        parts = [*self._parts, _raw_text(reply)]
        starts = [i for i, part in enumerate(parts) if title_line(part) is not None]
        return "".join(parts[starts[-1] if starts else 0 :]).strip()


def _raw_text(reply: ModelReply) -> str:
    # Unstripped: a reply cut off mid-sentence ends where the next one goes on.
    return "".join(b["text"] for b in reply.content if b.get("type") == "text")


def _stopped(use: ToolUse) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": use.id,
        "is_error": True,
        "content": f"{use.name} was stopped before it finished.",
    }
