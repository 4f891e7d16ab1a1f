"""The provider chain: Anthropic and an OpenAI-compatible API, each through its real SDK against
its fake, behind one port."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from bot.agent.models.fallback import ModelChain, Provider
from bot.agent.models.openai_compat import OpenAIModel
from bot.agent.models.port import AnthropicModel, ModelCall
from bot.agent.switches import ProviderWatch
from bot.config import DEFAULT_PRICES
from bot.errors import ContextOverflow, ModelError
from tests.conftest import FAST_MODEL, TEST_MODEL
from tests.fakes.anthropic_api import FakeAnthropic, error, prompt_too_long, reply_text
from tests.fakes.openai_api import FakeOpenAI, chat_error, chat_text

GPT, GPT_FAST = "gpt-4.1", "gpt-4.1-mini"
OVERLOADED = error(529, "overloaded_error", "Overloaded", should_retry=False)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def openai_api() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def chain(
    anthropic_api: FakeAnthropic, openai_api: FakeOpenAI, clock: Clock
) -> AsyncIterator[ModelChain]:
    async with (
        AsyncAnthropic(api_key="sk-test", base_url=anthropic_api.url, max_retries=0) as claude,
        AsyncOpenAI(api_key="sk-test", base_url=openai_api.url + "/v1", max_retries=0) as gpt,
    ):
        yield ModelChain(
            [
                Provider(
                    "anthropic",
                    AnthropicModel(claude, model=TEST_MODEL, prices=DEFAULT_PRICES),
                    TEST_MODEL,
                    FAST_MODEL,
                ),
                Provider(
                    "openai", OpenAIModel(gpt, model=GPT, prices=DEFAULT_PRICES), GPT, GPT_FAST
                ),
            ],
            clock=clock,
        )


def ask(model: str | None = None) -> ModelCall:
    return ModelCall(
        system=[{"type": "text", "text": "You research.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "Research Acme Robotics"}],
        max_tokens=500,
        timeout_s=5,
        model=model,
    )


async def test_an_overloaded_primary_hands_the_same_call_to_the_next_provider(
    chain: ModelChain, anthropic_api: FakeAnthropic, openai_api: FakeOpenAI
) -> None:
    anthropic_api.script(OVERLOADED)
    openai_api.script(chat_text("Acme builds robots."))

    reply = await chain.complete(ask())

    assert reply.text == "Acme builds robots." and reply.model == f"openai:{GPT}"
    assert reply.usage.cost_usd is not None and reply.usage.cost_usd > 0  # priced as gpt-4.1
    assert [m["role"] for m in openai_api.requests[0]["messages"]] == ["system", "user"]
    assert len(anthropic_api.requests) == 1


async def test_the_primary_serves_while_it_can_with_prompt_caching(
    chain: ModelChain, anthropic_api: FakeAnthropic, openai_api: FakeOpenAI
) -> None:
    anthropic_api.script(reply_text("ok"))
    reply = await chain.complete(ask())
    assert reply.model == f"anthropic:{TEST_MODEL}" and openai_api.requests == []
    assert anthropic_api.requests[0]["system"][0]["cache_control"] == {"type": "ephemeral"}


@pytest.mark.parametrize(
    "ours",
    [
        error(400, "invalid_request_error", "tools.0.input_schema: invalid"),
        error(401, "authentication_error", "invalid x-api-key"),
        error(404, "not_found_error", "model: claude-nope"),
    ],
)
async def test_a_request_that_is_ours_to_fix_does_not_fall_over(
    chain: ModelChain, anthropic_api: FakeAnthropic, openai_api: FakeOpenAI, ours: object
) -> None:
    anthropic_api.script(ours)  # type: ignore[arg-type]
    with pytest.raises(ModelError) as raised:
        await chain.complete(ask())
    assert not raised.value.provider_fault
    assert openai_api.requests == []


async def test_a_conversation_too_long_stays_a_context_overflow(
    chain: ModelChain, anthropic_api: FakeAnthropic, openai_api: FakeOpenAI
) -> None:
    anthropic_api.script(prompt_too_long())
    with pytest.raises(ContextOverflow):
        await chain.complete(ask())
    assert openai_api.requests == []


async def test_a_failed_provider_is_passed_over_for_a_while_then_first_again(
    chain: ModelChain, anthropic_api: FakeAnthropic, openai_api: FakeOpenAI, clock: Clock
) -> None:
    anthropic_api.script(OVERLOADED, reply_text("back"))
    openai_api.script(chat_text("one"), chat_text("two"))

    first = await chain.complete(ask())
    clock.now += 30
    second = await chain.complete(ask())
    clock.now += 31
    third = await chain.complete(ask())

    assert [first.text, second.text, third.text] == ["one", "two", "back"]
    assert [r.model.split(":")[0] for r in (first, second, third)] == [
        "openai",
        "openai",
        "anthropic",
    ]
    assert len(anthropic_api.requests) == 2 and len(openai_api.requests) == 2


async def test_each_provider_serves_a_fast_call_with_its_own_fast_model(
    chain: ModelChain, anthropic_api: FakeAnthropic, openai_api: FakeOpenAI
) -> None:
    anthropic_api.script(OVERLOADED)
    openai_api.script(chat_text("summary"))

    reply = await chain.complete(ask(chain.fast_model))

    assert chain.fast_model == FAST_MODEL and anthropic_api.requests[0]["model"] == FAST_MODEL
    assert openai_api.requests[0]["model"] == GPT_FAST and reply.model == f"openai:{GPT_FAST}"


async def test_when_every_provider_fails_the_error_tells_each_story(
    chain: ModelChain, anthropic_api: FakeAnthropic, openai_api: FakeOpenAI
) -> None:
    anthropic_api.script(OVERLOADED)
    openai_api.script(chat_error(503, "busy"))

    with pytest.raises(ModelError) as raised:
        await chain.complete(ask())

    message = str(raised.value)
    assert "Anthropic API is overloaded" in message and "OpenAI-compatible API is" in message
    assert raised.value.provider_fault


async def test_the_next_providers_own_mistake_is_raised_as_it_is(
    chain: ModelChain, anthropic_api: FakeAnthropic, openai_api: FakeOpenAI
) -> None:
    anthropic_api.script(OVERLOADED)
    openai_api.script(chat_error(401, "bad key", type="invalid_request_error"))

    with pytest.raises(ModelError, match="OPENAI_API_KEY") as raised:
        await chain.complete(ask())
    assert not raised.value.provider_fault


async def test_a_run_is_told_of_a_switch_once_per_provider_it_comes_to(
    chain: ModelChain, anthropic_api: FakeAnthropic, openai_api: FakeOpenAI, clock: Clock
) -> None:
    """A deep run's researchers share one watch: whichever call notices, it is told once."""
    anthropic_api.script(reply_text("one"), OVERLOADED, reply_text("back"))
    openai_api.script(chat_text("two"), chat_text("three"))
    watch = ProviderWatch()

    told = []
    for turn in (1, 2, 3, 4):
        if turn == 4:
            clock.now += 61  # anthropic is tried first again, and answers
        reply = await chain.complete(ask())
        told.append(watch.served(reply.model, turn))

    assert [e is not None for e in told] == [False, True, False, False]
    switched = told[1]
    assert switched is not None
    assert (switched.turn, switched.previous, switched.model) == (
        2,
        f"anthropic:{TEST_MODEL}",
        f"openai:{GPT}",
    )
    assert switched.message == (
        f"Model provider switched: anthropic failed, so openai ({GPT}) took over."
    )
    assert watch.served("claude-test", 5) is None  # a model not named by the chain
