"""The OpenAI-compatible port: the real openai SDK against the fake Chat Completions API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai import AsyncOpenAI

from bot.agent.models.openai_compat import OpenAIModel, OutputLimit
from bot.agent.models.port import ModelCall
from bot.config import Price
from bot.errors import ContextOverflow, ModelError
from tests.fakes.openai_api import (
    ChatReply,
    FakeOpenAI,
    chat_error,
    chat_text,
    chat_tools,
    context_too_long,
    cut,
)

MODEL = "gpt-4.1-mini"
PRICES = {MODEL: Price(input=0.40, output=1.60, cache_write=0.40, cache_read=0.10)}
CACHED = {"type": "ephemeral"}
SEARCH = {
    "name": "web_search",
    "description": "Search the web.",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    "cache_control": CACHED,
}


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def client(fake: FakeOpenAI) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(api_key="sk-test", base_url=fake.url + "/v1", max_retries=0) as sdk:
        yield sdk


def port(client: AsyncOpenAI, output_limit: OutputLimit = "max_tokens") -> OpenAIModel:
    return OpenAIModel(client, model=MODEL, prices=PRICES, output_limit=output_limit)


def call(messages: list[dict[str, Any]], **fields: Any) -> ModelCall:
    system = [{"type": "text", "text": "You research companies.", "cache_control": CACHED}]
    return ModelCall(
        system=system, messages=messages, tools=[SEARCH], max_tokens=500, timeout_s=5, **fields
    )


ASK = {"role": "user", "content": "Research Acme Robotics"}


async def test_a_conversation_of_tool_calls_and_results_becomes_chat_completions(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.script(chat_text("# Acme\n\nDone."))
    conversation = [
        ASK,
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Two searches."},
                {
                    "type": "tool_use",
                    "id": "toolu_01a",
                    "name": "web_search",
                    "input": {"query": "a"},
                },
                {"type": "tool_use", "id": "toolu_01b", "name": "web_search", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01a", "content": "found a"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01b",
                    "content": [{"type": "text", "text": "query is required"}],
                    "is_error": True,
                },
                {"type": "text", "text": "Now write it up.", "cache_control": CACHED},
            ],
        },
    ]

    reply = await port(client).complete(call(conversation, tool_choice={"type": "auto"}))

    sent = fake.requests[0]
    assert sent["messages"] == [
        {"role": "system", "content": "You research companies."},
        {"role": "user", "content": "Research Acme Robotics"},
        {
            "role": "assistant",
            "content": "Two searches.",
            "tool_calls": [
                {
                    "id": "toolu_01a",
                    "type": "function",
                    "function": {"name": "web_search", "arguments": '{"query": "a"}'},
                },
                {
                    "id": "toolu_01b",
                    "type": "function",
                    "function": {"name": "web_search", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_01a", "content": "found a"},
        {"role": "tool", "tool_call_id": "toolu_01b", "content": "Error: query is required"},
        {"role": "user", "content": "Now write it up."},
    ]
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "web_search",
                "description": "Search the web.",
                "parameters": SEARCH["input_schema"],
            },
        }
    ]
    assert sent["tool_choice"] == "auto" and sent["max_tokens"] == 500 and sent["model"] == MODEL
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert "cache_control" not in json.dumps(sent)
    assert reply.content == [{"type": "text", "text": "# Acme\n\nDone."}]
    assert reply.stop_reason == "end_turn" and reply.model == MODEL


async def test_tool_calls_come_back_as_tool_use_blocks_that_can_be_sent_again(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    calls = [("web_search", {"query": "acme funding"}), ("web_search", {"query": "acme ceo"})]
    fake.script(chat_tools(calls, text="Searching twice."), chat_text("ok"))
    model = port(client)

    first = await model.complete(call([ASK]))

    assert first.stop_reason == "tool_use" and first.text == "Searching twice."
    assert [(u.name, u.input) for u in first.tool_uses] == calls
    results = [
        {"type": "tool_result", "tool_use_id": u.id, "content": f"result {n}"}
        for n, u in enumerate(first.tool_uses)
    ]
    conversation = [ASK, {"role": "assistant", "content": first.content}]
    second = await model.complete(call([*conversation, {"role": "user", "content": results}]))

    # The fake, like the real API, refuses tool messages that do not answer the calls.
    assert second.text == "ok"
    sent_ids = [c["id"] for c in fake.requests[1]["messages"][2]["tool_calls"]]
    answered = [m["tool_call_id"] for m in fake.requests[1]["messages"][3:]]
    assert sent_ids == answered == [u.id for u in first.tool_uses]


async def test_a_forced_tool_is_a_named_function_and_its_stop_finish_is_still_a_tool_use(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.script(chat_tools([("web_search", {"query": "x"})], finish_reason="stop"), chat_text("no"))
    model = port(client)

    forced = await model.complete(call([ASK], tool_choice={"type": "tool", "name": "web_search"}))
    await model.complete(call([ASK], tool_choice={"type": "none"}))

    assert fake.requests[0]["tool_choice"] == {
        "type": "function",
        "function": {"name": "web_search"},
    }
    assert forced.stop_reason == "tool_use" and forced.tool_uses[0].input == {"query": "x"}
    assert fake.requests[1]["tool_choice"] == "none"


@pytest.mark.parametrize(
    ("scripted", "stop_reason"),
    [
        (chat_text("cut off", "length"), "max_tokens"),
        (chat_text("", "content_filter"), "refusal"),
        (ChatReply(refusal="I can't help with that."), "refusal"),
        (chat_tools([("web_search", {"query": "half"})], finish_reason="length"), "max_tokens"),
    ],
)
async def test_finish_reasons_become_the_loops_stop_reasons(
    fake: FakeOpenAI, client: AsyncOpenAI, scripted: ChatReply, stop_reason: str
) -> None:
    fake.script(scripted)
    reply = await port(client).complete(call([ASK]))
    assert reply.stop_reason == stop_reason


async def test_cached_tokens_are_counted_apart_and_priced(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.script(chat_text("ok", cached_tokens=40), ChatReply(text="ok", report_usage=False))
    model = port(client)

    priced = await model.complete(call([ASK]))
    unreported = await model.complete(call([ASK]))
    unpriced = OpenAIModel(client, model="llama3.1", prices=PRICES)
    fake.script(chat_text("ok"))
    local = await unpriced.complete(call([ASK]))

    used = priced.usage
    assert used.cache_read_tokens == 40 and used.input_tokens > 0 and used.output_tokens > 0
    expected = (used.input_tokens * 0.40 + used.output_tokens * 1.60 + 40 * 0.10) / 1e6
    assert used.cost_usd == pytest.approx(expected)
    assert unreported.usage.cost_usd is None  # unknown, never $0
    assert local.usage.cost_usd is None and local.model == "llama3.1"


async def test_the_output_limit_goes_in_the_field_the_server_reads(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.script(chat_text("ok"))
    await port(client, "max_completion_tokens").complete(call([ASK]))
    assert fake.requests[0]["max_completion_tokens"] == 500 and "max_tokens" not in fake.requests[0]


@pytest.mark.parametrize(
    ("scripted", "provider_fault", "says"),
    [
        (chat_error(500, "boom"), True, "overloaded or failing (500)"),
        (chat_error(503, "busy"), True, "overloaded or failing (503)"),
        (chat_error(429, "slow down", type="rate_limit_error"), True, "rate-limiting"),
        (cut(chat_text("a long reply that breaks"), after=2), True, "part-way through a reply"),
        (chat_error(401, "bad key", type="invalid_request_error"), False, "OPENAI_API_KEY"),
        (chat_error(404, "model not found"), False, "RESEARCH_BOT_OPENAI_MODEL"),
        (chat_error(400, "bad schema", type="invalid_request_error"), False, "refused"),
    ],
)
async def test_failures_say_what_to_do_and_whether_another_provider_may_answer(
    fake: FakeOpenAI, client: AsyncOpenAI, scripted: Any, provider_fault: bool, says: str
) -> None:
    fake.script(scripted)
    with pytest.raises(ModelError) as raised:
        await port(client).complete(call([ASK]))
    assert raised.value.provider_fault is provider_fault
    assert says in str(raised.value)


async def test_a_conversation_too_long_is_a_context_overflow(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.script(context_too_long())
    with pytest.raises(ContextOverflow) as raised:
        await port(client).complete(call([ASK]))
    assert not raised.value.provider_fault


async def test_a_server_that_is_not_there_is_the_providers_fault() -> None:
    async with FakeOpenAI() as gone:
        url = gone.url
    async with AsyncOpenAI(api_key="k", base_url=url + "/v1", max_retries=0) as sdk:
        with pytest.raises(ModelError, match="OPENAI_BASE_URL") as raised:
            await port(sdk).complete(call([ASK]))
    assert raised.value.provider_fault
