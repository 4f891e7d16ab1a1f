"""The model providers the settings configure, each with its own SDK client (created once,
closed with the services), behind one `ModelChain` in RESEARCH_BOT_PROVIDERS order."""

from __future__ import annotations

from contextlib import AsyncExitStack

from anthropic import AsyncAnthropic, DefaultAioHttpClient

from bot.agent.models.fallback import ModelChain, Provider
from bot.agent.models.port import AnthropicModel
from bot.config import Settings
from bot.errors import ConfigError

OPENAI_URL = "https://api.openai.com/v1"
NO_KEY = "no-key"
"""What a local server that wants no key is sent (the SDK requires one)."""
KEY_HELP = (
    "No model provider is configured. Either set ANTHROPIC_API_KEY: create a key at "
    "https://console.anthropic.com/ (Settings → API keys). Or use an OpenAI-compatible API: "
    "OPENAI_API_KEY for OpenAI itself, or OPENAI_BASE_URL alone for a local model with no key "
    "at all (Ollama: OPENAI_BASE_URL=http://localhost:11434/v1 RESEARCH_BOT_OPENAI_MODEL="
    "qwen3:8b). `export` them or put them in .env."
)


def model_chain(settings: Settings, stack: AsyncExitStack) -> ModelChain:
    """The configured providers, first one primary; their clients close with `stack`.
    Each SDK's own retries are its provider's one retry policy; its timeout is per request,
    and the loop also bounds each call by what is left of the run's deadline."""
    order = settings.provider_order()
    if not order:
        raise ConfigError(KEY_HELP)
    build = {"anthropic": _anthropic, "openai": _openai}
    return ModelChain([build[name](settings, stack) for name in order])


def _anthropic(settings: Settings, stack: AsyncExitStack) -> Provider:
    key = settings.anthropic_api_key
    client = AsyncAnthropic(
        api_key=key.get_secret_value() if key is not None else None,
        base_url=settings.anthropic_base_url,
        timeout=settings.model_timeout_s,
        max_retries=settings.model_max_retries,
        # The SDK's aiohttp transport: httpx2's pool checks every idle connection with two
        # syscalls at each request's start and end, a quarter of the bot's CPU with 100 runs
        # at once (bench/scale.py); aiohttp's pool does not.
        http_client=DefaultAioHttpClient(),
    )
    stack.push_async_callback(client.close)
    port = AnthropicModel(client, model=settings.model, prices=settings.prices)
    return Provider("anthropic", port, settings.model, settings.fast_model)


def _openai(settings: Settings, stack: AsyncExitStack) -> Provider:
    # Imported only when configured: the OpenAI SDK takes about 30 MB of every process that
    # loads it, and most deployments never call it (bench/serve.py).
    from openai import AsyncOpenAI

    from bot.agent.models.openai_compat import OpenAIModel, OutputLimit

    key = settings.openai_api_key
    client = AsyncOpenAI(
        api_key=key.get_secret_value() if key is not None else NO_KEY,
        base_url=settings.openai_base_url or OPENAI_URL,
        timeout=settings.model_timeout_s,
        max_retries=settings.model_max_retries,
    )
    stack.push_async_callback(client.close)
    # OpenAI's own API reads max_completion_tokens; servers that copy its API read max_tokens.
    limit: OutputLimit = "max_tokens" if settings.openai_base_url else "max_completion_tokens"
    model = settings.openai_model
    port = OpenAIModel(client, model=model, prices=settings.prices, output_limit=limit)
    return Provider("openai", port, model, settings.openai_fast())
