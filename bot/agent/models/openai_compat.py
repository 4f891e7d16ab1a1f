"""The OpenAI-compatible model port: Chat Completions through the official `openai` SDK, which
OpenAI, Azure, OpenRouter and local servers (Ollama, vLLM, llama.cpp) all speak.

`openai` is imported here and nowhere else. The call and the reply are translated by
`chat_format`, so the loop sees the same content blocks whichever provider answered. Replies
are streamed: a slow local model keeps the connection busy instead of hitting the read
timeout. The SDK retries what fails before a stream starts (its one retry policy, set at the
composition root); a stream that breaks part-way is a `ModelError` marked as the provider's
fault, which the provider chain hands to the next provider.
"""

from __future__ import annotations

from typing import Literal

import openai
from openai import AsyncOpenAI, omit
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletionChunk

from bot.agent.events import Usage
from bot.agent.models.chat_format import ReplyParts, chat_request
from bot.agent.models.port import ModelCall, ModelReply, cost_of
from bot.config import Price
from bot.errors import ContextOverflow, ModelError

NAME = "The OpenAI-compatible API"
OutputLimit = Literal["max_tokens", "max_completion_tokens"]
BROKE_OFF = f"{NAME} broke off part-way through a reply: try again in a few minutes."


class OpenAIModel:
    """Chat Completions, streamed, with usage (`stream_options.include_usage`) and cost."""

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        model: str,
        prices: dict[str, Price],
        output_limit: OutputLimit = "max_tokens",
    ) -> None:
        self._client = client
        self._model = model
        self._prices = prices
        self._output_limit = output_limit
        """OpenAI's own API wants `max_completion_tokens` (its reasoning models refuse
        `max_tokens`); the servers that copy its API read `max_tokens`."""

    async def complete(self, call: ModelCall) -> ModelReply:
        model = call.model or self._model
        parts, usage = await self._stream(model, call)
        content, stop_reason = parts.blocks()
        return ModelReply(
            content=content,
            stop_reason=stop_reason,
            usage=_usage(usage, self._prices.get(model)),
            model=model,
        )

    async def _stream(
        self, model: str, call: ModelCall
    ) -> tuple[ReplyParts, CompletionUsage | None]:
        body = chat_request(call)
        limit = self._output_limit
        try:
            stream = await self._client.chat.completions.create(
                model=model,
                messages=body["messages"],
                tools=body.get("tools", omit),
                tool_choice=body.get("tool_choice", omit),
                parallel_tool_calls=body.get("parallel_tool_calls", omit),
                max_tokens=call.max_tokens if limit == "max_tokens" else omit,
                max_completion_tokens=call.max_tokens if limit != "max_tokens" else omit,
                stream=True,
                stream_options={"include_usage": True},
                timeout=call.timeout_s,
            )
        except openai.APIStatusError as error:
            if error.code == "context_length_exceeded":
                raise ContextOverflow(
                    "The conversation no longer fits the model's context window."
                ) from error
            raise ModelError(explain(error), provider_fault=_provider_fault(error)) from error
        except openai.APIError as error:
            raise ModelError(explain(error), provider_fault=True) from error
        parts, usage = ReplyParts(), None
        try:
            async with stream:
                async for chunk in stream:
                    _add(parts, chunk)
                    usage = chunk.usage or usage
        except openai.APIError as error:
            # A dropped connection or an error inside the stream: the SDK retries neither.
            raise ModelError(BROKE_OFF, provider_fault=True) from error
        if parts.finish_reason is None:
            # The server ended the stream without saying how the reply ended.
            raise ModelError(BROKE_OFF, provider_fault=True)
        return parts, usage


def _add(parts: ReplyParts, chunk: ChatCompletionChunk) -> None:
    for choice in chunk.choices[:1]:
        delta = choice.delta
        parts.text.append(delta.content or "")
        parts.refusal.append(delta.refusal or "")
        for call in delta.tool_calls or []:
            function = call.function
            name, arguments = (function.name, function.arguments) if function else (None, None)
            parts.add_call(call.index, call.id, name, arguments)
        parts.finish_reason = choice.finish_reason or parts.finish_reason


def _usage(raw: CompletionUsage | None, price: Price | None) -> Usage:
    """Chat Completions counts cached tokens inside `prompt_tokens`; `Usage` keeps them apart,
    as the Messages API does, so one price table prices both. No usage reported (some local
    servers): the cost is unknown, never $0."""
    if raw is None:
        return Usage(cost_usd=None)
    details = raw.prompt_tokens_details
    read = (details.cached_tokens or 0) if details else 0
    written = (details.cache_write_tokens or 0) if details else 0
    usage = Usage(
        input_tokens=max(0, raw.prompt_tokens - read - written),
        output_tokens=raw.completion_tokens,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )
    usage.cost_usd = cost_of(usage, price)
    return usage


def _provider_fault(error: openai.APIStatusError) -> bool:
    """What the SDK retries (408, 409, 429, 5xx): the provider's trouble, not the request's."""
    status = error.status_code
    return status in (408, 409, 429) or status >= 500


def explain(error: openai.APIError) -> str:
    """What a person should read when the API failed after the SDK's retries."""
    if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
        return f"{NAME} rejected the key: check OPENAI_API_KEY (and OPENAI_BASE_URL)."
    if isinstance(error, openai.NotFoundError):
        return (
            f"{NAME} does not know the model or the address (404: {error.message}): check "
            "RESEARCH_BOT_OPENAI_MODEL, RESEARCH_BOT_OPENAI_FAST_MODEL and OPENAI_BASE_URL."
        )
    if isinstance(error, openai.RateLimitError):
        return (
            f"{NAME} is rate-limiting this key (429): wait a minute and try again, "
            "or raise the key's limits or spend cap."
        )
    if isinstance(error, openai.APITimeoutError):
        return f"{NAME} did not answer in time: try again in a few minutes."
    if isinstance(error, openai.APIConnectionError):
        return f"Could not reach {NAME}: check the network or OPENAI_BASE_URL."
    if isinstance(error, openai.APIStatusError) and error.status_code >= 500:
        return f"{NAME} is overloaded or failing ({error.status_code}): try again in a few minutes."
    if isinstance(error, openai.APIStatusError):
        return f"{NAME} refused the request ({error.status_code}): {error.message}"
    return f"{NAME} failed: {error.message}"
