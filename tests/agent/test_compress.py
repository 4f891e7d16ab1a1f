"""The condenser (seed 003) against the fake Messages API through the real SDK: the prompt states
the length it wants and what must survive, and the tool result's heading says when its text was
condensed or cut."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from anthropic import AsyncAnthropic

from bot.agent.compress import Compressor
from bot.agent.events import ToolFinished
from bot.agent.models.port import AnthropicModel
from bot.compose import open_services
from bot.config import Settings
from bot.domain import Request
from tests.conftest import FAST_MODEL, Recorder
from tests.fakes.anthropic_api import FakeAnthropic, error, reply_text, reply_tools
from tests.fakes.web import ARTICLE_PATH, FakeWeb

LONG = "Acme Robotics raised $40 million on 2 May 2024 [3]. " * 200  # 10,400 characters


@pytest.fixture
async def compressor(anthropic_api: FakeAnthropic) -> AsyncIterator[Compressor]:
    async with AsyncAnthropic(
        api_key="sk-test", base_url=anthropic_api.url, max_retries=0
    ) as client:
        model = AnthropicModel(client, model=FAST_MODEL, prices={})
        yield Compressor(model, fast_model=FAST_MODEL, threshold_tokens=1_000, timeout_s=5)


def sent(anthropic_api: FakeAnthropic) -> tuple[str, str, int]:
    """(system, user message, max_tokens) of the one request the condenser made."""
    [body] = anthropic_api.requests
    system = body["system"][0]["text"]
    content = body["messages"][0]["content"]
    message = content if isinstance(content, str) else content[0]["text"]
    return system, message, body["max_tokens"]


async def test_a_page_is_condensed_to_a_stated_length_keeping_dates_and_units(
    compressor: Compressor, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(reply_text("Acme raised $40 million on 2 May 2024."))

    (text, shortened, _, _), note = await compressor.condense(LONG, goal="Acme", tool="read_page")

    system, message, max_tokens = sent(anthropic_api)
    assert max_tokens == 500 and "in at most 250 words" in message
    assert "dates, figures with their units" in system
    assert "[n] citation" not in message  # a web page has none of ours to keep
    assert (text, shortened) == ("Acme raised $40 million on 2 May 2024.", True)
    assert note == f"(condensed from {len(LONG):,} characters)"


async def test_findings_and_drafts_keep_every_citation_and_frame_line(
    compressor: Compressor, anthropic_api: FakeAnthropic
) -> None:
    finding = "### Researcher 2: Funding\nConfidence: high. Pages read: [3].\n" + LONG
    anthropic_api.script(reply_text("### Researcher 2: Funding\n$40M [3]."))

    await compressor.compress(finding, goal="Acme", tool="finding")

    _, message, _ = sent(anthropic_api)
    assert "keep every [n] citation beside the claim it supports" in message
    assert "frame lines (lines starting with #, Confidence:, Pages read:) word for word" in message


async def test_a_summary_stopped_at_its_limit_or_a_failed_one_says_so(
    compressor: Compressor, anthropic_api: FakeAnthropic
) -> None:
    anthropic_api.script(
        reply_text("Acme raised", stop_reason="max_tokens"),
        error(500, "api_error", "fake: down", should_retry=False),
    )

    _, stopped = await compressor.condense(LONG, goal="Acme", tool="read_page")
    (text, shortened, _, _), cut = await compressor.condense(LONG, goal="Acme", tool="read_page")

    assert stopped == (
        f"(condensed from {len(LONG):,} characters; the summary stops at its 500-token limit)"
    )
    assert cut == f"(cut at 4,000 of {len(LONG):,} characters: it could not be condensed)"
    assert shortened and len(text) < 4_100


async def test_short_text_is_left_alone_without_a_note(
    compressor: Compressor, anthropic_api: FakeAnthropic
) -> None:
    (text, shortened, _, _), note = await compressor.condense("Short.", goal="Acme", tool="x")

    assert (text, shortened, note) == ("Short.", False, "")
    assert anthropic_api.requests == []


async def test_the_page_heading_the_model_reads_says_its_text_was_condensed(
    settings: Settings, anthropic_api: FakeAnthropic, web: FakeWeb
) -> None:
    async def answer(body: dict[str, Any]) -> Any:
        if body["model"] == FAST_MODEL:
            return reply_text("Acme raised $40 million in a Series B.")
        return reply_text("# Acme\n\n## TL;DR\nAcme raised $40 million [1].")

    anthropic_api.responder = answer
    anthropic_api.script(reply_tools([("read_page", {"url": web.url + ARTICLE_PATH})]))
    recorder = Recorder()
    async with open_services(settings.model_copy(update={"compress_threshold_tokens": 100})) as bot:
        await bot.runs.submit(Request(topic="Acme Robotics"), recorder)
        await recorder.finished.wait()

    told = next(e for e in recorder.events if isinstance(e, ToolFinished))
    heading, fenced = told.content.split("\n", 1)
    assert re.fullmatch(
        r"\[1\] The page's title, address and text \(condensed from \d[\d,]+ characters\):",
        heading,
    ), heading
    assert fenced.startswith("<web_content>") and "Series B" in fenced
    read = [
        block["content"]
        for request in anthropic_api.requests
        for message in request["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert read and read[0].startswith(heading + "\n<web_content>")  # what the model was given
