"""The model port: one call to a model with tools, its reply, its usage and its cost.

`anthropic` is imported here and nowhere else. Its SDK owns the retry policy (configured once,
at the composition root); this module retries only what the SDK cannot (a stream that broke
after it started), within the same budget, and turns every failure into a `ModelError`.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any, Protocol

import anthropic
import httpx2
from anthropic import AsyncAnthropic
from anthropic.lib.streaming import AsyncMessageStream
from anthropic.types import Message
from pydantic import BaseModel

from bot.agent.events import Usage
from bot.config import Price
from bot.errors import ContextOverflow, ModelError

log = logging.getLogger(__name__)
INITIAL_RETRY_DELAY_S = 0.5
RETRYABLE_STREAM_ERRORS = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
"""`error` events inside a stream worth another attempt (the SDK retries their HTTP twins)."""

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
    """The model that answered; through the provider chain `provider:model`."""

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
    """None: the port's default (research) model. Through the provider chain (`fallback.py`),
    the primary provider's fast model names the fast role on every provider."""


class ModelPort(Protocol):
    async def complete(self, call: ModelCall) -> ModelReply: ...


def cost_of(usage: Usage, price: Price | None) -> float | None:
    """USD for `usage`; None when the model has no price (unknown, never $0)."""
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_write_tokens * price.cache_write
        + usage.cache_read_tokens * price.cache_read
    ) / 1_000_000


class AnthropicModel:
    """The Messages API through the official SDK, streamed (long reports need it)."""

    def __init__(
        self,
        client: AsyncAnthropic,
        *,
        model: str,
        prices: dict[str, Price],
        retry_delay_s: float = INITIAL_RETRY_DELAY_S,
    ) -> None:
        self._client = client
        self._model = model
        self._prices = prices
        self._retry_delay_s = retry_delay_s
        self._by_retries: dict[int, AsyncAnthropic] = {client.max_retries: client}
        """The client with each retry budget a call has needed, made once: a copy costs a
        new client object and, at its first request, a thread to look up the platform."""

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
        message = await self._final_message(params)
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

    def _with_retries(self, max_retries: int) -> AsyncAnthropic:
        """The client with this retry budget; the copies share the one connection pool."""
        client = self._by_retries.get(max_retries)
        if client is None:
            client = self._by_retries[max_retries] = self._client.with_options(
                max_retries=max_retries
            )
        return client

    async def _final_message(self, params: dict[str, Any]) -> Message:
        """One reply, retrying a stream that broke part-way. The SDK retries only failures
        before a stream starts, so both kinds share one budget: `max_retries` + 1 attempts."""
        attempts_left = self._client.max_retries + 1
        retry = 0
        while True:
            client = self._with_retries(attempts_left - 1)
            try:
                return await _stream_once(client, params)
            except _BrokenStream as broken:
                attempts_left -= broken.attempts
                if attempts_left <= 0:
                    raise ModelError(broken.message, provider_fault=True) from broken.__cause__
                log.warning("model stream broke mid-reply (%s); retrying", broken.__cause__)
            await asyncio.sleep(_backoff(self._retry_delay_s, retry))
            retry += 1


class _BrokenStream(Exception):
    """A reply stream that failed after it started, which the SDK does not retry."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.message = message
        self.attempts = attempts
        """Requests this call made (the SDK's own retries before the stream began, plus one)."""


async def _stream_once(client: AsyncAnthropic, params: dict[str, Any]) -> Message:
    stream: AsyncMessageStream | None = None
    try:
        async with client.messages.stream(**params) as stream:
            return await stream.get_final_message()
    except anthropic.APIStatusError as error:
        if stream is not None and _error_type(error) in RETRYABLE_STREAM_ERRORS:
            raise _BrokenStream(explain(error), _attempts(stream)) from error
        if _is_prompt_too_long(error):
            raise ContextOverflow(explain(error)) from error
        raise ModelError(explain(error), provider_fault=_provider_fault(error)) from error
    except anthropic.APIError as error:
        # Unreachable, timed out, or an answer the SDK could not read: none of it ours to fix.
        raise ModelError(explain(error), provider_fault=True) from error
    except httpx2.HTTPError as error:
        # Once a stream has started, the SDK lets the HTTP library's own errors through.
        message = (
            f"The connection to the Anthropic API broke ({type(error).__name__}): "
            "try again in a few minutes."
        )
        if stream is not None:
            raise _BrokenStream(message, _attempts(stream)) from error
        raise ModelError(message, provider_fault=True) from error


def _provider_fault(error: anthropic.APIStatusError) -> bool:
    """What the SDK retries (408, 409, 429, 5xx, 529) and an error inside a stream that had
    started (HTTP 200): the provider's trouble, which another provider may not share."""
    status = error.status_code
    return status in (200, 408, 409, 429) or status >= 500


def _attempts(stream: AsyncMessageStream) -> int:
    """Requests this call made: the SDK numbers its attempts in a header of each request."""
    return int(stream.response.request.headers.get("x-stainless-retry-count") or 0) + 1


def _backoff(initial_s: float, retry: int) -> float:
    """The SDK's own schedule: doubling from `initial_s`, at most 8 s, minus up to 25% jitter."""
    return min(initial_s * 2.0**retry, 8.0) * (1 - 0.25 * random.random())


def _api_error(error: anthropic.APIStatusError) -> tuple[str, str]:
    """The API's own error type (`overloaded_error`, `invalid_request_error` ...) and message."""
    body = error.body
    inner = body.get("error") if isinstance(body, dict) else None
    if not isinstance(inner, dict):
        return "", ""
    return str(inner.get("type", "")), str(inner.get("message", ""))


def _error_type(error: anthropic.APIStatusError) -> str:
    return _api_error(error)[0]


def _is_prompt_too_long(error: anthropic.APIStatusError) -> bool:
    # The API has no error type of its own for this: its message is the one signal.
    kind, message = _api_error(error)
    return (
        isinstance(error, anthropic.BadRequestError)
        and kind == "invalid_request_error"
        and message.lower().startswith("prompt is too long")
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
        return _explain_status(error)
    return f"The Anthropic API failed: {error}"


def _explain_status(error: anthropic.APIStatusError) -> str:
    kind = _error_type(error)
    if error.status_code == 200:
        # An `error` event inside a stream that had started well (HTTP 200).
        return (
            f"The Anthropic API failed part-way through a reply ({kind or 'error'}): "
            "try again in a few minutes."
        )
    if _is_prompt_too_long(error):
        return "The conversation no longer fits the model's context window."
    if error.status_code == 529 or isinstance(error, anthropic.InternalServerError):
        return (
            f"The Anthropic API is overloaded or failing ({error.status_code}): "
            "try again in a few minutes."
        )
    return f"The Anthropic API refused the request ({error.status_code}): {error.message}"
