"""A follow-up's `answer` is taken only when called alone: beside other tools it is sent back.

Apart from the answer's own module, so reading a stored answer (history, show, export) loads no
research tools."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from bot.agent.followup.prompts import ALONE, ANSWER_TOOL, FollowUpAnswer
from bot.agent.web.registry import Toolbox, ToolContext, ToolOutput, ToolResult, problems


class AnswerAlone:
    """The research tools, and `answer` called beside them: not taken, it gets a tool result
    asking for it alone (the answer was written before their results came)."""

    def __init__(self, toolbox: Toolbox) -> None:
        self._toolbox = toolbox

    async def call(self, ctx: ToolContext, name: str, raw_input: dict[str, Any]) -> ToolResult:
        if name != ANSWER_TOOL:
            return await self._toolbox.call(ctx, name, raw_input)
        try:
            FollowUpAnswer.model_validate(raw_input)
            heading = ALONE
        except ValidationError as error:
            heading = f"Invalid input for {ANSWER_TOOL}: {problems(error)}"
        return ToolResult(is_error=True, output=ToolOutput(heading=heading), duration_s=0.0)
