"""What a tool call answers: readable text beside the model as `structuredContent` (under the
schema the tool publishes); `research` and a completed task give the same for an ended run."""

from __future__ import annotations

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from bot.adapters.mcp.callers import Caller
from bot.adapters.mcp.models import RunState
from bot.adapters.mcp.runs import McpRuns
from bot.errors import BotError

FAILED_INSIDE = "Something went wrong inside the bot (it is logged): try again."
"""What a caller is told of a fault of the bot's own (the fault itself is logged)."""


def tool_error(text: str) -> CallToolResult:
    """A tool's refusal or failure, in one sentence."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def tool_result(model: BaseModel, text: str) -> CallToolResult:
    """A tool's answer: readable text, and the model as `structuredContent`."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json"),
    )


async def ended_result(service: McpRuns, caller: Caller, state: RunState) -> CallToolResult:
    """What `research` answers for a run that has ended: its state, and its report if any."""
    try:
        report = await service.report(caller, state.run_id, "md")
    except BotError:
        return tool_result(state, state.text())
    return tool_result(state, f"{state.text()}\n\n{report.content}")
