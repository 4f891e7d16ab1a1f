"""Structured answers from the model: a forced tool call whose input schema is a pydantic model.

The answer is validated; a malformed one is sent back once with the problems, then the caller
falls back (seed 004: a plan, a finding, a draft and a report each have their own fallback).
"""

from __future__ import annotations

import logging
import time
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bot.agent.calls import EPHEMERAL, Limits
from bot.agent.control import Control
from bot.agent.events import UsageRecorded
from bot.agent.models.port import ModelCall, ModelPort
from bot.agent.state import RunState, guarded
from bot.agent.web.registry import problems
from bot.errors import ModelError

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)
ATTEMPTS = 2
"""The first answer and one retry after a malformed one."""


def tool_for(name: str, schema: type[BaseModel]) -> dict[str, Any]:
    return {
        "name": name,
        "description": (schema.__doc__ or name).strip(),
        "input_schema": schema.model_json_schema(),
    }


async def ask_for(
    model: ModelPort,
    run: RunState,
    control: Control,
    schema: type[M],
    name: str,
    *,
    limits: Limits,
    until: float,
    tools: list[dict[str, Any]] | None = None,
    allow_summarize: bool = False,
    model_name: str | None = None,
) -> M | None:
    """`schema` filled in by the model through the tool `name` over `run`'s conversation; None
    when the model failed or answered malformed twice. Stop (cancel, deadline) is not caught.
    `tools`: the tool list to send, default just this one; a researcher sends all of its own,
    since its conversation holds calls of them (the API wants every used tool defined).
    `model_name`: another model than the research model (the fast one, for a cheap answer)."""
    tool_list = tools if tools is not None else [tool_for(name, schema)]
    for attempt in range(1, ATTEMPTS + 1):
        call = ModelCall(
            system=[{"type": "text", "text": run.system, "cache_control": EPHEMERAL}],
            messages=run.messages,
            tools=tool_list,
            tool_choice={"type": "tool", "name": name},
            max_tokens=limits.max_output_tokens,
            timeout_s=max(1.0, min(limits.synthesis_timeout_s, until - time.monotonic())),
            model=model_name,
        )
        try:
            reply = await guarded(
                run, control, model.complete(call), until=until, allow_summarize=allow_summarize
            )
        except ModelError as error:
            log.warning("run %s: %s failed: %s", run.run_id, name, error)
            return None
        run.record(UsageRecorded(turn=run.turn, model=reply.model, usage=reply.usage))
        use = next((u for u in reply.tool_uses if u.name == name), None)
        if use is None:
            log.info("run %s: %s not called (attempt %d)", run.run_id, name, attempt)
            retry: Any = f"Answer with the `{name}` tool."
        else:
            try:
                return schema.model_validate(use.input)
            except ValidationError as error:
                log.info("run %s: %s malformed (attempt %d): %s", run.run_id, name, attempt, error)
                retry = [_malformed(use.id, error)]
        if reply.content:
            run.messages.append({"role": "assistant", "content": reply.content})
        run.messages.append({"role": "user", "content": retry})
    return None


def _malformed(tool_use_id: str, error: ValidationError) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "is_error": True,
        "content": f"That input is not valid ({problems(error)}). Call the tool again, corrected.",
    }
