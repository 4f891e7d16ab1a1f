"""What each model request of a run looks like: limits, prompt-cache breakpoints, timeouts."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from bot.agent.models.port import ModelCall
from bot.agent.state import RunState

EPHEMERAL = {"type": "ephemeral"}


@dataclass(frozen=True)
class Limits:
    max_turns: int = 12
    deadline_s: float = 900
    synthesis_timeout_s: float = 180
    model_timeout_s: float = 120
    max_output_tokens: int = 8_000
    context_window_tokens: int = 200_000
    """Older tool results are compacted once a turn's request and reply pass 75% of this."""
    max_cost_usd: float | None = None
    """A run whose spend reaches this writes up (`budget`); a deep run counts all its agents."""


def model_call(
    run: RunState,
    tools: list[dict[str, Any]],
    limits: Limits,
    *,
    tool_choice: dict[str, str] | None = None,
    until: float | None = None,
) -> ModelCall:
    """The next request of `run`: never allowed to outlast `until` (default: the deadline)."""
    left = (until or run.deadline) - time.monotonic()
    # A different tool_choice invalidates the cached messages (tools and system stay
    # cached): the write-up can neither read the turns' cache nor be read again, so it
    # writes none and pays the plain input price instead of the 1.25x write.
    messages = run.messages if tool_choice else with_cache_breakpoints(run.messages)
    return ModelCall(
        system=[{"type": "text", "text": run.system, "cache_control": EPHEMERAL}],
        messages=messages,
        tools=tools,
        tool_choice=tool_choice,
        max_tokens=limits.max_output_tokens,
        timeout_s=max(1.0, min(limits.model_timeout_s, left)),
    )


def with_cache_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of the conversation with `cache_control` on the last block of the last two user
    messages: this turn writes the cache, the next turn reads it (with system: 3 of 4 allowed)."""
    out = [dict(m) for m in messages]
    marked = 0
    for message in reversed(out):
        if message["role"] != "user" or marked == 2:
            continue
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
        message["content"] = blocks
        marked += 1
    return out
