"""The model port: one call to a model with tools, its reply, its usage and its cost.

`anthropic` is imported here and nowhere else. Its SDK owns the retry policy (configured once,
at the composition root); this module only shapes requests and replies.
"""

from __future__ import annotations

from typing import Any, Protocol

import anthropic
from anthropic import AsyncAnthropic
from pydantic import BaseModel

from bot.agent.events import Usage
from bot.config import Price
from bot.errors import ModelError

Block = dict[str, Any]
"""A content block exactly as the Messages API speaks it (echoed back unchanged)."""


class ToolUse(BaseModel):
    id: str
    name: str
    input: dict[str, Any]


class ModelReply(BaseModel):
    content: list[Block]
    stop_reason: str | None
    usage: Usage
    model: str

    @property
    def text(self) -> str:
        return "\n\n".join(b["text"] for b in self.content if b.get("type") == "text").strip()

    @property
    def tool_uses(self) -> list[ToolUse]:
        return [
            ToolUse(id=b["id"], name=b["name"], input=b.get("input") or {})
            for b in self.content
            if b.get("type") == "tool_use"
        ]


class ModelCall(BaseModel):
    """One request: what the loop, synthesis and compression each send."""

    system: list[Block]
    messages: list[dict[str, Any]]
    tools: list[Block] = []
    tool_choice: Block | None = None
    max_tokens: int
    timeout_s: float
    model: str | None = None
    """None: the port's default (research) model."""


class ModelPort(Protocol):
    async def complete(self, call: ModelCall) -> ModelReply: ...


def cost_of(usage: Usage, price: Price | None) -> float:
    if price is None:
        return 0.0
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_write_tokens * price.cache_write
        + usage.cache_read_tokens * price.cache_read
    ) / 1_000_000


class AnthropicModel:
    """The Messages API through the official SDK, streamed (long reports need it)."""

    def __init__(self, client: AsyncAnthropic, *, model: str, prices: dict[str, Price]) -> None:
        self._client = client
        self._model = model
        self._prices = prices

    async def complete(self, call: ModelCall) -> ModelReply:
        model = call.model or self._model
        params: dict[str, Any] = {
            "model": model,
            "system": call.system,
            "messages": call.messages,
            "max_tokens": call.max_tokens,
            "timeout": call.timeout_s,
        }
        if call.tools:
            params["tools"] = call.tools
        if call.tool_choice is not None:
            params["tool_choice"] = call.tool_choice
        try:
            async with self._client.messages.stream(**params) as stream:
                message = await stream.get_final_message()
        except anthropic.APIError as error:
            raise ModelError(explain(error)) from error
        raw = message.usage
        usage = Usage(
            input_tokens=raw.input_tokens,
            output_tokens=raw.output_tokens,
            cache_read_tokens=raw.cache_read_input_tokens or 0,
            cache_write_tokens=raw.cache_creation_input_tokens or 0,
        )
        usage.cost_usd = cost_of(usage, self._prices.get(model))
        return ModelReply(
            content=[block.model_dump(mode="json", exclude_none=True) for block in message.content],
            stop_reason=message.stop_reason,
            usage=usage,
            model=model,
        )


def explain(error: anthropic.APIError) -> str:
    """What a person should read when the model API failed after the SDK's retries."""
    if isinstance(error, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return "The Anthropic API rejected the key: check ANTHROPIC_API_KEY."
    if isinstance(error, anthropic.RateLimitError):
        return (
            "The Anthropic API is rate-limiting this key (429): wait a minute and try again, "
            "or raise the key's limits or spend cap."
        )
    if isinstance(error, anthropic.APITimeoutError):
        return "The Anthropic API did not answer in time: try again in a few minutes."
    if isinstance(error, anthropic.APIConnectionError):
        return "Could not reach the Anthropic API: check the network or ANTHROPIC_BASE_URL."
    if isinstance(error, anthropic.APIStatusError):
        if error.status_code == 529 or isinstance(error, anthropic.InternalServerError):
            return (
                f"The Anthropic API is overloaded or failing ({error.status_code}): "
                "try again in a few minutes."
            )
        return f"The Anthropic API refused the request ({error.status_code}): {error.message}"
    return f"The Anthropic API failed: {error}"
