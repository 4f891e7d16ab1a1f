"""Tests of the fake Chat Completions API, driven by the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI

from tests.fakes.openai_api import FakeOpenAI, chat_error, chat_text, chat_tools

MODEL = "gpt-4.1-mini"
USER: Any = [{"role": "user", "content": "Research Acme Robotics"}]
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "web_search",
            "description": "Search the web.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
]


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def client(fake: FakeOpenAI, *, api_key: str = "sk-test", retries: int = 0) -> AsyncOpenAI:
    return AsyncOpenAI(api_key=api_key, base_url=fake.url + "/v1", max_retries=retries, timeout=5.0)


async def test_a_json_reply_carries_tool_calls_and_usage(fake: FakeOpenAI) -> None:
    fake.script(chat_tools([("web_search", {"query": "acme"})], text="Searching."))
    async with client(fake) as sdk:
        completion = await sdk.chat.completions.create(model=MODEL, messages=USER, tools=TOOLS)

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Searching."
    call = (choice.message.tool_calls or [])[0]
    assert call.type == "function" and call.function.name == "web_search"
    assert json.loads(call.function.arguments) == {"query": "acme"}
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    assert fake.requests[0]["model"] == MODEL


async def test_a_stream_rebuilds_into_the_same_reply_with_usage_last(fake: FakeOpenAI) -> None:
    fake.script(chat_tools([("web_search", {"query": "acme robotics funding"})]))
    async with client(fake) as sdk:
        stream = await sdk.chat.completions.create(
            model=MODEL,
            messages=USER,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]

    arguments = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments or ""
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls and c.choices[0].delta.tool_calls[0].function
    )
    assert json.loads(arguments) == {"query": "acme robotics funding"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


async def test_tool_messages_must_answer_every_call(fake: FakeOpenAI) -> None:
    unanswered: Any = [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
            ],
        },
        {"role": "user", "content": "go on"},
    ]
    async with client(fake) as sdk:
        with pytest.raises(openai.BadRequestError, match="call_1"):
            await sdk.chat.completions.create(model=MODEL, messages=unanswered)
    assert fake.requests == []


async def test_errors_speak_the_wire_format_and_headers_the_sdk_obeys(fake: FakeOpenAI) -> None:
    fake.script(chat_error(503, "overloaded", should_retry=True), chat_text("ok"))
    async with client(fake, retries=1) as sdk, client(fake, api_key="wrong") as wrong:
        completion = await sdk.chat.completions.create(model=MODEL, messages=USER)
        assert completion.choices[0].message.content == "ok"
        with pytest.raises(openai.AuthenticationError):
            await wrong.chat.completions.create(model=MODEL, messages=USER)
        with pytest.raises(openai.InternalServerError, match="no scripted reply"):
            await sdk.chat.completions.create(model=MODEL, messages=USER)
    assert len(fake.requests) == 3
