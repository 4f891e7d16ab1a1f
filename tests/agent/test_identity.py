"""The identity step when it cannot tell: a search that fails, a model that answers malformed
or not at all; and what it keeps of the model's words. The run always goes on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from bot.agent.events import Ending, IdentitySettled, Notice
from bot.agent.web.search import SearchChain, TavilySearch
from bot.compose import Services, open_services
from bot.config import Settings
from bot.domain import IDENTITY_FIELD_CHARS, Request
from tests.conftest import FAST_MODEL, TEST_MODEL, Recorder
from tests.fakes.anthropic_api import FakeAnthropic, Scripted, error, reply_text, reply_tools
from tests.fakes.tavily_api import FakeTavily

REPORT = "# Acme Robotics\n\n## TL;DR\nFound it [1]."
UNSETTLED = "Could not tell which company Acme Robotics is ({why}): researching the name as given."


@asynccontextmanager
async def bot(settings: Settings, tavily: FakeTavily) -> AsyncIterator[Services]:
    """The bot with the identity step on, searching Tavily alone (no key-less fallback)."""
    key = "tvly-test"
    async with (
        SearchChain([TavilySearch(key, tavily.url, timeout_s=5)]) as search,
        open_services(settings.model_copy(update={"identify": True}), search=search) as services,
    ):
        yield services


async def research(services: Services) -> Recorder:
    recorder = Recorder()
    await services.runs.submit(Request(topic="Acme Robotics"), recorder)
    await recorder.finished.wait()
    return recorder


def notices(recorder: Recorder) -> list[str]:
    return [e.message for e in recorder.events if isinstance(e, Notice)]


@pytest.mark.parametrize("status", [500, 429])
async def test_a_failed_search_leaves_the_name_as_given(
    settings: Settings, anthropic_api: FakeAnthropic, tavily: FakeTavily, status: int
) -> None:
    tavily.fail_next(status)
    anthropic_api.script(reply_text(REPORT))
    async with bot(settings, tavily) as services:
        recorder = await research(services)

    assert tavily.requests[0].status == status
    assert UNSETTLED.format(why="the search failed") in notices(recorder)
    assert [r["model"] for r in anthropic_api.requests] == [TEST_MODEL]  # no identity call
    assert "The company researched" not in str(anthropic_api.requests[0]["system"])
    assert not any(isinstance(e, IdentitySettled) for e in recorder.events)
    assert recorder.outcome.ending is Ending.COMPLETED


MALFORMED = reply_tools([("name_company", {"candidates": []})])


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param([MALFORMED, MALFORMED], id="malformed-twice"),
        pytest.param([reply_text("It is probably Acme.")] * 2, id="no-tool-call"),
        pytest.param([error(500, "api_error", "Internal server error")], id="model-error"),
    ],
)
async def test_a_model_that_cannot_name_it_leaves_the_name_as_given(
    settings: Settings, anthropic_api: FakeAnthropic, tavily: FakeTavily, answers: list[Scripted]
) -> None:
    anthropic_api.script(*answers, reply_text(REPORT))
    async with bot(settings, tavily) as services:
        recorder = await research(services)

    models = [r["model"] for r in anthropic_api.requests]
    assert models == [FAST_MODEL] * len(answers) + [TEST_MODEL]
    why = "the model could not tell from the search results"
    assert UNSETTLED.format(why=why) in notices(recorder)
    assert "The company researched" not in str(anthropic_api.requests[-1]["system"])
    assert recorder.outcome.ending is Ending.COMPLETED


async def test_the_models_names_are_stripped_and_clipped(
    settings: Settings, anthropic_api: FakeAnthropic, tavily: FakeTavily
) -> None:
    sneaky = {
        "name": "\x1b]8;;https://evil.example\x07Acme\x1b]8;;\x07\n  Robotics\u202e",
        "website": "acme-robotics.com\x1b[2J",
        "description": "Robots. " * 100,
    }
    blank = {"name": " \x07 "}
    anthropic_api.script(
        reply_tools([("name_company", {"candidates": [sneaky, blank]})]), reply_text(REPORT)
    )
    async with bot(settings, tavily) as services:
        recorder = await research(services)

    [event] = [e for e in recorder.events if isinstance(e, IdentitySettled)]
    company = event.identity.company
    assert (company.name, company.website) == ("Acme Robotics", "acme-robotics.com")
    assert len(company.description) == IDENTITY_FIELD_CHARS
    assert event.identity.settled_by == "search"  # the blank one was no candidate
