"""Tests of the fake Messages API, driven by the real anthropic SDK."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import anthropic
import httpx2
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import (
    CacheControlEphemeralParam,
    Message,
    MessageParam,
    TextBlock,
    TextBlockParam,
    ToolParam,
    ToolUseBlock,
)

from tests.fakes.anthropic_api import (
    FakeAnthropic,
    Scripted,
    dropped,
    error,
    prompt_too_long,
    reply,
    reply_text,
    reply_tools,
    stalled,
    stream_error,
)

MODEL = "claude-sonnet-4-6"
USER: list[MessageParam] = [{"role": "user", "content": "Research Acme Robotics"}]
# About 1,500 estimated tokens: above the default 1,024-token minimum cacheable prefix.
LONG_SYSTEM = "You are a careful research assistant. " * 160


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


def client(fake: FakeAnthropic, *, api_key: str = "sk-test", retries: int = 0) -> AsyncAnthropic:
    return AsyncAnthropic(api_key=api_key, base_url=fake.url, max_retries=retries, timeout=5.0)


def cached_system(text: str = LONG_SYSTEM) -> list[TextBlockParam]:
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


async def test_text_reply_and_recorded_request(fake: FakeAnthropic) -> None:
    fake.script(reply_text("Acme makes robots."))
    async with client(fake) as sdk:
        message = await sdk.messages.create(
            model=MODEL, max_tokens=512, system="Be brief.", messages=USER
        )
    assert message.content == [TextBlock(type="text", text="Acme makes robots.")]
    assert message.stop_reason == "end_turn"
    assert message.id.startswith("msg_01")
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens > 0
    assert message.usage.cache_read_input_tokens == 0
    assert fake.requests == [
        {"model": MODEL, "max_tokens": 512, "system": "Be brief.", "messages": USER}
    ]


async def test_parallel_tool_use_blocks(fake: FakeAnthropic) -> None:
    scripted = reply_tools(
        [("web_search", {"query": "acme"}), ("read_page", {"url": "https://acme.test/"})],
        text="Let me search",
    )
    fake.script(scripted)
    tools: list[ToolParam] = [
        {"name": "web_search", "description": "d", "input_schema": {"type": "object"}}
    ]
    async with client(fake) as sdk:
        message = await sdk.messages.create(
            model=MODEL, max_tokens=512, messages=USER, tools=tools, tool_choice={"type": "auto"}
        )
    assert message.stop_reason == "tool_use"
    text, *calls = message.content
    assert text == TextBlock(type="text", text="Let me search")
    assert all(isinstance(call, ToolUseBlock) for call in calls)
    assert [(c.name, c.input) for c in calls if isinstance(c, ToolUseBlock)] == [
        ("web_search", {"query": "acme"}),
        ("read_page", {"url": "https://acme.test/"}),
    ]
    assert [c.id for c in calls if isinstance(c, ToolUseBlock)] == [
        b["id"] for b in scripted.content[1:]
    ]
    assert all(b["id"].startswith("toolu_01") for b in scripted.content[1:])
    assert fake.requests[0]["tools"] == tools
    assert fake.requests[0]["tool_choice"] == {"type": "auto"}


@pytest.mark.parametrize(
    "scripted",
    [
        reply_text("A longer answer that spans several stream chunks. " * 3),
        reply_tools([("web_search", {"query": "acme", "max_results": 5})], text="Searching"),
        reply([{"type": "text", "text": ""}], "max_tokens"),
        reply([], "refusal"),
    ],
)
async def test_stream_rebuilds_the_same_message(fake: FakeAnthropic, scripted: Scripted) -> None:
    fake.script(scripted, scripted)
    async with client(fake) as sdk:
        plain = await sdk.messages.create(model=MODEL, max_tokens=512, messages=USER)
        async with sdk.messages.stream(model=MODEL, max_tokens=512, messages=USER) as stream:
            streamed = await stream.get_final_message()
    assert fake.requests[1]["stream"] is True
    assert isinstance(streamed, Message)
    assert streamed.model_dump(exclude={"id"}) == plain.model_dump(exclude={"id"})


async def test_raw_stream_event_order(fake: FakeAnthropic) -> None:
    fake.script(reply_tools([("web_search", {"query": "acme"})]))
    async with client(fake) as sdk:
        events = await sdk.messages.create(model=MODEL, max_tokens=64, messages=USER, stream=True)
        kinds = [event.type async for event in events]
    assert kinds[0] == "message_start"
    assert kinds[1:3] == ["content_block_start", "content_block_delta"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]


async def test_rate_limit_retry_after_is_honoured(fake: FakeAnthropic) -> None:
    # retry-after must be > 0 for the SDK to use it (0 falls back to its ~0.5 s backoff).
    fake.script(error(429, "rate_limit_error", "slow down", retry_after=0.001), reply_text("ok"))
    async with client(fake, retries=1) as sdk:
        message = await sdk.messages.create(model=MODEL, max_tokens=64, messages=USER)
    assert message.content == [TextBlock(type="text", text="ok")]
    assert len(fake.requests) == 2


async def test_rate_limit_error_shape_and_headers(fake: FakeAnthropic) -> None:
    fake.script(error(429, "rate_limit_error", "slow down", retry_after=30))
    async with client(fake) as sdk:
        with pytest.raises(anthropic.RateLimitError) as caught:
            await sdk.messages.create(model=MODEL, max_tokens=64, messages=USER)
    assert caught.value.response.headers["retry-after"] == "30"
    assert caught.value.request_id is not None
    assert caught.value.request_id.startswith("req_01")
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"] == {"type": "rate_limit_error", "message": "slow down"}


async def test_overloaded_surfaces_as_status_error(fake: FakeAnthropic) -> None:
    fake.script(error(529, "overloaded_error", "Overloaded"))
    async with client(fake) as sdk:
        with pytest.raises(anthropic.OverloadedError) as caught:
            await sdk.messages.create(model=MODEL, max_tokens=64, messages=USER)
    assert isinstance(caught.value, anthropic.APIStatusError)
    assert caught.value.status_code == 529


async def test_wrong_api_key_is_rejected(fake: FakeAnthropic) -> None:
    fake.script(reply_text("never sent"))
    async with client(fake, api_key="sk-wrong") as sdk:
        with pytest.raises(anthropic.AuthenticationError) as caught:
            await sdk.messages.create(model=MODEL, max_tokens=64, messages=USER)
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"]["type"] == "authentication_error"
    assert fake.requests == []


async def test_missing_version_header_is_rejected(fake: FakeAnthropic) -> None:
    payload = {"model": MODEL, "max_tokens": 64, "messages": USER}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{fake.url}/v1/messages", json=payload, headers={"x-api-key": "sk-test"}) as r,
    ):
        assert r.status == 400
        body = await r.json()
    assert body["error"]["type"] == "invalid_request_error"


async def test_unscripted_call_fails_at_once(fake: FakeAnthropic) -> None:
    async with client(fake, retries=2) as sdk:
        with pytest.raises(anthropic.InternalServerError, match="no scripted reply"):
            await sdk.messages.create(model=MODEL, max_tokens=64, messages=USER)
    assert len(fake.requests) == 1


async def test_responder_decides_per_request(fake: FakeAnthropic) -> None:
    async def answer(body: dict[str, Any]) -> Scripted:
        if body.get("tool_choice") == {"type": "none"}:
            return reply_text("Final report")
        return reply_tools([("web_search", {"query": "acme"})])

    fake.responder = answer
    async with client(fake) as sdk:
        turn = await sdk.messages.create(model=MODEL, max_tokens=64, messages=USER)
        final = await sdk.messages.create(
            model=MODEL, max_tokens=64, messages=USER, tool_choice={"type": "none"}
        )
    assert turn.stop_reason == "tool_use"
    assert final.content == [TextBlock(type="text", text="Final report")]


@pytest.mark.parametrize("stop_reason", ["pause_turn", "model_context_window_exceeded", "new"])
async def test_any_stop_reason_passes_through(fake: FakeAnthropic, stop_reason: str) -> None:
    fake.script(reply([{"type": "text", "text": "partial"}], stop_reason))
    async with client(fake) as sdk:
        message = await sdk.messages.create(model=MODEL, max_tokens=64, messages=USER)
    assert message.stop_reason == stop_reason


async def test_cache_read_on_second_call_with_same_prefix(fake: FakeAnthropic) -> None:
    fake.script(reply_text("one"), reply_text("two"))
    longer: list[MessageParam] = [
        *USER,
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "go"},
    ]
    async with client(fake) as sdk:
        first = await sdk.messages.create(
            model=MODEL, max_tokens=64, system=cached_system(), messages=USER
        )
        second = await sdk.messages.create(
            model=MODEL, max_tokens=64, system=cached_system(), messages=longer
        )
    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation_input_tokens is not None
    assert first.usage.cache_creation_input_tokens > 1024
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
    assert second.usage.input_tokens > first.usage.input_tokens
    assert fake.requests[0]["system"][0]["cache_control"] == {"type": "ephemeral"}


async def test_cache_follows_the_growing_conversation(fake: FakeAnthropic) -> None:
    async def answer(body: dict[str, Any]) -> Scripted:
        return reply_text("ok")

    fake.responder = answer
    mark: CacheControlEphemeralParam = {"type": "ephemeral"}
    note: TextBlockParam = {"type": "text", "text": "notes " * 40, "cache_control": mark}
    turn_one: list[MessageParam] = [{"role": "user", "content": [note]}]
    more: TextBlockParam = {"type": "text", "text": "more " * 40, "cache_control": mark}
    turn_two: list[MessageParam] = [
        {"role": "user", "content": [{"type": "text", "text": note["text"]}]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [more]},
    ]
    async with client(fake) as sdk:
        kwargs: Any = {"model": MODEL, "max_tokens": 64, "system": cached_system()}
        first = await sdk.messages.create(messages=turn_one, **kwargs)
        second = await sdk.messages.create(messages=turn_two, **kwargs)
        final = await sdk.messages.create(messages=turn_two, tool_choice={"type": "none"}, **kwargs)
    # The second turn's breakpoint moved on; the lookback still finds the first one.
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens
    # A new tool_choice re-buys the conversation but still reads tools and system.
    assert final.usage.cache_read_input_tokens
    assert final.usage.cache_read_input_tokens < (second.usage.cache_read_input_tokens or 0)


async def test_short_prefix_is_not_cached(fake: FakeAnthropic) -> None:
    fake.script(reply_text("one"), reply_text("two"))
    async with client(fake) as sdk:
        for _ in range(2):
            message = await sdk.messages.create(
                model=MODEL, max_tokens=64, system=cached_system("Short."), messages=USER
            )
            assert message.usage.cache_creation_input_tokens == 0
            assert message.usage.cache_read_input_tokens == 0


async def test_more_than_four_breakpoints_is_a_bad_request(fake: FakeAnthropic) -> None:
    fake.script(reply_text("never sent"))
    system: list[TextBlockParam] = [
        {"type": "text", "text": f"part {i}", "cache_control": {"type": "ephemeral"}}
        for i in range(5)
    ]
    async with client(fake) as sdk:
        with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
            await sdk.messages.create(model=MODEL, max_tokens=64, system=system, messages=USER)


async def test_cancelled_call_is_seen_by_the_fake(fake: FakeAnthropic) -> None:
    gate = fake.hold()
    fake.script(reply_text("too late"))
    async with client(fake) as sdk:
        call = asyncio.create_task(sdk.messages.create(model=MODEL, max_tokens=64, messages=USER))
        await fake.wait_for_requests(1)
        call.cancel()
        await fake.wait_for_cancelled(1)
        with pytest.raises(asyncio.CancelledError):
            await call
    gate.set()
    assert fake.cancelled == 1


async def test_count_tokens(fake: FakeAnthropic) -> None:
    async with client(fake) as sdk:
        counted = await sdk.messages.count_tokens(model=MODEL, messages=USER)
    assert counted.input_tokens > 0
    assert fake.requests == []


async def final_message(sdk: AsyncAnthropic) -> Message:
    async with sdk.messages.stream(model=MODEL, max_tokens=64, messages=USER) as stream:
        return await stream.get_final_message()


async def test_dropped_stream_delivers_some_events_then_the_transport_error(
    fake: FakeAnthropic,
) -> None:
    fake.script(dropped(reply_text("A reply long enough for several deltas. " * 3), after=3))
    seen: list[str] = []

    async def read_all() -> None:
        stream = await sdk.messages.create(model=MODEL, max_tokens=64, messages=USER, stream=True)
        async for event in stream:
            seen.append(event.type)

    async with client(fake, retries=2) as sdk:
        with pytest.raises(httpx2.RemoteProtocolError):
            await read_all()
    # ping is not surfaced; the SDK does not retry a stream that had started.
    assert seen == ["message_start", "content_block_start"]
    assert len(fake.requests) == 1


async def test_error_event_mid_stream(fake: FakeAnthropic) -> None:
    fake.script(stream_error("overloaded_error", "Overloaded"))
    async with client(fake, retries=2) as sdk:
        with pytest.raises(anthropic.APIStatusError) as caught:
            await final_message(sdk)
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    assert len(fake.requests) == 1


async def test_stalled_stream_times_out_mid_reply(fake: FakeAnthropic) -> None:
    fake.script(stalled(reply_text("slow"), after=2, stall_s=30))
    sdk = AsyncAnthropic(api_key="sk-test", base_url=fake.url, max_retries=2, timeout=0.2)
    async with sdk:
        with pytest.raises(httpx2.ReadTimeout):
            await final_message(sdk)
        await fake.wait_for_cancelled(1)
    assert len(fake.requests) == 1


async def test_prompt_too_long_is_the_real_bad_request(fake: FakeAnthropic) -> None:
    fake.script(prompt_too_long())
    async with client(fake) as sdk:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await sdk.messages.create(model=MODEL, max_tokens=64, messages=USER)
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"] == {
        "type": "invalid_request_error",
        "message": "prompt is too long: 250000 tokens > 200000 maximum",
    }
