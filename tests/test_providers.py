"""Model providers end to end: the real bot (`open_services`) with Anthropic, an OpenAI-compatible
API, or both, each through its real SDK against its fake; and which providers the settings make."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.agent.events import (
    Ending,
    ProviderSwitched,
    ReportReady,
    RunFinished,
    ToolFinished,
    UsageRecorded,
)
from bot.agent.trajectory import trajectory
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import Request
from bot.errors import ConfigError
from tests.conftest import TEST_MODEL, Recorder, world_env
from tests.fakes.anthropic_api import FakeAnthropic, error, reply_tools
from tests.fakes.openai_api import FakeOpenAI, Scripted, chat_error, chat_text, chat_tools
from tests.fakes.tavily_api import FakeTavily
from tests.fakes.web import ARTICLE_PATH, FakeWeb

LOCAL_MODEL = "qwen3:8b"
REPORT = """# Acme Robotics

## TL;DR
- Acme builds warehouse robots [1].

## Overview
Acme builds warehouse robots [1], as the article reports [2].
"""
CHECKS = {"record_finish_check": {"ready": True}, "record_verdicts": {"claims": []}}


async def checks(body: dict[str, Any]) -> Scripted:
    """The fast model's forced-tool answers (finish check, claim judge); nothing else."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and (name := choice["function"]["name"]) in CHECKS:
        return chat_tools([(name, CHECKS[name])], finish_reason="stop")
    return chat_error(500, "fake: no scripted reply")


@pytest.fixture
async def openai_api() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=None) as fake:  # a local server: any key, or none
        fake.responder = checks
        yield fake


async def research(services: Services) -> Recorder:
    recorder = Recorder()
    recorder.run = await services.runs.submit(Request(topic="Acme Robotics"), recorder)
    await asyncio.wait_for(recorder.finished.wait(), 20)
    return recorder


def usage_lines(recorder: Recorder) -> list[tuple[int, str]]:
    return [(e.turn, e.model) for e in recorder.events if isinstance(e, UsageRecorded)]


async def test_a_local_model_alone_runs_research_end_to_end_without_any_key(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    openai_api: FakeOpenAI,
    tavily: FakeTavily,
    web: FakeWeb,
) -> None:
    world = world_env(tmp_path, anthropic_api, tavily, web)
    del world["ANTHROPIC_API_KEY"]
    world |= {"OPENAI_BASE_URL": openai_api.url + "/v1", "RESEARCH_BOT_OPENAI_MODEL": LOCAL_MODEL}
    article = web.url + ARTICLE_PATH
    openai_api.script(
        chat_tools(
            [("web_search", {"query": "Acme Robotics"}), ("read_page", {"url": article})],
            text="Searching first.",
        ),
        chat_text(REPORT),
    )

    async with open_services(Settings.from_mapping(world)) as services:
        recorder = await research(services)

    finished = recorder.events[-1]
    assert isinstance(finished, RunFinished) and finished.ending is Ending.COMPLETED
    [ready] = [e for e in recorder.events if isinstance(e, ReportReady)]
    assert ready.report.sources and ready.report.title == "Acme Robotics"
    read = [e for e in recorder.events if isinstance(e, ToolFinished) and e.name == "read_page"]
    assert not read[0].is_error and article in [s.url for s in read[0].sources]
    assert {model for _, model in usage_lines(recorder)} == {f"openai:{LOCAL_MODEL}"}
    assert finished.usage.cost_usd is None  # a local model has no price: unknown, never $0
    assert anthropic_api.requests == []
    # The tool results went back as tool messages answering the calls (the fake checks it).
    assert [m["role"] for m in openai_api.requests[1]["messages"]][-3:] == [
        "assistant",
        "tool",
        "tool",
    ]
    assert "authorization" not in str(openai_api.requests).lower()


async def test_anthropic_down_mid_run_the_run_finishes_on_the_fallback_with_one_report(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    openai_api: FakeOpenAI,
    tavily: FakeTavily,
    web: FakeWeb,
) -> None:
    world = world_env(tmp_path, anthropic_api, tavily, web) | {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": openai_api.url + "/v1",
        "RESEARCH_BOT_OPENAI_FAST_MODEL": "gpt-4.1-nano",
    }
    article = web.url + ARTICLE_PATH
    anthropic_api.script(
        reply_tools([("web_search", {"query": "Acme Robotics"})]),
        error(529, "overloaded_error", "Overloaded", should_retry=False),
    )
    openai_api.script(chat_tools([("read_page", {"url": article})]), chat_text(REPORT))

    async with open_services(Settings.from_mapping(world)) as services:
        recorder = await research(services)
        stored = await services.store.events(recorder.run.run_id)

    finished = recorder.events[-1]
    assert isinstance(finished, RunFinished) and finished.ending is Ending.COMPLETED
    assert len([e for e in recorder.events if isinstance(e, ReportReady)]) == 1
    assert usage_lines(recorder) == [
        (1, f"anthropic:{TEST_MODEL}"),
        (2, "openai:gpt-4.1-mini"),
        (3, "openai:gpt-4.1-mini"),
        (3, "openai:gpt-4.1-nano"),  # the finish check: the fast model, OpenAI's own
        (3, "openai:gpt-4.1-nano"),  # the claim judge, on the same fast model
    ]
    # Turn 2 went over with the conversation translated: Anthropic's call, answered.
    turn_2 = openai_api.requests[0]["messages"]
    assert turn_2[-2]["tool_calls"][0]["id"] == turn_2[-1]["tool_call_id"]
    assert turn_2[-2]["tool_calls"][0]["id"].startswith("toolu_")
    # Anthropic was asked twice (turn 1, then the 529); the rest of the run went to OpenAI.
    assert len(anthropic_api.requests) == 2
    steps = trajectory(recorder.run.run_id, stored)  # what `show RUN_ID --trajectory` prints
    assert [t["model"] for t in steps["turns"]] == [
        f"anthropic:{TEST_MODEL}",
        "openai:gpt-4.1-mini",
        "openai:gpt-4.1-mini",
    ]
    # The switch is told once, as it happened, for the thread and the terminal to say.
    switched = [e for e in stored if isinstance(e, ProviderSwitched)]
    assert [(e.turn, e.previous, e.model) for e in switched] == [
        (2, f"anthropic:{TEST_MODEL}", "openai:gpt-4.1-mini")
    ]
    assert switched[0].message == (
        "Model provider switched: anthropic failed, so openai (gpt-4.1-mini) took over."
    )


async def test_a_request_anthropic_refuses_as_ours_to_fix_does_not_fall_over(
    tmp_path: Path,
    anthropic_api: FakeAnthropic,
    openai_api: FakeOpenAI,
    tavily: FakeTavily,
    web: FakeWeb,
) -> None:
    world = world_env(tmp_path, anthropic_api, tavily, web) | {"OPENAI_API_KEY": "sk-test"}
    world["OPENAI_BASE_URL"] = openai_api.url + "/v1"
    anthropic_api.script(error(400, "invalid_request_error", "messages: roles must alternate"))

    async with open_services(Settings.from_mapping(world)) as services:
        recorder = await research(services)

    finished = recorder.events[-1]
    assert isinstance(finished, RunFinished) and finished.ending is Ending.LLM_ERROR
    assert "refused the request (400)" in (finished.error or "")
    assert openai_api.requests == []


def settings(**values: str) -> Settings:
    return Settings.from_mapping(values)


async def test_with_no_provider_the_message_names_both_ways(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        async with open_services(settings(RESEARCH_BOT_DB=str(tmp_path / "db"))):
            pass
    message = str(raised.value)
    assert "ANTHROPIC_API_KEY" in message and "console.anthropic.com" in message
    assert "OPENAI_BASE_URL" in message and "OPENAI_API_KEY" in message


def test_providers_are_tried_in_the_order_given_among_those_configured() -> None:
    both = {"ANTHROPIC_API_KEY": "sk-a", "OPENAI_API_KEY": "sk-o"}
    assert settings(**both).provider_order() == ["anthropic", "openai"]
    assert settings(**both, RESEARCH_BOT_PROVIDERS="openai, anthropic").provider_order() == [
        "openai",
        "anthropic",
    ]
    assert settings(**both, RESEARCH_BOT_PROVIDERS="openai").provider_order() == ["openai"]
    assert settings(OPENAI_BASE_URL="http://localhost:11434/v1").provider_order() == ["openai"]
    assert settings(ANTHROPIC_API_KEY="sk-a", OPENAI_API_KEY="").provider_order() == ["anthropic"]
    with pytest.raises(ConfigError, match="names openai, which is not configured"):
        settings(
            ANTHROPIC_API_KEY="sk-a", RESEARCH_BOT_PROVIDERS="anthropic,openai"
        ).provider_order()


def test_only_the_models_of_configured_providers_need_a_price() -> None:
    local = settings(
        OPENAI_BASE_URL="http://localhost:11434/v1", RESEARCH_BOT_OPENAI_MODEL="llama3.1"
    )
    assert local.unpriced_models() == ["llama3.1"]
    assert settings(OPENAI_API_KEY="sk-o").unpriced_models() == []  # gpt-4.1-mini is priced
